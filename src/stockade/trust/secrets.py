"""`deny_read`: the paths no confined command may read, whatever its mode (only an
unconfined danger-full-access run is outside them). The list, and what it names on disk.

Standard library only (`stockade exec` hides them too). The list is patterns; a call
hides what they match when it starts (`DenyRead.expand`): each existing path is covered
by an unreadable empty file or directory in the command's own mount namespace
(sandbox/_argv.py), and the fs tools refuse it (tools/_fence.py). docs/security.md,
"Secrets: files", states the list, the bound and what stays open.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

# Each default item: its name (what `!NAME` removes) is its pattern. `~` is the
# harness's HOME. A glob (`*`, `?`, `[`) matches what exists when the call starts.
HOME_SECRETS: tuple[str, ...] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.pypirc",
    "~/.npmrc",
    "~/.cargo/credentials*",
    # Beyond the list: libpq's password file (the store's, often), and its
    # default client key, certificate, CA and revocation list (~/.postgresql/).
    "~/.pgpass",
    "~/.postgresql",
)
SYSTEM_SECRETS: tuple[str, ...] = ("/etc/shadow", "/etc/gshadow")
# Named items whose paths the caller knows: stockade's state directory (session logs,
# the MCP HTTP tokens it generates), the composition file in use, and a token file an
# operator keeps (`stockade mcp --token-file`).
STATE = "state"
COMPOSITION = "composition"
MCP_TOKEN = "mcp-token"
# Inside every root (workspace and temp roots): FILES of these names (a virtualenv
# named `.env` is a directory, and stays), down to ENV_FILE_DEPTH directories below
# the root, searching at most ENV_FILE_BUDGET directories per root.
ENV_FILES = ".env"
ENV_FILE_NAMES: tuple[str, ...] = (".env", ".env.*")
ENV_FILE_DEPTH = 3
ENV_FILE_BUDGET = 2000
DEFAULT_DENY_READ: tuple[str, ...] = (
    *HOME_SECRETS,
    *SYSTEM_SECRETS,
    STATE,
    COMPOSITION,
    MCP_TOKEN,
    ENV_FILES,
)
NAMED = (STATE, COMPOSITION, MCP_TOKEN, ENV_FILES)


def is_glob(pattern: str) -> bool:
    # Two substring searches in C: this runs for every pattern of every call.
    return "*" in pattern or "?" in pattern


def glob_match(name: str, pattern: str) -> bool:
    """Whether `name` matches `pattern`: `*` any run of characters, `?` one, every
    other character itself (no classes: fnmatch would cost `stockade exec` re)."""
    n = p = 0
    star, mark = -1, 0
    while n < len(name):
        if p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, n, p + 1
        elif p < len(pattern) and pattern[p] in ("?", name[n]):
            n, p = n + 1, p + 1
        elif star != -1:
            mark += 1
            n, p = mark, star + 1
        else:
            return False
    return all(char == "*" for char in pattern[p:])


def check_pattern(pattern: str) -> str | None:
    """Why `pattern` cannot be a deny_read entry, or None."""
    if not pattern or pattern != pattern.strip() or "\n" in pattern or "\x00" in pattern:
        return "an entry must be a non-empty path or glob without surrounding spaces"
    if pattern.startswith("!"):
        name = pattern[1:]
        if name not in DEFAULT_DENY_READ:
            return (
                f"{pattern!r} removes no default item (the defaults: "
                f"{', '.join(DEFAULT_DENY_READ)})"
            )
        return None
    if pattern.startswith("~") and not pattern.startswith("~/") and pattern != "~":
        return "only ~/ (the harness's home) is expanded, not ~user"
    if pattern in ("/", "~", "~/"):
        return f"{pattern!r} would hide everything; name the secret paths instead"
    if ".." in pattern.split("/"):
        return "an entry may not contain '..'"
    if "[" in pattern:
        return "globs take * and ? only"
    if pattern.startswith(("/", "~/")) and is_glob(os.path.dirname(pattern)):
        return "an absolute entry may have * or ? in its last component only"
    return None


def resolve_patterns(configured: Sequence[str]) -> tuple[str, ...]:
    """The defaults, minus each `!NAME` in `configured`, plus its other entries, in
    order without repeats."""
    removed = {entry[1:] for entry in configured if entry.startswith("!")}
    added = [entry for entry in configured if not entry.startswith("!")]
    kept = [item for item in DEFAULT_DENY_READ if item not in removed]
    return tuple(dict.fromkeys((*kept, *added)))


def state_directories(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Where stockade keeps state by default: $STOCKADE_STATE_DIR, else
    $XDG_STATE_HOME/stockade (XDG's default ~/.local/state/stockade)."""
    found = []
    chosen = environ.get("STOCKADE_STATE_DIR")
    if chosen:
        found.append(os.path.abspath(os.path.expanduser(chosen)))
    xdg = environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(xdg):
        xdg = os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".local", "state")
    found.append(os.path.join(xdg, "stockade"))
    return tuple(dict.fromkeys(found))


class Hidden:
    """What one call hides: paths (tuple[str, ...]: real, existing, outermost first,
    none beneath another) and gaps (tuple[str, ...]: what the list names that this
    call cannot hide, said plainly; each makes the claim partial)."""

    __slots__ = ("gaps", "paths")

    def __init__(self, paths: tuple[str, ...], gaps: tuple[str, ...]) -> None:
        self.paths, self.gaps = paths, gaps

    def covers(self, real_path: str) -> bool:
        """Whether `real_path` (resolved) lies at or beneath a hidden path."""
        return self.cover_of(real_path) is not None

    def cover_of(self, real_path: str) -> str | None:
        """The hidden path `real_path` (resolved) lies at or beneath, or None."""
        return next((hidden for hidden in self.paths if _under(real_path, hidden)), None)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


# What `DenyRead.literal_paths` reads of the environment (`_home`, `state_directories`).
_EXPANSION_VARIABLES = ("HOME", "STOCKADE_STATE_DIR", "XDG_STATE_HOME")


def _home(environ: Mapping[str, str]) -> str:
    return environ.get("HOME") or os.path.expanduser("~")


class DenyRead:
    """The resolved list of one composition: patterns (tuple[str, ...], `resolve_patterns`),
    state (tuple[str, ...]: the state directories, the default ones and a configured
    one), composition (tuple[str, ...]: the composition files in use), tokens
    (tuple[str, ...]: MCP token files kept elsewhere)."""

    __slots__ = (
        "_complements",
        "_existing",
        "_globs",
        "_literal",
        "_scans",
        "composition",
        "patterns",
        "state",
        "tokens",
    )

    def __init__(
        self,
        patterns: Sequence[str] = DEFAULT_DENY_READ,
        *,
        state: Sequence[str] = (),
        composition: Sequence[str] = (),
        tokens: Sequence[str] = (),
    ) -> None:
        self.patterns = tuple(patterns)
        self.state, self.composition, self.tokens = tuple(state), tuple(composition), tuple(tokens)
        # Each root's last search: the directories it listed (with their identities,
        # `_identity`), what it found, whether it stopped. Reused while no listed
        # directory changed; kept only when it can be trusted (`_trustworthy`).
        self._scans: dict[str, tuple[list[tuple[str, Identity]], list[str], bool]] = {}
        # The plain tier's complement grants, by (hidden paths, writable roots): kept
        # while each directory listed for them keeps its identity (as a search is).
        self._complements: dict[
            tuple[tuple[str, ...], tuple[str, ...]], tuple[list[tuple[str, Identity]], Complement]
        ] = {}
        # The last call's candidates: which exist and their real paths, with the
        # directories whose entries decided that (`existing`).
        self._existing: (
            tuple[tuple[str, ...], list[tuple[str, Identity]], list[tuple[str, str]]] | None
        ) = None
        # The expansion of the patterns by the environment it read (HOME and the state
        # directory's variables): each item a path, or a glob still to match on disk.
        self._literal: tuple[tuple[str | None, ...], tuple[tuple[str, bool], ...]] | None = None
        # Each glob's last matches, with its directory's identity: reused while the
        # directory keeps it (an entry made, removed or renamed there moves its ctime).
        self._globs: dict[str, tuple[Identity, list[str]]] = {}

    def complement(self, hidden: Sequence[str], writable: Sequence[str]) -> Complement:
        """`complement_grants(hidden, writable)`, reused while no directory it listed
        changed (by what a confined command cannot forge: `Identity`)."""
        key = (tuple(hidden), tuple(writable))
        cached = self._complements.get(key)
        if cached is not None and all(_identity(path) == known for path, known in cached[0]):
            return cached[1]
        started = time.time_ns()
        answer = complement_grants(hidden, writable)
        listed = [(path, _identity(path)) for path in answer[1]]
        seen = [(path, known) for path, known in listed if known is not None]
        self._complements.pop(key, None)
        if len(seen) == len(listed) and _trustworthy(seen, started):
            if len(self._complements) >= SCAN_MEMO_ROOTS:
                self._complements.pop(next(iter(self._complements)))
            self._complements[key] = (seen, answer)
        return answer

    def _root_matches(self, root: str, patterns: Sequence[str]) -> tuple[list[str], bool]:
        cached = self._scans.get(root)
        if cached is not None and all(_identity(path) == known for path, known in cached[0]):
            return cached[1], cached[2]
        self._scans.pop(root, None)
        started = time.time_ns()
        seen: list[tuple[str, Identity]] = []
        found, stopped = root_matches(root, patterns, seen)
        if _trustworthy(seen, started):
            if len(self._scans) >= SCAN_MEMO_ROOTS:
                self._scans.pop(next(iter(self._scans)))
            self._scans[root] = (seen, found, stopped)
        return found, stopped

    def literal_paths(self, environ: Mapping[str, str] = os.environ) -> list[str]:
        """Every absolute pattern (and named item) expanded, globs matched on disk."""
        found: list[str] = []
        for path, glob in self._expanded(environ):
            if glob:
                found += self._glob_matches(path)
            else:
                found.append(path)
        return found

    def _expanded(self, environ: Mapping[str, str]) -> tuple[tuple[str, bool], ...]:
        """(path, whether it is a glob) for every absolute pattern and named item, in
        order: what `literal_paths` matches. Kept while the variables it read are the
        same (without HOME, `~` is the password database's: worked out each time)."""
        key = tuple(environ.get(name) for name in _EXPANSION_VARIABLES)
        known = self._literal
        if known is not None and known[0] == key:
            return known[1]
        home = _home(environ)
        expanded: list[tuple[str, bool]] = []
        for pattern in self.patterns:
            if pattern == STATE:
                expanded += ((path, False) for path in (*state_directories(environ), *self.state))
            elif pattern == COMPOSITION:
                expanded += ((path, False) for path in self.composition)
            elif pattern == MCP_TOKEN:
                expanded += ((path, False) for path in self.tokens)
            elif pattern.startswith("~/") or pattern.startswith("/"):
                path = home + pattern[1:] if pattern.startswith("~/") else pattern
                expanded.append((path, is_glob(path)))
        answer = tuple(expanded)
        self._literal = (key, answer) if environ.get("HOME") else None
        return answer

    def _glob_matches(self, pattern: str) -> list[str]:
        """`_matches(pattern)`, reused while the directory it lists keeps its identity
        (`Identity`, which a confined command cannot forge), kept only when that
        directory did not change within a clock tick of the listing."""
        directory = os.path.dirname(pattern) or "."
        known = self._globs.get(pattern)
        if known is not None and _identity(directory) == known[0]:
            return list(known[1])
        self._globs.pop(pattern, None)
        started = time.time_ns()
        matches = _matches(pattern)
        identity = _identity(directory)
        if identity is not None and _trustworthy([(directory, identity)], started):
            if len(self._globs) >= SCAN_MEMO_ROOTS:
                self._globs.pop(next(iter(self._globs)))
            self._globs[pattern] = (identity, matches)
        return list(matches)

    def root_patterns(self) -> tuple[str, ...]:
        """The patterns matched inside every root: `.env`'s names, and relative entries."""
        names: list[str] = []
        for pattern in self.patterns:
            if pattern == ENV_FILES:
                names += ENV_FILE_NAMES
            elif pattern not in NAMED and not pattern.startswith(("/", "~")):
                names.append(pattern)
        return tuple(names)

    def expand(
        self,
        roots: Sequence[str],
        *,
        keep: Sequence[str] = (),
        environ: Mapping[str, str] = os.environ,
        readable: Sequence[tuple[str, Sequence[str]]] = (),
    ) -> Hidden:
        """What to hide for a call on `roots` (real workspace and temp roots) when it
        starts: each match that exists, by real path. A match that holds one of `keep`
        (a root, the working directory) is not hidden: that is a gap. `readable`:
        (a directory the list names, the names in it left readable): that directory
        is hidden entry by entry instead, all but those (a granted agent's public
        files, sandbox/agents.py)."""
        candidates = self.literal_paths(environ)
        if readable:
            candidates = _narrowed(candidates, readable)
        gaps: list[str] = []
        patterns = self.root_patterns()
        if patterns:
            for root in roots:
                matches, stopped = self._root_matches(root, patterns)
                candidates += matches
                if stopped:
                    gaps.append(
                        f"deny_read: files matching {', '.join(patterns)} in {root} "
                        f"beyond the first {ENV_FILE_BUDGET} directories searched"
                    )
        real: list[str] = []
        kept = [(k, os.path.realpath(k)) for k in keep]
        for path, resolved in self.existing(candidates):
            holding = [k for k, real_k in kept if _under(real_k, resolved)]
            if holding:
                gaps.append(f"deny_read: {path} holds {holding[0]}, so it stays readable")
                continue
            real.append(resolved)
        return Hidden(outermost(real), tuple(dict.fromkeys(gaps)))

    def existing(self, candidates: Sequence[str]) -> list[tuple[str, str]]:
        """(path, its real path) for each of `candidates` that exists, in order.

        The last answer is reused while every directory whose entries decided it keeps
        its identity (`Identity`, which a confined command cannot forge: a created,
        removed or swapped entry gives its directory a new ctime), and only when no
        candidate is reached through a link: then those directories are each one's
        ancestors, up to the deepest that exists. Resolving every candidate was most
        of what confining a call cost the provider."""
        key = tuple(candidates)
        known = self._existing
        if (
            known is not None
            and known[0] == key
            and all(_identity(path) == identity for path, identity in known[1])
        ):
            return known[2]
        self._existing = None
        started = time.time_ns()
        found: list[tuple[str, str]] = []
        watched: dict[str, None] = {}
        plain = True
        for path in key:
            if os.path.lexists(path):
                resolved = os.path.realpath(path)
                plain = plain and resolved == os.path.abspath(path)
                if os.path.exists(resolved):
                    found.append((path, resolved))
                ancestor = os.path.dirname(os.path.abspath(path))
            else:
                ancestor = os.path.dirname(os.path.abspath(path))
                while not os.path.isdir(ancestor) and os.path.dirname(ancestor) != ancestor:
                    ancestor = os.path.dirname(ancestor)
                plain = plain and os.path.realpath(ancestor) == ancestor
            while True:
                watched[ancestor] = None
                parent = os.path.dirname(ancestor)
                if parent == ancestor:  # "/", or POSIX's "//"
                    break
                ancestor = parent
        if plain:
            seen = [(path, _identity(path)) for path in watched]
            trusted = [(path, identity) for path, identity in seen if identity is not None]
            if len(trusted) == len(seen) and _trustworthy(trusted, started):
                self._existing = (key, trusted, found)
        return found

    def denies(
        self, real_path: str, roots: Iterable[str], environ: Mapping[str, str] = os.environ
    ) -> bool:
        """Whether the list names `real_path` (resolved): for the fs tools, which check
        each path as it is used, so a match made after a call started counts too."""
        for path in self.literal_paths(environ):
            if os.path.lexists(path) and _under(real_path, os.path.realpath(path)):
                return True
            if _under(real_path, os.path.abspath(path)):
                return True
        patterns = self.root_patterns()
        if not patterns:
            return False
        for root in roots:
            root = os.path.realpath(root)
            if not _under(real_path, root) or real_path == root:
                continue
            parts = os.path.relpath(real_path, root).split(os.sep)
            # The file itself, as `root_matches` finds it: by its name (or its path in
            # the root), no deeper than the bound, a file (`.env/bin/activate` is not).
            if len(parts) - 1 > ENV_FILE_DEPTH:
                continue
            matched = RootPatterns(patterns).matches(parts[-1], "/".join(parts[:-1]))
            if matched and not os.path.isdir(real_path):
                return True
        return False


def _narrowed(candidates: list[str], readable: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """`candidates` with each directory of `readable` replaced by its entries but the
    names it leaves readable (a file or link in their place is kept whole)."""
    opened = {os.path.abspath(directory): names for directory, names in readable}
    found: list[str] = []
    for path in candidates:
        names = opened.get(os.path.abspath(path))
        if names is None or not os.path.isdir(path) or os.path.islink(path):
            found.append(path)
            continue
        try:
            entries = os.listdir(path)
        except OSError:
            found.append(path)  # not listed: hidden whole, as without the grant
            continue
        found += [
            os.path.join(path, entry)
            for entry in entries
            if not any(glob_match(entry, name) for name in names)
        ]
    return found


def _matches(pattern: str) -> list[str]:
    """The paths a glob names now (hidden files included: secrets start with dots)."""
    directory, name = os.path.split(pattern)
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return []
    return [os.path.join(directory, entry) for entry in entries if glob_match(entry, name)]


class RootPatterns:
    """Root patterns sorted once for a search that tests every entry of a root against
    them: a name without a glob by a set, a glob only past its literal prefix (most
    names fail one `startswith`), a pattern with a slash by the entry's relative path.
    The same answers as `glob_match` on each pattern, at a fraction of the cost."""

    __slots__ = ("name_globs", "names", "path_patterns")

    def __init__(self, patterns: Sequence[str]) -> None:
        self.names = frozenset(p for p in patterns if "/" not in p and not is_glob(p))
        self.name_globs = tuple(
            (_literal_prefix(p), p) for p in patterns if "/" not in p and is_glob(p)
        )
        self.path_patterns = tuple((_literal_prefix(p), p) for p in patterns if "/" in p)

    def matches(self, name: str, directory: str) -> bool:
        """Whether an entry called `name`, in `directory` (relative to the root, "" for
        the root itself), matches."""
        if name in self.names:
            return True
        for prefix, pattern in self.name_globs:
            if name.startswith(prefix) and glob_match(name, pattern):
                return True
        if self.path_patterns:
            relative = f"{directory}/{name}" if directory else name
            for prefix, pattern in self.path_patterns:
                if relative.startswith(prefix) and glob_match(relative, pattern):
                    return True
        return False


def _literal_prefix(pattern: str) -> str:
    """What every match of `pattern` starts with: the text before its first glob."""
    cut = len(pattern)
    for glob in ("*", "?"):
        found = pattern.find(glob)
        if found != -1:
            cut = min(cut, found)
    return pattern[:cut]


# Not searched: git's own store, installed packages (a virtualenv is a directory
# holding pyvenv.cfg). What lies there is a tool's, not a secret the person keeps.
SKIPPED_DIRECTORIES = frozenset({".git", "node_modules"})
VENV_MARKER = "pyvenv.cfg"


def root_matches(
    root: str, patterns: Sequence[str], seen: list[tuple[str, Identity]] | None = None
) -> tuple[list[str], bool]:
    """Files under `root` matching `patterns` (a bare name at any depth up to
    ENV_FILE_DEPTH, a pattern with a slash by its path relative to the root), and
    whether the search stopped at ENV_FILE_BUDGET directories. Symlinked directories
    are not entered (their targets are another root's business, or outside), nor
    SKIPPED_DIRECTORIES and virtualenvs. `seen` collects each directory listed with
    its identity: what a later call checks before it trusts this answer (`DenyRead`)."""
    found: list[str] = []
    matcher = RootPatterns(patterns)
    pending: list[tuple[str, str, int]] = [(root, "", 0)]
    searched = 0
    while pending:
        directory, relative, depth = pending.pop()
        searched += 1
        if searched > ENV_FILE_BUDGET:
            return found, True
        try:
            if seen is not None:
                seen.append((directory, _identity_of(os.stat(directory))))
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError:
            continue
        if depth > 0 and any(entry.name == VENV_MARKER for entry in listed):
            continue
        descend = depth < ENV_FILE_DEPTH
        for entry in listed:
            name = entry.name
            # Files only (a link to one too): a virtualenv named `.env` is a directory.
            if matcher.matches(name, relative) and _is_file(entry):
                found.append(entry.path)
                continue
            if descend and name not in SKIPPED_DIRECTORIES:
                try:
                    is_directory = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_directory = False
                if is_directory:
                    below = f"{relative}/{name}" if relative else name
                    pending.append((entry.path, below, depth + 1))
    return found, False


SCAN_MEMO_ROOTS = 64
# A directory changed this recently when a search listed it may change again within
# the same tick of a coarse file-system clock and keep its ctime (kernels without
# multigrain timestamps tick every 1 to 10 ms): such a search is not kept.
CTIME_TICK_MARGIN_NS = 20_000_000

# (device, inode, ctime): what a confined command cannot set back. A command may
# restore a directory's mtime (`os.utime`), but every change it makes, that one
# included, moves the ctime forward on the kernel's clock, which it cannot set; a
# directory renamed away and replaced by a new one has another inode.
Identity = tuple[int, int, int]


def _identity_of(info: os.stat_result) -> Identity:
    return (info.st_dev, info.st_ino, info.st_ctime_ns)


def _identity(path: str) -> Identity | None:
    try:
        return _identity_of(os.stat(path))
    except OSError:
        return None


def _trustworthy(seen: Sequence[tuple[str, Identity]], started_ns: int) -> bool:
    """Whether a search that began at `started_ns` (wall clock) may be reused while its
    directories keep their identities: none of them changed within a clock tick of
    it, so any later change gives a newer ctime."""
    newest = started_ns - CTIME_TICK_MARGIN_NS
    return all(identity[2] < newest for _, identity in seen)


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """`paths` without repeats and without any that lies beneath another."""
    kept: list[str] = []
    for path in sorted(set(paths), key=lambda p: (p.count("/"), p)):
        if not any(_under(path, outer) for outer in kept):
            kept.append(path)
    return tuple(kept)


def deny_read_for(config: object | None) -> DenyRead:
    """The deny_read list of a provider's `config` (a ProviderConfig; None: the
    defaults): its patterns, the composition files in use, the harness's secret paths."""
    if config is None:
        return DenyRead()
    return DenyRead(
        resolve_patterns(getattr(config, "deny_read", ())),
        state=getattr(config, "secret_state", ()),
        composition=getattr(config, "trusted_files", ()),
        tokens=getattr(config, "secret_tokens", ()),
    )


def describe(
    deny: DenyRead, root: str, environ: Mapping[str, str] = os.environ
) -> dict[str, object]:
    """What `stockade probe --json` shows: the list, the bound, and what a call on
    `root` would hide now (paths, and what it could not), or why a call there is
    refused (a root beneath a hidden path)."""
    hidden = deny.expand((root,), environ=environ)
    cover = hidden.cover_of(os.path.realpath(root))
    return {
        "patterns": list(deny.patterns),
        "root_patterns": list(deny.root_patterns()),
        "depth": ENV_FILE_DEPTH,
        "budget": ENV_FILE_BUDGET,
        "hidden_here": list(hidden.paths),
        "gaps_here": list(hidden.gaps),
        "refused_here": None
        if cover is None
        else f"the root lies in {cover}, which is hidden from every sandboxed command",
    }


def render(deny: DenyRead, root: str, environ: Mapping[str, str] = os.environ) -> str:
    """`stockade probe`'s lines for deny_read."""
    facts = describe(deny, root, environ)
    hidden = facts["hidden_here"]
    assert isinstance(hidden, list)
    lines = [
        "deny_read (no confined mode reads these; only danger-full-access):",
        "  " + " ".join(deny.patterns),
        f"  inside each root: {', '.join(deny.root_patterns()) or 'nothing'} down to "
        f"{ENV_FILE_DEPTH} directories below it (at most {ENV_FILE_BUDGET} searched)",
        f"  hidden for a call on {root} now: {len(hidden)} path{'' if len(hidden) == 1 else 's'}",
        *(f"    {path}" for path in hidden),
        *(f"  not hidden: {gap}" for gap in facts["gaps_here"]),  # type: ignore[attr-defined]
    ]
    if facts["refused_here"] is not None:
        lines.append(f"  every call on {root} is refused: {facts['refused_here']}")
    return "\n".join(lines) + "\n"


Complement = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def complement_grants(hidden: Sequence[str], writable: Sequence[str]) -> Complement:
    """Read access that reaches everything but `hidden` (real paths), for a sandbox
    that cannot cover them (the Landlock launcher's plain tier): (reads, lists, gaps).

    Landlock grants hierarchies, so the complement is built along each hidden path's
    parents: every entry beside the way to a hidden path is granted whole (`reads`),
    each directory on the way may be listed only (`lists`: its names, no file read
    beneath it unless granted), and the hidden path itself gets nothing. A symlink is
    granted nothing (it is read through its target's grant). A hidden path inside a
    `writable` root cannot be left out of that root's grant: a gap, said per path."""
    inside = [p for p in hidden if any(_under(p, root) for root in writable)]
    outside = [p for p in hidden if p not in inside]
    gaps = tuple(
        f"deny_read: {path} lies inside a writable root, which the plain tier grants whole"
        for path in inside
    )
    if not outside:
        return ("/",), (), gaps
    denied = set(outside)
    reads: list[str] = []
    lists: list[str] = []
    pending = ["/"]
    while pending:
        directory = pending.pop()
        lists.append(directory)
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in listed:
            path = os.path.join(directory, entry.name)
            if path in denied:
                continue
            if any(_under(hidden_path, path) for hidden_path in outside):
                try:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(path)
                except OSError:
                    pass
                continue
            try:
                if entry.is_symlink():
                    continue
            except OSError:
                continue
            reads.append(path)
    return tuple(reads), tuple(lists), gaps

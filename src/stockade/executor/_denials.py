"""Pure denial attribution: did the SANDBOX refuse the effect a signature line reports?

A backend's denial text ("Read-only file system", "Permission denied", ...) is also
what the same failure prints without any sandbox: a 0444 file, a script without its
x bit, a genuinely read-only mount. So a line carrying a signature counts as a
denial only when the path it names lies where the mode forbids the effect AND the
caller could have done it without the sandbox. Three steps, the middle one impure:

1. `refusals` (here): each line carrying a signature, with the paths it names and
   the kind of effect its wording reports (or no paths: unrecoverable).
2. `_evidence.gather`: host facts about those paths only (real path, access).
3. `attribute` (here): the verdict, from the lines, the facts and the call's roots.

docs/executor.md ("Denials") states the rule; tests/executor/test_denials.py and the
real-kernel table tests/precision/test_denials.py hold it.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable, Mapping

import attrs

from ..reprs import fields_repr
from ..trust import is_under


class Effect(enum.Enum):
    """What the refused operation did to the file system."""

    WRITE = "write"  # create a file or write its contents (the default reading)
    ENTRY = "entry"  # remove or rename a directory entry: changes its directory
    METADATA = "metadata"  # chmod, chown, utimes: needs ownership, not write access
    READ = "read"  # enter, read or execute: no sandbox here refuses these


class Attribution(enum.Enum):
    SANDBOX = "sandbox"  # the mode forbids it and nothing else would have refused it
    ORDINARY = "ordinary"  # it fails the same without a sandbox, or the mode allows it
    UNKNOWN = "unknown"  # the line names no path we can trust: the signature decides


@attrs.frozen
class Refusal:
    """One output line carrying a denial signature, as far as its wording tells."""

    __repr__ = fields_repr

    line: str
    signature: str
    on_stdout: bool
    effect: Effect = Effect.WRITE
    # The paths the line names, as printed; None when none can be recovered.
    paths: tuple[str, ...] | None = None
    # The shell's own message (`bash: line 1: PATH: ...`): may be a failed exec.
    shell: bool = False
    # Taken from an unquoted bare word (`cat: f: ...`): only trusted when it exists
    # or has a slash (`ping: socket: ...` names no file).
    weak: bool = False


@attrs.frozen
class PathFacts:
    """What the host says about one path a refusal names (see `_evidence.gather`)."""

    __repr__ = fields_repr

    # Real location of what a write reaches: symlinks resolved, a missing tail kept.
    target: str
    # Real location of the directory entry itself: its parent resolved, its name kept.
    entry: str
    exists: bool
    # The caller could do it without any sandbox (its own uid, the mount's flags):
    writable: bool  # write the target (a missing one: create it in its directory)
    entry_changeable: bool  # remove or rename the entry (not a host mount point)
    metadata_changeable: bool  # change its mode, owner or times
    # An existing regular file the caller may not execute (a failed exec, not a write).
    unexecutable: bool = False


# --- step 1: the lines ---------------------------------------------------------------

# "Device or resource busy" (bwrap) is removing or renaming a mount point: an entry effect.
ENTRY_SIGNATURES = ("Device or resource busy",)

_QUOTED = re.compile(r"'([^']*)'|\u2018([^\u2019]*)\u2019|\"([^\"]*)\"")
_PYTHON = re.compile(r"^\w+(?:\.\w+)*: \[Errno \d+\] (?P<message>[^:\[\]]+): (?P<rest>.+)$")
_SHELL = re.compile(r"^(?P<shell>[^:\s]+): (?:line )?\d+: (?P<rest>.+)$")
_ENTRY_WORDS = re.compile(r"\b(?:remove|move|rename|unlink|rmdir|overwrite)\b", re.IGNORECASE)
_METADATA_WORDS = re.compile(
    r"\b(?:changing|setting|cannot change|failed to preserve) "
    r"(?:permissions|ownership|group|times|mode)\b",
    re.IGNORECASE,
)
# Unquoted `VERB ... PATH` endings: sed's temporary file, git's lock, dash's redirect.
_PHRASE = re.compile(
    r"^(?:cannot|can't|could not|couldn't|unable to|failed to)\b.*?\s(?P<path>\S+)$",
    re.IGNORECASE,
)
_DASH_REDIRECT = "cannot create "
# Builtins whose failures are reads (a directory search, a sourced file, an exec).
_READ_BUILTINS = frozenset({"cd", "pushd", "source", ".", "exec"})


def _quoted(text: str) -> tuple[str, ...] | None:
    """The quoted names in `text`; None when one uses an escape we do not undo."""
    if "'\\''" in text or "$'" in text:
        return None
    names = tuple(
        next(group for group in match.groups() if group is not None)
        for match in _QUOTED.finditer(text)
    )
    if any("\\" in name or not name for name in names):
        return None
    if " => " in text and names:
        names = names[:1]  # ln: 'LINK' => 'TARGET': only the link is created
    return names


def _effect(wording: str, signature: str) -> Effect:
    if signature in ENTRY_SIGNATURES or _ENTRY_WORDS.search(wording):
        return Effect.ENTRY
    if _METADATA_WORDS.search(wording):
        return Effect.METADATA
    return Effect.WRITE


def parse_line(line: str, signature: str, *, on_stdout: bool = False) -> Refusal:
    """What one signature-bearing line says: its paths and effect, when recoverable."""
    unknown = Refusal(line=line, signature=signature, on_stdout=on_stdout)
    text = line.strip()
    python = _PYTHON.match(text)
    if python is not None:
        if python["message"] != signature:
            return unknown
        names = _quoted(python["rest"])
        if not names or len(names) > 2:
            return unknown
        effect = Effect.ENTRY if len(names) == 2 or signature in ENTRY_SIGNATURES else Effect.WRITE
        return attrs.evolve(unknown, effect=effect, paths=names)
    suffix = ": " + signature
    if not text.endswith(suffix):
        return unknown
    head = text[: -len(suffix)]
    shell = _SHELL.match(head)
    if shell is not None:
        rest = shell["rest"]
        if rest.startswith(_DASH_REDIRECT):  # dash: `sh: 1: cannot create PATH: ...`
            rest = rest[len(_DASH_REDIRECT) :]
        builtin, _, after = rest.partition(": ")
        if after and builtin in _READ_BUILTINS:
            return attrs.evolve(unknown, effect=Effect.READ, paths=(after,), shell=True)
        if after or not rest:
            return unknown
        return attrs.evolve(unknown, effect=_effect("", signature), paths=(rest,), shell=True)
    effect = _effect(head, signature)
    names = _quoted(head)
    if names is None:
        return unknown
    if names:
        return attrs.evolve(unknown, effect=effect, paths=names[:2])
    segments = head.split(": ")
    last = segments[-1]
    if len(segments) == 1:
        # `PATH: MESSAGE` with no program name (git init): a path only with a slash.
        if "/" in last and not any(c.isspace() for c in last):
            return attrs.evolve(unknown, effect=effect, paths=(last,))
        return unknown
    if last and not any(c.isspace() for c in last):
        return attrs.evolve(unknown, effect=effect, paths=(last,), weak=True)
    phrase = _PHRASE.match(last)
    if phrase is not None:
        return attrs.evolve(unknown, effect=effect, paths=(phrase["path"],), weak=True)
    return unknown


# Node's (libuv's) own wording of the same refusals, lower-cased after its errno's
# name: `EROFS: read-only file system, mkdtemp '/root/.npm/_cacache/tmp/x'` (npm,
# yarn, pnpm and every Node program). Each code stands for the signature it spells.
NODE_CODES = {
    "EROFS": "Read-only file system",
    "EACCES": "Permission denied",
    "EBUSY": "Device or resource busy",
}
_NODE = re.compile(
    r"\b(?P<code>EROFS|EACCES|EBUSY): [a-z][a-z -]*, (?P<call>[a-z]+) (?P<rest>'.*)$"
)
_NODE_ENTRY_CALLS = frozenset({"rename", "unlink", "rmdir"})
_NODE_METADATA_CALLS = frozenset(
    {"chmod", "fchmod", "lchmod", "chown", "fchown", "lchown", "utime", "futime", "lutime"}
)


def _node_signature(line: str, signatures: tuple[str, ...]) -> tuple[str, re.Match[str]] | None:
    match = _NODE.search(line)
    if match is None:
        return None
    signature = NODE_CODES[match["code"]]
    return (signature, match) if signature in signatures else None


def _node_effect(call: str, signature: str) -> Effect:
    """What a refused Node/npm system call did: made or removed an entry, changed
    metadata, or wrote."""
    if call in _NODE_ENTRY_CALLS or signature in ENTRY_SIGNATURES:
        return Effect.ENTRY
    return Effect.METADATA if call in _NODE_METADATA_CALLS else Effect.WRITE


def _parse_node(line: str, signature: str, match: re.Match[str], on_stdout: bool) -> Refusal:
    unknown = Refusal(line=line, signature=signature, on_stdout=on_stdout)
    names = _quoted(match["rest"])
    if not names or len(names) > 2:
        return unknown
    effect = _node_effect(match["call"], signature)
    return attrs.evolve(
        unknown, effect=effect, paths=names[:1] if effect is Effect.WRITE else names
    )


# npm's own block for the same refusal (its EACCES has no libuv line):
# `npm error code EACCES` / `npm error syscall open` / `npm error path /root/.npm/...`.
_NPM_BLOCK = re.compile(
    r"^npm (?:error|ERR!) code (?P<code>EROFS|EACCES|EBUSY)\n"
    r"npm (?:error|ERR!) syscall (?P<call>[a-z]+)\n"
    r"npm (?:error|ERR!) path (?P<path>/\S*)$",
    re.MULTILINE,
)


def _npm_blocks(text: str, signatures: tuple[str, ...], on_stdout: bool) -> list[Refusal]:
    found: list[Refusal] = []
    for match in _NPM_BLOCK.finditer(text):
        signature = NODE_CODES[match["code"]]
        if signature not in signatures:
            continue
        effect = _node_effect(match["call"], signature)
        found.append(
            Refusal(
                line=match[0],
                signature=signature,
                on_stdout=on_stdout,
                effect=effect,
                paths=(match["path"],),
            )
        )
    return found


def mentions(signatures: Iterable[str], text: str) -> bool:
    """Whether `text` may hold a refusal line: a signature, or Node's form of one."""
    signatures = tuple(s for s in signatures if s)
    if any(signature in text for signature in signatures):
        return True
    return any(
        (code + ": " in text or " code " + code in text) and NODE_CODES[code] in signatures
        for code in NODE_CODES
    )


def refusals(signatures: Iterable[str], stderr: str, stdout: str = "") -> tuple[Refusal, ...]:
    """Every line of either stream that carries one of `signatures` (or Node's
    wording of one), parsed."""
    signatures = tuple(s for s in signatures if s)
    found: list[Refusal] = []
    for text, on_stdout in ((stderr, False), (stdout, True)):
        if not mentions(signatures, text):
            continue  # the common case: nothing to parse at all
        for line in text.splitlines():
            signature = next((s for s in signatures if s in line), None)
            if signature is not None:
                found.append(parse_line(line, signature, on_stdout=on_stdout))
                continue
            node = _node_signature(line, signatures)
            if node is not None:
                found.append(_parse_node(line, node[0], node[1], on_stdout))
        if "npm " in text:
            found += _npm_blocks(text, signatures, on_stdout)
    return tuple(found)


# A relative path is resolved against the call's working directory; a command that
# may have moved elsewhere first makes that unreliable (the path is then unknown).
_MOVES = re.compile(
    r"(?:^|[\s;&|({!`]|\$\()(?:cd|pushd|popd)(?=$|[\s;&|)])|\s-C\s?\S|--git-dir|--work-tree"
    r"|--directory|chdir|\bcwd="
)


def changes_directory(command: str) -> bool:
    """Whether `command` may run something in another directory than its workdir."""
    return _MOVES.search(command) is not None


# `2>&1`, `|&`, `&>`-free forms that send stderr to where stdout goes.
_MERGES = re.compile(r"2>\s*&\s*1|\|&|2>\s*/dev/stdout|2>\s*/proc/self/fd/1|exec\s+2>&")


def merges_stderr(command: str) -> bool:
    """Whether `command` sends (some) stderr to stdout: only then can a refusal the
    sandbox caused reach stdout, so only then is stdout read for one."""
    return _MERGES.search(command) is not None


# --- step 3: the verdict -----------------------------------------------------------------


def _forbidden(location: str, writable: Iterable[str], protected: Iterable[str]) -> bool:
    """The mode forbids writing at `location`: outside every root, or protected."""
    return not any(is_under(location, root) for root in writable) or any(
        is_under(location, path) for path in protected
    )


def _entry_forbidden(entry: str, writable: Iterable[str], protected: tuple[str, ...]) -> bool:
    """The mode forbids removing or renaming `entry`: its directory is forbidden, or
    the entry is (or holds) a protected path, which bwrap keeps as a mount point."""
    parent = os.path.dirname(entry) or "/"
    return _forbidden(parent, writable, protected) or any(
        is_under(path, entry) for path in protected
    )


def attribute_line(
    refusal: Refusal,
    facts: Mapping[str, PathFacts],
    writable: tuple[str, ...],
    protected: tuple[str, ...],
    *,
    exit_code: int | None = None,
    moved: bool = False,
) -> Attribution:
    """The verdict on one line. SANDBOX iff some named path is where the mode forbids
    the effect AND every named path allowed it without the sandbox."""
    if refusal.paths is None:
        return Attribution.UNKNOWN
    if refusal.effect is Effect.READ:
        return Attribution.ORDINARY
    forbidden, possible = False, True
    for path in refusal.paths:
        found = facts.get(path)
        if found is None or (moved and not path.startswith("/")):
            return Attribution.UNKNOWN
        if refusal.weak and not found.exists and "/" not in path:
            return Attribution.UNKNOWN
        if refusal.shell and exit_code == 126 and found.unexecutable:
            return Attribution.ORDINARY  # the shell could not exec it: a sandbox never refuses that
        match refusal.effect:
            case Effect.ENTRY:
                forbidden |= _entry_forbidden(found.entry, writable, protected)
                possible &= found.entry_changeable
            case Effect.METADATA:
                forbidden |= _forbidden(found.target, writable, protected)
                possible &= found.metadata_changeable
            case _:
                forbidden |= _forbidden(found.target, writable, protected)
                possible &= found.writable
    return Attribution.SANDBOX if forbidden and possible else Attribution.ORDINARY


def attribute(
    found: Iterable[Refusal],
    facts: Mapping[str, PathFacts],
    writable: tuple[str, ...],
    protected: tuple[str, ...],
    *,
    exit_code: int | None = None,
    moved: bool = False,
    merged: bool = False,
) -> bool:
    """Denied: a line the sandbox is proved to have refused, or an unrecoverable
    stderr line (there the signature alone decides, as it always did). A stdout line
    counts only when the command merged its stderr into stdout (`2>&1`, `|&`), and
    then only with its proof: stdout is otherwise data (a log, a grep, an echo) and
    must not raise a denial by quoting one."""
    for refusal in found:
        if refusal.on_stdout and not merged:
            continue
        verdict = attribute_line(
            refusal, facts, writable, protected, exit_code=exit_code, moved=moved
        )
        if verdict is Attribution.SANDBOX:
            return True
        if verdict is Attribution.UNKNOWN and not refusal.on_stdout:
            return True
    return False


# --- refused reads of deny_read's paths ---------------------------------------------------

# What a refused effect on a covered path prints: reading, listing or searching it
# (EACCES), writing it (EROFS), removing or renaming it (EBUSY: a mount point).
READ_SIGNATURES = ("Permission denied", "Read-only file system", "Device or resource busy")
_SPLIT = re.compile(r"""[\s'"\u2018\u2019]+|: """)


def named_paths(stderr: str, stdout: str = "") -> tuple[str, ...]:
    """Every word of a line carrying a READ_SIGNATURE that could be a path (quoted or
    bare, relative or absolute), in order without repeats: `read_denied` resolves them
    against the workdir and keeps those under a covered path."""
    found: dict[str, None] = {}
    for text in (stderr, stdout):
        if not any(signature in text for signature in READ_SIGNATURES):
            continue
        for line in text.splitlines():
            if not any(signature in line for signature in READ_SIGNATURES):
                continue
            for word in _SPLIT.split(line):
                word = word.strip(":,;()[]")
                if word and not word.startswith("-"):
                    found[word] = None
    return tuple(found)


# --- whose directory a refused write was in ---------------------------------------------

# Toolchains' own directories in a home, as path components, each with the variable
# that points the tool at the sandbox's tool cache instead (sandbox/tool_caches.py;
# a test keeps them equal). More specific first: `.cache/pip` before `.cache`.
TOOL_DIRECTORIES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    ((".cache", "pip"), "pip", "PIP_CACHE_DIR"),
    ((".cache", "uv"), "uv", "UV_CACHE_DIR"),
    ((".npm",), "npm", "npm_config_cache"),
    ((".cache", "yarn"), "yarn", "YARN_CACHE_FOLDER"),
    ((".local", "share", "pnpm"), "pnpm", "npm_config_store_dir"),
    ((".pnpm-store",), "pnpm", "npm_config_store_dir"),
    ((".cache", "go-build"), "go", "GOCACHE"),
    (("go", "pkg", "mod"), "go", "GOMODCACHE"),
    ((".cargo",), "cargo", "CARGO_HOME"),
    ((".m2",), "maven", "MAVEN_OPTS"),
    ((".gradle",), "gradle", "GRADLE_USER_HOME"),
    ((".ccache",), "ccache", "CCACHE_DIR"),
    ((".cache", "ccache"), "ccache", "CCACHE_DIR"),
    ((".cache", "sccache"), "sccache", "SCCACHE_DIR"),
    ((".cache",), "the XDG cache", "XDG_CACHE_HOME"),
)


@attrs.frozen
class ToolDirectory:
    """A toolchain's own directory a path lies under, and the tool-cache variable."""

    __repr__ = fields_repr

    directory: str
    tool: str
    variable: str


def tool_directory(path: str) -> ToolDirectory | None:
    """The toolchain directory an absolute `path` lies at or under, or None. The
    earliest match in the path wins; at one place, the more specific entry."""
    if not path.startswith("/"):
        return None
    parts = [part for part in os.path.normpath(path).split("/") if part]
    for start in range(len(parts)):
        for components, tool, variable in TOOL_DIRECTORIES:
            end = start + len(components)
            if tuple(parts[start:end]) == components:
                return ToolDirectory("/" + "/".join(parts[:end]), tool, variable)
    return None


def refused_tool_directories(
    stderr: str, stdout: str, writable: Iterable[str]
) -> tuple[ToolDirectory, ...]:
    """The toolchain directories that refusal lines (any backend's wording) name a
    path under, outside every `writable` directory, once each in order. Only asked
    of a result already judged denied: the judgement is the evidence that the sandbox
    refused; this says where."""
    roots = tuple(writable)
    found: dict[str, ToolDirectory] = {}
    for refusal in refusals(READ_SIGNATURES, stderr, stdout):
        for path in refusal.paths or ():
            where = tool_directory(path)
            if where is None or where.directory in found:
                continue
            if any(is_under(os.path.normpath(path), root) for root in roots):
                continue
            found[where.directory] = where
    return tuple(found.values())


# --- what a fresh runtime directory hid ---------------------------------------------------

# With network off or allowlist a confined command sees /run, /var/run, $XDG_RUNTIME_DIR
# and /tmp fresh and empty (`Wrapped.fresh`): what the host has beneath them is not
# there for it, and opening it fails with this text instead of a denial signature.
MISSING = "No such file or directory"
# Wording that says the failed operation CREATED the path (so its directory is what
# was missing): coreutils' touch, mkdir, cp, ln, install, mktemp; an open "for writing".
_CREATE_WORDS = re.compile(
    r"\b(?:cannot|can't|could not|couldn't|unable to|failed to) "
    r"(?:touch|create|make|write)\b|\bfor writing\b",
    re.IGNORECASE,
)
# Programs whose one path is always one they write.
_WRITERS = frozenset({"tee"})
_NODE_MISSING = re.compile(
    r"\bENOENT: no such file or directory, (?P<call>[a-z]+) (?P<rest>'[^']*')$"
)
_NODE_CREATE_CALLS = frozenset({"mkdir", "mkdtemp"})


@attrs.frozen
class Missing:
    """One output line saying `MISSING` of one path, as far as its wording tells."""

    __repr__ = fields_repr

    line: str
    path: str  # as printed
    on_stdout: bool
    # The wording says it created `path`: what had to exist is its directory. Else
    # (a read, an exec, or wording that does not say) `path` itself had to.
    create: bool = False


@attrs.frozen
class HostSight:
    """What the host has at a path a `Missing` line names, beneath a fresh runtime
    directory of the call (see `_evidence.sight`); a path beneath none has none."""

    __repr__ = fields_repr

    # Where the path leads on the host: its prefix up to the fresh directory resolved
    # (/var/run -> /run), the rest as printed (normalised).
    location: str
    fresh: str  # the fresh directory `location` lies strictly beneath
    exists: bool  # the host has `location` (links followed)
    directory: bool  # the host has its parent, as a directory


def _redirects_to(command: str, path: str) -> bool:
    """Whether `command` redirects output (`>`, `>>`, `>|`, `&>`) to `path` as printed."""
    pattern = r">[>|]?\s*(['\"]?)" + re.escape(path) + r"\1(?![^\s;&|)<>])"
    return re.search(pattern, command) is not None


def _missing(line: str, on_stdout: bool, command: str) -> Missing | None:
    node = _NODE_MISSING.search(line)
    if node is not None:
        names = _quoted(node["rest"])
        if not names or len(names) != 1:
            return None
        create = node["call"] in _NODE_CREATE_CALLS
        return Missing(line=line, path=names[0], on_stdout=on_stdout, create=create)
    parsed = parse_line(line, MISSING, on_stdout=on_stdout)
    if parsed.paths is None or len(parsed.paths) != 1:
        return None  # none, or two ('A' to 'B'): not which one was missing
    (path,) = parsed.paths
    if parsed.weak and "/" not in path:
        return None  # a bare word: under the workdir, which the command sees as the host's
    if parsed.shell:
        # `bash: line N: PATH: ...`: a redirect or an exec; a redirect to it creates it.
        create = parsed.effect is not Effect.READ and _redirects_to(command, path)
    else:
        head = line.strip()[: -len(": " + MISSING)]
        program = head.split(": ", 1)[0]
        create = _CREATE_WORDS.search(head) is not None or program in _WRITERS
    return Missing(line=line, path=path, on_stdout=on_stdout, create=create)


def missing_lines(stderr: str, stdout: str = "", command: str = "") -> tuple[Missing, ...]:
    """Every line of either stream saying `MISSING` (or Node's `ENOENT: ...`) of one
    recoverable path, parsed; `command` tells a shell redirect from an exec."""
    found: list[Missing] = []
    for text, on_stdout in ((stderr, False), (stdout, True)):
        if MISSING not in text and "ENOENT" not in text:
            continue  # the common case: nothing to parse at all
        for line in text.splitlines():
            if MISSING in line or "ENOENT: " in line:
                missing = _missing(line, on_stdout, command)
                if missing is not None:
                    found.append(missing)
    return tuple(found)


def unseen(
    found: Iterable[Missing],
    facts: Mapping[str, HostSight],
    writable: tuple[str, ...],
    *,
    moved: bool = False,
    merged: bool = False,
) -> tuple[tuple[str, str], ...]:
    """(host path, fresh directory) for each `MISSING` line a fresh runtime directory
    caused: the host has what the command needed there — the path (a read, an exec,
    an unsaid effect) or its directory (a create) — strictly beneath the fresh
    directory, outside every writable root (whatever a command finds missing in its
    own roots is its own doing). A line the host would fail the same is not one.
    stdout lines only when the command merged stderr into it; a relative path only
    when the command did not change directory."""
    hidden: dict[tuple[str, str], None] = {}
    for line in found:
        if line.on_stdout and not merged:
            continue
        if moved and not line.path.startswith("/"):
            continue
        sight = facts.get(line.path)
        if sight is None or any(is_under(sight.location, root) for root in writable):
            continue
        if line.create:
            needed = os.path.dirname(sight.location)
            if not sight.directory or needed == sight.fresh:
                continue  # a create right in the fresh directory is refused, not missing
        else:
            needed = sight.location
            if not sight.exists:
                continue
        hidden[(needed, sight.fresh)] = None
    return tuple(hidden)

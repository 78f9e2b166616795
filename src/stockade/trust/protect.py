"""What every confined command must find read-only inside its writable roots: git
metadata wherever git looks, startup files, editor and agent settings. Standard library only.
"""

from __future__ import annotations

import os
import stat
from collections import namedtuple

from .check import PathFacts, is_under, path_prefixes

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

# In every git directory of every repository inside a writable root: what runs code
# later OUTSIDE any sandbox (hooks; core.fsmonitor, core.hooksPath in a config), or
# sends git to another config (config.worktree, read with extensions.worktreeConfig)
# or to another git directory's hooks and config (commondir).
GITDIR_PROTECTED = ("hooks", "config", "config.worktree", "commondir")
# The editor and agent settings that run code when a person or an agent opens the
# workspace: MCP servers, tasks, hooks and plugins (Cursor, Gemini CLI, Zed, Continue,
# Roo Code, Kiro, Amazon Q, Windsurf, opencode beside VS Code, JetBrains, Claude Code
# and Codex), and a dev container's `initializeCommand`, which runs on the host.
AGENT_PROTECTED = (
    ".vscode/",
    ".idea/",
    ".mcp.json",
    ".claude/",
    ".codex/",
    ".cursor/",
    ".gemini/",
    ".zed/",
    ".continue/",
    ".roo/",
    ".kiro/",
    ".amazonq/",
    ".windsurf/",
    ".opencode/",
    "opencode.json",
    ".devcontainer/",
    ".devcontainer.json",
)
# Relative to every writable root: a composition file, and those settings.
ROOT_PROTECTED = ("stockade.yml", *AGENT_PROTECTED)
# What the probe shows as kept in every writable root (the startup files, in a root
# that holds the home directory, come beside them).
DEFAULT_PROTECTED = (*(f".git/{name}" for name in GITDIR_PROTECTED), *ROOT_PROTECTED)

# --- protected paths inside writable roots ----------------------------------------------

# The caller's startup files, when a writable root contains their home directory: what
# a later shell, git (core.fsmonitor in a global config runs on `git status` in any
# repository) or sshd runs. Relative to the home directory; "/": a directory.
HOME_PROTECTED = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".config/fish/",
    ".gitconfig",
    ".config/git/",
    ".ssh/",
)
# Read from $XDG_CONFIG_HOME instead of ~/.config when it is set.
XDG_PROTECTED = ("git/", "fish/")
# What `unprotect` may drop: the startup files and the editor / agent settings (never
# git metadata or stockade.yml, which git and stockade run or trust later).
UNPROTECTABLE = (
    *(name.rstrip("/") for name in AGENT_PROTECTED),
    *("~/" + name.rstrip("/") for name in HOME_PROTECTED),
)
# Repositories are looked for below the workspace root (its own `.git` and every
# directory at most NESTED_DEPTH levels down: its `.git`, or the directory itself as
# a bare repository) ...
NESTED_DEPTH = 2
# ... in at most this many directories; past it the claim says so. (A temp root gets
# its own `.git` looked at, not what other processes make and remove below it.)
SCAN_BUDGET = 500
# git reads a `.git` file of at most 1 MiB; a commondir as long as it is.
POINTER_LIMIT = 1 << 20
# What a missing file is blocked with, where empty would not mean absent: what git,
# a shell or an agent concludes with the file absent. An empty `commondir` stops every
# git command ("failed to read"); "." names the git directory itself. An empty
# `.bash_profile` would hide the `.bash_login` or `.profile` bash reads after it: these
# read it on, as bash would. An empty `.mcp.json` is not JSON; this one names no server.
PLACEHOLDER_TEXT = {
    "commondir": ".\n",
    ".mcp.json": '{"mcpServers": {}}\n',
    # opencode and the Dev Containers extension read these as JSON: an empty object
    # configures nothing, where an empty file is a parse error.
    "opencode.json": "{}\n",
    ".devcontainer.json": "{}\n",
    ".bash_profile": (
        "# stockade: kept while a confined command runs; reads on as bash would without it\n"
        'if [ -r "$HOME/.bash_login" ]; then . "$HOME/.bash_login"; '
        'elif [ -r "$HOME/.profile" ]; then . "$HOME/.profile"; fi\n'
    ),
    ".bash_login": (
        "# stockade: kept while a confined command runs; reads on as bash would without it\n"
        'if [ -r "$HOME/.profile" ]; then . "$HOME/.profile"; fi\n'
    ),
}
# The one gap every workspace-write call keeps: what no bind or Landlock rule can
# reach. git finds a repository by looking in the directory it runs in and each parent.
NEW_REPOSITORY_GAP = (
    "git metadata of a repository made below a writable root during a call is not "
    "protected while that call runs (a host tool running git there meanwhile, such as "
    "an editor polling `git status`, runs its hooks and config); in the workspace root "
    "itself, what git would run is held aside when the call ends, while a new .git or "
    "bare repository in a subdirectory, nested more than "
    f"{NESTED_DEPTH} directories below the workspace root, or below a temp root stays "
    "unprotected after it too: git run there later runs its hooks and config, and so "
    "does git in the workspace root when the root's repository records it as a "
    "submodule (one the call made in the root has those held with it)"
)


def placeholder_text(path: str) -> str:
    """What the placeholder blocking the missing file `path` holds ("" for most)."""
    return PLACEHOLDER_TEXT.get(os.path.basename(path.rstrip("/")), "")


def startup_files(environ: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """(name as `unprotect` spells it, absolute path) of each startup file of the
    caller: below $HOME and the password database's home directory (real paths; a
    trailing "/" marks a directory), and $XDG_CONFIG_HOME's git and fish."""
    environ = os.environ if environ is None else environ
    homes = [environ.get("HOME", "")]
    try:  # contextlib is not imported on exec's fast path
        import pwd

        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, AttributeError):
        pass
    found: list[tuple[str, str]] = []
    for home in dict.fromkeys(os.path.realpath(h) for h in homes if os.path.isabs(h)):
        for name in HOME_PROTECTED:
            found.append(("~/" + name.rstrip("/"), os.path.join(home, name)))
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if os.path.isabs(xdg):
        for name in XDG_PROTECTED:
            real = os.path.realpath(xdg)
            found.append(("~/.config/" + name.rstrip("/"), os.path.join(real, name)))
    return tuple(dict.fromkeys(found))


class ProtectedSet(namedtuple("ProtectedSet", "paths unknown open_dotgit", defaults=(None,))):
    """paths (tuple[str, ...]): the absolute protected paths of a writable root,
    existing or not ("/" at the end: a directory); unknown (tuple[str, ...]): what
    could not be looked at, each a phrase for the claim's gap; open_dotgit (str |
    None): with `new_repository`, the root's `.git` left unblocked because it was
    missing or an empty directory (no repository) as it was looked at."""

    __slots__ = ()
    if TYPE_CHECKING:  # a stdlib namedtuple's fields, typed for the checker
        paths: tuple[str, ...]
        unknown: tuple[str, ...]
        open_dotgit: str | None


def protected_set(
    root: str,
    extra: Sequence[str] = (),
    *,
    startup: Sequence[tuple[str, str]] | None = None,
    nested: bool = True,
    within: Sequence[str] | None = None,
    facts: PathFacts | None = None,
    new_repository: bool = False,
    names: bool = True,
) -> ProtectedSet:
    """What must stay unwritable in the writable root `root`.

    ROOT_PROTECTED and `extra` (relative to the root, or absolute; `!NAME` drops the
    default NAME, one of UNPROTECTABLE); the `startup` files (startup_files() when
    None) that lie in the root; and the git metadata of the root's repository and,
    with `nested` (the workspace root), of the repositories below it (`_GitWalk`).
    `within`: every writable root (real paths), when known: a git directory that
    neither lies in one nor holds one needs nothing (only where its commondir leads
    is looked at). Every read goes through `facts`, so the guard memo sees it.
    `new_repository`: a missing `.git` in `root` is not blocked (a confined call's
    workspace root, whose new repository the executor holds when the call ends).
    `names` False: a root of stockade's own that no unconfined tool works in (a tool
    cache, `stockade exec`'s private temp directory): only the startup files and the
    absolute `extra` paths that lie in it, no names relative to it and no git metadata.
    """
    facts = facts or PathFacts()
    dropped = {entry[1:].rstrip("/") for entry in extra if entry.startswith("!")}
    found: list[str] = []
    for relative in (*ROOT_PROTECTED, *extra):
        if relative.startswith("!") or relative.rstrip("/") in dropped:
            continue
        if not names and not os.path.isabs(relative):
            continue
        path = relative if os.path.isabs(relative) else os.path.join(root, relative)
        found.append(os.path.normpath(path) + ("/" if relative.endswith("/") else ""))
    real_root = facts.realpath(root)
    for name, path in startup_files() if startup is None else startup:
        if name not in dropped and is_under(path, real_root):
            found.append(path)
    walk = _GitWalk(facts, within)
    walk.new_repository = new_repository
    if names:
        walk.dotgit(root, at_root=True)
    if names and nested:
        walk.nested(root)
    if walk.dotgit_file is not None:
        # The `.git` file says where the repository is; nothing can be made beneath
        # it, so `.git/...` extras mean the file itself.
        found = [path for path in found if not is_under(path, walk.dotgit_file)]
    return ProtectedSet(
        tuple(dict.fromkeys((*found, *walk.found))), tuple(walk.unknown), walk.open_dotgit
    )


def protected_paths(
    root: str,
    extra: Sequence[str] = (),
    *,
    startup: Sequence[tuple[str, str]] | None = None,
    nested: bool = True,
    within: Sequence[str] | None = None,
    facts: PathFacts | None = None,
) -> tuple[str, ...]:
    """protected_set(...).paths: the absolute protected paths of one writable root."""
    found = protected_set(root, extra, startup=startup, nested=nested, within=within, facts=facts)
    return found.paths


class _GitWalk:
    """The git directories of the repositories in one writable root, and in each the
    paths of GITDIR_PROTECTED: the root's `.git` (a directory, a link, or a file
    naming a gitdir), each gitdir's commondir, `worktrees/*` and `modules/**`
    (submodules, their names may hold "/"), and (`nested`) the repositories of every
    directory at most NESTED_DEPTH levels down, within SCAN_BUDGET directories.

    Pointers (`gitdir: ` in a `.git` file, a commondir) are read as git reads them and
    resolved as the kernel walks them. A directory listed, or one whose entries are
    looked up, has its lstat taken first: anything made in it later changes it.
    """

    def __init__(self, facts: PathFacts, within: Sequence[str] | None = None) -> None:
        self.facts = facts
        self._within = within
        self.found: list[str] = []
        self.unknown: list[str] = []
        self.dotgit_file: str | None = None
        self.new_repository = False
        self.open_dotgit: str | None = None
        self._visited: set[str] = set()
        self._left = SCAN_BUDGET
        self._root = ""

    def _list(self, path: str) -> list[tuple[str, bool]]:
        if self._left <= 0:
            cut = f"repositories in {self._root} past the first {SCAN_BUDGET} directories"
            if cut not in self.unknown:
                self.unknown.append(cut)
            return []
        self._left -= 1
        return self.facts.entries(path) or []

    def dotgit(self, directory: str, *, at_root: bool = False) -> None:
        dotgit = os.path.join(directory, ".git")
        info = self.facts.lstat(dotgit)
        if at_root:
            self._root = directory
        if info is None or (at_root and _empty_directory(dotgit, info)):
            # No repository (or only the placeholder blocking one): `.git` is blocked
            # whole, so that none can be made there; but in the workspace root of a
            # confined call (`new_repository`), where a placeholder broke `git init`
            # and go's VCS stamping: what a repository made there during the call
            # would run is held when it ends instead (trust/new_repository.py).
            if at_root and not self.new_repository:
                self.found.append(dotgit + "/")
            elif at_root:
                self.open_dotgit = dotgit
            return
        if stat.S_ISDIR(info.st_mode):
            self.gitdir(dotgit)
        elif stat.S_ISLNK(info.st_mode):
            # Protected where it leads now; that it can be re-pointed is relinkable's.
            self.found += [os.path.join(dotgit, name) for name in GITDIR_PROTECTED]
            if self.facts.is_dir(dotgit):
                self.gitdir(self.facts.realpath(dotgit))
        else:
            self.found.append(dotgit)
            if at_root:
                self.dotgit_file = dotgit
            target = self._pointer(dotgit, b"gitdir: ")
            if target is not None:
                self.gitdir(target)

    def gitdir(self, gitdir: str) -> None:
        """A directory git may open as a repository (existing or not)."""
        if gitdir in self._visited:
            return
        self._visited.add(gitdir)
        common = self._pointer(os.path.join(gitdir, "commondir"), b"")
        if common is not None:
            self.gitdir(common)
        if self._within is not None and not any(
            is_under(gitdir, root) or is_under(root, gitdir) for root in self._within
        ):
            return  # it, and what lies beneath it, is read-only already
        self.found += [os.path.join(gitdir, name) for name in GITDIR_PROTECTED]
        worktrees = os.path.join(gitdir, "worktrees")
        if self.facts.is_dir(worktrees) and not self.facts.is_link(worktrees):
            for name, is_dir in self._list(worktrees):
                if is_dir:
                    self.gitdir(os.path.join(worktrees, name))
        self._modules(os.path.join(gitdir, "modules"))

    def _modules(self, directory: str) -> None:
        if not self.facts.is_dir(directory) or self.facts.is_link(directory):
            return
        for name, is_dir in self._list(directory):
            if not is_dir:
                continue
            child = os.path.join(directory, name)
            # A submodule's gitdir; anything else is a part of a name with "/" in it.
            markers = ("HEAD", "objects", "config", "hooks")
            if any(self.facts.lexists(os.path.join(child, m)) for m in markers):
                self.gitdir(child)
            else:
                self._modules(child)

    def nested(self, root: str) -> None:
        """The repositories in the directories at most NESTED_DEPTH levels below
        `root`, and `root` itself as a bare repository."""
        self._root = root
        level = [(root, self._list(root))]
        if _bare(level[0][1]):
            self.gitdir(root)
        for depth in range(1, NESTED_DEPTH + 1):
            below: list[tuple[str, list[tuple[str, bool]]]] = []
            for parent, entries in level:
                for name, is_dir in entries:
                    if not is_dir or name == ".git":
                        continue
                    child = os.path.join(parent, name)
                    if depth < NESTED_DEPTH:
                        names = self._list(child)
                        if any(entry == ".git" for entry, _ in names):
                            self.dotgit(child)
                        if _bare(names):
                            self.gitdir(child)  # not a directory of files to look into
                        else:
                            below.append((child, names))
                    elif self._looked_into(child):
                        self.dotgit(child)
                        if all(self.facts.lexists(os.path.join(child, n)) for n in _BARE):
                            self.gitdir(child)
            level = below

    def _looked_into(self, directory: str) -> bool:
        """Whether `directory` may hold a repository. Its lstat is kept first (an
        entry made in it later changes it); its entries are then looked up directly,
        outside the memo's view, which that lstat covers."""
        if self._left <= 0:
            self._list(directory)  # notes the cut
            return False
        self._left -= 1
        if self.facts.lstat(directory) is None:
            return False
        return any(os.path.lexists(os.path.join(directory, n)) for n in (".git", "HEAD"))

    def _pointer(self, path: str, prefix: bytes) -> str | None:
        """Where the git pointer file `path` leads (a real path), or None."""
        data = self.facts.read_file(path, POINTER_LIMIT)
        if data is None or not data.startswith(prefix):
            return None
        if len(data) > POINTER_LIMIT:
            if prefix:  # git refuses such a `.git` file: it leads nowhere
                return None
            self.unknown.append(f"where {path} leads (longer than {POINTER_LIMIT} bytes)")
            return None
        # As git's setup.c reads both: CR and LF stripped at the end, a C string.
        value = data[len(prefix) :].rstrip(b"\r\n").split(b"\0", 1)[0]
        if not value:
            return None
        return self.facts.realpath(os.path.join(os.path.dirname(path), os.fsdecode(value)))


def _empty_directory(path: str, info: os.stat_result) -> bool:
    """Whether `path` (lstat `info`) is an empty directory; a repository's `.git` has
    subdirectories, so only a directory without any is listed."""
    if not stat.S_ISDIR(info.st_mode) or info.st_nlink > 2:
        return False
    try:
        return not os.listdir(path)
    except OSError:
        return False


# What git's is_git_directory looks for (a valid HEAD, objects/ and refs/).
_BARE = ("HEAD", "objects", "refs")


def _bare(entries: Sequence[tuple[str, bool]]) -> bool:
    names = {name for name, _ in entries}
    return all(name in names for name in _BARE)


def relinkable(
    path: str, writable_roots: Sequence[str], *, facts: PathFacts | None = None
) -> str | None:
    """The first symlink on `path`'s way that lies in a writable root, or None.

    A bind protects where a link leads now, not the link: a command may point such
    a link (a `.git` symlink) somewhere else for the next reader.
    """
    facts = facts or PathFacts()
    real_roots = [facts.realpath(root) for root in writable_roots]
    for prefix in path_prefixes(os.path.normpath(path)):
        info = facts.lstat(prefix)
        if info is None:
            return None
        if stat.S_ISLNK(info.st_mode):
            parent = facts.realpath(os.path.dirname(prefix))
            if any(is_under(parent, root) for root in real_roots):
                return prefix
    return None


PIN, READ_ONLY, BLOCK = "pin", "read-only", "block"
# Missing protected names that are directories: blocked by an empty read-only directory
# (git's discovery skips an empty `.git`); any other missing name by an empty file.
DIRECTORY_NAMES = (".git", "hooks")


class Protection(namedtuple("Protection", "path kind directory", defaults=(False,))):
    """One bind the backend makes after the writable ones: path (str, a real path) and
    kind (str): READ_ONLY binds an existing path read-only at itself; BLOCK puts an
    empty read-only directory (or file) at a missing path so it cannot be created;
    PIN re-binds an existing directory between a root and a protected path onto
    itself, still writable, so that it becomes a mount point that cannot be renamed
    or removed (renaming `.git` away would otherwise carry the read-only binds off
    with it and let a fresh `.git/hooks` be made). directory (bool): a BLOCK for a
    name configured as a directory (a trailing "/")."""

    __slots__ = ()
    if TYPE_CHECKING:  # a stdlib namedtuple's fields, typed for the checker
        path: str
        kind: str
        directory: bool

    @property
    def exists(self) -> bool:
        return self.kind != BLOCK


def _is_empty_blocker(path: str, facts: PathFacts) -> bool:
    """What a blocker's mount point looks like on the host: an empty dir, an empty file,
    or a file holding exactly the placeholder text of its name (a `commondir` of ".")."""
    info = facts.lstat(path)
    if info is None:
        return False
    if stat.S_ISDIR(info.st_mode):
        if info.st_nlink > 2:
            return False  # it holds a directory
        try:
            return not os.listdir(path)
        except FileNotFoundError:
            return True  # removed (another process's placeholder) since: missing
        except OSError:
            return False
    if not stat.S_ISREG(info.st_mode):
        return False
    text = placeholder_text(path).encode()
    if info.st_size == 0 or not text:
        return info.st_size == 0
    found = facts.read_file(path, len(text))
    if found is None and not os.path.lexists(path):
        # Removed since it was looked at (another process's placeholder, swept): missing,
        # as a directory is above; judged a file of the user's, it would be bound as it
        # is, unheld, and the runner would find nothing there to bind.
        return True
    return info.st_size == len(text) and found == text


def first_missing(
    path: str, blockers: Iterable[str] = (), *, facts: PathFacts | None = None
) -> str | None:
    """The first component of `path` that does not exist (None when all do).

    A component in `blockers` (placeholders: empty mount points a runner made to
    block a missing path) still counts as missing while it is empty, so that
    overlapping calls protect it the same way.
    """
    facts = facts or PathFacts()
    known = set(blockers)
    for prefix in path_prefixes(os.path.normpath(path)):
        if not facts.lexists(prefix):
            return prefix
        if prefix in known and _is_empty_blocker(prefix, facts):
            return prefix
    return None


def protections(
    paths: Iterable[str],
    writable_roots: Sequence[str],
    blockers: Iterable[str] = (),
    *,
    facts: PathFacts | None = None,
) -> tuple[Protection, ...]:
    """The binds that keep `paths` unwritable inside `writable_roots`, in bind order.

    An existing path is bound at its real path when that lies in a writable root
    (elsewhere it is read-only already). A missing one is blocked at its first
    missing component, when that lies in a writable root. Every directory between
    the root and a protected path is pinned (see `Protection`).
    """
    facts = facts or PathFacts()
    real_roots = [facts.realpath(root) for root in writable_roots]

    def root_of(path: str) -> str | None:
        # The innermost root: a workspace root may lie inside a temp root.
        found = [root for root in real_roots if is_under(path, root)]
        return max(found, key=len) if found else None

    known = tuple(blockers)
    targets: dict[str, str] = {}
    directories: set[str] = set()
    for named in paths:
        as_directory = named.endswith("/")
        path = os.path.normpath(named)
        missing = first_missing(path, known, facts=facts)
        if missing is None:
            real = facts.realpath(path)
            if root_of(real) is not None:
                targets.setdefault(real, READ_ONLY)
            continue
        # Resolve the existing parent (it may be a link), keep the missing name.
        parent = facts.realpath(os.path.dirname(missing))
        if not facts.is_dir(parent):
            # A file stands where a directory of the path would be (a `.git` file):
            # nothing can be made beneath it; keep the file itself read-only.
            if root_of(parent) is not None:
                targets.setdefault(parent, READ_ONLY)
            continue
        blocked = os.path.join(parent, os.path.basename(missing))
        if root_of(blocked) is not None:
            targets.setdefault(blocked, BLOCK)
            if facts.lexists(blocked):
                # A placeholder already there keeps its kind (a mount needs a like target).
                if facts.is_dir(blocked) and not facts.is_link(blocked):
                    directories.add(blocked)
            elif (
                as_directory
                or blocked != facts.realpath(path)  # a missing parent of the path
                or os.path.basename(blocked) in DIRECTORY_NAMES
            ):
                directories.add(blocked)
    # A protection inside another protected path is redundant (and its mount point
    # could not be made in a read-only tree): keep the outermost.
    kept = {
        path: kind
        for path, kind in targets.items()
        if not any(prefix in targets for prefix in path_prefixes(path)[:-1])
    }
    pins: dict[str, None] = {}
    for path in kept:
        root = root_of(path)
        assert root is not None
        directory = os.path.dirname(path)
        while directory != root and is_under(directory, root) and directory not in kept:
            pins[directory] = None
            directory = os.path.dirname(directory)
    ordered = [Protection(path, PIN) for path in pins if path not in kept]
    ordered += [Protection(path, kind, path in directories) for path, kind in kept.items()]
    # A parent is bound before anything beneath it.
    return tuple(sorted(ordered, key=lambda item: (item.path.count("/"), item.path)))


# --- roots too broad to take implicitly ------------------------------------------------


def repository_made(root: str) -> bool:
    """Whether `root` (a workspace root that had no repository as the call started:
    `Guard.new_repository`) has a `.git` now: one lstat. Every such call asks this as
    it ends; only one that made a repository loads trust/new_repository.py to hold
    what of it git would run."""
    return os.path.lexists(os.path.join(root, ".git"))

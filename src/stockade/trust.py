"""The trust base: whether a file that a later decision trusts could have been written
by a confined command, decided from `stat` facts alone. Standard library only.

The rule (docs/security.md, "The trust base"): every input to a later confinement
decision or to later unconfined code is (1) outside every writable root, by real path
and every parent, owned by the caller or root with no group/other write bit; or
(2) protected read-only by the backend inside every confined command; or (3) refused.
This module answers (1) and computes what (2) must protect; callers refuse (3).
"""

from __future__ import annotations

import os
import stat
import sys
from collections import namedtuple
from collections.abc import Iterable, Sequence

# Default protected paths, relative to each writable root: repository metadata that
# runs code later OUTSIDE any sandbox (git hooks, core.fsmonitor / core.hooksPath in
# the config), and a composition file at the root.
DEFAULT_PROTECTED = (".git/hooks", ".git/config", "stockade.yml")
# Inside a gitdir that a `.git` file points to (worktrees, submodules).
GITDIR_PROTECTED = ("hooks", "config", "config.worktree")

INSTALL_FIX = (
    "install stockade outside the workspace and the temp directories, e.g. with pipx "
    "or a venv elsewhere"
)


class Untrusted(namedtuple("Untrusted", "path what why root")):
    """A path that fails check 1: path (str), what it is (str), why (str), and the
    writable root it lies in (str | None)."""

    __slots__ = ()

    def message(self, fix: str) -> str:
        where = f" (inside the writable root {self.root})" if self.root else ""
        return f"{self.what} {self.path}{where} is not trusted: {self.why}; {fix}"


class PathFacts:
    """The disk as one guard call sees it: each path's lstat taken once, and real paths
    found from those lstats. One call resolves the same roots and prefixes for every
    protected path; a fresh instance per call, so nothing is kept between calls."""

    def __init__(self) -> None:
        self._lstat: dict[str, os.stat_result | None] = {}
        self._real: dict[str, str] = {}
        # Whether an answer came from outside the memo (a link followed by
        # os.path.realpath, a relative path): then `seen` is not all that was read.
        self.went_elsewhere = False

    @property
    def seen(self) -> dict[str, os.stat_result | None]:
        """Every path looked at, with what lstat said (None: missing or unreadable)."""
        return dict(self._lstat)

    def lstat(self, path: str) -> os.stat_result | None:
        """os.lstat, or None when the path cannot be looked at (missing, or any error)."""
        try:
            return self._lstat[path]
        except KeyError:
            pass
        try:
            info: os.stat_result | None = os.lstat(path)
        except (OSError, ValueError):
            info = None
        self._lstat[path] = info
        return info

    def lexists(self, path: str) -> bool:
        return self.lstat(path) is not None

    def is_link(self, path: str) -> bool:
        info = self.lstat(path)
        return info is not None and stat.S_ISLNK(info.st_mode)

    def is_dir(self, path: str) -> bool:
        """Whether `path` is a directory, following a link (os.path.isdir)."""
        info = self.lstat(path)
        if info is not None and stat.S_ISLNK(info.st_mode):
            self.went_elsewhere = True
            return os.path.isdir(path)
        return info is not None and stat.S_ISDIR(info.st_mode)

    def realpath(self, path: str) -> str:
        """os.path.realpath. A normalised absolute path none of whose existing
        components is a link is its own real path (the common case, found from the
        memoised lstats); anything else is left to os.path.realpath."""
        try:
            return self._real[path]
        except KeyError:
            pass
        real = path
        # normpath keeps a leading "//" (POSIX leaves it implementation-defined);
        # realpath does not: such a path goes the long way.
        if not os.path.isabs(path) or os.path.normpath(path) != path or path.startswith("//"):
            real = os.path.realpath(path)
            self.went_elsewhere = True
        else:
            for prefix in _prefixes(path)[1:]:
                info = self.lstat(prefix)
                if info is None:
                    break  # the rest does not exist: realpath keeps it as written
                if stat.S_ISLNK(info.st_mode):
                    real = os.path.realpath(path)
                    self.went_elsewhere = True
                    break
        self._real[path] = real
        return real


def is_under(path: str, root: str) -> bool:
    """`path` is `root` or lies beneath it (both already real, absolute paths)."""
    if root == "/":
        return True
    return path == root or path.startswith(root.rstrip("/") + "/")


def containing_root(path: str, roots: Iterable[str]) -> str | None:
    """The first of `roots` that `path` lies under (both compared as real paths)."""
    real = os.path.realpath(path)
    for root in roots:
        if is_under(real, os.path.realpath(root)):
            return root
    return None


def _prefixes(path: str) -> list[str]:
    """`/a/b/c` -> ['/', '/a', '/a/b', '/a/b/c'] (an absolute, normalised path)."""
    parts = [part for part in path.split("/") if part]
    return ["/"] + ["/" + "/".join(parts[: index + 1]) for index in range(len(parts))]


def _owner_and_mode_problem(info: os.stat_result, uid: int, is_last: bool) -> str | None:
    if info.st_uid not in (uid, 0):
        return f"it is owned by uid {info.st_uid}, neither the caller ({uid}) nor root"
    loose = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not loose:
        return None
    # A sticky, world-writable directory (/var/tmp) lets nobody else replace what the
    # caller or root owns inside it: acceptable as a parent, never as the file itself.
    if not is_last and stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX:
        return None
    return f"it is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"


def check_trusted(
    path: str,
    writable_roots: Sequence[str],
    *,
    what: str,
    uid: int | None = None,
    must_exist: bool = True,
) -> Untrusted | None:
    """Check 1 for `path`: None when it holds, else why not.

    Both the path as named and its real path are walked from `/`: no component may
    lie in a writable root (a writable parent can swap the child), and each must be
    owned by the caller or root with no group/other write bit (sshd's StrictModes).
    A path that cannot be checked is untrusted: never skip silently. With
    `must_exist` False, a missing tail (to be created by the caller) is accepted
    when everything above it holds.
    """
    uid = os.getuid() if uid is None else uid
    absolute = os.path.abspath(path)
    real = os.path.realpath(absolute)
    roots = [os.path.realpath(root) for root in writable_roots]
    seen: set[str] = set()
    for chain in (_prefixes(absolute), _prefixes(real)):
        for index, prefix in enumerate(chain):
            is_last = index == len(chain) - 1
            if prefix in seen and not is_last:
                continue
            seen.add(prefix)
            try:
                info = os.lstat(prefix)
            except FileNotFoundError:
                if not must_exist:
                    # What is missing will be made by the caller, privately; what
                    # exists above it was checked, and where it would land is not
                    # in a writable root.
                    landing = os.path.realpath(prefix)
                    for root in roots:
                        if is_under(landing, root):
                            why = "a confined command can write there"
                            return Untrusted(path, what, why, root)
                    break
                return Untrusted(path, what, f"{prefix} does not exist", None)
            except OSError as error:
                return Untrusted(path, what, f"{prefix} cannot be checked: {error}", None)
            if stat.S_ISLNK(info.st_mode):
                # A link's mode bits mean nothing, but its owner may re-point it (in a
                # sticky directory too); where it leads is walked in the real chain.
                if info.st_uid not in (uid, 0):
                    why = f"the link {prefix} is owned by uid {info.st_uid}"
                    return Untrusted(path, what, why, None)
                continue
            prefix_real = os.path.realpath(prefix)
            for root in roots:
                if is_under(prefix_real, root):
                    why = "a confined command can write there"
                    return Untrusted(path, what, why, root)
            problem = _owner_and_mode_problem(info, uid, is_last)
            if problem is not None:
                shown = "" if prefix == real else f" ({prefix})"
                return Untrusted(path, what, f"{problem}{shown}", None)
    return None


# --- what stockade's own next process runs --------------------------------------------


def installation_paths() -> tuple[str, ...]:
    """The files and directories whose contents the next stockade process runs.

    The package directory, the interpreter and its standard library, the prefix
    (a venv: its console script, site-packages and .pth files) and every import
    directory on sys.path except the current directory (which `python -m` adds).
    """
    here = os.path.dirname(os.path.realpath(__file__))
    cwd = os.path.realpath(os.getcwd()) if _cwd_exists() else None
    candidates = [
        here,
        os.path.realpath(sys.executable) if sys.executable else "",
        sys.prefix,
        sys.exec_prefix,
        os.path.dirname(os.path.realpath(os.__file__)),
    ]
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            candidates.append(entry)
    found: list[str] = []
    for candidate in candidates:
        if not candidate or not os.path.exists(candidate):
            continue
        real = os.path.realpath(candidate)
        if real == cwd:
            continue
        found.append(real)
    return tuple(dict.fromkeys(found))


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except OSError:
        return False
    return True


def paths_inside(paths: Iterable[str], roots: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """(path, root) for each of `paths` whose real path lies under one of `roots`."""
    hits: list[tuple[str, str]] = []
    real_roots = [os.path.realpath(root) for root in roots]
    for path in paths:
        real = os.path.realpath(path)
        for root in real_roots:
            if is_under(real, root):
                hits.append((real, root))
                break
    return tuple(hits)


# --- protected paths inside writable roots ----------------------------------------------


def _gitdir_of(dotgit: str) -> str | None:
    """The directory a `.git` FILE points to (`gitdir: PATH`), or None."""
    try:
        with open(dotgit, encoding="utf-8", errors="replace") as handle:
            first = handle.readline(4096).strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = first[len("gitdir:") :].strip()
    if not target:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(dotgit), target))


def _commondir_of(gitdir: str) -> str | None:
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:
            target = handle.readline(4096).strip()
    except OSError:
        return None
    return os.path.normpath(os.path.join(gitdir, target)) if target else None


def protected_paths(
    root: str, extra: Sequence[str] = (), *, defaults: Sequence[str] = DEFAULT_PROTECTED
) -> tuple[str, ...]:
    """The absolute protected paths of one writable root, existing or not.

    The defaults plus `extra` (relative to the root, or absolute), and, when `.git`
    is a file (a worktree or submodule), the hooks and config of the gitdir it names
    and of that gitdir's common directory.
    """
    found: list[str] = []
    for relative in (*defaults, *extra):
        path = relative if os.path.isabs(relative) else os.path.join(root, relative)
        found.append(os.path.normpath(path) + ("/" if relative.endswith("/") else ""))
    dotgit = os.path.join(root, ".git")
    if os.path.isfile(dotgit) and not os.path.islink(dotgit):
        # The `.git` file itself says where the repository is: re-pointing it at a
        # planted gitdir would bring that gitdir's hooks and config.
        found = [path for path in found if not is_under(path, dotgit)] + [dotgit]
        gitdir = _gitdir_of(dotgit)
        if gitdir is not None:
            found += [os.path.join(gitdir, name) for name in GITDIR_PROTECTED]
            common = _commondir_of(gitdir)
            if common is not None:
                found += [os.path.join(common, name) for name in ("hooks", "config")]
    return tuple(dict.fromkeys(found))


def relinkable(
    path: str, writable_roots: Sequence[str], *, facts: PathFacts | None = None
) -> str | None:
    """The first symlink on `path`'s way that lies in a writable root, or None.

    A bind protects where a link leads now, not the link: a command may point such
    a link (a `.git` symlink) somewhere else for the next reader.
    """
    facts = facts or PathFacts()
    real_roots = [facts.realpath(root) for root in writable_roots]
    for prefix in _prefixes(os.path.normpath(path)):
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

    @property
    def exists(self) -> bool:
        return self.kind != BLOCK


def _is_empty_blocker(path: str, facts: PathFacts) -> bool:
    """What a blocker's mount point looks like on the host: an empty dir or file."""
    info = facts.lstat(path)
    if info is None:
        return False
    if stat.S_ISDIR(info.st_mode):
        try:
            return not os.listdir(path)
        except FileNotFoundError:
            return True  # removed (another process's placeholder) since: missing
        except OSError:
            return False
    return stat.S_ISREG(info.st_mode) and info.st_size == 0


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
    for prefix in _prefixes(os.path.normpath(path)):
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
        if not any(other != path and is_under(path, other) for other in targets)
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


def broad_root_refusal(
    root: str,
    *,
    explicit: bool,
    home: str | None,
    naming: str = "--root {root}",
    source: str = "the current directory",
) -> str | None:
    """Why a workspace root taken implicitly (the current directory) is refused, or None.

    A root of `/` makes workspace-write danger-full-access by another name, and the
    caller's home directory holds every startup file the person's tools run later. Both
    are honoured only when named on purpose (`explicit`: `--root`, a `cwd` given
    through the API, a composition `fallback_root`). `naming` says how the caller
    names a root on purpose (`{root}` stands for it); `source`, where the root came from.
    """
    if explicit:
        return None
    # One spelling of each (realpath and normpath keep a leading "//").
    real = "/" + os.path.normpath(os.path.realpath(root)).lstrip("/")
    if real == "/":
        what = "/, the whole disk"
    elif home and os.path.isabs(home) and real == os.path.realpath(home).rstrip("/"):
        what = f"{real}, your home directory"
    else:
        return None
    return (
        f"the workspace root would be {what} ({source}), which a "
        "workspace-write command could then write throughout; run from a project "
        f"directory, or pass {naming.format(root=real)} to mean it"
    )

"""The trust base's check: could a confined command have written this file, decided from
`stat` facts alone (owner, mode bits, real path and every parent). Standard library only.

The rule (docs/security.md, "The trust base"): every input to a later confinement
decision or to later unconfined code is (1) outside every writable root, by real path
and every parent, owned by the caller or root with no group/other write bit; or
(2) protected read-only by the backend inside every confined command; or (3) refused.
This module answers (1); `protect` computes what (2) must protect; callers refuse (3).
"""

from __future__ import annotations

import os
import stat
from collections import namedtuple

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

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
        self._read: dict[str, None] = {}
        # Whether an answer came from outside the memo (a link followed by
        # os.path.realpath, a relative path, a file that changed while it was read):
        # then `seen` is not all that was read.
        self.went_elsewhere = False

    @property
    def seen(self) -> dict[str, os.stat_result | None]:
        """Every path looked at, with what lstat said (None: missing or unreadable)."""
        return dict(self._lstat)

    @property
    def read(self) -> tuple[str, ...]:
        """Every file and directory whose contents were read, or would have been had it
        been there (each also in `seen`, its lstat taken before the read: a later change
        to what was read changes it)."""
        return tuple(self._read)

    def read_file(self, path: str, limit: int) -> bytes | None:
        """The contents of the regular file `path` (not a link), at most `limit` + 1
        bytes; None when it is missing or anything else stands there."""
        self._read[path] = None
        info = self.lstat(path)
        if info is None or not stat.S_ISREG(info.st_mode):
            return None
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
        try:
            fd = os.open(path, flags)
        except OSError:
            self.went_elsewhere = True  # it was a file a moment ago
            return None
        try:
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                self.went_elsewhere = True
            chunks: list[bytes] = []
            left = limit + 1
            while left > 0 and (chunk := os.read(fd, min(left, 65536))):
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        except OSError:
            self.went_elsewhere = True
            return None
        finally:
            os.close(fd)

    def entries(self, path: str) -> list[tuple[str, bool]] | None:
        """(name, is a directory, not a link) for each entry of the directory `path`
        (itself not a link), sorted; None when it is no such directory."""
        self._read[path] = None
        info = self.lstat(path)
        if info is None or not stat.S_ISDIR(info.st_mode):
            return None
        try:
            with os.scandir(path) as listing:
                found = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
        except OSError:
            self.went_elsewhere = True
            return None
        return sorted(found)

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
        # normpath keeps a leading "//" (POSIX leaves it implementation-defined);
        # realpath does not: such a path goes the long way.
        if not os.path.isabs(path) or path.startswith("//"):
            real = os.path.realpath(path)
            self.went_elsewhere = True
        else:
            real = self._walk(path)
        self._real[path] = real
        return real

    def _walk(self, path: str) -> str:
        """os.path.realpath of an absolute path, component by component as the kernel
        walks it (`..` after the component before it); the long way at the first link.
        Beneath a missing component nothing is a link: realpath keeps it as written."""
        real, missing = "/", False
        for name in path.split("/"):
            if not name or name == ".":
                continue
            if name == "..":
                real, missing = os.path.dirname(real), False
                continue
            real = os.path.join(real, name)
            if missing:
                continue
            info = self.lstat(real)
            if info is None:
                missing = True
            elif stat.S_ISLNK(info.st_mode):
                self.went_elsewhere = True
                return os.path.realpath(path)
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


def path_prefixes(path: str) -> list[str]:
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
    for chain in (path_prefixes(absolute), path_prefixes(real)):
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


# A composition steers how (and whether) later commands are confined: where one is named.
CONFIG_ENV = "STOCKADE_CONFIG"
CONFIG_FILENAME = "stockade.yml"


def names_a_config(explicit: str | None) -> bool:
    """Whether a composition file is named or present (a cheap check: no YAML import).

    An empty ./stockade.yml is bwrap's placeholder for the protected path (stockade
    exec cannot remove it afterwards): no composition.
    """
    if explicit or os.environ.get(CONFIG_ENV):
        return True
    try:
        return os.stat(CONFIG_FILENAME).st_size > 0 and os.path.isfile(CONFIG_FILENAME)
    except OSError:
        return False


def implicit_config_refusal(path: str) -> str:
    """Why ./stockade.yml is never loaded implicitly (the trust base, docs/security.md)."""
    return (
        f"{path} lies in the current directory, the workspace root of every call made "
        "here without --root, where a confined command could have written it (and with "
        "it how, or whether, later commands are confined); stockade does not load it "
        "implicitly. Pass --config FILE (or set STOCKADE_CONFIG) naming a composition "
        "outside the workspace and the temp directories"
    )

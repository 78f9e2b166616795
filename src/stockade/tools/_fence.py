"""The fs tools' path fence: which paths a mode lets a tool write, and opening them safely.

Pure decisions (writable roots, lexical location) and the fenced open primitives: openat2
RESOLVE_BENEATH from a root's fd, or an O_NOFOLLOW dir-fd walk that follows the same rules.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Final, TypeVar

import attrs

from ..reprs import fields_repr
from ..trust import is_under
from ..vocab import ExecutionPolicy, SandboxMode
from . import _protected
from ._roots import PinnedRoots

RESOLVE_NO_MAGICLINKS: Final = 0x02
RESOLVE_NO_SYMLINKS: Final = 0x04
RESOLVE_BENEATH: Final = 0x08
RESOLVE_IN_ROOT: Final = 0x10
SYS_OPENAT2: Final = 437  # the same number on x86_64 and aarch64 (the unified table)
SYMLINK_HOPS: Final = 40  # the kernel's MAXSYMLINKS
EAGAIN_RETRIES: Final = 16

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# Intermediate directories of the fallback walk need only search permission.
_WALK_FLAGS: Final = (
    getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
)


_O = TypeVar("_O")


class PathProblem(ValueError):
    """The path (or the cwd) cannot name a file at all: empty, NUL byte, relative cwd."""


class FenceRefused(Exception):
    """The fence refused a file effect; nothing was changed. `reason` is for the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# -- pure decisions ----------------------------------------------------------------


def writable_roots(policy: ExecutionPolicy, temp_roots: Sequence[str]) -> tuple[str, ...] | None:
    """Directories a write may land beneath; None means anywhere (no fence)."""
    if policy.mode is SandboxMode.DANGER_FULL_ACCESS:
        return None
    if policy.mode is SandboxMode.READ_ONLY:
        return ()
    return tuple(dict.fromkeys((policy.workspace_root, *temp_roots)))


def parts_of(path: str) -> tuple[str, ...]:
    """The components of `path` without empty ones and `.`; `..` is kept (never collapsed)."""
    return tuple(part for part in path.split("/") if part not in ("", "."))


def absolute_path(cwd: str, path: object) -> str:
    """`path` made absolute against the session `cwd`, `.` and `//` removed, `..` kept."""
    if not isinstance(path, str):
        raise PathProblem(f"path must be a string, got {type(path).__name__}")
    if not path:
        raise PathProblem("path is empty; give the file's path")
    if "\0" in path:
        raise PathProblem("path contains a NUL byte, which no file name can hold")
    if not path.startswith("/"):
        if not isinstance(cwd, str) or not cwd.startswith("/") or "\0" in cwd:
            raise PathProblem(f"the session cwd {cwd!r} is not an absolute path")
        path = f"{cwd}/{path}"
    return "/" + "/".join(parts_of(path))


def locate(
    parts: Sequence[str], spellings: Sequence[tuple[str, _O]]
) -> tuple[_O, tuple[str, ...]] | None:
    """The root a path lies under lexically, and the rest of the path below it.

    `spellings` pairs a root's spelling with what to open it by (its pin). The
    outermost matching root wins, so a `..` that leaves a nested root but stays inside
    an enclosing one is still judged against the enclosing one.
    """
    matches = []
    for spelling, opened in spellings:
        root = parts_of(spelling)
        if tuple(parts[: len(root)]) == root:
            matches.append((len(root), opened, tuple(parts[len(root) :])))
    if not matches:
        return None
    _, opened, rest = min(matches, key=lambda match: match[0])
    return opened, rest


# -- openat2 and its fallback --------------------------------------------------------


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


def openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
    """The raw openat2(2) syscall; OSError(ENOSYS) where the kernel or platform lacks it."""
    if not sys.platform.startswith("linux"):
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
    libc = ctypes.CDLL(None, use_errno=True)
    how = _OpenHow(flags | os.O_CLOEXEC, 0, resolve)
    fd = libc.syscall(
        ctypes.c_long(SYS_OPENAT2),
        ctypes.c_int(dir_fd),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return int(fd)


def _escaped(root: str) -> FenceRefused:
    return FenceRefused(
        f"the path leaves the writable root {root} (through '..', an absolute or outward "
        "symbolic link, or a /proc magic link)"
    )


def _is_dir(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def walk_beneath(root_fd: int, parts: Sequence[str], root: str) -> int:
    """The fallback: open directory `parts` beneath `root_fd` one O_NOFOLLOW step at a time.

    A symlink is read and its (relative) text spliced into the walk; an absolute link or
    a `..` above the root is refused, as openat2 RESOLVE_BENEATH would. Returns an
    O_RDONLY directory fd.
    """
    stack = [os.open(".", _WALK_FLAGS, dir_fd=root_fd)]
    todo = collections.deque(parts)
    hops = 0
    try:
        while todo:
            part = todo.popleft()
            if part in ("", "."):
                continue
            if part == "..":
                if len(stack) == 1:
                    raise _escaped(root)
                os.close(stack.pop())
                continue
            try:
                stack.append(os.open(part, _WALK_FLAGS, dir_fd=stack[-1]))
                continue
            except OSError as error:
                if error.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                try:
                    link = os.readlink(part, dir_fd=stack[-1])
                except OSError as gone:
                    if gone.errno != errno.EINVAL:  # e.g. vanished meanwhile
                        raise
                    if not _is_dir(part, stack[-1]) or hops >= SYMLINK_HOPS:
                        raise error from None
                    link = part  # a directory now: swapped meanwhile; look at it again
            hops += 1
            if hops > SYMLINK_HOPS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), part)
            if link.startswith("/"):
                raise _escaped(root)
            todo.extendleft(reversed(link.split("/")))
        return os.open(".", _DIR_FLAGS, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def open_beneath(root_fd: int, parts: Sequence[str], root: str) -> int:
    """Open directory `parts` beneath `root_fd` (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS).

    openat2 where the kernel has it, else `walk_beneath`; an ELOOP from openat2 (a magic
    link or a loop) is re-walked so both paths give the same answer.
    """
    path = "/".join(parts) or "."
    for _ in range(EAGAIN_RETRIES):
        try:
            return openat2(root_fd, path, _DIR_FLAGS, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
        except OSError as error:
            if error.errno == errno.EXDEV:
                raise _escaped(root) from None
            if error.errno == errno.EAGAIN:  # a concurrent rename or mount; try again
                continue
            # ENOSYS: no openat2; EPERM: a seccomp filter that predates it. Either way
            # the walk gives the same answer, as it does for ELOOP (a magic link, a loop).
            if error.errno not in (errno.ENOSYS, errno.EPERM, errno.ELOOP):
                raise
            break
    return walk_beneath(root_fd, parts, root)


# -- where a write lands -------------------------------------------------------------


@attrs.frozen
class Target:
    """A write's destination: an entry `name` in the directory `dir_fd`, as it is now.

    `stat` is the entry's lstat (None when it does not exist yet); `root` the writable
    root it was fenced beneath, None when unfenced.
    """

    __repr__ = fields_repr

    dir_fd: int
    name: str
    stat: os.stat_result | None
    root: str | None


_P = TypeVar("_P")


def _final(parts: Sequence[str], shown: str) -> tuple[tuple[str, ...], str]:
    if not parts or parts[-1] == "..":
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), shown)
    return tuple(parts[:-1]), parts[-1]


def _settle(
    open_dir: Callable[[_P], int],
    follow: Callable[[_P, str, int], tuple[_P, str]],
    parent: _P,
    name: str,
    root: str | None,
    stack: contextlib.ExitStack,
) -> Target:
    """Follow a final-component symlink until a non-link entry (or a missing one)."""
    for _ in range(SYMLINK_HOPS):
        dir_fd = open_dir(parent)
        stack.callback(os.close, dir_fd)
        try:
            entry = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return Target(dir_fd, name, None, root)
        if not stat.S_ISLNK(entry.st_mode):
            return Target(dir_fd, name, entry, root)
        parent, name = follow(parent, os.readlink(name, dir_fd=dir_fd), dir_fd)
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)


def _refuse_protected(location: str | None, protected: Sequence[str]) -> None:
    if location is None:
        raise FenceRefused("where the write would land cannot be told, so it is refused")
    if (path := _protected.hit(location, protected)) is not None:
        raise FenceRefused(_protected.refusal(path))


def _refuse_protected_early(absolute: str, protected: Sequence[str]) -> None:
    """By the kernel's own resolution, before anything is opened, so a file in a missing
    protected directory (ENOENT later) is still a denial. Only a classification: where
    the fence's open lands is judged again, and a resolution racing a rename is left to it.
    """
    with contextlib.suppress(OSError):
        _refuse_protected(os.path.realpath(absolute), protected)


def _landing(target: Target) -> str | None:
    """The real path a write to `target` lands at, or None when it cannot be told."""
    where = _protected.dir_location(target.dir_fd)
    if where is None:
        return None
    try:
        now, held = os.stat(where, follow_symlinks=False), os.fstat(target.dir_fd)
    except OSError:
        return None
    if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
        return None
    return os.path.join(where, target.name)


def _landing_beneath(target: Target, root_fd: int, root: str) -> str | None:
    """`_landing`, told only while the pinned root is still where it was pinned: read
    after the landing, so a root moved away and back in between is caught (the landing
    would not lie beneath it)."""
    landing = _landing(target)
    if landing is None or _protected.dir_location(root_fd) != root:
        return None
    return landing if is_under(landing, root) else None


@contextlib.contextmanager
def write_target(
    policy: ExecutionPolicy,
    absolute: str,
    pinned: PinnedRoots,
    *,
    protected_extra: Sequence[str] = (),
) -> Iterator[Target]:
    """Open the directory a write of `absolute` lands in, fenced by `policy`'s mode.

    Raises FenceRefused before any effect when the mode forbids the write, RootReplaced
    when a pinned root is no longer the directory pinned, OSError when the OS refuses a
    step. Each writable root is opened by its pinned fd, never by its path again.
    Symlinks (in directories and in the final name) are followed only while they stay
    beneath the writable root the path named; the fds close on exit. In a fenced mode a
    write that lands on (or beneath, or creates an ancestor of) a protected path of any
    writable root is refused, judged by the real landing place.
    """
    roots = writable_roots(policy, pinned.temp_paths)
    parts = parts_of(absolute)
    with contextlib.ExitStack() as stack:
        if roots is None:
            parent, name = _final(parts, absolute)
            start: _Anywhere = (None, "/" + "/".join(parent))
            yield _settle(_open_anywhere, _follow_anywhere, start, name, None, stack)
            return
        pinned.check()
        if not roots:
            raise FenceRefused(f"{policy.mode.value} mode allows no file writes")
        located = locate(parts, pinned.spellings(roots))
        if located is None:
            raise FenceRefused(f"it is outside the writable roots ({', '.join(roots)})")
        # The protected paths of each root where it was pinned, not where its path leads now.
        reals = tuple(dict.fromkeys(pin.real for _, pin in pinned.spellings(roots)))
        protected = _protected.real_protected(reals, protected_extra)
        _refuse_protected_early(absolute, protected)
        pin, rest = located
        if pin.fd < 0:
            raise pin.unopened()
        root, root_fd = pin.real, pin.fd

        def open_fenced(parent: tuple[str, ...]) -> int:
            return open_beneath(root_fd, parent, root)

        def follow_fenced(
            parent: tuple[str, ...], link: str, _dir_fd: int
        ) -> tuple[tuple[str, ...], str]:
            if link.startswith("/"):
                raise _escaped(root)
            return _final((*parent, *parts_of(link)), absolute)

        parent, name = _final(rest, absolute)
        target = _settle(open_fenced, follow_fenced, parent, name, root, stack)
        _refuse_protected(_landing_beneath(target, root_fd, root), protected)
        yield target


_Anywhere = tuple[int | None, str]  # (base dir fd or None, path relative to it or absolute)


def _open_anywhere(parent: _Anywhere) -> int:
    base, path = parent
    return os.open(path, _DIR_FLAGS, dir_fd=base)


def _follow_anywhere(_parent: _Anywhere, link: str, dir_fd: int) -> tuple[_Anywhere, str]:
    parent, name = _final(parts_of(link), link)
    lead = "/" if link.startswith("/") else ""
    return (dir_fd, lead + "/".join(parent) or "."), name


def replace_atomically(target: Target, data: bytes, like: os.stat_result | None) -> None:
    """Atomically make `target` hold `data`: temp file, fsync, renameat, fsync the dir.

    The temp file is created O_EXCL through the same directory fd and takes `like`'s
    mode (and owner, when root); on any failure it is removed and the target is untouched.
    """
    temp = f".stockade-{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o666 if like is None else 0o600, dir_fd=target.dir_fd)
    try:
        try:
            if like is not None:
                if os.geteuid() == 0:
                    os.fchown(fd, like.st_uid, like.st_gid)
                os.fchmod(fd, stat.S_IMODE(like.st_mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, target.name, src_dir_fd=target.dir_fd, dst_dir_fd=target.dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=target.dir_fd)
        raise
    # The rename is done; a file system without directory fsync is no failure.
    with contextlib.suppress(OSError):
        os.fsync(target.dir_fd)

"""Linux inotify through the C library (ctypes): an instance, its watches, its raw events;
and two calls on the filesystem under a descriptor: its type (whether its events can be
trusted) and a sync of it (an undo's writes made durable at once).

A watch is always added through `/proc/self/fd/N[/name]`: the directory is the one
already opened without following a symlink, so a path swapped meanwhile cannot move it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import struct
import sys

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_MASK_ADD = 0x20000000
IN_ISDIR = 0x40000000

IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

# A directory: every way a child can appear, go, change content, mode or owner; itself
# moved or deleted. A write through a descriptor opened earlier is reported here too.
DIRECTORY_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
# A file, for its link count: a hard link made to it from anywhere (outside the root too)
# changes it, and is an event only the file's own watch gets.
FILE_MASK = IN_ATTRIB | IN_DONT_FOLLOW
# A file with more than one name: a write through the other name reaches only the file's
# own watch (a directory hears of writes through its own entries).
SHARED_FILE_MASK = IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE | IN_DONT_FOLLOW

_HEADER = struct.Struct("iIII")

# Local filesystems whose every change passes through this kernel's VFS, so inotify
# hears of it. A network or FUSE filesystem changes under other hosts' or daemons'
# hands: its roots are scanned instead.
TRUSTED_FILESYSTEMS = {
    0xEF53: "ext2/3/4",
    0x58465342: "xfs",
    0x9123683E: "btrfs",
    0x01021994: "tmpfs",
    0xF2F52010: "f2fs",
    0x2FC12FC1: "zfs",
    0xCA451A4E: "bcachefs",
    0x794C7630: "overlayfs",
}

RawEvent = tuple[int, int, int, bytes]  # wd, mask, cookie, name


class _StatFs(ctypes.Structure):
    # Only f_type is read; the buffer is larger than any struct statfs.
    _fields_ = [("f_type", ctypes.c_long), ("rest", ctypes.c_byte * 256)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def filesystem_type(fd: int) -> int:
    """The magic number of the filesystem `fd` lies on (`fstatfs`'s f_type)."""
    buffer = _StatFs()
    if _libc().fstatfs(fd, ctypes.byref(buffer)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return int(buffer.f_type) & 0xFFFFFFFF


def sync_filesystem(fd: int) -> None:
    """`syncfs`: everything written to `fd`'s filesystem reaches the disk (one call for
    an undo's every file, where an fsync each costs a journal commit each)."""
    if sys.platform.startswith("linux") and _libc().syncfs(fd) == 0:
        return
    os.sync()


def unsupported_reason() -> str | None:
    """Why this host cannot watch (None when it can)."""
    if not sys.platform.startswith("linux"):
        return f"no inotify on {sys.platform}"
    if not os.path.isdir("/proc/self/fd"):
        return "/proc is not mounted (watches are added through /proc/self/fd)"
    return None


class Inotify:
    """One inotify instance: non-blocking, closed on exec (never reaches a command)."""

    def __init__(self) -> None:
        self._libc = _libc()
        self._libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"inotify_init1: {os.strerror(code)}")
        self.fd: int = fd

    def fileno(self) -> int:
        return self.fd

    def add(self, path: bytes, mask: int) -> int:
        """A watch on `path` (the same inode's watch, with this mask, if it had one)."""
        wd = int(self._libc.inotify_add_watch(self.fd, path, mask))
        if wd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), os.fsdecode(path))
        return wd

    def remove(self, wd: int) -> None:
        if self._libc.inotify_rm_watch(self.fd, wd) != 0:
            code = ctypes.get_errno()
            if code != errno.EINVAL:  # already gone with its inode
                raise OSError(code, os.strerror(code))

    def read(self) -> list[RawEvent]:
        """Every event queued now (none: an empty list, without waiting)."""
        events: list[RawEvent] = []
        while True:
            try:
                buffer = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return events
            events.extend(parse_events(buffer))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def parse_events(buffer: bytes) -> list[RawEvent]:
    """The events of one read: each header, then its NUL-padded name."""
    events: list[RawEvent] = []
    offset, end = 0, len(buffer)
    unpack = _HEADER.unpack_from
    while offset < end:
        wd, mask, cookie, length = unpack(buffer, offset)
        offset += 16
        name = buffer[offset : offset + length].rstrip(b"\0")
        offset += length
        events.append((wd, mask, cookie, name))
    return events


def watch_path(directory_fd: int, name: str | None = None) -> bytes:
    if name is None:
        return b"/proc/self/fd/%d" % directory_fd
    return b"/proc/self/fd/%d/%s" % (directory_fd, os.fsencode(name))

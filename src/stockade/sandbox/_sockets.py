"""The host's named Unix sockets a network-off bwrap call must not reach, standard
library only (`stockade exec` uses it).

A network namespace does not cover pathname Unix sockets: `connect()` finds the
socket through the file system, and a read-only bind does not refuse it. So when
a call starts with network off, bwrap covers each socket found here with an empty
read-only file (a `connect()` to a regular file is `ECONNREFUSED`). Found are:

- every pathname socket bound in this network namespace (`/proc/net/unix`),
- every socket that is a mount point (`/proc/self/mountinfo`: a host socket
  bind-mounted into this container, such as `docker.sock`, which the container's
  own `/proc/net/unix` never lists),
- a few well-known container-runtime sockets, for a directory bind-mounted in.

Only what exists here as a socket, at its real path, outside `/proc` and `/sys`.
Sockets under `/dev` are found too (`/dev/shm` is a tmpfs anyone may bind in, and the
Landlock launcher shows the command the host's `/dev`); bwrap's `/dev` is private, so
its argv leaves them out (`backends.bwrap.bwrap_argv`). What this cannot find is named in the
claim (`UNFOUND_SOCKETS_GAP`, sandbox/_claims.py): sockets bound after the call
starts outside the runtime directories (`runtime_dirs`: those the command sees fresh
and empty, so nothing bound there later reaches it), in another network or mount
namespace (their listed path is not theirs here), by a relative path, or reached by
another name (a hard link, a bind mount of their directory).
"""

from __future__ import annotations

import os
import stat

PROC_NET_UNIX = "/proc/net/unix"
MOUNTINFO = "/proc/self/mountinfo"
WELL_KNOWN = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/crio/crio.sock",
    "/run/buildkit/buildkitd.sock",
)
# /proc and /sys hold none, and a bind there would fail the call. /dev is not skipped:
# under the Landlock launcher the command sees the host's (bwrap's is private).
SKIPPED = ("/proc", "/sys")


# A listed path: the last field, after six fields without a slash (abstract names
# start with "@", unnamed sockets have none); runs to the end of the line.
# (A scan, not a regex: `re` is a third of the standard library `stockade exec` imports.)
def _listed(text: bytes) -> tuple[bytes, ...]:
    found = []
    for line in text.split(b"\n"):
        at = line.find(b" /")
        if at != -1:
            found.append(line[at + 1 :])
    return tuple(dict.fromkeys(found))


def listed_paths(text: bytes) -> list[str]:
    """The absolute pathname sockets of a `/proc/net/unix` listing, each once (abstract
    ones start with `@`, unnamed ones have no path; a path holding a newline is split
    by the kernel's format and lost)."""
    return [os.fsdecode(path) for path in _listed(text)]


def _unescape(field: bytes) -> str:
    """A mountinfo path: the kernel writes space, tab, newline and backslash as \\ooo."""
    parts = field.split(b"\\")
    out = bytearray(parts[0])
    for part in parts[1:]:
        code = part[:3]
        if len(code) == 3 and all(48 <= c <= 55 for c in code):
            out.append(int(code, 8))
            out += part[3:]
        else:
            out += b"\\" + part
    return os.fsdecode(bytes(out))


def mount_points(text: bytes) -> list[str]:
    """The mount points of a `/proc/self/mountinfo` listing."""
    points = []
    for line in text.split(b"\n"):
        fields = line.split(b" ", 5)
        if len(fields) > 4:
            points.append(_unescape(fields[4]))
    return points


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as source:
            return source.read()
    except OSError:
        return b""


def _skipped(path: str) -> bool:
    return any(path == top or path.startswith(top + "/") for top in SKIPPED)


def _real_socket(path: str) -> str | None:
    """The real path of the socket at `path` (symlinks followed by the kernel, in one
    resolution), or None when there is no socket there."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return None
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    return real if real.startswith("/") and not real.endswith(" (deleted)") else None


def _real_directory(path: str) -> str | None:
    """The real path of the directory at `path`, or None when there is none: as the
    kernel resolves it (one open, one readlink, where os.path.realpath takes an lstat
    per component: this runs for every call), else by os.path.realpath."""
    o_path = getattr(os, "O_PATH", None)
    if o_path is not None:
        try:
            fd = os.open(path, o_path | os.O_DIRECTORY | os.O_CLOEXEC)
        except (OSError, ValueError):
            return None  # missing, or not a directory
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            real = ""
        finally:
            os.close(fd)
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real
    real = os.path.realpath(path)
    return real if os.path.isdir(real) else None


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def mounted_sockets() -> tuple[str, ...]:
    """The mount points that are sockets (real paths already)."""
    points = mount_points(_read(MOUNTINFO))
    return tuple(point for point in points if _is_socket(point) and not _skipped(point))


def _resolve(paths: tuple[str, ...]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for path in paths:
        real = _real_socket(path)
        if real is not None and not _skipped(real):
            found[real] = None
    return tuple(found)


def listed() -> tuple[str, ...]:
    """The absolute paths `/proc/net/unix` lists now, each once."""
    return tuple(listed_paths(_read(PROC_NET_UNIX)))


def host_unix_sockets() -> tuple[str, ...]:
    """Real paths of the named Unix sockets found on this host (see the module)."""
    found = dict.fromkeys(mounted_sockets())
    found.update(dict.fromkeys(_resolve((*listed(), *WELL_KNOWN))))
    return tuple(found)


# Where host daemons put their sockets: with network off these are fresh, empty views
# in the command's mount namespace (`runtime_dirs`, `_argv.fresh_plan`), so a socket
# bound there after the call started is out of reach too. $XDG_RUNTIME_DIR is added,
# the caller's, when set.
RUNTIME_DIRS = ("/run", "/var/run", "/tmp")


def runtime_dirs(xdg_runtime_dir: str | None = None) -> tuple[str, ...]:
    """The real paths of the runtime directories that exist as directories here (the
    fixed ones and `xdg_runtime_dir`, default the caller's `$XDG_RUNTIME_DIR`), each
    once, none beneath another (`/var/run` is usually `/run`; `$XDG_RUNTIME_DIR`
    usually lies in it)."""
    if xdg_runtime_dir is None:
        xdg_runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    candidates = list(RUNTIME_DIRS)
    if xdg_runtime_dir and xdg_runtime_dir.startswith("/"):
        candidates.append(xdg_runtime_dir)
    found: list[str] = []
    for path in candidates:
        real = _real_directory(path)
        if real not in found and real is not None and not _skipped(real) and real != "/":
            found.append(real)
    return tuple(
        path
        for path in found
        if not any(other != path and path.startswith(other.rstrip("/") + "/") for other in found)
    )


class SocketScan:
    """`host_unix_sockets()` for a long-lived provider, without repeating work that
    cannot have changed: the mount points are taken again only after the mount table
    changed (`MountWatch`), and the listed paths are resolved again only when the set
    of paths `/proc/net/unix` lists changed. A resolved path kept from before is still
    checked where it is used: the launcher covers it only if it is still a socket,
    reached without a symlink (a component swapped for one since fails the call), so
    a kept path is never silently wrong; a socket renamed away was not found either
    way (the named gap)."""

    def __init__(self) -> None:
        self._mounts = MountWatch()
        self._listed: tuple[bytes, ...] | None = None
        self._resolved: tuple[str, ...] = ()

    def sockets(self) -> tuple[str, ...]:
        text = _read(PROC_NET_UNIX)
        paths = _listed(text)
        if paths != self._listed:
            self._resolved = _resolve(tuple(os.fsdecode(path) for path in paths))
            self._listed = paths
        found = dict.fromkeys(self._mounts.sockets())
        found.update(dict.fromkeys(self._resolved))
        found.update(dict.fromkeys(_resolve(WELL_KNOWN)))
        return tuple(found)

    def close(self) -> None:
        self._mounts.close()


class MountWatch:
    """`mounted_sockets()`, taken again only after the mount table changed: the kernel
    flags an open `/proc/self/mountinfo` (POLLPRI) once after every mount or unmount
    (a poll takes note of it). A mount point cannot stop being a socket without one.
    For a long-lived provider."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._sockets: tuple[str, ...] = ()

    def sockets(self) -> tuple[str, ...]:
        import select

        if self._fd is None:
            try:
                self._fd = os.open(MOUNTINFO, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return mounted_sockets()
            self._poller = select.poll()
            self._poller.register(self._fd, select.POLLPRI | select.POLLERR)
        elif not self._poller.poll(0):
            return self._sockets
        # The poll itself took note of the change: one during the scan below flags
        # the descriptor again.
        self._sockets = mounted_sockets()
        return self._sockets

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

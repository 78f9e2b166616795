"""The fs tools' roots pinned once: each writable root held open with its device and inode.

A session pins its workspace root and every temp root when it opens; each later fenced
call checks that each path still names the pinned directory and opens beneath the held fd.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Final

import attrs

from ..reprs import fields_repr
from ._protected import dir_location

WORKSPACE_ROOT: Final = "workspace root"
TEMP_ROOT: Final = "temp root"
# O_PATH (Linux): no read permission needed and nothing can be read through it; it
# serves only as the directory that openat2 and openat resolve beneath.
_PIN_FLAGS: Final = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC


class RootReplaced(Exception):
    """A pinned root no longer is the directory pinned (or never was): nothing is done.

    Not a sandbox denial: no wider mode makes the call mean what it meant, so no retry
    is offered. `reason` is the one line the model sees.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@attrs.frozen
class Pin:
    """One root as pinned: `fd` is -1 and `problem` says why when it could not be
    (`error`: the errno of the open that failed, if one did)."""

    __repr__ = fields_repr

    path: str
    kind: str
    real: str
    fd: int = -1
    dev: int = 0
    ino: int = 0
    problem: str | None = None
    error: int | None = None

    def unopened(self) -> OSError:
        """The failure of opening this root, as an OSError naming it."""
        code = self.error or errno.ENOENT
        return OSError(code, os.strerror(code), self.path)


def _open_directory(path: str) -> tuple[int, os.stat_result, str]:
    """An fd on the directory `path` names now, its stat, and where it really is."""
    fd = os.open(path, _PIN_FLAGS)
    try:
        return fd, os.fstat(fd), dir_location(fd) or os.path.realpath(path)
    except BaseException:
        os.close(fd)
        raise


def _unusable(error: OSError, *, now: bool) -> str:
    if isinstance(error, FileNotFoundError):
        return "it no longer exists" if now else "it does not exist"
    if isinstance(error, NotADirectoryError):
        return "it is no longer a directory" if now else "it is not a directory"
    return f"it cannot be opened: {error.strerror or error}"


def pin_root(path: str, kind: str, *, strict: bool) -> Pin:
    """Open `path` and remember which directory it is; never raises for the path.

    `strict`: the root must be its own real path (a session's roots are pinned at their
    real path; one that resolves elsewhere already had a component swapped for a symlink).
    """
    try:
        fd, st, real = _open_directory(path)
    except OSError as error:
        return Pin(path, kind, path, problem=_unusable(error, now=False), error=error.errno)
    except ValueError:  # a NUL byte
        return Pin(path, kind, path, problem="it is not a valid path")
    if strict and real != os.path.normpath(path):
        os.close(fd)
        return Pin(path, kind, real, problem=f"it is reached through a symlink, to {real}")
    return Pin(path, kind, real, fd, st.st_dev, st.st_ino)


def change(pin: Pin) -> str | None:
    """How `pin`'s path differs now from the directory pinned, or None when it does not."""
    try:
        fd, st, real = _open_directory(pin.path)
    except OSError as error:
        return _unusable(error, now=True)
    os.close(fd)
    if real != pin.real:
        through = " through a symlink" if real != os.path.normpath(pin.path) else ""
        return f"it now resolves to {real}{through}"
    if (st.st_dev, st.st_ino) != (pin.dev, pin.ino):
        return "it is now another directory"
    return None


def _what_to_do(kind: str) -> str:
    if kind == WORKSPACE_ROOT:
        return "Open a new session from the directory you mean."
    return "Open a new session (or restart the harness if the temp directory moved on purpose)."


def _close_all(fds: list[int]) -> None:
    while fds:
        with contextlib.suppress(OSError):
            os.close(fds.pop())


@attrs.define(eq=False)
class PinnedRoots:
    """A session's writable roots, held open from `pin()` until `close()`.

    `since` names the moment they were pinned, for the refusal text. `strict` (a
    session's roots): a root that could not be pinned refuses every call; otherwise
    (roots pinned for one call) only a call beneath it fails, with the OS's error.
    Calls run in worker threads: `use()` keeps the fds open while a call holds them, so
    a close that races a call takes effect when it ends (no fd number reused under it).
    """

    __repr__ = fields_repr

    workspace: Pin
    temps: tuple[Pin, ...]
    since: str = "the session opened"
    strict: bool = True
    _fds: list[int] = attrs.field(factory=list)
    _users: int = attrs.field(default=0, init=False)
    _closing: bool = attrs.field(default=False, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _finalizer: weakref.finalize[[list[int]], PinnedRoots] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        # A session dropped without close() still gives its descriptors back.
        self._finalizer = weakref.finalize(self, _close_all, self._fds)

    @classmethod
    def pin(
        cls,
        workspace_root: str,
        temp_roots: Sequence[str],
        *,
        strict: bool = True,
        since: str = "the session opened",
    ) -> PinnedRoots:
        """Pin `workspace_root` and each of `temp_roots` (one fd each, shared when equal)."""
        pins: dict[str, Pin] = {}
        for path, kind in ((workspace_root, WORKSPACE_ROOT), *((t, TEMP_ROOT) for t in temp_roots)):
            if path not in pins:
                pins[path] = pin_root(path, kind, strict=strict)
        fds = [pin.fd for pin in pins.values() if pin.fd >= 0]
        temps = tuple(pins[path] for path in dict.fromkeys(temp_roots))
        return cls(pins[workspace_root], temps, since, strict, fds)

    @property
    def temp_paths(self) -> tuple[str, ...]:
        return tuple(pin.path for pin in self.temps)

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def held(self) -> tuple[Pin, ...]:
        return tuple(dict.fromkeys((self.workspace, *self.temps)))

    def check(self) -> None:
        """Raise RootReplaced when any root is not (or no longer) the directory pinned.

        Every root, not only the one a path lies under: a swapped root refuses the whole
        session's fenced calls, as the provider refuses every command of it.
        """
        for pin in self.held():
            if pin.problem is not None and not self.strict:
                continue  # nothing was pinned to compare with; a call beneath it fails
            if pin.problem is not None:
                why = f"could not be pinned when {self.since} ({pin.problem})"
            elif (changed := change(pin)) is not None:
                why = f"was replaced since {self.since} ({changed})"
            else:
                continue
            raise RootReplaced(
                f"the {pin.kind} {pin.path} {why}; nothing was read or written. "
                + _what_to_do(pin.kind)
            )

    def spellings(self, roots: Sequence[str]) -> tuple[tuple[str, Pin], ...]:
        """Each of `roots` as named and as pinned real path, with its pin.

        A root that is not pinned here is refused: judging it by its path now is what
        pinning exists to prevent.
        """
        by_path = {pin.path: pin for pin in self.held()}
        pairs: list[tuple[str, Pin]] = []
        for root in roots:
            pin = by_path.get(root)
            if pin is None:
                raise RootReplaced(
                    f"the writable root {root} was not pinned when {self.since}; nothing "
                    "was read or written. Open a new session."
                )
            pairs += [(root, pin), (pin.real, pin)]
        return tuple(dict.fromkeys(pairs))

    @contextlib.contextmanager
    def use(self) -> Iterator[PinnedRoots]:
        """Hold the fds open for one call; RootReplaced when the roots are closed."""
        with self._lock:
            if self._closing or self.closed:
                raise RootReplaced("this session is closed; nothing was read or written")
            self._users += 1
        try:
            yield self
        finally:
            with self._lock:
                self._users -= 1
                last = self._closing and self._users == 0
            if last:
                self._finalizer()

    def close(self) -> None:
        """Close every fd now, or when the last call holding them ends. Idempotent."""
        with self._lock:
            self._closing = True
            idle = self._users == 0
        if idle:
            self._finalizer()

    def __enter__(self) -> PinnedRoots:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

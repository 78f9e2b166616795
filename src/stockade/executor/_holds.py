"""The executor's placeholders (sandbox/placeholders.py): made and held before a
runner starts, one lock each however many processes use it, removed a moment after.
"""

from __future__ import annotations

import collections
import errno
import os

import attrs
import trio

from ..errors import CommandStartError, SandboxUnavailable
from ..sandbox import placeholders

# How long a call waits for a placeholder another process is removing right now (it
# holds the placeholder's lock for one unlink): longer means something is wrong.
HOLD_PATIENCE = 2.0
# A placeholder none of our processes uses stays (held) this long before it is
# removed: calls in a row then neither make nor remove it, nor change the root under
# the provider's guard memo. Removed at once when the executor stops.
PLACEHOLDER_LINGER = 1.0
_SHORTAGES = (errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOSPC)


async def _hold_one(path: str, directory: bool, parents: placeholders.Parents) -> int:
    """An fd holding the placeholder at `path`, waiting out a removal in progress;
    SandboxUnavailable when it cannot be held (CommandStartError for a shortage)."""
    deadline = trio.current_time() + HOLD_PATIENCE
    while True:
        try:
            fd = placeholders.hold(path, directory, parents)
        except placeholders.StaleView:
            raise  # the caller asks the provider again
        except OSError as error:
            if error.errno in _SHORTAGES:  # a passing shortage, not the sandbox's fault
                raise CommandStartError(
                    f"could not start the command: {error.strerror or error}"
                ) from None
            raise SandboxUnavailable(
                f"cannot make or hold the placeholder that keeps {path} protected: "
                f"{error.strerror or error}; remove what stands there, or retry"
            ) from None
        if fd is not None:
            return fd
        if trio.current_time() > deadline:
            raise SandboxUnavailable(
                f"the placeholder that keeps {path} protected stayed locked by another "
                f"process for {HOLD_PATIENCE:g}s; retry"
            )
        await trio.sleep(0.002)


@attrs.define(eq=False, repr=False)
class PlaceholderHolds:
    """Which placeholders this executor's processes use, and the locks it holds."""

    linger: float = PLACEHOLDER_LINGER
    # How many of our processes use each placeholder, and the fd holding its lock.
    _uses: collections.Counter[str] = attrs.field(factory=collections.Counter, init=False)
    _held: dict[str, int] = attrs.field(factory=dict, init=False)
    # Held placeholders none of our processes uses, and since when (trio time).
    _idle: dict[str, float] = attrs.field(factory=dict, init=False)
    _idle_added: trio.Event = attrs.field(factory=trio.Event, init=False)
    # Let go of, not removed yet (still a mount point here: "Device or resource busy").
    _unused: set[str] = attrs.field(factory=set, init=False)

    async def hold(self, blockers: tuple[str, ...], directories: tuple[str, ...]) -> None:
        """Hold every placeholder a call's runner mounts over, before it starts."""
        counted: list[str] = []
        parents = placeholders.Parents()
        try:
            for path in blockers:
                held = self._held.get(path)
                if held is not None and not placeholders.still_held(held, path):
                    # Replaced meanwhile (by no stockade process): hold what is there now.
                    os.close(self._held.pop(path))
                    self._idle.pop(path, None)
                if path not in self._held:
                    fd = await _hold_one(path, path in directories, parents)
                    if path in self._held:  # another call took it meanwhile
                        os.close(fd)
                    else:
                        self._held[path] = fd
                self._idle.pop(path, None)
                self._uses[path] += 1
                counted.append(path)
            parents.check()  # each directory it held in is still where its paths lead
        except BaseException:
            self.let_go(counted)
            raise
        finally:
            parents.close()

    def let_go(self, paths: tuple[str, ...] | list[str]) -> None:
        """One use fewer of each; a placeholder none of ours uses becomes idle: still
        held for `linger`, then let go of and removed (`remove_idle`)."""
        now = trio.current_time()
        for path in paths:
            self._uses[path] -= 1
            if self._uses[path] <= 0:
                del self._uses[path]
                if path in self._held:
                    self._idle[path] = now
                    self._idle_added.set()

    async def remove_idle(self) -> None:
        """Forever: let go of each placeholder idle for `linger`, and remove it."""
        while True:
            if not self._idle:
                await self._idle_added.wait()
                self._idle_added = trio.Event()
                continue
            await trio.sleep_until(min(self._idle.values()) + self.linger)
            now = trio.current_time()
            for path, since in list(self._idle.items()):
                if since + self.linger <= now:
                    self._unhold(path)
            self._sweep()

    async def release_all(self) -> None:
        """The executor is stopping and every process of ours is gone: let go of all,
        and remove them, waiting a short bounded time for sandboxes still tearing
        down; shielded (the harness is leaving)."""
        for path in list(self._held):
            self._unhold(path)
        with trio.CancelScope(shield=True), trio.move_on_after(1.0):
            while self._unused:
                self._sweep()
                if self._unused:
                    await trio.sleep(0.02)

    def _unhold(self, path: str) -> None:
        """Let go of an idle placeholder: removed unless another process holds it
        (then its last user removes it)."""
        self._idle.pop(path, None)
        fd = self._held.pop(path, None)
        if fd is not None:
            os.close(fd)
        self._unused.add(path)

    def _sweep(self) -> None:
        parents = placeholders.Parents()
        try:
            for path in sorted(self._unused, reverse=True):  # the deepest first
                if path in self._uses or placeholders.sweep(path, parents):
                    self._unused.discard(path)
        finally:
            parents.close()

"""Empty command cgroups kept for their session's next calls: making and removing a v1
group in three hierarchies cost ~0.3 ms of a 2.3 ms Landlock job at scale (issue 26).

A group comes back only when reusing it changes no fact: see GroupPool.
"""

from __future__ import annotations

import attrs

from ..limits.cgroups import Group, GroupUsage

# At most this many empty groups kept per harness.
POOL_SIZE = 1024
# What a group may still have charged to come back (a command's page cache, mostly): it
# counts against the next command's memory limit until reclaimed, and the next peak is
# counted above it. At most this, and at most 1/64 of the memory limit.
POOL_CHARGE_LEFT = 16 << 20

PoolKey = tuple[str, int | None, int | None]  # (session, processes, memory) as made


def charge_allowed(memory_limit: int | None) -> int:
    """How much may stay charged to a group that is reused under `memory_limit`."""
    if memory_limit is None:
        return POOL_CHARGE_LEFT
    return min(POOL_CHARGE_LEFT, memory_limit // 64)


@attrs.define(eq=False, repr=False)
class GroupPool:
    """Each session's empty command groups, by the limits they were made with.

    Reused only when exact: a group the caller offers (a Landlock call's: its launcher
    reaps everything it started, so the group is empty once the call has ended; bwrap's
    namespace init is reaped by whoever inherits it, at that process's pace, and a root
    command unconfined could move a process of its own elsewhere), empty (pids.current
    0: not even a zombie holds a process of the next command's limit), with at most
    `charge_allowed` still charged, its memory peak reset. The next call's usage is
    counted from the reading it was kept with (GroupUsage.since)."""

    size: int = POOL_SIZE
    _free: dict[PoolKey, list[tuple[Group, GroupUsage]]] = attrs.field(factory=dict)
    _count: int = 0

    def take(self, key: PoolKey) -> tuple[Group, GroupUsage] | None:
        """An empty group of `key` and its reading as kept, or None (make one)."""
        free = self._free.get(key)
        if not free:
            return None
        self._count -= 1
        return free.pop()

    def keep(
        self, group: Group, last: GroupUsage | None, key: PoolKey, memory_limit: int | None
    ) -> bool:
        """Take `group` back after a call, whose end read `last`; False: remove it."""
        if last is None or self._count >= self.size or not group.reusable:
            return False
        if last.processes_now != 0 or (last.memory_now or 0) > charge_allowed(memory_limit):
            return False
        try:
            group.reset_peaks()
        except OSError:
            return False
        self._free.setdefault(key, []).append((group, last))
        self._count += 1
        return True

    def drop(self, owner: str) -> None:
        """Forget a session's groups (removed with its session group)."""
        for key in [k for k in self._free if k[0] == owner]:
            self._count -= len(self._free.pop(key))

    def clear(self) -> None:
        self._free.clear()
        self._count = 0

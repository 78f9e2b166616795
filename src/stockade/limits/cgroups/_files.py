"""Reading and writing a cgroup's files: the usage a group's files give (GroupUsage),
with os.open/os.read (a call reads five to seven of them), and what changed since a
reading.
"""

from __future__ import annotations

import os

import msgspec

from ._host import CPU, MEMORY, PIDS


class GroupUsage(msgspec.Struct, frozen=True):
    """What a group used; None where the host cannot tell.

    The event counts follow the kernel's own semantics: v1 counts a refused fork in the
    group it was refused in and an OOM kill in the victim's group; v2's `pids.events` and
    `memory.events` count hits of this group's limits and its descendants'."""

    cpu_seconds: float | None
    memory_peak: int | None
    processes_peak: int | None  # pids.peak, where the kernel has it
    processes_refused: int  # pids.events "max"
    oom_kills: int  # v2 memory.events oom_kill; v1 memory.oom_control oom_kill
    processes_now: int | None = None
    # Charged now (v2 memory.current; v1 memory.usage_in_bytes) and processes now: read
    # only for a group that may serve another call (GroupPool), else None.
    memory_now: int | None = None

    def since(self, before: GroupUsage) -> GroupUsage:
        """What was used after `before`, a reading of the same group taken when its peaks
        were reset (`Group.reset_peaks`): counts and CPU time are differences; the memory
        peak is counted above what was charged at the reset (a previous command's page
        cache, say); the kernel cannot reset pids.peak, so the processes peak is known
        only when it rose above the earlier one (else None)."""

        def minus(now: int, then: int) -> int:
            return max(0, now - then)

        cpu = None
        if self.cpu_seconds is not None and before.cpu_seconds is not None:
            cpu = max(0.0, self.cpu_seconds - before.cpu_seconds)
        peak = self.memory_peak
        if peak is not None and before.memory_now is not None:
            peak = minus(peak, before.memory_now)
        processes_peak = self.processes_peak
        if processes_peak is not None and before.processes_peak is not None:
            processes_peak = processes_peak if processes_peak > before.processes_peak else None
        return GroupUsage(
            cpu_seconds=cpu,
            memory_peak=peak,
            processes_now=self.processes_now,
            processes_peak=processes_peak,
            processes_refused=minus(self.processes_refused, before.processes_refused),
            oom_kills=minus(self.oom_kills, before.oom_kills),
            memory_now=self.memory_now,
        )


class OwnLimits(msgspec.Struct, frozen=True):
    """A group's counters of its OWN limits, which say whether that group's limit (not
    one above or below it) refused (docs/limits.md, "Whose limit it was"); None where
    this host has no such counter.

    `processes_refused`: v2 since Linux 6.11, `pids.events.local` max (None on v1, on
    older v2, and with `pids_localevents`, where it counts the group's own forks
    refused by any limit). `memory_refused`: v2 `memory.events.local` oom, the OOMs at
    this group's own limit. `memory_failures`: v1 `memory.failcnt` (and
    `memory.memsw.failcnt`), the charges that failed at this group's own limit, those
    that reclaim then satisfied too. The peaks are the group's high-water marks."""

    processes_peak: int | None = None
    processes_refused: int | None = None
    memory_peak: int | None = None
    memory_refused: int | None = None
    memory_failures: int | None = None

    def since(self, before: OwnLimits | None) -> OwnLimits:
        """The counts since `before` (the same group read earlier); the peaks as now."""
        if before is None:
            return self

        def minus(now: int | None, then: int | None) -> int | None:
            return None if now is None or then is None else max(0, now - then)

        return msgspec.structs.replace(
            self,
            processes_refused=minus(self.processes_refused, before.processes_refused),
            memory_refused=minus(self.memory_refused, before.memory_refused),
            memory_failures=minus(self.memory_failures, before.memory_failures),
        )


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read_bytes(path: str) -> bytes:
    # A cgroup file is one small read; os.open/os.read cost a fifth of open() here,
    # and a call reads up to seven of them (issue 26's per-job cost).
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _number(path: str, key: str | None = None) -> int | None:
    """A file's number, or the one after `key` in a flat-keyed file ("max 3"), 0 when
    the key is not there; None when the file cannot be read (no such file, group gone)."""
    try:
        return _parse(_read_bytes(path), key)
    except OSError:
        return None


def _parse(text: bytes, key: str | None) -> int:
    if key is None:
        return int(text)
    prefix = key.encode() + b" "
    for line in text.splitlines():
        if line.startswith(prefix):
            return int(line[len(prefix) :])
    return 0


# The files a group's usage is read from, per version and controller: (field, file,
# key in a flat-keyed file or None).
_USAGE_FILES: dict[str, dict[str, tuple[tuple[str, str, str | None], ...]]] = {
    "v2": {
        CPU: (("cpu_usec", "cpu.stat", "usage_usec"),),
        MEMORY: (
            ("memory_peak", "memory.peak", None),
            ("memory_now", "memory.current", None),
            ("oom_kills", "memory.events", "oom_kill"),
        ),
        PIDS: (
            ("processes_now", "pids.current", None),
            ("processes_peak", "pids.peak", None),
            ("processes_refused", "pids.events", "max"),
        ),
    },
    "v1": {
        CPU: (("cpu_nsec", "cpuacct.usage", None),),
        MEMORY: (
            ("memory_peak", "memory.max_usage_in_bytes", None),
            ("memory_now", "memory.usage_in_bytes", None),
            ("oom_kills", "memory.oom_control", "oom_kill"),
        ),
        PIDS: (
            ("processes_now", "pids.current", None),
            ("processes_peak", "pids.peak", None),
            ("processes_refused", "pids.events", "max"),
        ),
    },
}

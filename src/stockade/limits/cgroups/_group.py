"""One group of ours in every hierarchy the host uses: made (here, or by the launcher
from the options it is given), limited, read, reused, killed and removed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import signal
import time
from collections.abc import Iterator

import attrs

from ._files import _USAGE_FILES, GroupUsage, OwnLimits, _number, _parse, _read_bytes, _write
from ._host import (
    CPU,
    KILL_TIMEOUT,
    MEMORY,
    PIDS,
    REMOVE_TIMEOUT,
    CgroupError,
    CgroupHost,
    Hierarchy,
    _cgroups_of,
    _read,
)

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_NAME_LIMIT = 64


def safe_name(identifier: str) -> str:
    """`identifier` as a cgroup name part: [A-Za-z0-9_-] only, at most 73 characters; an
    id that had to change gets a hash of the original, so two ids never share a name."""
    cleaned = _UNSAFE.sub("_", identifier)[:_NAME_LIMIT]
    if cleaned != identifier or not cleaned:
        cleaned += "-" + hashlib.sha256(identifier.encode()).hexdigest()[:8]
    return cleaned


# Usage fields read only to decide whether a group may serve another call.
_REUSE_ONLY = frozenset({"memory_now", "processes_now"})


@attrs.define(eq=False, repr=False)
class Group:
    """One group of ours, the same named directory in every hierarchy the host uses.

    `kind` is "tree" (a harness's subtree), "session" or "command"; processes join
    command groups (on v2 only those can hold them)."""

    host: CgroupHost
    kind: str
    relative: str  # below our own cgroup: "stockade-p4026531836-12-ab12cd34/s-x/c-y"
    directories: tuple[str, ...]  # one per hierarchy, in order
    # The hierarchies it is in: all the host's, but a command group needs no memory
    # cgroup when neither it nor its session has a memory limit (one per call is the
    # largest part of what limits cost at scale: docs/limits.md).
    hierarchies: tuple[Hierarchy, ...] = attrs.field(
        default=attrs.Factory(lambda self: self.host.hierarchies, takes_self=True)
    )
    # (field, path, key) of each usage file, worked out once per group: all of them, and
    # those a group that serves no other call needs.
    _usage_files: tuple[tuple[str, str, str | None], ...] = attrs.field(init=False, repr=False)
    _usage_files_once: tuple[tuple[str, str, str | None], ...] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        files = _USAGE_FILES.get(self.host.version or "", {})
        self._usage_files = tuple(
            (field, f"{directory}/{name}", key)
            for hierarchy, directory in zip(self.hierarchies, self.directories, strict=True)
            for controller in sorted(hierarchy.controllers)
            for field, name, key in files.get(controller, ())
        )
        self._usage_files_once = tuple(
            entry for entry in self._usage_files if entry[0] not in _REUSE_ONLY
        )

    def _fresh_limits(
        self, processes: int | None, memory: int | None
    ) -> list[tuple[str, str, bool]]:
        """(path, value, only if the file exists) to write in order to limit this group
        as just made (every limit still at "max": v1's memsw may follow the limit)."""
        for name, value in (("processes", processes), ("memory", memory)):
            if value is not None and (type(value) is not int or value < 1):
                raise ValueError(f"{name} must be a positive whole number, not {value!r}")
        writes: list[tuple[str, str, bool]] = []
        v2 = self.host.version == "v2"
        for hierarchy, directory in zip(self.hierarchies, self.directories, strict=True):
            if processes is not None and PIDS in hierarchy.controllers:
                writes.append((f"{directory}/pids.max", str(processes), False))
            if memory is None or MEMORY not in hierarchy.controllers:
                continue
            if v2:
                writes.append((f"{directory}/memory.max", str(memory), False))
                # No memory.swap.max: no swap accounting in this kernel, nothing to turn off.
                writes.append((f"{directory}/memory.swap.max", "0", True))
                continue
            writes.append((f"{directory}/memory.limit_in_bytes", str(memory), False))
            if self.host.swap and self.host.memsw:
                writes.append((f"{directory}/memory.memsw.limit_in_bytes", str(memory), False))
        return writes

    def _child(
        self, name: str, kind: str, processes: int | None = None, memory: int | None = None
    ) -> Group:
        relative = f"{self.relative}/{name}" if self.relative else name
        made: list[str] = []
        handed = sorted(self.host.controllers - {CPU}) if self.host.version == "v2" else []
        enable = " ".join(f"+{c}" for c in handed)
        try:
            for directory in self.directories:
                child = os.path.join(directory, name)
                os.mkdir(child)
                made.append(child)
                if enable and kind != "command":
                    # Sessions and the tree hold no process: they hand the controllers on.
                    _write(os.path.join(child, "cgroup.subtree_control"), enable)
        except OSError as error:
            for child in reversed(made):
                with contextlib.suppress(OSError):  # best effort; sweep() finds the rest
                    os.rmdir(child)
            where = error.filename or relative
            raise CgroupError(f"cannot make the {kind} cgroup {where}: {error.strerror}") from None
        group = Group(self.host, kind, relative, tuple(made), self.hierarchies)
        try:
            for path, value, if_present in group._fresh_limits(processes, memory):
                try:
                    _write(path, value)
                except FileNotFoundError:
                    if not if_present:
                        raise
        except OSError as error:
            group.remove()
            raise CgroupError(
                f"cannot limit the {kind} cgroup {error.filename or relative}: {error.strerror}"
            ) from None
        except BaseException:
            group.remove()
            raise
        return group

    def command(
        self, call_id: str, *, processes: int | None = None, memory: int | None = None
    ) -> Group:
        """A command group below this session group, limited as asked."""
        return self._child(self._command_name(call_id), "command", processes, memory)

    def command_for_launcher(
        self,
        call_id: str,
        *,
        processes: int | None = None,
        memory: int | None = None,
        without: frozenset[str] = frozenset(),
    ) -> tuple[Group, tuple[str, ...]]:
        """A command group below this session group, NOT made here: the launcher's
        options that make it, limit it and join it (`--cgroup-make`, `--cgroup-set`,
        `--cgroup-procs`), so the harness spends no time on it per command. The caller
        removes the group (remove() or try_remove()) once the command has ended; a
        launcher that failed before making it leaves nothing to remove. `without`: the
        controllers whose hierarchies it is not made in (the command stays in the
        harness's own cgroup there)."""
        name = self._command_name(call_id)
        kept = [
            (hierarchy, directory)
            for hierarchy, directory in zip(self.hierarchies, self.directories, strict=True)
            if hierarchy.controllers - without
        ]
        group = Group(
            self.host,
            "command",
            f"{self.relative}/{name}",
            tuple(f"{directory}/{name}" for _, directory in kept),
            tuple(hierarchy for hierarchy, _ in kept),
        )
        options: list[str] = []
        for directory in group.directories:
            options += ["--cgroup-make", directory]
        for path, value, if_present in group._fresh_limits(processes, memory):
            setting = "--cgroup-set-if-present" if if_present else "--cgroup-set"
            options += [setting, f"{path}={value}"]
        return group, (*options, *group.join_options())

    def _command_name(self, call_id: str) -> str:
        if self.kind != "session":
            raise CgroupError(f"command groups go below a session group, not a {self.kind}")
        return "c-" + safe_name(call_id)

    def procs_files(self) -> list[str]:
        """The cgroup.procs files a process must join, one per hierarchy (write "0", or
        its pid, to each; on v1 a process joins each hierarchy separately)."""
        return [os.path.join(d, "cgroup.procs") for d in self.directories]

    def usage(self, *, reuse: bool = True) -> GroupUsage:
        """What the group and everything below it used so far (read before remove()).
        `reuse` False: not what only deciding its reuse needs (memory_now, processes_now
        are None), two reads fewer for a group that serves one call."""
        found: dict[str, int | None] = {}
        for field, path, key in self._usage_files if reuse else self._usage_files_once:
            try:
                found[field] = _parse(_read_bytes(path), key)
            except OSError:  # no such file here, or the group is gone
                found[field] = None
        usec, nsec = found.get("cpu_usec"), found.get("cpu_nsec")
        cpu_seconds = usec / 1e6 if usec is not None else None if nsec is None else nsec / 1e9
        return GroupUsage(
            cpu_seconds=cpu_seconds,
            memory_peak=found.get("memory_peak"),
            processes_now=found.get("processes_now"),
            processes_peak=found.get("processes_peak"),
            processes_refused=found.get("processes_refused") or 0,
            oom_kills=found.get("oom_kills") or 0,
            memory_now=found.get("memory_now"),
        )

    def own_limits(self) -> OwnLimits:
        """This group's counters of its own limits (read only when a call's end needs
        to know whose limit refused: a few reads more)."""
        found: dict[str, int | None] = {}
        v2 = self.host.version == "v2"
        for hierarchy, directory in zip(self.hierarchies, self.directories, strict=True):
            if PIDS in hierarchy.controllers:
                found["processes_peak"] = _number(f"{directory}/pids.peak")
                if v2 and not self.host.pids_local_events:
                    found["processes_refused"] = _number(f"{directory}/pids.events.local", "max")
            if MEMORY not in hierarchy.controllers:
                continue
            if v2:
                found["memory_peak"] = _number(f"{directory}/memory.peak")
                found["memory_refused"] = _number(f"{directory}/memory.events.local", "oom")
                continue
            found["memory_peak"] = _number(f"{directory}/memory.max_usage_in_bytes")
            failures = _number(f"{directory}/memory.failcnt")
            if failures is not None and self.host.swap and self.host.memsw:
                failures += _number(f"{directory}/memory.memsw.failcnt") or 0
            found["memory_failures"] = failures
        return OwnLimits(**found)

    @property
    def reusable(self) -> bool:
        """Whether this group can serve one command after another: its peaks can be
        reset (v1's memory.max_usage_in_bytes; v2's memory.peak and pids.peak cannot be
        before Linux 6.12, so v2 groups serve one command) and the pids controller can
        tell it is empty."""
        controllers = {c for h in self.hierarchies for c in h.controllers}
        return self.kind == "command" and self.host.version == "v1" and PIDS in controllers

    def reset_peaks(self) -> None:
        """Start the memory peak again from what is charged now (v1: written "0",
        memory.max_usage_in_bytes becomes memory.usage_in_bytes), and the count of
        charges that failed at its limit from 0 (whose limit refused the next call's
        OOM kill is judged by it)."""
        for hierarchy, directory in zip(self.hierarchies, self.directories, strict=True):
            if MEMORY in hierarchy.controllers and self.host.version == "v1":
                _write(f"{directory}/memory.max_usage_in_bytes", "0")
                _write(f"{directory}/memory.failcnt", "0")
                if self.host.swap and self.host.memsw:
                    _write(f"{directory}/memory.memsw.failcnt", "0")

    def join_options(self) -> tuple[str, ...]:
        """The launcher's options that put its process in this (existing) group."""
        return tuple(a for path in self.procs_files() for a in ("--cgroup-procs", path))

    def _members(self) -> list[tuple[int, Hierarchy, str]]:
        """(pid, hierarchy, group path) of every process in the group or below."""
        found = []
        for hierarchy, top in zip(self.hierarchies, self.directories, strict=True):
            base = hierarchy.path.rstrip("/") + "/" + self.relative
            for directory in _cgroup_dirs(top):
                found += [(pid, hierarchy, base) for pid in _procs(directory)]
        return found

    def kill(self, timeout: float = KILL_TIMEOUT, pinned: list[int] | None = None) -> bool:
        """SIGKILL every process in the group and below; True once none is left, False
        if some still are after `timeout` seconds (stuck in the kernel).

        v2's cgroup.kill where there is one; then (v1, older v2) rounds of: list every
        cgroup.procs, pin each pid with a pidfd, re-check the pinned process is still in
        the group (a pid read from a file may be reused), SIGKILL it through the pidfd.
        No freezer (a fourth hierarchy to make and join per spawn): a killed process
        forks no more, each round kills all it saw, and pids.max bounds the rest.

        `pinned`: the pidfds of the processes killed are added to it, not closed (the
        caller's to close; PINNED_MAX at most): a harness that reaps what comes to it
        reaps those, and only those, once they are gone (v2: the members found before
        cgroup.kill)."""
        # Each process is pinned once (it is listed in every hierarchy, and again each
        # round until it is gone): one descriptor a process, however long it takes.
        seen: set[int] = set()

        def kill_member(pid: int, hierarchy: Hierarchy, path: str) -> None:
            keep = pinned if pinned is not None and pid not in seen else None
            if keep is not None and len(keep) >= PINNED_MAX:
                keep = None  # a descriptor each: past this many, killed and left as ever
            if _kill_if_member(self.host.proc_root, pid, hierarchy.key, path, keep):
                seen.add(pid)

        if pinned is not None and self.host.version == "v2":
            for pid, hierarchy, path in self._members():
                kill_member(pid, hierarchy, path)
        for directory in self.directories if self.host.version == "v2" else ():
            # No cgroup.kill before Linux 5.14 (or the group is gone): the loop does it.
            with contextlib.suppress(FileNotFoundError):
                _write(os.path.join(directory, "cgroup.kill"), "1")
        deadline = time.monotonic() + timeout
        pause = 0.0005
        while True:
            members = self._members()
            if not members:
                return True
            for pid, hierarchy, path in members:
                kill_member(pid, hierarchy, path)
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def remove(self, timeout: float = REMOVE_TIMEOUT, pinned: list[int] | None = None) -> None:
        """Kill what is left, then remove the group and everything below it, leaves first.
        Idempotent; an already-gone group is fine. CgroupError if one stays busy.
        `pinned`: as `kill`'s."""
        if self.try_remove():
            return
        self.kill(pinned=pinned)
        deadline = time.monotonic() + timeout
        for directory in self.directories:
            for each in reversed(list(_cgroup_dirs(directory))):
                _rmdir_until(each, deadline)

    def try_remove(self) -> bool:
        """The usual case, cheaply: an empty leaf, one rmdir per hierarchy."""
        for directory in self.directories:
            try:
                os.rmdir(directory)
            except FileNotFoundError:
                continue
            except OSError:
                return False
        return True


# The most processes one kill pins for its caller (a descriptor each): past it, the rest
# are killed as ever and not pinned.
PINNED_MAX = 1024


def _cgroup_dirs(top: str) -> Iterator[str]:
    """`top` and every cgroup below it, parents before children."""
    todo = [top]
    while todo:
        directory = todo.pop()
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            continue
        yield directory
        todo += [e.path for e in entries if e.is_dir(follow_symlinks=False)]


def _kill_if_member(
    proc_root: str, pid: int, key: str, path: str, pinned: list[int] | None = None
) -> bool:
    """SIGKILL `pid` if it is (still) in the group at `path`, race-free: the pidfd pins
    the process first, so a pid reused after the check cannot be the one signalled.
    `pinned`: the pidfd of a member is kept there instead of closed (True: it was)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    kept = False
    try:
        now = _cgroups_of(os.path.join(proc_root, str(pid))).get(key, "")
        if now == path or now.startswith(path + "/"):
            if pinned is not None:
                pinned.append(pidfd)
                kept = True
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass  # exited meanwhile (its /proc entry gone, or ESRCH)
    finally:
        if not kept:
            os.close(pidfd)
    return kept


def _rmdir_until(directory: str, deadline: float) -> None:
    while True:
        try:
            os.rmdir(directory)
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno not in (errno.EBUSY, errno.ENOTEMPTY) or time.monotonic() > deadline:
                raise CgroupError(
                    f"cannot remove the cgroup {directory}: {error.strerror}"
                ) from None
        time.sleep(0.005)


def _procs(directory: str) -> list[int]:
    """The processes a cgroup lists (0 is one in a pid namespace we cannot see)."""
    try:
        text = _read(os.path.join(directory, "cgroup.procs"))
    except FileNotFoundError:
        return []  # removed meanwhile
    except OSError as error:
        raise CgroupError(f"cannot read {directory}/cgroup.procs: {error.strerror}") from None
    return [int(pid) for pid in text.split() if pid != "0"]

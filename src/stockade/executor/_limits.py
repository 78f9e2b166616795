"""Each call's limits in force: its cgroup where the host offers one, the launcher's
options that make it and put the command in it and set its rlimits, and what it used.

The launcher (the Landlock runner itself, or `--limits-only` before bwrap and before an
unconfined command) makes the call's group, limits and joins it before the command
exists, then sets the rlimits last (docs/limits.md); the harness removes the group.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import time
from collections.abc import Awaitable, Callable
from functools import partial

import attrs
import msgspec
import trio

from ..limits import (
    CPU_CHECK_INTERVAL,
    AtLimit,
    Cause,
    Claim,
    Enforcement,
    Evidence,
    HostLimits,
    Limits,
    Mechanism,
    SessionLimits,
    Usage,
    classify_end,
    plan,
    reached_at,
    rlimits,
)
from ..limits.cgroups import (
    MEMORY,
    CgroupError,
    CgroupHost,
    CgroupTree,
    Group,
    GroupUsage,
    OwnLimits,
    detect,
    sweep,
)
from ..messages import LimitClaim, LimitHit, ResourceUse, ShellResult
from ..vocab import SpawnTrait
from ._orphans import reap_pinned, reaps_orphans
from ._pool import GroupPool, PoolKey

# A confined call's runner shares the command's cgroup (the Landlock launcher's monitor
# and init; bwrap and its namespace's init): counted against the processes limit, so
# the group allows that many more.
LAUNCHER_PROCESSES = 2
KILLED = 128 + 9  # the shell's status for a SIGKILL
_OOM_KILL = re.compile(rb"^oom_kill (\d+)$", re.MULTILINE)


# How old a reading of the host's OOM kill counter a call's start may take (not a read
# of /proc/vmstat per call); its end reads it again only when the command died of a
# SIGKILL nobody in stockade sent.
OOM_COUNTER_AGE = 1.0


def host_oom_kills() -> int:
    """The host's OOM kills since boot (/proc/vmstat), 0 when it cannot be read."""
    try:
        with open("/proc/vmstat", "rb") as vmstat:
            match = _OOM_KILL.search(vmstat.read())
    except OSError:
        return 0
    return int(match[1]) if match else 0


@attrs.define(eq=False, repr=False)
class CallLimits:
    """One call's limits: the plan, its cgroup (None: rlimits only) and the launcher's
    options that make, limit and join that group, which it does before anything
    confines it. (The harness neither makes the group nor passes a descriptor: making
    three groups cost the event loop ~0.1 ms a call, and each descriptor kept across a
    spawn makes CPython's child walk /proc/self/fd, which tripled the per-job cost.)"""

    limits: Limits
    planned: dict[str, Enforcement]
    group: Group | None
    rlimit_pairs: tuple[tuple[str, int], ...]
    oom_before: int
    claimed: tuple[LimitClaim, ...] = ()
    group_options: tuple[str, ...] = ()
    # A reused group's reading when it was handed to this call (None: made for it).
    baseline: GroupUsage | None = None
    # Where the group goes back once the command ended, if it may (None: removed).
    pool: GroupPool | None = None
    pool_key: PoolKey = ("", None, None)
    # The group's last reading (by usage()), which decides whether it can be reused.
    last: GroupUsage | None = None
    # The session's group above it and the session's limits: whose limit refused is
    # judged from both groups' counters (`scoped`). The group's pids.max as written
    # (the runner's processes included). On v2, the session group's own-limit counts
    # when the call started: they are its only sign of a refusal by the session's
    # limit, and the session's calls share them.
    session: Group | None = None
    session_limits: SessionLimits | None = None
    held_processes: int | None = None
    session_before: OwnLimits | None = None
    # What the cpu_seconds watch killed mid-call, pinned by pidfds (a harness that is
    # its PID namespace's init, or their reaper, only): reaped at the call's end
    # (`end`), as what the end itself kills is.
    killed: list[int] = attrs.field(factory=list)

    def launcher_options(self) -> tuple[str, ...]:
        options = list(self.group_options)
        for name, value in self.rlimit_pairs:
            options += ["--rlimit", f"{name}={value}"]
        return tuple(options)

    def wrap(
        self,
        argv: tuple[str, ...],
        launcher: str | None,
        traits: frozenset[SpawnTrait],
        *,
        runner: bool = True,
    ) -> tuple[tuple[str, ...], int]:
        """`argv` with the launcher's limit options, and where the runner's own argv
        now starts in it, by the runner's spawn traits: in the launcher's own argv
        when it is the runner (LIMITS_IN_RUNNER); else before the runner (and before an
        unconfined command: `runner` False, whose argv[0] is no runner's),
        `landlock-run --limits-only OPTIONS --` (LIMITS_STAGE: bwrap's filter stage
        runs under a read-only cgroup file system, so the group is joined before bwrap
        starts: bwrap and its init are in the group too)."""
        options = self.launcher_options()
        if not options:
            return argv, 0
        if SpawnTrait.LIMITS_IN_RUNNER in traits:  # the launcher is the runner: argv[0]
            return (argv[0], *options, *argv[1:]), 0
        if launcher is None:
            raise CgroupError("the launcher that sets a command's limits is missing")
        if SpawnTrait.LIMITS_STAGE in traits:
            prefix = (launcher, "--limits-only", *options, "--")
            return (*prefix, *argv), len(prefix) if runner else 0
        raise CgroupError("the runner has no place for the launcher's limits")

    def usage(self) -> Usage:
        if self.group is None:
            return Usage()
        try:
            self.last = self.group.usage(reuse=self.pool is not None)
        except (OSError, CgroupError):
            return Usage()
        used = self.last if self.baseline is None else self.last.since(self.baseline)
        usage = Usage(
            cpu_seconds=used.cpu_seconds,
            memory_peak=used.memory_peak,
            processes_peak=used.processes_peak,
            processes_refused=used.processes_refused,
            oom_kills=used.oom_kills,
        )
        try:
            return self.scoped(usage)
        except (OSError, CgroupError):
            return usage

    def scoped(self, usage: Usage) -> Usage:
        """`usage` with both groups' evidence of whose limit refused, for a limit that
        refused (a fork refused, a process OOM-killed; on v2 also the session's limit
        counting a refusal while the call ran): the command group's and its session
        group's own-limit counters, read only then."""
        if self.group is None or self.session is None or self.session_limits is None:
            return usage
        session: OwnLimits | None = None
        if self.session_before is not None:  # v2: the session's count is the only sign
            session = self.session.own_limits().since(self.session_before)
        forks = usage.processes_refused > 0 or bool(session and session.processes_refused)
        if not forks and usage.oom_kills == 0:
            return usage
        command = self.group.own_limits()
        if session is None:
            # v1 counts no refusal per group (or v2's count at the start was not read):
            # the session's group tells only whether it has been at its limits.
            session = msgspec.structs.replace(
                self.session.own_limits(), processes_refused=None, memory_refused=None
            )
        if forks:
            usage = msgspec.structs.replace(
                usage,
                processes_evidence=Evidence(
                    command=AtLimit(
                        value=self.limits.processes,
                        refused=command.processes_refused,
                        reached=self._processes_reached(),
                        used=usage.processes_peak,
                    ),
                    session=AtLimit(
                        value=self.session_limits.processes,
                        refused=session.processes_refused,
                        reached=reached_at(session.processes_peak, self.session_limits.processes),
                        used=session.processes_peak,
                    ),
                ),
            )
        if usage.oom_kills > 0:
            usage = msgspec.structs.replace(
                usage,
                memory_evidence=Evidence(
                    command=AtLimit(
                        value=self.limits.memory,
                        refused=command.memory_refused,
                        reached=_failed(command.memory_failures),
                        used=usage.memory_peak,
                    ),
                    session=AtLimit(
                        value=self.session_limits.memory,
                        refused=session.memory_refused,
                        reached=_failed(session.memory_failures),
                        used=session.memory_peak,
                    ),
                ),
            )
        return usage

    def _processes_reached(self) -> bool | None:
        """Whether this call's group was full during the call: its pids.peak at its
        pids.max. A reused group's peak is its life's and cannot be reset: one that an
        earlier call took to the limit cannot tell (None)."""
        assert self.last is not None
        before = self.baseline.processes_peak if self.baseline is not None else None
        if before is not None and reached_at(before, self.held_processes):
            return None
        return reached_at(self.last.processes_peak, self.held_processes)

    def cpu_used(self) -> float | None:
        """The group's CPU time since this call was given it."""
        if self.group is None:
            return None
        used = self.group.usage(reuse=False)
        if self.baseline is not None:
            used = used.since(self.baseline)
        return used.cpu_seconds

    def claims(self) -> tuple[LimitClaim, ...]:
        return self.claimed or _claims(self.planned)

    def try_end(self) -> bool:
        """The usual end, cheaply: an empty group back in the pool, or removed (False:
        `end` must do it)."""
        if self.killed:
            return False  # `end` reaps them, off the event loop
        if self.group is None:
            return True
        kept = self.pool is not None and self.pool.keep(
            self.group, self.last, self.pool_key, self.limits.memory
        )
        if kept:
            self.group = None
            return True
        if self.group.try_remove():
            self.group = None
            return True
        return False

    def end(self) -> None:
        """Kill what is left in its cgroup (a process that left its group and its
        namespace's reach) and remove the group. A harness that is its PID namespace's
        init, or their reaper, then reaps those of them that came to it, and what the
        cpu_seconds watch killed before (`_orphans`)."""
        # (`killed` is filled only where orphans are reaped; closed here whatever.)
        pinned: list[int] | None = self.killed if self.killed or reaps_orphans() else None
        try:
            if self.group is not None:
                group, self.group = self.group, None
                with contextlib.suppress(OSError, CgroupError):
                    group.remove(pinned=pinned)
        finally:
            if pinned:
                reap_pinned(pinned)
            self.killed = []


def _failed(failures: int | None) -> bool | None:
    """Whether charges failed at a group's limit (v1 memory.failcnt): it was reached."""
    return None if failures is None else failures > 0


def _claims(planned: dict[str, Enforcement]) -> tuple[LimitClaim, ...]:
    return tuple(
        LimitClaim(
            name=e.name,
            value=e.value,
            mechanism=str(e.mechanism),
            claim=str(e.claim),
            detail=e.detail,
        )
        for e in planned.values()
    )


def resource_use(usage: Usage) -> ResourceUse | None:
    if usage.cpu_seconds is None and usage.memory_peak is None and usage.processes_peak is None:
        return None
    return ResourceUse(
        cpu_seconds=usage.cpu_seconds,
        memory_peak=usage.memory_peak,
        processes_peak=usage.processes_peak,
    )


class _CallPlan(msgspec.Struct, frozen=True):
    limits: Limits
    planned: dict[str, Enforcement]
    claims: tuple[LimitClaim, ...]
    rlimits: tuple[tuple[str, int], ...]
    needs_group: bool


@attrs.define(eq=False, repr=False)
class LimitsHost:
    """What this harness limits with: its own cgroup subtree (one group per session,
    one per call below it) where the host offers one, else rlimits alone."""

    limits_host: HostLimits
    cgroups: CgroupHost | None
    tree: CgroupTree | None
    session_limits: SessionLimits
    _sessions: dict[str, Group] = attrs.field(factory=dict)
    pool: GroupPool = attrs.field(factory=GroupPool)
    # The host's OOM kill counter as last read: (when, value).
    _oom_read: tuple[float, int] | None = None
    _plans: dict[Limits, tuple[Limits, dict[str, Enforcement]]] = attrs.field(factory=dict)
    # Per (limits, placeable, leavable): the plan a call gets, its claims, its rlimits.
    _calls: dict[tuple[Limits, bool, bool], _CallPlan] = attrs.field(factory=dict)

    @classmethod
    def open(cls, session_limits: SessionLimits) -> LimitsHost:
        cgroups = detect()
        tree, reason = None, cgroups.reason
        if cgroups.version is not None:
            with contextlib.suppress(OSError, CgroupError):
                sweep(cgroups)  # a crashed harness's leftovers, never a live one's
            try:
                tree = CgroupTree.open(cgroups)
            except CgroupError as error:
                reason = str(error)
        host = HostLimits(
            cgroup=cgroups.version if tree is not None else None,
            controllers=cgroups.controllers if tree is not None else frozenset(),
            uid=os.geteuid(),
            swap=cgroups.swap,
            memsw=cgroups.memsw,
            reason=reason,
        )
        return cls(host, cgroups, tree, session_limits)

    def plan_for(self, limits: Limits) -> tuple[Limits, dict[str, Enforcement]]:
        """The limits as they can be held here, and how each is."""
        known = self._plans.get(limits)
        if known is None:
            effective, lowered = _within_hard_limits(limits)
            planned = plan(effective, self.limits_host)
            for name, asked in lowered.items():
                e = planned[name]
                planned[name] = msgspec.structs.replace(
                    e,
                    detail=f"{e.detail}; {asked} asked for, more than this harness's own "
                    "hard limit, which an unprivileged process cannot raise",
                )
            known = self._plans[limits] = (effective, planned)
        return known

    def for_call(
        self,
        limits: Limits,
        owner: str | None,
        call_id: str,
        *,
        placeable: bool = True,
        confined: bool = True,
        launcher_processes: int = 0,
        reusable: bool = False,
    ) -> CallLimits:
        """The call's limits in force. `placeable`: its runner has a place for the
        launcher's options (the Landlock launcher, bwrap's filter stage, an unconfined
        command); an operator's runner_command has none, and its limits say so.
        `confined` False (danger-full-access): a root command may leave its cgroup.
        `launcher_processes`: the launcher's own processes in the group (the Landlock
        launcher's monitor and init; bwrap and its namespace's init), allowed beyond the
        command's limit. `reusable`: the runner leaves its group empty when the call
        ends (the Landlock launcher reaps all it started), so the group may serve the
        session's next call (GroupPool)."""
        leavable = not confined and self.limits_host.uid == 0
        known = self._calls.get((limits, placeable, leavable))
        if known is None:
            effective, planned = self.plan_for(limits)
            if not placeable:
                planned = {name: _unplaced(e) for name, e in planned.items()}
            elif leavable:
                planned = {name: _leavable(e) for name, e in planned.items()}
            pairs = rlimits(effective, planned) if placeable else ()
            known = _CallPlan(effective, planned, _claims(planned), pairs, _needs_group(planned))
            self._calls[(limits, placeable, leavable)] = known
        limits, planned = known.limits, known.planned
        oom_before = self._oom_kills()
        if not placeable:
            return CallLimits(limits, planned, None, (), oom_before, known.claims)
        if self.tree is None or not known.needs_group:
            return CallLimits(limits, planned, None, known.rlimits, oom_before, known.claims)
        session = self._session(owner)
        processes = limits.processes
        if processes is not None:
            processes += launcher_processes
        key = (owner or "harness", processes, limits.memory)
        reusable = reusable and confined
        reused = self.pool.take(key) if reusable else None
        baseline = None
        if reused is not None:
            group, baseline = reused
            options = group.join_options()
        else:
            # No memory cgroup unless a memory limit needs one: accounting each
            # command's memory apart is the largest part of what limits cost at scale.
            memory_limited = limits.memory is not None or self.session_limits.memory is not None
            group, options = session.command_for_launcher(
                call_id,
                processes=processes,
                memory=limits.memory,
                without=frozenset() if memory_limited else frozenset({MEMORY}),
            )
        return CallLimits(
            limits=limits,
            planned=planned,
            group=group,
            rlimit_pairs=known.rlimits,
            oom_before=oom_before,
            claimed=known.claims,
            group_options=options,
            baseline=baseline,
            pool=self.pool if reusable else None,
            pool_key=key,
            session=session,
            session_limits=self.session_limits,
            held_processes=processes,
            session_before=self._session_reading(session),
        )

    def _session_reading(self, session: Group) -> OwnLimits | None:
        """On v2, the session group's own-limit counts as a call starts (None on v1:
        there the command's own group counts every refusal of its forks)."""
        if self.limits_host.cgroup != "v2":
            return None
        with contextlib.suppress(OSError, CgroupError):
            return session.own_limits()
        return None

    def _oom_kills(self) -> int:
        now = time.monotonic()
        if self._oom_read is None or now - self._oom_read[0] > OOM_COUNTER_AGE:
            self._oom_read = (now, host_oom_kills())
        return self._oom_read[1]

    def _session(self, owner: str | None) -> Group:
        key = owner or "harness"
        group = self._sessions.get(key)
        if group is None:
            assert self.tree is not None
            group = self.tree.session(
                key,
                processes=self.session_limits.processes,
                memory=self.session_limits.memory,
            )
            self._sessions[key] = group
        return group

    def close_session(self, owner: str | None) -> None:
        self.pool.drop(owner or "harness")
        group = self._sessions.pop(owner or "harness", None)
        if group is not None:
            with contextlib.suppress(OSError, CgroupError):
                group.remove()

    def close(self) -> None:
        self.pool.clear()
        self._sessions.clear()
        if self.tree is not None:
            tree, self.tree = self.tree, None
            with contextlib.suppress(OSError, CgroupError):
                tree.close()


# The limits the launcher holds with an rlimit of the same meaning.
_HARD_LIMITED = {"open_files": resource.RLIMIT_NOFILE, "file_size": resource.RLIMIT_FSIZE}


def _within_hard_limits(limits: Limits) -> tuple[Limits, dict[str, int]]:
    """`limits` with each rlimit-held value at most this process's hard limit (what
    the command can be given without privilege), and the values that were lowered."""
    lowered: dict[str, int] = {}
    changes: dict[str, int] = {}
    for name, which in _HARD_LIMITED.items():
        value = getattr(limits, name)
        _, hard = resource.getrlimit(which)
        if value is not None and hard != resource.RLIM_INFINITY and value > hard:
            lowered[name], changes[name] = value, hard
    return (attrs.evolve(limits, **changes) if changes else limits), lowered


_KERNEL_HELD = (Mechanism.CGROUP_V1, Mechanism.CGROUP_V2, Mechanism.RLIMIT)


def _unplaced(e: Enforcement) -> Enforcement:
    if e.mechanism not in _KERNEL_HELD:
        return e
    return msgspec.structs.replace(
        e,
        mechanism=Mechanism.NONE,
        claim=Claim.NONE,
        detail="the operator's runner_command: stockade has no place inside it for the "
        "launcher that sets a command's limits",
    )


def _leavable(e: Enforcement) -> Enforcement:
    if e.mechanism not in (Mechanism.CGROUP_V1, Mechanism.CGROUP_V2):
        return e
    return msgspec.structs.replace(
        e,
        claim=Claim.PARTIAL,
        detail=f"{e.detail}; unconfined (danger-full-access), a command running as root "
        "can move itself out of its cgroup",
    )


def _needs_group(planned: dict[str, Enforcement]) -> bool:
    cgroup = (Mechanism.CGROUP_V1, Mechanism.CGROUP_V2)
    return any(
        e.mechanism in cgroup or (e.name == "cpu_seconds" and e.claim is Claim.ENFORCED)
        for e in planned.values()
    )


def ended(
    result: ShellResult,
    limited: CallLimits | None,
    usage: Usage,
    *,
    killed: bool = False,
    session_closed: bool = False,
) -> ShellResult:
    """`result` with how it ended (exactly one cause), the limit it reached and the
    model's note, what it used, and how each limit held it."""
    limits = limited.limits if limited is not None else Limits(memory=None)
    oom = 0
    if limited is not None and result.exit_code == KILLED and usage.oom_kills == 0:
        # Only a SIGKILL nobody here explains needs the host's counter, read fresh.
        oom = host_oom_kills() - limited.oom_before
    outcome = classify_end(
        started=True,
        runner_failed=result.runner_failed,
        exit_status=result.exit_code,
        timed_out=result.timed_out,
        killed=killed or (result.cancelled and not session_closed),
        session_closed=session_closed,
        usage=msgspec.structs.replace(
            usage, output_dropped=result.stdout_dropped + result.stderr_dropped
        ),
        limits=limits,
        host_oom_kills=oom,
    )
    hit = outcome.limit
    return msgspec.structs.replace(
        result,
        cause=str(outcome.cause),
        limit=None
        if hit is None
        else LimitHit(name=hit.name, value=hit.value, used=hit.used, scope=str(hit.scope)),
        note=outcome.note,
        usage=resource_use(outcome.usage),
        limits=limited.claims() if limited is not None else (),
    )


def unstarted(result: ShellResult, cause: Cause) -> ShellResult:
    return msgspec.structs.replace(result, cause=str(cause))


async def settle_limited(
    limited: CallLimits | None, settling: Callable[[], Awaitable[bool]]
) -> bool:
    """`settling()` (the command's settle), while the harness holds its cgroup to
    cpu_seconds: the group's CPU time is read every CPU_CHECK_INTERVAL, and past the
    limit every process in it is killed (the end then reads as that limit)."""
    cpu = limited.limits.cpu_seconds if limited is not None else None
    group = limited.group if limited is not None else None
    if cpu is None or group is None or limited is None:
        return await settling()
    watching = trio.CancelScope()

    async def watch() -> None:
        with watching:
            while True:
                await trio.sleep(CPU_CHECK_INTERVAL)
                used = limited.cpu_used()
                if used is not None and used >= cpu:
                    # Pinned where the harness reaps orphans: what left the command's
                    # group is killed now, and comes to it as a zombie (`end`).
                    pinned = limited.killed if reaps_orphans() else None
                    await trio.to_thread.run_sync(partial(group.kill, pinned=pinned))
                    return

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        try:
            return await settling()
        finally:
            watching.cancel()


def planned_here(limits: Limits) -> tuple[HostLimits, dict[str, Enforcement]]:
    """What each of `limits` would be held by for a confined command here, without
    making anything that stays (`stockade probe`)."""
    cgroups = detect()
    host = HostLimits(
        cgroup=cgroups.version,
        controllers=cgroups.controllers,
        uid=os.geteuid(),
        swap=cgroups.swap,
        memsw=cgroups.memsw,
        reason=cgroups.reason,
    )
    holder = LimitsHost(host, cgroups, None, SessionLimits(memory=None))
    return host, holder.plan_for(limits)[1]

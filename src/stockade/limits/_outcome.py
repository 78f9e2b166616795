"""Why a command ended, in exactly one cause, and which limits it hit on the way: the
evidence (status, flags, the cgroup's counters) judged, and the model's one-line notes.
"""

from __future__ import annotations

import enum
import signal

import msgspec

from ._scope import Evidence, Scope, whose
from ._spec import Limits
from ._values import format_value

# The shell's convention: a command killed by signal N ends with status 128 + N.
SIGNALLED = 128
# The shell's 128 + N covers real signals only: 255 and its like are exit codes.
LAST_SIGNAL = SIGNALLED + signal.SIGRTMAX
KILLED_STATUS = SIGNALLED + signal.SIGKILL  # 137
XCPU_STATUS = SIGNALLED + signal.SIGXCPU  # 152
XFSZ_STATUS = SIGNALLED + signal.SIGXFSZ  # 153

HOST_OOM_NOTE = "[sandbox: killed by the host's out-of-memory killer, not by a stockade limit]"
# A process of the command killed so, the command going on without it.
HOST_OOM_KILL_NOTE = (
    "[sandbox: a process was killed by the host's out-of-memory killer, not by a stockade limit]"
)
# Said after a session's limit: the model learns why its command alone did not explain it.
_TOGETHER = " (all its commands together)"


class Cause(enum.StrEnum):
    """Why a command ended: one per end."""

    EXITED = "exited"
    SIGNAL = "signal"
    LIMIT = "limit"
    TIMEOUT = "timeout"
    KILLED = "killed"  # the caller asked
    SESSION_CLOSED = "session-closed"
    HOST_OOM = "host-oom"
    RUNNER_FAILED = "runner-failed"
    NOT_STARTED = "not-started"


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """What the command used, as far as the host could tell (None: unknown).
    `processes_refused` is the pids.events max count, `oom_kills` the command cgroup's
    OOM kills, `output_dropped` the bytes beyond output_bytes; `file_size_hit` is not
    knowable in general, and `classify_end` sets it from SIGXFSZ. `processes_evidence`
    and `memory_evidence`: the command's and its session's groups' counters of that
    limit, which say whose limit refused (None: not read, and a refusal is the
    command's own, as where no session group holds one)."""

    cpu_seconds: float | None = None
    memory_peak: int | None = None
    processes_peak: int | None = None
    processes_refused: int = 0
    oom_kills: int = 0
    output_dropped: int = 0
    file_size_hit: bool = False
    processes_evidence: Evidence | None = None
    memory_evidence: Evidence | None = None


class LimitHit(msgspec.Struct, frozen=True):
    """A limit the command reached: its value, and what was used (None: unknown), at
    its `scope`: the command's own limit, its session's (`value` and `used` are the
    session's), or one above stockade's groups ("host": neither is known)."""

    name: str
    value: int | float | None
    used: int | float | None = None
    scope: Scope = Scope.COMMAND


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """The one cause of an end; `limit` is the hit that caused it (the timeout's
    wall_seconds too), `hits` every limit reached (the cause's first), `note` the
    model's lines for them, one line each (None: nothing to say), `usage` what was
    used (with `file_size_hit` judged)."""

    cause: Cause
    limit: LimitHit | None = None
    hits: tuple[LimitHit, ...] = ()
    note: str | None = None
    usage: Usage = Usage()


def stopped_note(hit: LimitHit) -> str:
    """The model's line for a limit that stopped the command."""
    if hit.name == "processes":
        return _processes_note(hit)
    if hit.scope is Scope.HOST:  # memory: an OOM kill no stockade limit made
        return HOST_OOM_NOTE
    return f"[sandbox: stopped at {_whose_limit(hit)}{_together(hit)}]"


def _whose_limit(hit: LimitHit) -> str:
    """ "the session's memory limit of 3 GiB", "the cpu_seconds limit of 30 s"."""
    value = format_value(hit.name, hit.value)
    whose_ = "the session's" if hit.scope is Scope.SESSION else "the"
    return f"{whose_} {hit.name} limit of {value}"


def _together(hit: LimitHit) -> str:
    return _TOGETHER if hit.scope is Scope.SESSION else ""


def _processes_note(hit: LimitHit) -> str:
    if hit.scope is Scope.HOST:
        return (
            "[sandbox: a processes limit above stockade's (the host's or a container's) "
            "refused new processes]"
        )
    return f"[sandbox: {_whose_limit(hit)} refused new processes{_together(hit)}]"


def _memory_kill_note(hit: LimitHit) -> str:
    if hit.scope is Scope.HOST:
        return HOST_OOM_KILL_NOTE
    return f"[sandbox: a process was killed at {_whose_limit(hit)}{_together(hit)}]"


def _output_note(hit: LimitHit) -> str:
    value = format_value(hit.name, hit.value)
    return f"[sandbox: output beyond the output_bytes limit of {value} was dropped]"


def _scopes(evidence: Evidence | None, value: int | float | None) -> tuple[Scope, ...]:
    """Whose limit refused: judged from both groups' counters where they were read;
    else the command's, if it has one."""
    if evidence is not None:
        return whose(evidence)
    return (Scope.COMMAND,) if value is not None else ()


def _scoped_hit(
    name: str,
    scope: Scope,
    value: int | float | None,
    used: int | float | None,
    at: Evidence | None,
) -> LimitHit:
    """The hit of limit `name` at `scope`: the command's `value` and `used`, or the
    session's own, or (host) neither."""
    if scope is Scope.SESSION and at is not None and at.session is not None:
        return LimitHit(name, at.session.value, at.session.used, Scope.SESSION)
    if scope is Scope.HOST:
        return LimitHit(name, None, None, Scope.HOST)
    return LimitHit(name, value, used)


def classify_end(
    *,
    started: bool,
    runner_failed: bool,
    exit_status: int | None,
    timed_out: bool,
    killed: bool,
    session_closed: bool,
    usage: Usage,
    limits: Limits,
    host_oom_kills: int,
) -> Outcome:
    """The one cause of a command's end, in this precedence:

    1. not-started, then runner-failed;
    2. limit, on evidence of it: memory (set, the cgroup OOM-killed, status SIGKILL),
       cpu_seconds (set, and SIGXCPU, or SIGKILL with the CPU time at the limit),
       file_size (set, and SIGXFSZ); and processes (the cgroup refused a fork), but
       only when the command then exited non-zero by itself (no signal, timeout, kill
       or close): a refused fork is proof the limit was reached, not that it ended
       the command, so after an exit 0 (or another cause) it is recorded, not blamed;
    3. timeout (wall_seconds), killed, session-closed;
    4. host-oom: a SIGKILL nobody in stockade sent while the host's OOM killer killed
       something (an inference: the counter is host-wide);
    5. signal (status above 128), then exited (a status never learned counts as one).

    Every limit reached is in `hits`, whatever the cause: an OOM kill inside the
    command it survived, a refused fork, output cut at output_bytes (which never
    changes the cause: the command ran on).

    A refused fork or an OOM kill is the limit of whichever scope refused it
    (`stockade.limits.whose`, from `usage`'s evidence of both groups): the command's
    own, its session's (the hit has the session's value and use, and its note says
    so), or one above stockade's groups (host: an OOM kill so is host-oom evidence, a
    refused fork a processes hit of no known value).
    """
    if not started:
        return Outcome(cause=Cause.NOT_STARTED, usage=usage)
    if runner_failed:
        return Outcome(cause=Cause.RUNNER_FAILED, usage=usage)
    status = exit_status
    hits: list[tuple[LimitHit, str]] = []  # beside the cause, with their notes
    cause: Cause | None = None
    stopped: LimitHit | None = None

    # An OOM kill outside every stockade limit (a container's): host-oom evidence.
    outside_oom = False
    if usage.oom_kills > 0:
        at = usage.memory_evidence
        for scope in _scopes(at, limits.memory):
            hit = _scoped_hit("memory", scope, limits.memory, usage.memory_peak, at)
            if scope is Scope.HOST and status == KILLED_STATUS and cause is None:
                outside_oom = True  # host-oom, unless a timeout, kill or close outranks it
            elif status == KILLED_STATUS and cause is None:
                cause, stopped = Cause.LIMIT, hit
            else:
                hits.append((hit, _memory_kill_note(hit)))
    cpu = limits.cpu_seconds
    if cause is None and cpu is not None:
        over = usage.cpu_seconds is not None and usage.cpu_seconds >= cpu
        if status == XCPU_STATUS or (status == KILLED_STATUS and over):
            cause, stopped = Cause.LIMIT, LimitHit("cpu_seconds", cpu, usage.cpu_seconds)
    if cause is None and limits.file_size is not None and status == XFSZ_STATUS:
        cause, stopped = Cause.LIMIT, LimitHit("file_size", limits.file_size)
        usage = msgspec.structs.replace(usage, file_size_hit=True)
    at = usage.processes_evidence
    if usage.processes_refused > 0 or (at is not None and at.refused_here()):
        by_itself = status is not None and not _signalled(status) and status > 0
        for scope in _scopes(at, limits.processes):
            hit = _scoped_hit("processes", scope, limits.processes, usage.processes_peak, at)
            if cause is None and by_itself and not (timed_out or killed or session_closed):
                cause, stopped = Cause.LIMIT, hit
            else:
                hits.append((hit, _processes_note(hit)))
    if limits.output_bytes is not None and usage.output_dropped > 0:
        produced = limits.output_bytes + usage.output_dropped
        hit = LimitHit("output_bytes", limits.output_bytes, produced)
        hits.append((hit, _output_note(hit)))

    lines = [stopped_note(stopped)] if stopped is not None else []
    if cause is None:
        host_oom = host_oom_kills > 0 or outside_oom
        cause = _other_cause(status, timed_out, killed, session_closed, host_oom)
        if cause is Cause.TIMEOUT and limits.wall_seconds is not None:
            stopped = LimitHit("wall_seconds", limits.wall_seconds)
        if cause is Cause.HOST_OOM:
            lines.append(HOST_OOM_NOTE)
        elif outside_oom:
            hits.insert(0, (LimitHit("memory", None, None, Scope.HOST), HOST_OOM_KILL_NOTE))
    lines += [note for _, note in hits]
    found = tuple(hit for hit in (stopped, *(hit for hit, _ in hits)) if hit is not None)
    return Outcome(
        cause=cause,
        limit=stopped,
        hits=found,
        note="\n".join(lines) or None,
        usage=usage,
    )


def _other_cause(
    status: int | None, timed_out: bool, killed: bool, session_closed: bool, host_oom: bool
) -> Cause:
    if timed_out:
        return Cause.TIMEOUT
    if killed:
        return Cause.KILLED
    if session_closed:
        return Cause.SESSION_CLOSED
    if status == KILLED_STATUS and host_oom:
        return Cause.HOST_OOM
    if status is not None and _signalled(status):
        return Cause.SIGNAL
    return Cause.EXITED


def _signalled(status: int) -> bool:
    return SIGNALLED < status <= LAST_SIGNAL

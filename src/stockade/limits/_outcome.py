"""Why a command ended, in exactly one cause, and which limits it hit on the way: the
evidence (status, flags, the cgroup's counters) judged, and the model's one-line notes.
"""

from __future__ import annotations

import enum
import signal

import attrs

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


@attrs.frozen(kw_only=True)
class Usage:
    """What the command used, as far as the host could tell (None: unknown).
    `processes_refused` is the pids.events max count, `oom_kills` the command cgroup's
    OOM kills, `output_dropped` the bytes beyond output_bytes; `file_size_hit` is not
    knowable in general, and `classify_end` sets it from SIGXFSZ."""

    cpu_seconds: float | None = None
    memory_peak: int | None = None
    processes_peak: int | None = None
    processes_refused: int = 0
    oom_kills: int = 0
    output_dropped: int = 0
    file_size_hit: bool = False


@attrs.frozen
class LimitHit:
    """A limit the command reached: its value, and what was used (None: unknown)."""

    name: str
    value: int | float | None
    used: int | float | None = None


@attrs.frozen(kw_only=True)
class Outcome:
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
    return f"[sandbox: stopped at the {hit.name} limit of {format_value(hit.name, hit.value)}]"


def _processes_note(hit: LimitHit) -> str:
    value = format_value(hit.name, hit.value)
    return f"[sandbox: the processes limit of {value} refused new processes]"


def _memory_kill_note(hit: LimitHit) -> str:
    value = format_value(hit.name, hit.value)
    return f"[sandbox: a process was killed at the memory limit of {value}]"


def _output_note(hit: LimitHit) -> str:
    value = format_value(hit.name, hit.value)
    return f"[sandbox: output beyond the output_bytes limit of {value} was dropped]"


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
    """
    if not started:
        return Outcome(cause=Cause.NOT_STARTED, usage=usage)
    if runner_failed:
        return Outcome(cause=Cause.RUNNER_FAILED, usage=usage)
    status = exit_status
    hits: list[tuple[LimitHit, str]] = []  # beside the cause, with their notes
    cause: Cause | None = None
    stopped: LimitHit | None = None

    if limits.memory is not None and usage.oom_kills > 0:
        hit = LimitHit("memory", limits.memory, usage.memory_peak)
        if status == KILLED_STATUS:
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
        usage = attrs.evolve(usage, file_size_hit=True)
    if limits.processes is not None and usage.processes_refused > 0:
        hit = LimitHit("processes", limits.processes, usage.processes_peak)
        by_itself = status is not None and not _signalled(status) and status > 0
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
        cause = _other_cause(status, timed_out, killed, session_closed, host_oom_kills)
        if cause is Cause.TIMEOUT and limits.wall_seconds is not None:
            stopped = LimitHit("wall_seconds", limits.wall_seconds)
        if cause is Cause.HOST_OOM:
            lines.append(HOST_OOM_NOTE)
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
    status: int | None, timed_out: bool, killed: bool, session_closed: bool, host_oom_kills: int
) -> Cause:
    if timed_out:
        return Cause.TIMEOUT
    if killed:
        return Cause.KILLED
    if session_closed:
        return Cause.SESSION_CLOSED
    if status == KILLED_STATUS and host_oom_kills > 0:
        return Cause.HOST_OOM
    if status is not None and _signalled(status):
        return Cause.SIGNAL
    return Cause.EXITED


def _signalled(status: int) -> bool:
    return SIGNALLED < status <= LAST_SIGNAL

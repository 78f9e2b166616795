"""Whose limit refused (issue 35, hole 7): the command's own, its session's, or one
above stockade's groups; judged from both groups' counters as each kernel keeps them
(pure), the notes the model reads, and the counters as the cgroups layer reads them
from a group's files (v1 and v2, here on files laid out as the kernel does)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import msgspec

from stockade.executor._limits import CallLimits
from stockade.limits import (
    AtLimit,
    Cause,
    Evidence,
    LimitHit,
    Limits,
    Scope,
    SessionLimits,
    Usage,
    classify_end,
    reached_at,
    whose,
)
from stockade.limits.cgroups import (
    CPU,
    MEMORY,
    PIDS,
    CgroupHost,
    Group,
    GroupUsage,
    Hierarchy,
    OwnLimits,
)

MIB = 1 << 20
G = 1 << 30
SESSION_PROCESSES_NOTE = (
    "[sandbox: the session's processes limit of 8 refused new processes "
    "(all its commands together)]"
)


def test_a_peak_at_the_limit_shows_the_group_full():
    assert reached_at(8, 8) is True
    assert reached_at(9, 514) is False  # the command's mark passes a refusal above it
    assert reached_at(None, 8) is None  # no pids.peak on this kernel
    assert reached_at(None, None) is False  # no limit: never full


def test_v1_a_refusal_is_the_group_that_was_full():
    """v1 counts a refused fork in the forking group whoever refused it: the peaks
    decide. The issue's case: the command's mark at 9 of its 514, the session's at 8."""
    command = AtLimit(value=512, reached=False, used=9)
    session = AtLimit(value=8, reached=True, used=8)
    assert whose(Evidence(command=command, session=session)) == (Scope.SESSION,)
    full = AtLimit(value=20, reached=True, used=22)
    assert whose(Evidence(command=full, session=AtLimit(value=8192, reached=False))) == (
        Scope.COMMAND,
    )


def test_both_full_names_the_lower_limit_and_neither_the_host():
    both = Evidence(
        command=AtLimit(value=512, reached=True), session=AtLimit(value=8192, reached=True)
    )
    assert whose(both) == (Scope.COMMAND,)
    lower_session = msgspec.structs.replace(both, session=AtLimit(value=100, reached=True))
    assert whose(lower_session) == (Scope.SESSION,)
    tie = msgspec.structs.replace(both, session=AtLimit(value=512, reached=True))
    assert whose(tie) == (Scope.COMMAND,)
    neither = Evidence(
        command=AtLimit(value=512, reached=False), session=AtLimit(value=8192, reached=False)
    )
    assert whose(neither) == (Scope.HOST,)
    # A scope without a limit never refused; with no other, the refusal came from above.
    unlimited = Evidence(command=AtLimit(value=None), session=AtLimit(value=None))
    assert whose(unlimited) == (Scope.HOST,)
    assert whose(Evidence(command=AtLimit(value=512, reached=False))) == (Scope.HOST,)


def test_a_full_group_outranks_one_that_cannot_tell_and_unknowns_name_the_lower():
    session_full = Evidence(
        command=AtLimit(value=10, reached=None), session=AtLimit(value=20, reached=True)
    )
    assert whose(session_full) == (Scope.SESSION,)
    unknown = Evidence(command=AtLimit(value=512), session=AtLimit(value=8))
    assert whose(unknown) == (Scope.SESSION,)
    one_unknown = Evidence(
        command=AtLimit(value=10, reached=None), session=AtLimit(value=20, reached=False)
    )
    assert whose(one_unknown) == (Scope.COMMAND,)


def test_exact_counts_outrank_peaks_and_name_every_group_that_refused():
    """v2 since 6.11 counts each group's own refusals (pids.events.local; memory's
    "oom"): those are exact, and a group that counted none did not refuse."""
    session_only = Evidence(
        command=AtLimit(value=512, refused=0, reached=True),
        session=AtLimit(value=8, refused=2),
    )
    assert whose(session_only) == (Scope.SESSION,)
    both = Evidence(command=AtLimit(value=512, refused=1), session=AtLimit(value=8, refused=2))
    assert whose(both) == (Scope.COMMAND, Scope.SESSION)
    assert both.refused_here()
    # The command counted none and the session cannot count: the session's peak decides.
    mixed = Evidence(command=AtLimit(value=512, refused=0), session=AtLimit(value=8, reached=True))
    assert whose(mixed) == (Scope.SESSION,)
    counted_none = Evidence(
        command=AtLimit(value=512, refused=0), session=AtLimit(value=8, refused=0)
    )
    assert whose(counted_none) == (Scope.HOST,) and not counted_none.refused_here()


LIMITS = Limits(processes=512, memory=2 * G, cpu_seconds=30.0)
SIGKILL, SIGTERM = 137, 143


def end(**given: Any):
    facts: dict[str, Any] = {
        "started": True,
        "runner_failed": False,
        "exit_status": 0,
        "timed_out": False,
        "killed": False,
        "session_closed": False,
        "usage": Usage(),
        "limits": LIMITS,
        "host_oom_kills": 0,
    }
    facts.update(given)
    return classify_end(**facts)


SESSION_FULL = Evidence(
    command=AtLimit(value=512, reached=False, used=9),
    session=AtLimit(value=8, reached=True, used=8),
)


def test_a_fork_refused_by_the_session_is_the_sessions_limit_and_note():
    usage = Usage(processes_refused=1, processes_peak=9, processes_evidence=SESSION_FULL)
    failed = end(exit_status=3, usage=usage)
    assert failed.cause is Cause.LIMIT
    assert failed.limit == LimitHit("processes", 8, 8, Scope.SESSION)
    assert failed.note == SESSION_PROCESSES_NOTE
    survived = end(exit_status=0, usage=usage)
    assert (survived.cause, survived.limit, survived.note) == (
        Cause.EXITED,
        None,
        SESSION_PROCESSES_NOTE,
    )
    assert survived.hits == (LimitHit("processes", 8, 8, Scope.SESSION),)


def test_a_fork_refused_by_the_command_keeps_its_words():
    own = Evidence(
        command=AtLimit(value=512, reached=True, used=514),
        session=AtLimit(value=8192, reached=False, used=600),
    )
    usage = Usage(processes_refused=3, processes_peak=514, processes_evidence=own)
    failed = end(exit_status=1, usage=usage)
    assert failed.limit == LimitHit("processes", 512, 514, Scope.COMMAND)
    assert failed.note == "[sandbox: the processes limit of 512 refused new processes]"


def test_a_fork_refused_above_stockade_names_no_value_of_ours():
    above = Evidence(
        command=AtLimit(value=512, reached=False), session=AtLimit(value=8192, reached=False)
    )
    failed = end(exit_status=1, usage=Usage(processes_refused=1, processes_evidence=above))
    assert failed.limit == LimitHit("processes", None, None, Scope.HOST)
    assert failed.note == (
        "[sandbox: a processes limit above stockade's (the host's or a container's) "
        "refused new processes]"
    )


def test_v2_a_session_count_is_a_refusal_the_command_did_not_count():
    """On v2 since 6.11 the command's pids.events counts only its own limit: a
    refusal by the session's shows in the session's count alone."""
    counted = Evidence(
        command=AtLimit(value=512, refused=0), session=AtLimit(value=8, refused=1, used=8)
    )
    failed = end(exit_status=2, usage=Usage(processes_refused=0, processes_evidence=counted))
    assert failed.limit == LimitHit("processes", 8, 8, Scope.SESSION)
    # Both refused: the command's is the cause, the session's is recorded beside it.
    both = Evidence(
        command=AtLimit(value=512, refused=2, used=514),
        session=AtLimit(value=8192, refused=1, used=8192),
    )
    outcome = end(exit_status=2, usage=Usage(processes_refused=2, processes_evidence=both))
    assert outcome.limit == LimitHit("processes", 512, None, Scope.COMMAND)
    assert outcome.hits[1] == LimitHit("processes", 8192, 8192, Scope.SESSION)
    assert outcome.note.splitlines()[1].startswith("[sandbox: the session's processes limit")


def _memory(command: AtLimit, session: AtLimit | None = None) -> Usage:
    return Usage(
        oom_kills=1,
        memory_peak=40 * MIB,
        memory_evidence=Evidence(command=command, session=session),
    )


def test_an_oom_kill_at_the_sessions_memory_limit_is_the_sessions():
    usage = _memory(
        AtLimit(value=2 * G, reached=False), AtLimit(value=3 * G, reached=True, used=3 * G)
    )
    stopped = end(exit_status=SIGKILL, usage=usage)
    assert stopped.cause is Cause.LIMIT
    assert stopped.limit == LimitHit("memory", 3 * G, 3 * G, Scope.SESSION)
    assert stopped.note == (
        "[sandbox: stopped at the session's memory limit of 3 GiB (all its commands together)]"
    )
    survived = end(exit_status=2, usage=usage)
    assert survived.note == (
        "[sandbox: a process was killed at the session's memory limit of 3 GiB "
        "(all its commands together)]"
    )
    # The session's limit holds a command that has none of its own.
    only_session = _memory(AtLimit(value=None), AtLimit(value=64 * MIB, refused=1, used=64 * MIB))
    unlimited = end(exit_status=SIGKILL, usage=only_session, limits=Limits(memory=None))
    assert unlimited.limit == LimitHit("memory", 64 * MIB, 64 * MIB, Scope.SESSION)


def test_an_oom_kill_at_the_commands_memory_limit_keeps_its_words():
    usage = _memory(AtLimit(value=2 * G, reached=True), AtLimit(value=3 * G, reached=False))
    stopped = end(exit_status=SIGKILL, usage=usage)
    assert stopped.limit == LimitHit("memory", 2 * G, 40 * MIB, Scope.COMMAND)
    assert stopped.note == "[sandbox: stopped at the memory limit of 2 GiB]"


def test_an_oom_kill_no_stockade_limit_made_is_the_hosts():
    """Neither group was at its limit: an OOM above them (a container's) killed it."""
    usage = _memory(AtLimit(value=2 * G, reached=False), AtLimit(value=3 * G, reached=False))
    killed = end(exit_status=SIGKILL, usage=usage)
    assert (killed.cause, killed.limit) == (Cause.HOST_OOM, None)
    assert (
        killed.note
        == "[sandbox: killed by the host's out-of-memory killer, not by a stockade limit]"
    )
    survived = end(exit_status=1, usage=usage)
    assert survived.cause is Cause.EXITED
    assert survived.hits == (LimitHit("memory", None, None, Scope.HOST),)
    kill_note = (
        "[sandbox: a process was killed by the host's out-of-memory killer, not by a "
        "stockade limit]"
    )
    assert survived.note == kill_note
    # A timeout outranks it, and it is still said.
    late = end(exit_status=SIGKILL, usage=usage, timed_out=True)
    assert late.cause is Cause.TIMEOUT and late.note == kill_note


def test_without_evidence_a_refusal_is_the_commands_as_before():
    """Where no session group holds a limit (no cgroup read), the command's."""
    failed = end(exit_status=1, usage=Usage(processes_refused=1, processes_peak=7))
    assert failed.limit == LimitHit("processes", 512, 7)
    assert failed.limit.scope is Scope.COMMAND


# The cgroups layer: what a group's own-limit counters read, per version.


def _group(tmp_path: Path, version: str, files: dict[str, str], **host: Any) -> Group:
    directory = tmp_path / "s-x"
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(text)
    every = frozenset({PIDS, MEMORY, CPU})
    hierarchy = Hierarchy(every, "" if version == "v2" else "pids,memory", "/", str(tmp_path))
    found = CgroupHost(version, every, (hierarchy,), host.pop("swap", False), False, "fake", **host)
    return Group(found, "session", "s-x", (str(directory),))


V2_FILES = {
    "pids.peak": "8\n",
    "pids.events": "max 5\n",
    "pids.events.local": "max 3\n",
    "memory.peak": f"{64 * MIB}\n",
    "memory.events.local": "low 0\nhigh 0\nmax 40\noom 2\noom_kill 1\noom_group_kill 0\n",
}


def test_v2_own_limits_are_the_local_counts(tmp_path):
    read = _group(tmp_path, "v2", V2_FILES).own_limits()
    assert read == OwnLimits(
        processes_peak=8, processes_refused=3, memory_peak=64 * MIB, memory_refused=2
    )


def test_v2_with_pids_localevents_counts_no_refusal_of_the_groups_own(tmp_path):
    read = _group(tmp_path, "v2", V2_FILES, pids_local_events=True).own_limits()
    assert (read.processes_refused, read.processes_peak) == (None, 8)


def test_v2_before_6_11_has_no_local_pids_count(tmp_path):
    files = {name: text for name, text in V2_FILES.items() if name != "pids.events.local"}
    assert _group(tmp_path, "v2", files).own_limits().processes_refused is None


def test_v1_own_limits_are_peaks_and_failed_charges(tmp_path):
    files = {
        "pids.peak": "8\n",
        "memory.max_usage_in_bytes": f"{80 * MIB}\n",
        "memory.failcnt": "240\n",
        "memory.memsw.failcnt": "2\n",
    }
    assert _group(tmp_path, "v1", files).own_limits() == OwnLimits(
        processes_peak=8, memory_peak=80 * MIB, memory_failures=240
    )


def test_v1_memsw_failures_count_where_swap_is_capped_with_memory(tmp_path):
    files = {"memory.failcnt": "3\n", "memory.memsw.failcnt": "2\n"}
    group = _group(tmp_path, "v1", files, swap=True)
    group = attrs.evolve(group, host=msgspec.structs.replace(group.host, memsw=True))
    assert group.own_limits().memory_failures == 5


def test_counts_since_a_reading_keep_the_peaks():
    before = OwnLimits(processes_peak=6, processes_refused=4, memory_refused=1)
    now = OwnLimits(processes_peak=8, processes_refused=5, memory_refused=1)
    assert now.since(before) == OwnLimits(processes_peak=8, processes_refused=1, memory_refused=0)
    assert now.since(None) == now
    assert OwnLimits(memory_failures=3).since(OwnLimits()).memory_failures is None


# The call's end: which groups it reads, and the evidence it hands to classify_end.


class _Reads:
    """A group as a call's end reads it: its own-limit counters, one reading a call."""

    def __init__(self, *readings: OwnLimits) -> None:
        self.readings = list(readings)

    def own_limits(self) -> OwnLimits:
        return self.readings.pop(0)


def _call(command: _Reads, session: _Reads, **given: Any) -> CallLimits:
    last = GroupUsage(
        cpu_seconds=0.1, memory_peak=None, processes_peak=9, processes_refused=1, oom_kills=0
    )
    facts: dict[str, Any] = {
        "limits": Limits(processes=512, memory=None),
        "planned": {},
        "group": command,
        "rlimit_pairs": (),
        "oom_before": 0,
        "session": session,
        "session_limits": SessionLimits(processes=8, memory=None),
        "held_processes": 514,
        "last": last,
    }
    facts.update(given)
    return CallLimits(**facts)


def test_a_v1_end_reads_both_groups_only_after_a_refusal():
    calm = _call(_Reads(), _Reads())
    assert calm.scoped(Usage(processes_refused=0)) == Usage(processes_refused=0)
    refused = _call(_Reads(OwnLimits(processes_peak=9)), _Reads(OwnLimits(processes_peak=8)))
    usage = refused.scoped(Usage(processes_refused=1, processes_peak=9))
    assert usage.processes_evidence == SESSION_FULL
    outcome = end(exit_status=3, usage=usage)
    assert outcome.limit == LimitHit("processes", 8, 8, Scope.SESSION)


def test_a_v2_end_finds_a_session_refusal_the_command_never_counted():
    """v2: the session's count when the call started, and again at its end."""
    before = OwnLimits(processes_peak=8, processes_refused=4)
    session = _Reads(OwnLimits(processes_peak=8, processes_refused=5))
    command = _Reads(OwnLimits(processes_peak=6, processes_refused=0))
    call = _call(command, session, session_before=before)
    usage = call.scoped(Usage(processes_refused=0, processes_peak=6))
    assert usage.processes_evidence is not None
    assert usage.processes_evidence.session == AtLimit(value=8, refused=1, reached=True, used=8)
    assert end(exit_status=3, usage=usage).limit == LimitHit("processes", 8, 8, Scope.SESSION)
    # Nothing counted anywhere during the call: nothing is read of the command's group.
    quiet = _call(_Reads(), _Reads(before), session_before=before)
    assert quiet.scoped(Usage()) == Usage()


def test_a_reused_group_full_in_an_earlier_call_cannot_say_it_was_full_again():
    earlier = GroupUsage(
        cpu_seconds=0.0, memory_peak=None, processes_peak=514, processes_refused=3, oom_kills=0
    )
    now = msgspec.structs.replace(earlier, processes_refused=4)
    call = _call(
        _Reads(OwnLimits(processes_peak=514)),
        _Reads(OwnLimits(processes_peak=8)),
        baseline=earlier,
        last=now,
    )
    usage = call.scoped(Usage(processes_refused=1))
    assert usage.processes_evidence.command.reached is None
    assert whose(usage.processes_evidence) == (Scope.SESSION,)

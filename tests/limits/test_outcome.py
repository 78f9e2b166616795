"""Why a command ended: every cause, the precedence between them, the limits recorded
beside the cause, and the model's exact notes."""

from __future__ import annotations

from typing import Any

from stockade.limits import Cause, LimitHit, Limits, Outcome, Usage, classify_end

G = 1024**3
LIMITS = Limits(
    processes=512,
    memory=2 * G,
    cpu_seconds=30.0,
    wall_seconds=60.0,
    output_bytes=1048576,
    file_size=16 * G,
    open_files=65536,
)
SIGKILL, SIGXCPU, SIGXFSZ, SIGTERM = 137, 152, 153, 143


def end(**given: Any) -> Outcome:
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


def test_plain_ends():
    assert end() == Outcome(cause=Cause.EXITED)
    assert end(exit_status=3).cause is Cause.EXITED
    assert end(exit_status=128).cause is Cause.EXITED  # 128 is a status, not a signal
    assert end(exit_status=SIGTERM) == Outcome(cause=Cause.SIGNAL)
    assert end(exit_status=None).cause is Cause.EXITED
    assert end(exit_status=SIGKILL).cause is Cause.SIGNAL  # no OOM anywhere


def test_not_started_and_runner_failed_outrank_everything():
    everything = {
        "exit_status": SIGKILL,
        "timed_out": True,
        "killed": True,
        "usage": Usage(oom_kills=1, output_dropped=5),
        "host_oom_kills": 3,
    }
    assert end(started=False, runner_failed=True, **everything) == Outcome(
        cause=Cause.NOT_STARTED, usage=Usage(oom_kills=1, output_dropped=5)
    )
    assert end(runner_failed=True, **everything).cause is Cause.RUNNER_FAILED


def test_memory_limit():
    usage = Usage(oom_kills=1, memory_peak=2 * G)
    outcome = end(exit_status=SIGKILL, usage=usage, timed_out=True, killed=True, host_oom_kills=1)
    assert outcome.cause is Cause.LIMIT
    assert outcome.limit == LimitHit("memory", 2 * G, 2 * G)
    assert outcome.hits == (outcome.limit,)
    assert outcome.note == "[sandbox: stopped at the memory limit of 2 GiB]"


def test_an_oom_kill_the_command_survived_is_recorded_not_blamed():
    outcome = end(exit_status=2, usage=Usage(oom_kills=1))
    assert outcome.cause is Cause.EXITED
    assert outcome.limit is None
    assert outcome.hits == (LimitHit("memory", 2 * G),)
    assert outcome.note == "[sandbox: a process was killed at the memory limit of 2 GiB]"


def test_oom_kills_without_a_memory_limit_are_not_a_limit():
    unlimited = Limits(memory=None)
    outcome = end(exit_status=SIGKILL, usage=Usage(oom_kills=1), limits=unlimited)
    assert outcome.cause is Cause.SIGNAL
    outcome = end(exit_status=SIGKILL, usage=Usage(oom_kills=1), limits=unlimited, host_oom_kills=1)
    assert outcome.cause is Cause.HOST_OOM


def test_cpu_limit_by_sigxcpu_or_by_the_harness_kill():
    outcome = end(exit_status=SIGXCPU, usage=Usage(cpu_seconds=30.0))
    assert outcome.cause is Cause.LIMIT
    assert outcome.limit == LimitHit("cpu_seconds", 30.0, 30.0)
    assert outcome.note == "[sandbox: stopped at the cpu_seconds limit of 30 s]"
    killed = end(exit_status=SIGKILL, usage=Usage(cpu_seconds=30.4), killed=True)
    assert (killed.cause, killed.limit) == (Cause.LIMIT, LimitHit("cpu_seconds", 30.0, 30.4))
    # A SIGKILL below the limit is not the cpu limit's; nor is a SIGXCPU without one.
    assert end(exit_status=SIGKILL, usage=Usage(cpu_seconds=29.0)).cause is Cause.SIGNAL
    assert end(exit_status=SIGKILL).cause is Cause.SIGNAL
    assert end(exit_status=SIGXCPU, limits=Limits(memory=None)).cause is Cause.SIGNAL


def test_memory_outranks_cpu_when_both_have_evidence():
    usage = Usage(oom_kills=1, cpu_seconds=31.0)
    assert end(exit_status=SIGKILL, usage=usage).limit == LimitHit("memory", 2 * G)


def test_file_size_limit_is_known_from_sigxfsz_only():
    outcome = end(exit_status=SIGXFSZ)
    assert outcome.cause is Cause.LIMIT
    assert outcome.limit == LimitHit("file_size", 16 * G)
    assert outcome.note == "[sandbox: stopped at the file_size limit of 16 GiB]"
    assert outcome.usage.file_size_hit
    assert not end().usage.file_size_hit
    unset = end(exit_status=SIGXFSZ, limits=Limits(file_size=None, memory=None))
    assert (unset.cause, unset.usage.file_size_hit) == (Cause.SIGNAL, False)


def test_refused_processes_are_blamed_only_for_a_failure_of_the_commands_own():
    usage = Usage(processes_refused=4, processes_peak=512)
    note = "[sandbox: the processes limit of 512 refused new processes]"
    failed = end(exit_status=1, usage=usage)
    assert (failed.cause, failed.limit, failed.note) == (
        Cause.LIMIT,
        LimitHit("processes", 512, 512),
        note,
    )
    survived = end(exit_status=0, usage=usage)
    assert (survived.cause, survived.limit) == (Cause.EXITED, None)
    assert (survived.hits, survived.note) == ((LimitHit("processes", 512, 512),), note)
    for other in ({"timed_out": True}, {"killed": True}, {"session_closed": True}):
        blamed = end(exit_status=1, usage=usage, **other)
        assert blamed.cause is not Cause.LIMIT and blamed.hits[-1].name == "processes"
    signalled = end(exit_status=SIGTERM, usage=usage)
    assert (signalled.cause, signalled.note) == (Cause.SIGNAL, note)
    # Another limit's evidence names it, and the refusals are still recorded.
    both = end(exit_status=SIGXFSZ, usage=usage)
    assert both.limit == LimitHit("file_size", 16 * G)
    assert both.note == "[sandbox: stopped at the file_size limit of 16 GiB]\n" + note
    assert end(exit_status=1, usage=usage, limits=Limits(processes=None, memory=None)).hits == ()


def test_timeout_killed_and_session_closed_in_that_order():
    timeout = end(exit_status=SIGKILL, timed_out=True, killed=True, session_closed=True)
    assert (timeout.cause, timeout.limit, timeout.note) == (
        Cause.TIMEOUT,
        LimitHit("wall_seconds", 60.0),
        None,
    )
    no_wall = end(timed_out=True, limits=Limits(memory=None))
    assert (no_wall.cause, no_wall.limit) == (Cause.TIMEOUT, None)
    assert end(exit_status=SIGKILL, killed=True, session_closed=True).cause is Cause.KILLED
    assert end(exit_status=SIGKILL, session_closed=True).cause is Cause.SESSION_CLOSED
    # Ours to kill: a host OOM at the same time does not take the blame.
    assert end(exit_status=SIGKILL, killed=True, host_oom_kills=2).cause is Cause.KILLED


def test_host_oom_is_an_unexplained_sigkill_while_the_host_oom_killed():
    outcome = end(exit_status=SIGKILL, host_oom_kills=1)
    assert outcome.cause is Cause.HOST_OOM
    assert outcome.limit is None
    assert outcome.note == (
        "[sandbox: killed by the host's out-of-memory killer, not by a stockade limit]"
    )
    assert end(exit_status=SIGTERM, host_oom_kills=1).cause is Cause.SIGNAL
    assert end(exit_status=0, host_oom_kills=1).cause is Cause.EXITED


def test_dropped_output_is_recorded_and_never_the_cause():
    usage = Usage(output_dropped=100)
    dropped = LimitHit("output_bytes", 1048576, 1048676)
    note = "[sandbox: output beyond the output_bytes limit of 1 MiB was dropped]"
    outcome = end(usage=usage)
    assert (outcome.cause, outcome.limit, outcome.hits, outcome.note) == (
        Cause.EXITED,
        None,
        (dropped,),
        note,
    )
    memory = end(exit_status=SIGKILL, usage=Usage(oom_kills=1, output_dropped=100))
    assert memory.hits == (LimitHit("memory", 2 * G), dropped)
    assert memory.note == "[sandbox: stopped at the memory limit of 2 GiB]\n" + note
    host = end(exit_status=SIGKILL, usage=usage, host_oom_kills=1)
    assert host.note is not None and host.note.splitlines()[1] == note


def test_cause_values():
    assert [cause.value for cause in Cause] == [
        "exited",
        "signal",
        "limit",
        "timeout",
        "killed",
        "session-closed",
        "host-oom",
        "runner-failed",
        "not-started",
    ]

"""Pure classification: spawn attribution, runner-failure rules, denial, and the buffer."""

from __future__ import annotations

import errno

import pytest

from stockade.executor._buffer import OutputBuffer
from stockade.executor._classify import classify, runner_failure_line, spawn_failure_is_runner
from stockade.messages import RunnerFailureRule
from stockade.sandbox.backends.bwrap import BWRAP_RULES
from stockade.sandbox.backends.landlock import LANDLOCK_PARTIAL_NOTICE, LANDLOCK_RULES

RUNNER = "/usr/bin/bwrap"


def oserror(code: int, filename: str | None) -> OSError:
    return OSError(code, "boom", filename)


@pytest.mark.parametrize(
    ("error", "workdir_usable", "expected"),
    [
        (oserror(errno.ENOENT, RUNNER), True, True),  # runner missing / interpreter missing
        (oserror(errno.EACCES, RUNNER), True, True),  # runner not executable
        (oserror(errno.ENOENT, RUNNER), False, False),  # invalid workdir: not the runner
        (oserror(errno.ENOENT, "/work/missing"), True, False),  # names the cwd, not the runner
        (oserror(errno.EACCES, None), True, False),  # unattributed
        (oserror(errno.EMFILE, RUNNER), True, False),  # resources: ordinary start error
        (oserror(errno.ENOMEM, RUNNER), True, False),
        (oserror(errno.ENOENT, "/usr/bin/other"), True, False),  # unrelated path
    ],
)
def test_spawn_attribution_matrix(error, workdir_usable, expected):
    assert spawn_failure_is_runner(error, RUNNER, workdir_usable) is expected


def test_landlock_rule_needs_exit_125_and_a_fatal_line():
    fatal = "landlock-run: cannot open /nope: No such file or directory\n"
    assert runner_failure_line(LANDLOCK_RULES, 125, fatal) == fatal.strip()
    # The gate: the same line with another status is the child's business.
    assert runner_failure_line(LANDLOCK_RULES, 1, fatal) is None
    # A child exiting 125 with no launcher line is an ordinary result.
    assert runner_failure_line(LANDLOCK_RULES, 125, "something else\n") is None


@pytest.mark.parametrize("status", [0, 1, 2, 125, 126, 127])
def test_partial_notice_alone_is_never_a_runner_failure(status):
    stderr = LANDLOCK_PARTIAL_NOTICE + "\n"
    assert runner_failure_line(LANDLOCK_RULES, status, stderr) is None


def test_notice_exclusion_is_exact_and_other_fatal_lines_still_count():
    stderr = f"{LANDLOCK_PARTIAL_NOTICE}\nlandlock-run: cannot execute x: No such file\n"
    assert runner_failure_line(LANDLOCK_RULES, 125, stderr) == (
        "landlock-run: cannot execute x: No such file"
    )
    near_miss = LANDLOCK_PARTIAL_NOTICE + " (extra)\n"
    assert runner_failure_line(LANDLOCK_RULES, 125, near_miss) == near_miss.strip()


def test_bwrap_rule_has_no_exit_gate_and_matches_line_starts_only():
    assert runner_failure_line(BWRAP_RULES, 1, "bwrap: Can't mount proc\n") == (
        "bwrap: Can't mount proc"
    )
    assert runner_failure_line(BWRAP_RULES, 0, "bwrap: setting up uid map\n") is not None
    assert runner_failure_line(BWRAP_RULES, 1, "echo said: bwrap: hi\n") is None


def test_multiple_rules_and_lines_first_fatal_line_wins():
    rules = (
        RunnerFailureRule(exit_codes=frozenset({3}), fatal_signatures=("A:",)),
        RunnerFailureRule(exit_codes=None, fatal_signatures=("B:", "C:")),
    )
    stderr = "noise\nC: second rule\nA: gated\n"
    assert runner_failure_line(rules, 3, stderr) == "A: gated"
    assert runner_failure_line(rules, 4, stderr) == "C: second rule"
    assert runner_failure_line(rules, 4, "noise only\n") is None


def test_runner_failure_outranks_denial():
    stderr = "bwrap: execvp bash: No such file\ntouch: Read-only file system\n"
    verdict = classify(BWRAP_RULES, ("Read-only file system",), 1, stderr)
    assert verdict.runner_failed and not verdict.denied


@pytest.mark.parametrize(
    ("signature", "stderr"),
    [
        ("Read-only file system", "touch: cannot touch 'x': Read-only file system\n"),
        ("Permission denied", "bash: line 1: /etc/x: Permission denied\n"),
        ("Operation not permitted", "touch: x: Operation not permitted\n"),
    ],
)
def test_denial_is_a_fact_beside_any_exit_code(signature, stderr):
    for status in (0, 1, 2):
        verdict = classify((), (signature,), status, stderr)
        assert verdict.denied and not verdict.runner_failed
    assert not classify((), (signature,), 1, "ordinary failure\n").denied


@pytest.mark.parametrize("status", [126, 127])
def test_exit_126_and_127_are_ordinary_results(status):
    verdict = classify(
        LANDLOCK_RULES, ("Permission denied",), status, "bash: x: command not found\n"
    )
    assert not verdict.runner_failed and not verdict.denied


def test_buffer_keeps_head_and_tail_and_counts_what_it_dropped():
    buffer = OutputBuffer.with_cap(10)
    buffer.write(b"0123")
    first = buffer.read_from(0)
    assert (first.text(), first.cursor) == ("0123", 4)
    buffer.write(b"456789abcdefghij")
    assert bytes(buffer.head) == b"01234" and bytes(buffer.tail) == b"fghij"
    assert buffer.dropped == 10
    since = buffer.read_from(first.cursor)
    assert (since.before_gap, since.dropped, since.after_gap) == (b"4", 10, b"fghij")
    assert buffer.text() == "01234\n[... 10 bytes dropped ...]\nfghij"


def test_buffer_memory_is_bounded_and_decoding_never_raises():
    buffer = OutputBuffer.with_cap(1024)
    for _ in range(10_000):
        buffer.write(b"\xff\xfe" * 512)
    assert len(buffer.head) + len(buffer.tail) == 1024
    assert buffer.total == 10_000 * 1024
    assert "\ufffd" in buffer.text()

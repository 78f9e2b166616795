"""Fuzzing the pure classifier: whatever a command prints, classification never raises,
a runner failure always outranks a denial, and informational lines are excluded exactly.

The properties are stated against the documented rule (docs/executor.md), not against
a copy of the code: a reported line must be one of stderr's lines, admitted by its
rule's exit gate, starting with a fatal signature and not exactly informational; and
when nothing is reported, no such line exists.
"""

from __future__ import annotations

import errno

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.executor._classify import (
    classify,
    is_denied,
    runner_failure_line,
    spawn_failure_is_runner,
)
from stockade.messages import RunnerFailureRule
from stockade.sandbox.backends.bwrap import BWRAP_DENIAL, BWRAP_RULES
from stockade.sandbox.backends.landlock import (
    LANDLOCK_DENIAL,
    LANDLOCK_PARTIAL_NOTICE,
    LANDLOCK_RULES,
)

EXAMPLES = settings(max_examples=300, deadline=None)

# Text as a decoded stderr can hold it: replacement characters, NULs, every kind of
# line break str.splitlines() knows, and the prefixes the shipped rules look for.
SEPARATORS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"]
FRAGMENTS = [
    "landlock-run:",
    "landlock-run: ",
    LANDLOCK_PARTIAL_NOTICE,
    "bwrap:",
    "bwrap: Can't mount proc",
    "sandbox-exec:",
    "Permission denied",
    "Read-only file system",
    "\ufffd",
    "\x00",
    " ",
]
texts = st.text(
    st.characters(codec="utf-8") | st.sampled_from(["\ufffd", "\x00", "\r", "\x85"]),
    max_size=40,
)
pieces = st.one_of(texts, st.sampled_from(FRAGMENTS), st.sampled_from(SEPARATORS))
stderrs = st.lists(pieces, max_size=12).map("".join)
signatures = st.one_of(st.sampled_from(["landlock-run:", "bwrap:", "X:"]), texts.filter(bool))
exit_codes = st.one_of(
    st.none(), st.integers(min_value=-(2**31), max_value=2**31), st.sampled_from([0, 1, 125])
)
rules = st.builds(
    RunnerFailureRule,
    exit_codes=st.one_of(st.none(), st.frozensets(exit_codes.filter(lambda c: c is not None))),
    fatal_signatures=st.lists(signatures, max_size=3).map(tuple),
    informational_lines=st.lists(
        st.one_of(st.just(LANDLOCK_PARTIAL_NOTICE), texts), max_size=3
    ).map(tuple),
)
rule_lists = st.one_of(
    st.lists(rules, max_size=3).map(tuple),
    st.sampled_from([LANDLOCK_RULES, BWRAP_RULES, LANDLOCK_RULES + BWRAP_RULES]),
)
denials = st.one_of(
    st.sampled_from([BWRAP_DENIAL, LANDLOCK_DENIAL, ()]),
    st.lists(texts, max_size=2).map(tuple),
)


def admits(rule: RunnerFailureRule, exit_code: int | None) -> bool:
    return rule.exit_codes is None or exit_code in rule.exit_codes


def fatal_for(rule: RunnerFailureRule, line: str) -> bool:
    return line not in rule.informational_lines and any(
        line.startswith(signature) for signature in rule.fatal_signatures
    )


@EXAMPLES
@given(rule_lists, exit_codes, stderrs)
def test_runner_failure_line_never_raises_and_reports_only_an_admitted_fatal_line(
    rule_list, exit_code, stderr
):
    line = runner_failure_line(rule_list, exit_code, stderr)
    lines = stderr.splitlines()
    if line is None:
        for rule in rule_list:
            if admits(rule, exit_code):
                assert not any(fatal_for(rule, candidate) for candidate in lines)
    else:
        assert line in lines
        assert any(admits(rule, exit_code) and fatal_for(rule, line) for rule in rule_list)


@EXAMPLES
@given(rule_lists, denials, exit_codes, stderrs)
def test_runner_failure_always_outranks_denial(rule_list, denial, exit_code, stderr):
    # Whatever the stderr, adding the backend's denial text never hides a runner failure.
    for text in (stderr, stderr + "\n" + "".join(denial), "".join(denial) + "\n" + stderr):
        verdict = classify(rule_list, denial, exit_code, text)
        failure = runner_failure_line(rule_list, exit_code, text)
        assert verdict.runner_failure == failure
        if failure is not None:
            assert verdict.runner_failed and verdict.denied is False
        else:
            assert verdict.denied is is_denied(denial, text)


@EXAMPLES
@given(
    st.lists(st.sampled_from(["\n", "\r\n"]), min_size=1, max_size=5),
    st.sampled_from([0, 1, 2, 125, 126, 127, None]),
)
def test_the_partial_notice_alone_is_never_fatal_however_often_it_is_printed(breaks, status):
    stderr = "".join(LANDLOCK_PARTIAL_NOTICE + end for end in breaks)
    assert runner_failure_line(LANDLOCK_RULES, status, stderr) is None
    assert classify(LANDLOCK_RULES, LANDLOCK_DENIAL, status, stderr).runner_failed is False


@EXAMPLES
@given(
    st.text(st.characters(codec="utf-8", exclude_categories=["Zl", "Zp", "Cc"]), min_size=1),
    st.booleans(),
)
def test_informational_exclusion_is_exact(extra, before):
    # Anything added to the notice on its own line makes it a different, fatal line.
    near = extra + LANDLOCK_PARTIAL_NOTICE if before else LANDLOCK_PARTIAL_NOTICE + extra
    stderr = f"{LANDLOCK_PARTIAL_NOTICE}\n{near}\n"
    found = runner_failure_line(LANDLOCK_RULES, 125, stderr)
    if near.startswith("landlock-run:"):
        assert found == near
    else:
        assert found is None


@EXAMPLES
@given(st.lists(st.sampled_from(FRAGMENTS) | texts, max_size=8), exit_codes, rule_lists)
def test_line_endings_do_not_change_the_verdict(lines, exit_code, rule_list):
    lf = "\n".join(lines)
    crlf = "\r\n".join(lines)
    assert runner_failure_line(rule_list, exit_code, lf) == runner_failure_line(
        rule_list, exit_code, crlf
    )
    assert runner_failure_line(rule_list, exit_code, lf) == runner_failure_line(
        rule_list, exit_code, lf + "\n"
    )


@EXAMPLES
@given(
    st.sampled_from(sorted(errno.errorcode)),
    st.one_of(st.none(), st.text(max_size=20), st.binary(max_size=20)),
    st.text(max_size=20),
    st.booleans(),
)
def test_spawn_attribution_never_raises_and_needs_all_its_evidence(code, filename, runner, usable):
    error = OSError(code, "boom", filename) if filename is not None else OSError(code, "boom")
    blamed = spawn_failure_is_runner(error, runner, usable)
    assert blamed is (
        usable
        and code in (errno.ENOENT, errno.EACCES)
        and filename is not None
        and str(filename) == runner
    )

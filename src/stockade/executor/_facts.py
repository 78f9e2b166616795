"""Per-process wrap facts, and the pure step from a settled process to its result."""

from __future__ import annotations

import attrs

from ..messages import RunnerFailureRule, ShellResult, Wrapped
from ..vocab import Enforcement, SandboxMode
from ._buffer import OutputBuffer
from ._classify import Verdict, classify

UNCONFINED = "none"


@attrs.frozen
class WrapFacts:
    """How one process was confined; kept with its handle, so overlapping jobs keep theirs."""

    mode: SandboxMode
    backend: str
    enforcement: Enforcement | None
    denial_signatures: tuple[str, ...] = ()
    runner_failure_rules: tuple[RunnerFailureRule, ...] = ()
    gaps: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()

    @classmethod
    def from_wrapped(cls, mode: SandboxMode, wrapped: Wrapped) -> WrapFacts:
        return cls(
            mode=mode,
            backend=wrapped.backend,
            enforcement=wrapped.enforcement,
            denial_signatures=wrapped.denial_signatures,
            runner_failure_rules=wrapped.runner_failure_rules,
            gaps=wrapped.gaps,
            blockers=wrapped.blockers,
            writable=wrapped.writable,
            protected=wrapped.protected,
        )

    @classmethod
    def unconfined(cls) -> WrapFacts:
        return cls(mode=SandboxMode.DANGER_FULL_ACCESS, backend=UNCONFINED, enforcement=None)

    @property
    def confined(self) -> bool:
        return self.backend != UNCONFINED

    def judge(self, exit_code: int | None, stderr: str) -> Verdict:
        return classify(self.runner_failure_rules, self.denial_signatures, exit_code, stderr)


def settled_result(
    facts: WrapFacts,
    *,
    exit_code: int | None,
    stdout: OutputBuffer,
    stderr: OutputBuffer,
    timed_out: bool,
    cancelled: bool,
    duration: float,
) -> ShellResult:
    """The ShellResult of a settled process, classified by its own wrap facts."""
    stderr_text = stderr.text()
    verdict = facts.judge(exit_code, stderr_text)
    return ShellResult(
        exit_code=exit_code,
        stdout=stdout.text(),
        stderr=stderr_text,
        denied=verdict.denied,
        runner_failed=verdict.runner_failed,
        runner_failure=verdict.runner_failure,
        timed_out=timed_out,
        cancelled=cancelled,
        mode=facts.mode,
        backend=facts.backend,
        enforcement=facts.enforcement,
        duration=duration,
        stdout_dropped=stdout.dropped,
        stderr_dropped=stderr.dropped,
        gaps=facts.gaps,
    )


def unstarted_result(
    facts: WrapFacts, *, detail: str, runner_failed: bool, cancelled: bool = False
) -> ShellResult:
    """The result of a job whose process never started (spawn failed, or killed while queued)."""
    return ShellResult(
        exit_code=None,
        stdout="",
        stderr="" if runner_failed or cancelled else detail,
        denied=False,
        runner_failed=runner_failed,
        runner_failure=detail if runner_failed else None,
        timed_out=False,
        cancelled=cancelled,
        mode=facts.mode,
        backend=facts.backend,
        enforcement=facts.enforcement,
        duration=0.0,
    )


def waited_out_result(facts: WrapFacts, *, waited: float) -> ShellResult:
    """A call whose timeout passed while it waited for a running slot: nothing ran."""
    return ShellResult(
        exit_code=None,
        stdout="",
        stderr="[the command did not start: every running slot stayed busy until its timeout]",
        denied=False,
        runner_failed=False,
        timed_out=True,
        cancelled=False,
        mode=facts.mode,
        backend=facts.backend,
        enforcement=facts.enforcement,
        duration=waited,
    )

"""The background job table: each job's process, buffers, wrap facts and read cursors."""

from __future__ import annotations

import itertools
import time

import attrs
import trio

from ..errors import UnknownJob, brief
from ..messages import JobHandle, JobReport, ShellResult, ShellSpec
from ._buffer import OutputBuffer
from ._facts import WrapFacts


@attrs.define(eq=False)
class Job:
    id: str
    spec: ShellSpec
    facts: WrapFacts
    stdout: OutputBuffer
    stderr: OutputBuffer
    started_at: float = attrs.field(factory=time.time)
    started_clock: float = attrs.field(factory=time.monotonic)
    # None while queued for a spawn slot (or when its spawn failed).
    process: trio.Process | None = None
    ended_at: float | None = None
    result: ShellResult | None = None
    start_error: str | None = None
    killed: bool = False
    # Two phases, two scopes (a scope is entered once): waiting for a slot, running.
    queue_scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    done: trio.Event = attrs.field(factory=trio.Event)
    _stdout_cursor: int = 0
    _stderr_cursor: int = 0

    @property
    def handle(self) -> JobHandle:
        return JobHandle(
            id=self.id,
            command=self.spec.command,
            policy=self.spec.policy,
            started_at=self.started_at,
        )

    @property
    def state(self) -> str:
        if self.result is None:
            return "queued" if self.process is None else "running"
        if self.start_error is not None:
            return "failed-to-start"
        if self.result.runner_failed:
            return "runner-failed"
        if self.result.timed_out:
            return "timed-out"
        if self.killed or self.result.cancelled:
            return "killed"
        return "exited"

    def cancel(self) -> None:
        """Kill the job in whichever phase it is; its process group goes with it."""
        self.killed = True
        self.queue_scope.cancel()
        self.scope.cancel()

    def finish(self, result: ShellResult) -> None:
        """Stamp the settled result (with its classification) before `done` is set."""
        self.result = result
        self.ended_at = time.time()
        self.done.set()

    def report(self, *, advance: bool = True) -> JobReport:
        """Output since the last report; `advance` moves the cursors past it."""
        out = self.stdout.read_from(self._stdout_cursor)
        err = self.stderr.read_from(self._stderr_cursor)
        if advance:
            self._stdout_cursor, self._stderr_cursor = out.cursor, err.cursor
        result = self.result
        return JobReport(
            id=self.id,
            command=self.spec.command,
            policy=self.spec.policy,
            state=self.state,
            started_at=self.started_at,
            ended_at=self.ended_at,
            stdout=out.text(),
            stderr=err.text(),
            stdout_dropped=out.dropped,
            stderr_dropped=err.dropped,
            mode=self.facts.mode,
            backend=self.facts.backend,
            enforcement=self.facts.enforcement,
            exit_code=result.exit_code if result else None,
            denied=result.denied if result else False,
            runner_failed=result.runner_failed if result else False,
            runner_failure=result.runner_failure if result else None,
            timed_out=result.timed_out if result else False,
            gaps=self.facts.gaps,
            network=self.facts.network,
        )


@attrs.define(eq=False)
class JobTable:
    jobs: dict[str, Job] = attrs.field(factory=dict)
    _ids: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))

    def new_id(self) -> str:
        return f"job-{next(self._ids)}"

    def add(self, job: Job) -> Job:
        self.jobs[job.id] = job
        return job

    def owned_by(self, owner: str | None) -> list[Job]:
        """Every job, or (given an owner) only that session's: sessions never see each other's."""
        return [job for job in self.jobs.values() if owner is None or job.spec.owner == owner]

    def get(self, job_id: str, owner: str | None = None) -> Job:
        job = self.jobs.get(job_id)
        if job is None or (owner is not None and job.spec.owner != owner):
            known = ", ".join(job.id for job in self.owned_by(owner)) or "none"
            raise UnknownJob(f"no background job {brief(job_id)} (known: {known})")
        return job

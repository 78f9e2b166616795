"""The background job table: each job's process, buffers, wrap facts and read cursors.

Retention: a long-lived harness starts jobs without end, so the table forgets a
finished job once its final output has been read (a read after it ended: job_output,
wait, kill), and keeps at most `keep_finished` finished, unread jobs per session (the
oldest to finish goes first). An id the table issued and no longer holds is answered
"unknown job ... (finished and forgotten)".
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Final

import attrs
import trio

from ..errors import UnknownJob, brief
from ..messages import (
    JobHandle,
    JobReport,
    NetworkConnection,
    NetworkRequest,
    ShellResult,
    ShellSpec,
)
from ._buffer import OutputBuffer
from ._child import Child
from ._facts import WrapFacts
from ._limits import CallLimits


@attrs.define(eq=False, repr=False)
class Job:
    id: str
    spec: ShellSpec
    facts: WrapFacts
    stdout: OutputBuffer
    stderr: OutputBuffer
    started_at: float = attrs.field(factory=time.time)
    started_clock: float = attrs.field(factory=time.monotonic)
    # None while queued for a spawn slot (or when its spawn failed).
    process: Child | None = None
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
    _connections_cursor: int = 0
    # network allowlist: the connections its proxy has decided so far (the executor's
    # own list, appended to as they are decided), until its result carries them all.
    live_connections: list[NetworkConnection] = attrs.field(factory=list)
    # The same for the requests to ruled hosts it judged (issue 41).
    _requests_cursor: int = 0
    live_requests: list[NetworkRequest] = attrs.field(factory=list)
    # Its limits in force while it runs (its cgroup, the launcher's descriptors).
    limited: CallLimits | None = None
    # Killed because its session closed (not by a caller's kill_job).
    session_closed: bool = False
    # What holds its running slots (executor/_slots.py) while it waits and runs.
    slot: object = attrs.field(factory=object)
    # Set by the JobTable that holds the job: told when the job settles.
    on_finish: Callable[[Job], None] | None = None

    @property
    def handle(self) -> JobHandle:
        return JobHandle(
            id=self.id,
            command=self.spec.command,
            policy=self.spec.policy,
            started_at=self.started_at,
            state=self.state,
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
        if self.on_finish is not None:
            self.on_finish(self)

    def report(self, *, advance: bool = True) -> JobReport:
        """Output since the last report; `advance` moves the cursors past it."""
        out = self.stdout.read_from(self._stdout_cursor)
        err = self.stderr.read_from(self._stderr_cursor)
        if advance:
            self._stdout_cursor, self._stderr_cursor = out.cursor, err.cursor
        result = self.result
        # Like output: each connection is in one advancing report (logged once).
        decided = result.connections if result else tuple(self.live_connections)
        connections = decided[self._connections_cursor :]
        if advance:
            self._connections_cursor += len(connections)
        judged = result.requests if result else tuple(self.live_requests)
        requests = judged[self._requests_cursor :]
        if advance:
            self._requests_cursor += len(requests)
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
            tier=self.facts.tier,
            enforcement=self.facts.enforcement,
            exit_code=result.exit_code if result else None,
            denied=result.denied if result else False,
            read_denied=result.read_denied if result else False,
            unseen=result.unseen if result else (),
            held=result.held if result else (),
            runner_failed=result.runner_failed if result else False,
            runner_failure=result.runner_failure if result else None,
            timed_out=result.timed_out if result else False,
            gaps=self.facts.gaps,
            network_enforcement=self.facts.network_enforcement,
            network_gaps=self.facts.network_gaps,
            connections=connections,
            connections_refused=result.connections_refused if result else None,
            requests=requests,
            network=self.facts.network,
            env_dropped=self.facts.env_dropped,
            cause=result.cause if result else None,
            limit=result.limit if result else None,
            note=result.note if result else None,
            usage=result.usage if result else None,
            limits=result.limits if result else (),
        )


# How many finished jobs whose output was not read to the end a session keeps.
FINISHED_JOBS_KEPT: Final = 100
_JOB_ID = re.compile(r"job-([1-9][0-9]{0,18})")


@attrs.define(eq=False, repr=False)
class JobTable:
    """Every job not yet forgotten, by id, and each owner's (session's) jobs in start order."""

    jobs: dict[str, Job] = attrs.field(factory=dict)
    keep_finished: int = FINISHED_JOBS_KEPT
    # How many jobs were forgotten, for the curious (bench, tests).
    forgotten: int = 0
    _issued: int = 0
    _owned: dict[str | None, dict[str, Job]] = attrs.field(factory=dict)
    # Per owner, its finished jobs still held, in the order they finished.
    _finished: dict[str | None, dict[str, None]] = attrs.field(factory=dict)

    def new_id(self) -> str:
        self._issued += 1
        return f"job-{self._issued}"

    def add(self, job: Job) -> Job:
        self.jobs[job.id] = job
        self._owned.setdefault(job.spec.owner, {})[job.id] = job
        job.on_finish = self._settled
        return job

    def owned_by(self, owner: str | None) -> list[Job]:
        """Every job, or (given an owner) only that session's: sessions never see each other's."""
        if owner is None:
            return list(self.jobs.values())
        return list(self._owned.get(owner, {}).values())

    def get(self, job_id: str, owner: str | None = None) -> Job:
        job = self.jobs.get(job_id)
        if job is None or (owner is not None and job.spec.owner != owner):
            if job is None and self._issued_here(job_id):
                raise UnknownJob(
                    f"unknown job {brief(job_id)} (finished and forgotten): a finished job "
                    "is forgotten once its final output has been read, when its session "
                    f"closes, or when its session holds more than {self.keep_finished} "
                    "finished jobs whose output was not read to the end"
                )
            known = ", ".join(job.id for job in self.owned_by(owner)) or "none"
            raise UnknownJob(f"no background job {brief(job_id)} (known: {known})")
        return job

    def read(self, job_id: str, owner: str | None = None) -> JobReport:
        """The output since the last read, and the status (forgets a finished job)."""
        return self.reported(self.get(job_id, owner))

    def reported(self, job: Job, *, advance: bool = True) -> JobReport:
        """`job.report(advance)`; a read to the end of a finished job is its last."""
        report = job.report(advance=advance)
        if advance and job.result is not None:
            self.forget(job)
        return report

    def forget(self, job: Job) -> None:
        if self.jobs.get(job.id) is not job:
            return
        del self.jobs[job.id]
        self.forgotten += 1
        owner = job.spec.owner
        for index in (self._owned, self._finished):
            held = index.get(owner)
            if held is not None:
                held.pop(job.id, None)
                if not held:
                    del index[owner]

    def _settled(self, job: Job) -> None:
        if self.jobs.get(job.id) is not job:
            return
        finished = self._finished.setdefault(job.spec.owner, {})
        finished[job.id] = None
        while len(finished) > self.keep_finished:
            self.forget(self.jobs[next(iter(finished))])  # the first to have finished

    def _issued_here(self, job_id: object) -> bool:
        if not isinstance(job_id, str):
            return False
        match = _JOB_ID.fullmatch(job_id)
        return match is not None and int(match.group(1)) <= self._issued

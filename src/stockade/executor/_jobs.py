"""The background job table: every job not yet forgotten (`_job.Job`), by id and owner.

Retention: a long-lived harness starts jobs without end, so the table forgets a
finished job once its final output has been read (a read after it ended: job_output,
wait, kill), and keeps at most `keep_finished` finished, unread jobs per session (the
oldest to finish goes first). An id the table issued and no longer holds is answered
"unknown job ... (finished and forgotten)".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

import attrs

from ..errors import UnknownJob, brief
from ..messages import JobReport

if TYPE_CHECKING:
    from ._job import Job


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

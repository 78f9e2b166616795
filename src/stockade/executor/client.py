"""What callers of the ExecutorActor hold: `ExecutorClient`, which resolves a command
into a complete spec and asks the actor's inbox for each operation."""

from __future__ import annotations

import os

import msgspec

from ..actors import Inbox, request
from ..messages import (
    AttachedRun,
    CloseSession,
    ExecutorRequest,
    JobHandle,
    JobOutput,
    JobReport,
    KillJob,
    ListJobs,
    Run,
    ShellResult,
    ShellSpec,
    Start,
    Streams,
    WaitJob,
)
from ..vocab import ExecutionPolicy, SandboxMode
from .config import ExecutorConfig


class ExecutorClient(msgspec.Struct, frozen=True):
    """What callers hold. `resolve` gives an agentless caller the configured default."""

    inbox: Inbox[ExecutorRequest]
    config: ExecutorConfig
    confines: bool

    def resolve(
        self,
        command: str,
        *,
        policy: ExecutionPolicy | None = None,
        mode: SandboxMode | str | None = None,
        workdir: str | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
        env: dict[str, str] | None = None,
        owner: str | None = None,
    ) -> ShellSpec:
        """A complete spec: the explicit policy, else `mode` or the default at the fallback root."""
        if policy is None:
            root = os.path.realpath(self.config.fallback_root or os.getcwd())
            chosen = SandboxMode.parse(mode) if mode is not None else self.config.default_mode
            policy = ExecutionPolicy(
                mode=chosen, workspace_root=root, network=self.config.default_network
            )
        return ShellSpec(
            command=command,
            policy=policy,
            workdir=workdir,
            timeout=timeout,
            stdin=stdin,
            env=env,
            owner=owner,
        )

    async def run(self, spec: ShellSpec, *, streams: Streams | None = None) -> ShellResult:
        """Run in the foreground. With `streams`, every output chunk also goes to the
        caller's sinks as it arrives and stdin is pumped from its source (the result
        still holds the bounded capture, classified as always)."""
        message = Run(spec) if streams is None else AttachedRun(spec, streams)
        result: ShellResult = await request(self.inbox, message)
        return result

    async def start(self, spec: ShellSpec) -> JobHandle:
        handle: JobHandle = await request(self.inbox, Start(spec))
        return handle

    async def job_output(self, job_id: str, *, owner: str | None = None) -> JobReport:
        """Output since the last read, and the status. Read after the job ended, it is
        the job's last report: the job is forgotten (`_jobs`, "Retention")."""
        report: JobReport = await request(self.inbox, JobOutput(job_id, owner))
        return report

    async def wait(self, job_id: str, *, owner: str | None = None, read: bool = True) -> JobReport:
        """Wait until the job settles; its report carries the output not yet read, and
        is its last (the job is forgotten).

        With `read=False` that output stays unread, and the job kept, for a later
        `job_output`.
        """
        report: JobReport = await request(self.inbox, WaitJob(job_id, owner, read))
        return report

    async def kill(self, job_id: str, *, owner: str | None = None) -> JobReport:
        """Kill the job (its process group with it); the report is its last."""
        report: JobReport = await request(self.inbox, KillJob(job_id, owner))
        return report

    async def close_session(self, owner: str) -> int:
        """End the session `owner` here: its jobs killed (cause session-closed) and
        forgotten, its cgroup removed. How many jobs were still running or queued."""
        ended: int = await request(self.inbox, CloseSession(owner))
        return ended

    async def list(self, *, owner: str | None = None) -> list[JobHandle]:
        """Every job, or only `owner`'s; a session passes its own id."""
        handles: list[JobHandle] = await request(self.inbox, ListJobs(owner))
        return handles

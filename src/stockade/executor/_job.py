"""One background job: its process, buffers, wrap facts and read cursors.

Its own module so that a foreground call (every `stockade run`) never builds the class:
only `Start` does (docs/performance.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
import trio

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

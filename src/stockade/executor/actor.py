"""ExecutorActor: runs `bash -c COMMAND` confined (or not), foreground and background.

It owns the child processes and the background-job nursery; classification is pure
(`_classify`, `_facts`), spawning and killing live in `_spawn`.
"""

from __future__ import annotations

import errno
import itertools
import math
import os
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, assert_never

import attrs
import msgspec
import trio

from ..actors import (
    Envelope,
    Inbox,
    Mailbox,
    answer,
    answer_now,
    open_inbox,
    running,
    serve_forever,
)
from ..errors import CommandStartError, SandboxUnavailable, brief
from ..limits import Limits, Usage
from ..limits.cgroups import CgroupError
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
    WaitJob,
)
from ..network import names_loopback, proxy_environment
from ..sandbox import ProviderClient, filter_launcher, placeholder_attempts, tool_caches
from ..trust import (
    check_approved,
    enter_judged,
    judge_workdir,
    new_repository,
    repository_made,
    spawn_cwd,
)
from ..vocab import SpawnTrait
from ._buffer import OutputBuffer
from ._child import Child
from ._classify import spawn_failure_is_runner
from ._endpoints import AuditConnection, ProxyEndpoints
from ._facts import WrapFacts, settled_result, unstarted_result, waited_out_result
from ._holds import PlaceholderHolds
from ._jobs import JobTable
from ._limits import LAUNCHER_PROCESSES, CallLimits, LimitsHost, ended, settle_limited
from ._slots import Slots
from ._spawn import Streams, command_started, env_prefix, exit_status, settle, spawn
from .client import ExecutorClient as ExecutorClient
from .config import ExecutorConfig
from .environment import apply_policy

if TYPE_CHECKING:
    from ..network import NetworkProxy
    from ..trust import JudgedDirectory
    from ._brokering import Brokered
    from ._job import Job


def _workdir_usable(workdir: str) -> bool:
    return os.path.isdir(workdir) and os.access(workdir, os.X_OK)


def _judged(spec: ShellSpec) -> JudgedDirectory:
    """Where `spec` starts, judged now; for an asked call, CommandStartError unless it
    is the directory the person was shown (the spawn then enters this very one:
    `enter_judged` checks its identity again)."""
    spelled = spec.workdir or spec.policy.workspace_root
    judged = judge_workdir(spelled)
    asked = spec.expected_workdir
    if asked is not None:
        check_approved(judged, spelled, asked.real, (asked.device, asked.inode))
    return judged


@attrs.define(eq=False, repr=False)
class ExecutorActor:
    """With a provider it confines (`confines` True); without one it is the local executor."""

    config: ExecutorConfig = attrs.field(factory=ExecutorConfig)
    provider: ProviderClient | None = None
    # network allowlist: appends each connection the proxy decides for a session's
    # call to that session's log, before a byte of it is relayed (None: results only).
    audit_connection: AuditConnection | None = None
    jobs: JobTable = attrs.field(factory=JobTable, init=False)
    _slots: Slots = attrs.field(init=False)
    _nursery: trio.Nursery | None = attrs.field(default=None, init=False)
    # Placeholders (see Wrapped.blockers) its processes use, and their locks.
    _placeholders: PlaceholderHolds = attrs.field(factory=PlaceholderHolds, init=False)
    # network allowlist: the proxy (one per executor, so per harness) and its calls.
    _network: ProxyEndpoints = attrs.field(init=False)
    _call_numbers: itertools.count[int] = attrs.field(
        factory=lambda: itertools.count(1), init=False
    )
    # Where each call's limits are held (its cgroup subtree), while `run` runs.
    _limits: LimitsHost | None = attrs.field(default=None, init=False)
    _launcher: str | None = attrs.field(default=None, init=False)
    _command_limits: Limits = attrs.field(init=False)
    # network allowlist, issue 41: the broker for ruled hosts and the CA bundle its
    # commands trust, made when `run` starts (None: no rule names a host).
    _brokered: Brokered | None = attrs.field(default=None, init=False)
    # The environment policy's last answer: (the environment, what it left, dropped).
    _environment: tuple[object, dict[str, str], tuple[str, ...]] | None = attrs.field(
        default=None, init=False
    )
    _inbox: Inbox[ExecutorRequest] = attrs.field(init=False)
    _mailbox: Mailbox[ExecutorRequest] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._inbox, self._mailbox = open_inbox()
        self._network = ProxyEndpoints(self.config, self._call_numbers, audit=self.audit_connection)
        self._command_limits = self.config.command_limits
        self._slots = Slots(
            bound=self.config.running_bound(),
            session_cap=self.config.session_limits.running_jobs,
        )

    @property
    def confines(self) -> bool:
        return self.provider is not None

    @property
    def client(self) -> ExecutorClient:
        return ExecutorClient(inbox=self._inbox, config=self.config, confines=self.confines)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        # Jobs live in the request nursery: leaving it cancels every job, and each
        # one kills its process group.
        try:
            async with AsyncExitStack() as stack:
                self._launcher = filter_launcher()
                self._limits = LimitsHost.open(self.config.session_limits)
                stack.callback(self._limits.close)
                # Made now, once: a missing credential is the start's error, never a
                # call's; the bundle's directory goes with the executor.
                if self.config.has_ruled_hosts:
                    from ._brokering import open_broker  # only a ruled host needs one

                    self._brokered = open_broker(self.config, os.environ)
                if self._brokered is not None:
                    stack.callback(self._brokered.close)
                if self.confines:
                    # Started by the first call with network allowlist: a harness
                    # whose calls never use it never imports the proxy (h11, socksio).
                    self._network.start = self._start_proxy
                await serve_forever(
                    self._mailbox,
                    self._serve,
                    task_status=task_status,
                    on_start=self._adopt_nursery,
                    quick=self._quick,
                )
        finally:
            self._network.proxy = None
            self._brokered = None
            await self._placeholders.release_all()

    def _quick(self, envelope: Envelope[ExecutorRequest]) -> bool:
        """Reading the job table never waits: answer in the inbox loop."""
        match envelope.message:
            case JobOutput(job_id=job_id, owner=owner):
                answer_now(envelope, lambda: self._read(job_id, owner))
            case ListJobs(owner=owner):
                answer_now(envelope, lambda: [job.handle for job in self.jobs.owned_by(owner)])
            case _:
                return False
        return True

    async def _start_proxy(self) -> NetworkProxy:
        """The network proxy, run in the request nursery until the executor ends."""
        from ..network import open_proxy

        async def hold(*, task_status: trio.TaskStatus[NetworkProxy]) -> None:
            brokered = self._brokered
            async with open_proxy(
                on_decision=self._network.decided,
                broker=brokered.broker if brokered is not None else None,
                on_request=self._network.requested if brokered is not None else None,
            ) as proxy:
                task_status.started(proxy)
                await trio.sleep_forever()

        assert self._nursery is not None
        proxy: NetworkProxy = await self._nursery.start(hold)
        return proxy

    def _adopt_nursery(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        nursery.start_soon(self._placeholders.remove_idle)

    async def _serve(self, envelope: Envelope[ExecutorRequest]) -> None:
        message = envelope.message
        match message:
            case Run(spec=spec):
                await answer(envelope, lambda: self._run(spec))
            case AttachedRun(spec=spec, streams=streams):
                await answer(envelope, lambda: self._run(spec, streams))
            case Start(spec=spec):
                await answer(envelope, lambda: self._start(spec))
            case JobOutput(job_id=job_id, owner=owner):
                await answer(envelope, lambda: self._job_output(job_id, owner))
            case WaitJob(job_id=job_id, owner=owner, read=read):
                await answer(envelope, lambda: self._wait(job_id, owner, read))
            case KillJob(job_id=job_id, owner=owner):
                await answer(envelope, lambda: self._kill(job_id, owner))
            case ListJobs(owner=owner):
                await answer(envelope, lambda: self._list(owner))
            case CloseSession(owner=owner):
                await answer(envelope, lambda: self._close_session(owner))
            case _:
                assert_never(message)

    async def _prepare(self, spec: ShellSpec) -> tuple[tuple[str, ...], WrapFacts]:
        """The exact argv to spawn and its wrap facts; a provider error propagates."""
        if spec.timeout is not None and not spec.timeout >= 0:  # NaN fails this too
            raise CommandStartError(
                f"the timeout must be a number of seconds, 0 or more, not {spec.timeout!r}; "
                "nothing ran"
            )
        if self.provider is None or not spec.policy.mode.confines:
            # danger-full-access (or the local executor) never touches the provider.
            facts = WrapFacts.unconfined()
            if spec.expected_workdir is not None:
                # Asked: started where the person was shown, entered by descriptor as
                # a confined call is (an unasked one keeps the plain `cwd`).
                facts = msgspec.structs.replace(facts, judged=_judged(spec))
            return ("bash", "-c", spec.command), self._with_environment(facts)
        # The caller's variables reach the command through `env`, inside the sandbox:
        # in the runner's own environment, LD_PRELOAD and the like would run code in
        # a dynamically linked runner (bwrap) before any confinement exists.
        argv = (*env_prefix(spec.env), "bash", "-c", spec.command)
        # Where the command starts is chosen by the model: judged where it really leads
        # (the provider refuses one beneath a cover), and entered as that directory.
        judged = _judged(spec)
        # The provider guards the call, this executor holds its placeholders: on a disk
        # that changed in between, both again (the confine sequence's one retry).
        assert self._nursery is not None
        proxy_call, proxy = await self._network.open(spec, self._nursery)
        try:
            for attempt in placeholder_attempts():
                with attempt:
                    # (A provider without network allowlist is asked as before.)
                    extra = {"proxy": proxy} if proxy is not None else {}
                    wrapped = await self.provider.confine(
                        argv, spec.policy.sandbox_policy(), workdir=judged.real, **extra
                    )
                    await self._placeholders.hold(wrapped.blockers, wrapped.directory_blockers)
        except BaseException:
            self._network.close(proxy_call)
            raise
        facts = WrapFacts.from_wrapped(
            spec.policy.mode,
            wrapped,
            workdir=judged.real,
            command=spec.command,
            network=spec.policy.network,
            program=argv[0],
        )
        facts = msgspec.structs.replace(facts, proxy_call=proxy_call, judged=judged)
        return wrapped.argv, self._with_environment(facts)

    async def _held(self, result: ShellResult, facts: WrapFacts) -> ShellResult:
        """`result`, with what git would run held aside in a repository the call made
        in a root that had none (trust/new_repository.py), and a line saying so."""
        root = facts.new_repository
        if root is None or not repository_made(root):
            return result
        held, moved = await trio.to_thread.run_sync(new_repository.hold, root)
        if not held:
            return result
        line = new_repository.held_note(root, held, moved)
        note = line if not result.note else f"{result.note}\n{line}"
        return msgspec.structs.replace(result, held=tuple(held), note=note)

    def _with_environment(self, facts: WrapFacts) -> WrapFacts:
        """`facts` with the environment the policy leaves of this process's, and the
        names it dropped (decided once per call, when it is prepared; the policy's
        answer for an environment seen before is reused: matching every variable
        against every pattern was most of a call's cost in this process)."""
        # os.environ's own byte table, compared in C (a copy is kept): decoding every
        # item each call cost more than the rest of preparing an unconfined call.
        raw = getattr(os.environ, "_data", None)
        if self._environment is None or self._environment[0] != (
            raw if raw is not None else tuple(os.environ.items())
        ):
            seen = dict(raw) if raw is not None else tuple(os.environ.items())
            withheld = self.config.withheld
            if self._brokered is not None:
                # A credential's variable, and any holding its value, whatever `env` says.
                withheld = withheld.merged(self._brokered.withheld)
            environment, dropped = apply_policy(os.environ, self.config.env, withheld=withheld)
            self._environment = (seen, environment, dropped)
        _, environment, dropped = self._environment
        return msgspec.structs.replace(facts, environment=dict(environment), env_dropped=dropped)

    def _release(self, facts: WrapFacts) -> None:
        """The process of `facts` is gone: let go of its placeholders and its proxy
        endpoint (its decided connections stay until its result is made)."""
        self._placeholders.let_go(facts.blockers)
        self._network.close(facts.proxy_call)

    async def _spawn(
        self,
        spec: ShellSpec,
        argv: tuple[str, ...],
        facts: WrapFacts,
        limited: CallLimits | None,
        streams: Streams | None = None,
    ) -> Child:
        workdir = spec.workdir or spec.policy.workspace_root
        # The session's private temp directory is the command's TMPDIR (the caller's
        # own `env` may still name another). Confined, the caller's variables pass
        # through `env` inside the sandbox; TMPDIR through the runner (it reads none).
        # The base is what the environment policy left (the runner passes it on).
        temp = {"TMPDIR": spec.policy.temp_dir} if spec.policy.temp_dir else {}
        caller = {**temp, **(spec.env or {})} if not facts.confined else temp
        # network allowlist: every client is pointed at the bridge to the proxy.
        proxied = {}
        if facts.proxy_call is not None:
            allowed = (
                *(() if spec.network_allow_alone else self.config.network_allow),
                *spec.network_allow,
            )
            proxied = proxy_environment(loopback_direct=not names_loopback(allowed))
        # Issue 41: each credential's placeholder (never its value) and the variables
        # naming the bundle that trusts the harness CA, in every call (the proxy swaps
        # a placeholder under network allowlist only; elsewhere it reaches nothing).
        brokered = self._brokered.environment() if self._brokered is not None else {}
        env = {**facts.environment, **brokered, **proxied, **caller}
        if facts.confined and spec.policy.tool_cache is not None:
            # After the caller's own: a confined tool caches where the host's own
            # unconfined tools never look (an unconfined call keeps the host's caches).
            env.update(
                tool_caches.variables(spec.policy.tool_cache, self.config.tool_cache_tools, env)
            )
        for agent, reached_at in facts.agents:
            # A granted ssh agent, where the command reaches it (the environment policy
            # drops the host's SSH_AUTH_SOCK from every other call).
            if agent == "ssh":
                env["SSH_AUTH_SOCK"] = reached_at
        with_stdin = spec.stdin is not None or (streams is not None and streams.stdin is not None)
        terminal = streams.terminal if streams is not None else None
        entered = None
        try:
            cwd = workdir
            if facts.judged is not None:
                entered = enter_judged(facts.judged)
                cwd = spawn_cwd(entered, facts.judged)
            runner_at = 0
            if limited is not None:
                argv, runner_at = limited.wrap(
                    argv, self._launcher, facts.traits, runner=facts.confined
                )
            if runner_at and not os.access(argv[runner_at], os.X_OK):
                # The launcher would exec it and fail in-band: say it as a spawn would.
                error = OSError(errno.ENOENT, os.strerror(errno.ENOENT), argv[runner_at])
                raise SandboxUnavailable(
                    f"cannot start the sandbox runner {argv[runner_at]}: {error.strerror}"
                )
            return await spawn(
                argv,
                cwd=cwd,
                env=env,
                with_stdin=with_stdin,
                info_fd=SpawnTrait.INFO_FD in facts.traits,
                terminal=terminal,
                runner_at=runner_at,
                traits=facts.traits,
            )
        except CgroupError as error:
            raise CommandStartError(f"the command's limits cannot be set: {error}") from None
        except ValueError as error:  # a NUL byte, or text that is not UTF-8
            raise CommandStartError(f"the command cannot be started: {error}") from None
        except OSError as error:
            if facts.confined and spawn_failure_is_runner(error, argv[0], _workdir_usable(workdir)):
                raise SandboxUnavailable(
                    f"cannot start the sandbox runner {argv[0]}: {error.strerror}"
                ) from None
            raise CommandStartError(
                f"could not start the command in {brief(workdir)}: {error.strerror or error}"
            ) from None
        finally:
            if entered is not None:
                os.close(entered)

    def _limit(self, spec: ShellSpec, argv: tuple[str, ...], facts: WrapFacts) -> CallLimits | None:
        """The call's limits in force: its cgroup made, the launcher's descriptors open
        (ended by `_unlimit`). CommandStartError when the host refuses them."""
        if self._limits is None:
            return None
        # The Landlock launcher reads the options itself; bwrap and an unconfined
        # command get the shipped launcher's `--limits-only` before them.
        traits = facts.traits
        placeable = SpawnTrait.LIMITS_IN_RUNNER in traits or (
            SpawnTrait.LIMITS_STAGE in traits and self._launcher is not None
        )
        try:
            return self._limits.for_call(
                self._command_limits,
                spec.owner,
                f"call-{next(self._call_numbers)}",
                placeable=placeable,
                confined=facts.confined,
                launcher_processes=LAUNCHER_PROCESSES if facts.confined else 0,
                reusable=SpawnTrait.REAPS_ALL in traits,
            )
        except CgroupError as error:
            raise CommandStartError(
                f"the command's limits cannot be set: {error}; nothing ran"
            ) from None

    async def _unlimit(self, limited: CallLimits | None) -> None:
        """Remove the call's cgroup (what is left in it killed); off the event loop
        when it is not simply an empty group."""
        if limited is not None and not limited.try_end():
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(limited.end)

    async def _run(self, spec: ShellSpec, streams: Streams | None = None) -> ShellResult:
        argv, facts = await self._prepare(spec)
        try:
            return await self._run_prepared(spec, argv, facts, streams)
        except BaseException:
            # Ended with no result to say so (cancelled once its processes were killed:
            # its caller or this executor gone; the runner failed): a repository the
            # call made in the root is held all the same.
            with trio.CancelScope(shield=True):
                root = facts.new_repository
                if root is not None and repository_made(root):
                    await trio.to_thread.run_sync(new_repository.hold, root)
            raise
        finally:
            self._release(facts)

    async def _run_prepared(
        self,
        spec: ShellSpec,
        argv: tuple[str, ...],
        facts: WrapFacts,
        streams: Streams | None = None,
    ) -> ShellResult:
        started = time.monotonic()
        limit = self._timeout(spec)
        slot, acquired = object(), False
        # The call's timeout covers waiting for a slot: when long jobs hold them all,
        # a short call ends at its deadline having run nothing.
        busy = self._slots.harness_full
        with trio.move_on_after(math.inf if limit is None else limit):
            # A free slot is taken without a trip through the event loop; `take`'s own
            # first step is kept: a timeout of 0 (or a cancelled caller) takes none.
            # `try_take` fails while others wait, so nobody's turn is jumped.
            await trio.lowlevel.checkpoint_if_cancelled()
            if not self._slots.try_take(slot, spec.owner, job=False):
                await self._slots.take(slot, spec.owner, job=False)
            acquired = True
        if not acquired:
            busy = busy or self._slots.harness_full
            return waited_out_result(
                facts, waited=time.monotonic() - started, busy=busy, limit=limit
            )
        limited = None
        try:
            limited = self._limit(spec, argv, facts)
            process = await self._spawn(spec, argv, facts, limited, streams)
            stdout = OutputBuffer.with_cap(self.config.output_cap)
            stderr = OutputBuffer.with_cap(self.config.output_cap)
            remaining = None if limit is None else max(0.0, limit - (time.monotonic() - started))
            timed_out = await settle_limited(
                limited,
                partial(
                    settle,
                    process,
                    stdout,
                    stderr,
                    stdin=spec.stdin,
                    time_limit=remaining,
                    kill_grace=self.config.kill_grace,
                    streams=streams,
                ),
            )
            usage = limited.usage() if limited is not None else Usage()
        finally:
            self._slots.give_back(slot, spec.owner, job=False)
            await self._unlimit(limited)
        # Every connection of the call decided (kept and logged) or cut before its
        # result is made: none can be relayed and left out.
        await self._network.finish(facts.proxy_call)
        requests = self._network.take_requests(facts)
        connections, refused = self._network.take(facts)
        result = settled_result(
            facts,
            exit_code=exit_status(process),
            stdout=stdout,
            stderr=stderr,
            started=command_started(process),
            timed_out=timed_out,
            cancelled=False,
            duration=time.monotonic() - started,
            connections=connections,
            connections_refused=refused,
            requests=requests,
        )
        result = await self._held(ended(result, limited, usage), facts)
        if result.runner_failed:
            raise SandboxUnavailable(
                result.runner_failure or "the sandbox runner failed", runner_started=True
            )
        return result

    def _timeout(self, spec: ShellSpec) -> float | None:
        return spec.timeout if spec.timeout is not None else self.config.default_timeout

    async def _start(self, spec: ShellSpec) -> JobHandle:
        """Spawn now when a slot is free (spawn errors raise here), else queue the job."""
        assert self._nursery is not None
        argv, facts = await self._prepare(spec)
        from ._job import Job  # a foreground call never builds the class

        job = Job(
            id=self.jobs.new_id(),
            spec=spec,
            facts=facts,
            stdout=OutputBuffer.with_cap(self.config.output_cap),
            stderr=OutputBuffer.with_cap(self.config.output_cap),
        )
        if facts.proxy_call is not None:
            job.live_connections = self._network.connections(facts.proxy_call)
            job.live_requests = self._network.requests(facts.proxy_call)
        slot = job.slot
        if not self._slots.try_take(slot, spec.owner, job=True):
            self.jobs.add(job)
            self._nursery.start_soon(self._queued, job, argv, slot)
            return job.handle
        try:
            job.limited = self._limit(spec, argv, facts)
            job.process = await self._spawn(spec, argv, facts, job.limited)
        except BaseException:
            self._slots.give_back(slot, spec.owner, job=True)
            self._release(facts)
            await self._unlimit(job.limited)
            raise
        self.jobs.add(job)
        self._nursery.start_soon(self._supervise, job, slot)
        return job.handle

    async def _queued(self, job: Job, argv: tuple[str, ...], slot: object) -> None:
        """Wait for a slot, then spawn; a spawn failure is stamped on the job."""
        supervised = False
        try:
            supervised = await self._queued_then_run(job, argv, slot)
        finally:
            if not supervised:
                self._release(job.facts)

    async def _queued_then_run(self, job: Job, argv: tuple[str, ...], slot: object) -> bool:
        """True once the job reached `_supervise` (which releases its blockers)."""
        try:
            with job.queue_scope:
                await self._slots.take(slot, job.spec.owner, job=True)
        except BaseException:
            # The executor is stopping: the job never ran, and says so before `done`.
            job.finish(
                unstarted_result(
                    job.facts, detail="the executor stopped", runner_failed=False, cancelled=True
                )
            )
            raise
        if job.queue_scope.cancelled_caught:
            result = unstarted_result(
                job.facts, detail="killed while queued", runner_failed=False, cancelled=True
            )
            if job.session_closed:
                result = msgspec.structs.replace(result, cause="session-closed")
            job.finish(result)
            return False
        try:
            job.limited = self._limit(job.spec, argv, job.facts)
            job.process = await self._spawn(job.spec, argv, job.facts, job.limited)
        except SandboxUnavailable as error:
            self._slots.give_back(slot, job.spec.owner, job=True)
            await self._unlimit(job.limited)
            job.finish(unstarted_result(job.facts, detail=error.detail, runner_failed=True))
            return False
        except CommandStartError as error:
            self._slots.give_back(slot, job.spec.owner, job=True)
            await self._unlimit(job.limited)
            job.start_error = str(error)
            job.finish(unstarted_result(job.facts, detail=str(error), runner_failed=False))
            return False
        except BaseException:
            self._slots.give_back(slot, job.spec.owner, job=True)
            await self._unlimit(job.limited)
            raise
        job.started_clock = time.monotonic()
        await self._supervise(job, slot)
        return True

    async def _supervise(self, job: Job, slot: object) -> None:
        process = job.process
        assert process is not None
        timed_out = False
        limited = job.limited
        try:
            with job.scope:
                timed_out = await settle_limited(
                    limited,
                    partial(
                        settle,
                        process,
                        job.stdout,
                        job.stderr,
                        stdin=job.spec.stdin,
                        time_limit=self._timeout(job.spec),
                        kill_grace=self.config.kill_grace,
                    ),
                )
        finally:
            self._slots.give_back(slot, job.spec.owner, job=True)
            await self._network.finish(job.facts.proxy_call)
            usage = limited.usage() if limited is not None else Usage()
            await self._unlimit(limited)
            requests = self._network.take_requests(job.facts)
            connections, refused = self._network.take(job.facts)
            # Stamped before `done`, also when the harness is leaving (cancelled).
            result = settled_result(
                job.facts,
                exit_code=exit_status(process),
                stdout=job.stdout,
                stderr=job.stderr,
                started=command_started(process),
                timed_out=timed_out,
                cancelled=job.scope.cancelled_caught or process.returncode is None,
                duration=time.monotonic() - job.started_clock,
                connections=connections,
                connections_refused=refused,
                requests=requests,
            )
            self._release(job.facts)
            result = ended(
                result, limited, usage, killed=job.killed, session_closed=job.session_closed
            )
            with trio.CancelScope(shield=True):  # also when the harness is leaving
                result = await self._held(result, job.facts)
            job.finish(result)

    # A report that reads a finished job to its end is its last: the table forgets it.
    async def _job_output(self, job_id: str, owner: str | None) -> JobReport:
        return self._read(job_id, owner)

    def _read(self, job_id: str, owner: str | None) -> JobReport:
        """The job's report; a queued one says how many of its session's wait ahead."""
        job = self.jobs.get(job_id, owner)
        report = self.jobs.reported(job)
        if report.state != "queued":
            return report
        position = self._slots.position(job.slot, job.spec.owner)
        return msgspec.structs.replace(report, queue_position=position)

    async def _wait(self, job_id: str, owner: str | None, read: bool) -> JobReport:
        job = self.jobs.get(job_id, owner)
        await job.done.wait()
        return self.jobs.reported(job, advance=read)

    async def _kill(self, job_id: str, owner: str | None) -> JobReport:
        job = self.jobs.get(job_id, owner)
        if job.result is None:
            job.cancel()
            await job.done.wait()
        return self.jobs.reported(job)

    async def _close_session(self, owner: str) -> int:
        """Kill every job of `owner` (queued ones never start), forget them, and remove
        the session's cgroup; the jobs' cause reads session-closed."""
        jobs = [job for job in self.jobs.owned_by(owner) if job.result is None]
        for job in jobs:
            job.session_closed = True
            job.queue_scope.cancel()
            job.scope.cancel()
        for job in jobs:
            await job.done.wait()
        for job in self.jobs.owned_by(owner):
            self.jobs.forget(job)
        if self._limits is not None:
            limits = self._limits
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(limits.close_session, owner)
        return len(jobs)

    async def _list(self, owner: str | None) -> list[JobHandle]:
        return [job.handle for job in self.jobs.owned_by(owner)]


@asynccontextmanager
async def open_executor(
    config: ExecutorConfig | None = None, provider: ProviderClient | None = None
) -> AsyncIterator[ExecutorClient]:
    """Run an ExecutorActor for the block; leaving it kills every job it started."""
    actor = ExecutorActor(config=config or ExecutorConfig(), provider=provider)
    async with running(actor.run):
        yield actor.client

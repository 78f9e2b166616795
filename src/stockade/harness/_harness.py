"""open_harness(): the actors of one composition in one nursery, and the sessions on it.

`Harness` opens sessions and lists tool schemas; `AgentSession` is what an agent
loop holds: model-facing tools, programmatic shell, knobs, pre_step, fork_child.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import msgspec
import trio

from ..actors.lifetime import running
from ..approval.actor import ApprovalActor, ApprovalClient
from ..approval.answerers import (
    CallbackAnswerer,
    RejectRule,
    RejectRules,
    ScriptedAnswerer,
    TerminalAnswerer,
)
from ..approval.events import APPROVAL_EVENTS
from ..config import Composition, load_composition
from ..config.builtins import ApprovalConfig
from ..errors import ConfigError, InvalidPolicy, UnknownJob
from ..events import EventRegistry, SessionEvent, UnencodableEvent
from ..executor.actor import ExecutorActor, ExecutorClient
from ..executor.config import ExecutorConfig
from ..messages import JobHandle, JobReport, ShellResult
from ..policy.context import PolicyContext
from ..policy.knobs import PolicyDefaults, unconfined_reason
from ..policy.presets import DEFAULT_PRESETS, PresetTable
from ..sandbox.actor import ProviderActor, ProviderClient
from ..sandbox.config import trusted_provider
from ..sandbox.private_tmp import host_temp
from ..sessionlog import BUILTIN_EVENTS, JsonlStore, MemoryStore, SessionLogActor, check_session_id
from ..sessionlog import resolve_state_dir as resolve_state_dir
from ..sessionlog._select import build_store, check_store_files, store_files
from ..sessionlog.actor import SessionLogClient
from ..tools import _bash_schema as schemas
from ..tools.bash import BashTool
from ..tools.events import TOOL_EVENTS, ToolCalled, ToolResulted
from ..tools.fs_tool import FS_TOOLS, FsTool, PinnedRoots, fs_schemas
from ..tools.result import ToolResult
from ..trust import broad_root_refusal, check_trusted, host_temp_roots
from ..vocab import ApprovalPolicy, ExecutionPolicy, Network, SandboxMode
from .session import Session, SessionNotFound

ConfigSource = str | os.PathLike[str] | Sequence[Mapping[str, Any]] | Composition | None


def harness_registry(*extra: type[SessionEvent]) -> EventRegistry:
    """Every event type the shipped domains write, plus `extra` from plugins."""
    return BUILTIN_EVENTS.with_types(*TOOL_EVENTS, *APPROVAL_EVENTS, *extra)


@attrs.define(eq=False)
class Harness:
    """The running composition. Create it with `open_harness()`."""

    composition: Composition
    log: SessionLogClient
    executor: ExecutorClient
    provider: ProviderClient | None
    approval: ApprovalClient | None
    defaults: PolicyDefaults
    presets: PresetTable
    bash: BashTool
    fs: FsTool | None = None
    # Where session logs live on disk (None: in memory for this process only, or a database).
    log_directory: str | None = None
    # Files that steer where the log is (a database's password file): (path, what).
    log_files: tuple[tuple[str, str], ...] = ()
    # Whether the fallback root was named (a composition's workspace_root, open_harness's
    # cwd) rather than taken from the process's current directory.
    fallback_root_explicit: bool = True
    # The host temp roots every session's calls may write beside its private temp
    # directory: only where the composition restores them (`allow_host_temp`).
    host_temp: tuple[str, ...] = ()
    # Sessions open now: a private temp directory one leaves is removed when the
    # harness stops (after every command is gone).
    _open: set[Session] = attrs.field(factory=set, init=False)

    @property
    def confines(self) -> bool:
        """Whether the mounted executor confines (and so whether escalation exists)."""
        return self.executor.confines

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Function-calling schemas of the mounted tools."""
        mounted = [
            schemas.bash_schema(confines=self.confines),
            schemas.job_output_schema(),
            schemas.kill_job_schema(),
        ]
        if self.fs is not None:
            mounted += fs_schemas(escalation=self.fs.escalation)
        return mounted

    def _check_log_is_out_of_reach(self, cwd: str | os.PathLike[str] | None) -> None:
        """The log is the only store of a session's mode: no command may write it.

        A log under the session's root or a temp root could be rewritten by a
        workspace-write command into danger-full-access for the next resume. The
        whole chain of directories is checked (the trust base's check 1): a writable
        parent could swap the log directory itself. Every mode counts the root as
        writable (a knob or an escalation can widen any session to workspace-write),
        so no later knob change can widen what this check covered.
        """
        root = os.path.realpath(cwd) if cwd is not None else self.defaults.fallback_root
        if self.log_files:
            check_store_files(self.log_files, (root, *host_temp_roots()))
        if self.log_directory is None:
            return
        problem = check_trusted(
            self.log_directory,
            (root, *host_temp_roots()),
            what="the session log directory",
            must_exist=False,
        )
        if problem is not None:
            raise ConfigError(
                problem.message(
                    "keep session logs outside workspace roots and temp directories, "
                    "owned by you or root and writable by no one else: set "
                    "STOCKADE_STATE_DIR or the stockade.session.log entry's state_dir"
                )
            )

    @property
    def default_policy(self) -> ExecutionPolicy:
        """What a call resolves to with no session override: the composition's default."""
        return ExecutionPolicy(
            self.defaults.sandbox_mode, self.defaults.fallback_root, self.defaults.network
        )

    def _pin_fs_roots(self, session: Session) -> PinnedRoots | None:
        """The session's writable roots, pinned for the fenced fs tools (None: none mounted).

        Pinned as the session opens, so a root a command swaps for a symlink later is
        refused, never followed (docs/fs-tools.md, "Pinned roots")."""
        if self.fs is None or not self.fs.fenced:
            return None
        # The session's own temp roots: its private directory (and the host's where the
        # composition restores them), as its commands have them.
        temp_roots = (*filter(None, (session.temp_dir,)), *session.host_temp)
        return PinnedRoots.pin(session.cwd or self.defaults.fallback_root, temp_roots)

    async def open_session(
        self,
        session_id: str | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        resume: bool = False,
    ) -> AgentSession:
        """Create a new session (its cwd, an existing directory, is its workspace root),
        or with `resume=True` resume session `session_id` from its log.

        Creating under an id that already names a session raises SessionExists; resuming
        an id no log holds raises SessionNotFound (and writes nothing). `resume_session`
        is the same as `resume=True`.
        """
        if resume and session_id is None:
            raise ValueError("resume=True needs the session_id of the session to resume")
        _check_workspace_root(cwd, "the session's cwd")
        if cwd is None and not resume and self.confines:
            # Every mode counts the root as writable: a knob, a preset or an
            # escalation can widen any session to workspace-write.
            broad = broad_root_refusal(
                self.defaults.fallback_root,
                explicit=self.fallback_root_explicit,
                home=os.environ.get("HOME"),
                naming="cwd={root!r} to open_session",
            )
            if broad is not None:
                raise ConfigError(broad)
        self._check_log_is_out_of_reach(cwd)
        if resume:
            self._check_log_exists(session_id)
        session = await Session.open(
            self.log,
            session_id=session_id,
            cwd=cwd,
            defaults=self.defaults,
            presets=self.presets,
            resume=resume,
            # Only where commands are confined: there /tmp is not theirs to write.
            private_tmp=self.confines,
            host_temp=self.host_temp,
        )
        self._open.add(session)
        agent = AgentSession(harness=self, session=session, fs_roots=self._pin_fs_roots(session))
        if resume and cwd is None:
            # Its root comes from its log: one removed since would fail every call.
            try:
                _check_workspace_root(session.cwd, f"session {session.id!r}'s workspace root")
            except BaseException:
                await agent.close()
                raise
        return agent

    async def resume_session(
        self, session_id: str, *, cwd: str | os.PathLike[str] | None = None
    ) -> AgentSession:
        """Resume session `session_id` from its log; SessionNotFound when none holds it."""
        return await self.open_session(session_id, cwd=cwd, resume=True)

    def _check_log_exists(self, session_id: str | None) -> None:
        """On disk, an unknown id is refused before its log would be opened (and so
        created empty); other stores are checked once the log is open."""
        if self.log_directory is None or session_id is None:
            return
        path = os.path.join(self.log_directory, f"{check_session_id(session_id)}.jsonl")
        if not os.path.lexists(path):
            raise SessionNotFound(session_id, path)


@attrs.define(eq=False)
class AgentSession:
    """One agent's session: the tools it calls and the knobs it switches.

    All policy state lives in the session log; the only thing held here is the set
    of commands whose escalation the user rejected in the current turn (a turn
    ends at the next `pre_step()`).
    """

    harness: Harness
    session: Session
    rejected_this_turn: set[str] = attrs.field(factory=set)
    # The fenced fs tools' roots, pinned when the session opened; closed with it.
    fs_roots: PinnedRoots | None = None

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def cwd(self) -> str | None:
        return self.session.cwd

    @property
    def temp_dir(self) -> str | None:
        """The session's private temp directory (its commands' TMPDIR), removed when it
        closes; None where commands are not confined."""
        return self.session.temp_dir

    @property
    def host_temp(self) -> tuple[str, ...]:
        """The host temp roots its calls may write too (`allow_host_temp`), or ()."""
        return self.session.host_temp

    @property
    def shell(self) -> SessionShell:
        return SessionShell(self)

    async def run_tool(
        self, name: str, arguments: Mapping[str, Any], *, call_id: str | None = None
    ) -> ToolResult:
        """Call a model-facing tool with arguments as the model sent them; both are logged."""
        call_id = call_id or f"call-{uuid.uuid4().hex[:12]}"
        arguments = dict(arguments) if isinstance(arguments, Mapping) else arguments
        try:
            await self.session.append(
                ToolCalled(call_id=call_id, name=name, arguments=_loggable(arguments))
            )
        except UnencodableEvent:
            # Text that is not UTF-8 (a lone surrogate) cannot be a JSON line: log
            # the call's arguments escaped; the tool itself refuses such text.
            await self.session.append(
                ToolCalled(call_id=call_id, name=name, arguments={"_raw": ascii(arguments)})
            )
        result = await self._dispatch(call_id, name, arguments)
        if not _encodable(result.text):
            result = msgspec.structs.replace(result, text=ascii(result.text)[1:-1])
        await self.session.append(
            ToolResulted(
                call_id=call_id,
                name=name,
                text=result.text,
                is_error=result.is_error,
                facts=result.facts,
            )
        )
        return result

    async def _dispatch(self, call_id: str, name: str, arguments: Any) -> ToolResult:
        bash = self.harness.bash
        match name:
            case schemas.BASH:
                return await bash.call(call_id, arguments, self)
            case schemas.JOB_OUTPUT:
                return await bash.job_output(call_id, arguments, self)
            case schemas.KILL_JOB:
                return await bash.kill_job(call_id, arguments, self)
            case _ if name in FS_TOOLS and self.harness.fs is not None:
                return await self.harness.fs.call(
                    call_id, name, arguments, self, self.harness.default_policy, roots=self.fs_roots
                )
            case _:
                known = ", ".join(schema["name"] for schema in self.harness.tool_schemas())
                return ToolResult(
                    call_id=call_id,
                    name=name,
                    text=f"unknown tool {name!r} (available: {known})",
                    is_error=True,
                )

    # --- the session's policy, all folded from its log ---

    async def events(self) -> Sequence[SessionEvent]:
        """The session's events (an immutable view of its log, shared, not copied)."""
        return await self.session.events()

    async def execution_policy(
        self, explicit_mode: SandboxMode | None = None, explicit_network: Network | None = None
    ) -> ExecutionPolicy:
        return await self.session.execution_policy(explicit_mode, explicit_network)

    async def sandbox_mode(self) -> SandboxMode:
        return await self.session.sandbox_mode()

    async def approval_policy(self) -> ApprovalPolicy:
        return await self.session.approval_policy()

    async def network(self) -> Network:
        """The network this session's calls get (`on` under danger-full-access)."""
        return await self.session.network()

    async def set_sandbox_mode(self, mode: SandboxMode | str) -> SessionEvent | None:
        return await self.session.set_sandbox_mode(mode)

    async def set_approval_policy(self, policy: ApprovalPolicy | str) -> SessionEvent | None:
        return await self.session.set_approval_policy(policy)

    async def set_network(self, network: Network | str) -> SessionEvent | None:
        """Network `off` | `on` for this session's calls, from here on (an event in its log)."""
        return await self.session.set_network(network)

    async def select_preset(self, name: str) -> tuple[SessionEvent, ...]:
        return await self.session.select_preset(name)

    async def current_preset(self) -> str:
        return await self.session.current_preset()

    async def pre_step(self) -> PolicyContext | None:
        """Before each model step: the policy message if it changed. Starts a new turn."""
        self.rejected_this_turn.clear()
        return await self.session.pre_step()

    async def fork_child(
        self, *, session_id: str | None = None, cwd: str | os.PathLike[str] | None = None
    ) -> AgentSession:
        """A new child session (never a resumed one: an id that exists is refused)."""
        _check_workspace_root(cwd, "the child session's cwd")
        # A child rooted over the log directory could rewrite its parent's log.
        self.harness._check_log_is_out_of_reach(cwd if cwd is not None else self.cwd)
        child = await self.session.fork_child(session_id=session_id, cwd=cwd)
        self.harness._open.add(child)
        return AgentSession(
            harness=self.harness, session=child, fs_roots=self.harness._pin_fs_roots(child)
        )

    async def close(self) -> None:
        """Kill this session's background jobs, forget them, and release its log.

        Every job the session started (running or still queued) is killed with its
        process group, as `kill_job` does, and waited for; its unread output is
        discarded. Jobs of child sessions belong to the children. The fs tools' pinned
        roots are closed. Idempotent; it finishes even when the caller is being cancelled.
        """
        try:
            with trio.CancelScope(shield=True):
                await self._kill_jobs()
            try:
                await self.session.close()  # its private temp directory too, jobs gone
            finally:
                self.harness._open.discard(self.session)
        finally:
            if self.fs_roots is not None:
                self.fs_roots.close()

    async def _kill_jobs(self) -> None:
        executor = self.harness.executor
        try:
            jobs = await executor.list(owner=self.id)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return  # the harness has stopped: it killed every job as it left

        async def kill(job_id: str) -> None:
            # A job that settled and was forgotten meanwhile is gone already.
            with contextlib.suppress(
                UnknownJob, trio.ClosedResourceError, trio.BrokenResourceError
            ):
                await executor.kill(job_id, owner=self.id)

        async with trio.open_nursery() as nursery:
            for handle in jobs:
                nursery.start_soon(kill, handle.id)


@attrs.frozen
class SessionShell:
    """Programmatic run/start/job_output/kill under the session's resolved policy."""

    owner: AgentSession

    async def _spec(self, command: str, **options: Any) -> Any:
        policy = await self.owner.execution_policy()
        executor = self.owner.harness.executor
        return executor.resolve(command, policy=policy, owner=self.owner.id, **options)

    async def run(self, command: str, **options: Any) -> ShellResult:
        return await self.owner.harness.executor.run(await self._spec(command, **options))

    async def start(self, command: str, **options: Any) -> JobHandle:
        return await self.owner.harness.executor.start(await self._spec(command, **options))

    async def job_output(self, job_id: str) -> JobReport:
        return await self.owner.harness.executor.job_output(job_id, owner=self.owner.id)

    async def wait(self, job_id: str, *, read: bool = True) -> JobReport:
        return await self.owner.harness.executor.wait(job_id, owner=self.owner.id, read=read)

    async def kill(self, job_id: str) -> JobReport:
        return await self.owner.harness.executor.kill(job_id, owner=self.owner.id)

    async def list(self) -> list[JobHandle]:
        return await self.owner.harness.executor.list(owner=self.owner.id)


def _check_workspace_root(cwd: str | os.PathLike[str] | None, what: str) -> None:
    """A workspace root must be an existing directory: every command and file tool
    call runs there, so a missing one would fail each of them later instead."""
    if cwd is None or not isinstance(cwd, str | os.PathLike):
        return  # no root of its own; a non-path is refused by Session
    path = os.fspath(cwd)
    if not isinstance(path, str) or not os.path.isabs(path):
        return  # Session refuses a relative root with its own message
    if not os.path.exists(path):
        raise InvalidPolicy(
            f"{what} {path!r} does not exist; a session's cwd is its workspace root and "
            "must be an existing directory"
        )
    if not os.path.isdir(path):
        raise InvalidPolicy(
            f"{what} {path!r} is not a directory; a session's cwd is its workspace root "
            "and must be an existing directory"
        )


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _loggable(arguments: Any) -> dict[str, Any]:
    """Arguments as the model sent them, kept even when they are not a JSON object."""
    if isinstance(arguments, dict):
        return arguments
    return {"_raw": repr(arguments)}


def _import_answerer(path: str) -> CallbackAnswerer:
    module_name, _, attribute = path.partition(":")
    try:
        callback = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"answerer {path!r} cannot be imported: {error}") from None
    return CallbackAnswerer(callback, name=path)


def build_answerers(config: ApprovalConfig, programmatic: Sequence[Any] | None) -> list[Any]:
    """Reject rules first, then the programmatic answerers if given, else the named ones."""
    chain: list[Any] = []
    if config.reject:
        chain.append(
            RejectRules(tuple(RejectRule(rule.pattern, rule.reason) for rule in config.reject))
        )
    if programmatic is not None:
        return [*chain, *programmatic]
    for name in config.answerers:
        if name == "terminal":
            chain.append(TerminalAnswerer())
        elif name == "scripted":
            chain.append(ScriptedAnswerer())
        else:
            chain.append(_import_answerer(name))
    return chain


def _presets(composition: Composition) -> PresetTable:
    entry = composition.presets
    if entry is None:
        return DEFAULT_PRESETS
    table = {
        name: {
            "sandbox_mode": spec.sandbox_mode,
            "approval_policy": spec.approval_policy,
            "network": spec.network,
        }
        for name, spec in entry.config.presets.items()
    }
    return PresetTable.from_config(table, base=PresetTable(()))


@asynccontextmanager
async def open_harness(
    config: ConfigSource = None,
    *,
    answerers: Sequence[Any] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    extra_events: Sequence[type[SessionEvent]] = (),
) -> AsyncIterator[Harness]:
    """Start the composition's actors; leaving the block stops them and kills every job.

    `config`: a stockade.yml path, a list of entry mappings, or None for the embedded
    default (the sandboxed product path). `answerers` replaces the configured
    answerer chain (after the reject rules), e.g. a callback or a scripted list.
    """
    composition = config if isinstance(config, Composition) else load_composition(config, cwd=cwd)
    actors, harness = assemble(composition, answerers=answerers, cwd=cwd, extra_events=extra_events)
    # Dependency order: log, provider, approval, executor.
    try:
        async with running(*(actor.run for actor in actors)):
            yield harness
    finally:
        # The executor has killed every command: what sessions left open leave goes.
        for session in list(harness._open):
            session.remove_private_tmp()
        harness._open.clear()


def assemble(
    composition: Composition,
    *,
    answerers: Sequence[Any] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    extra_events: Sequence[type[SessionEvent]] = (),
) -> tuple[list[Any], Harness]:
    """Build (not start) the actors of `composition`, in start order, and their Harness."""
    registry = harness_registry(*extra_events)
    log_entry = composition.session_log
    store: Any
    if log_entry is None:
        # No log entry: sessions still have a log, for this process's life only.
        store = MemoryStore(registry=registry)
    else:
        store = build_store(log_entry.config, registry, composition_path=composition.path)
    # The actor closes the store (a database's connections) when the harness stops.
    log_actor = SessionLogActor(store, owns_store=True)
    actors: list[Any] = [log_actor]

    executor_entry = composition.executor
    executor_config = (
        executor_entry.config.executor_config() if executor_entry is not None else ExecutorConfig()
    )
    fallback_root = os.path.realpath(executor_config.fallback_root or cwd or os.getcwd())
    provider_actor = None
    provider_config = None
    if composition.provider is not None:
        provider_config = composition.provider.config.provider_config()
        # A composition file a command could write may not loosen confinement, and is
        # kept read-only (or refused) in every call that could write it.
        provider_config = trusted_provider(
            provider_config, composition.path, (fallback_root, *host_temp_roots())
        )
        provider_actor = _plugin_actor(composition.provider) or ProviderActor(
            config=provider_config
        )
        actors.append(provider_actor)

    approval_actor = None
    if composition.approval is not None:
        log_client = log_actor.client

        async def audit(session_id: str, event: SessionEvent) -> None:
            await log_client.append(session_id, event)

        approval_actor = _plugin_actor(composition.approval) or ApprovalActor(
            answerers=build_answerers(composition.approval.config, answerers), audit=audit
        )
        actors.append(approval_actor)

    # Confining is a fact of what runs, not of a name: the executor confines only with a
    # provider beside it (the loader requires one; a Composition built in code may not).
    confining = (
        executor_entry is not None and executor_entry.plugin.confines and provider_actor is not None
    )
    executor_actor = ExecutorActor(
        config=executor_config,
        provider=provider_actor.client if confining and provider_actor is not None else None,
    )
    actors.append(executor_actor)

    defaults = PolicyDefaults(
        sandbox_mode=executor_config.default_mode if confining else SandboxMode.DANGER_FULL_ACCESS,
        approval_policy=(
            composition.approval.config.policy
            if composition.approval is not None
            else ApprovalPolicy.NEVER
        ),
        fallback_root=fallback_root,
        # Without confinement only danger-full-access is true: every path that would
        # make a session resolve to a confining mode refuses (docs/embedding.md).
        unconfined=None
        if confining
        else unconfined_reason(executor_entry.name if executor_entry is not None else None),
        # Without confinement nothing cuts the network off: only `on` is true.
        network=executor_config.default_network if confining else Network.ON,
    )
    approval_client = approval_actor.client if approval_actor is not None else None
    fs_tool = None
    if composition.fs is not None:
        protected: tuple[str, ...] = ()
        if provider_config is not None:
            protected = (*provider_config.protected_paths, *provider_config.trusted_files)
        elif composition.path is not None:
            protected = (composition.path,)
        fs_tool = FsTool(
            protected=protected,
            fenced=composition.fs.plugin.confines,
            read_cap=composition.fs.config.read_cap,
            approval=approval_client,
            confines=confining,
        )
    harness = Harness(
        composition=composition,
        log=log_actor.client,
        executor=executor_actor.client,
        provider=provider_actor.client if provider_actor is not None else None,
        approval=approval_client,
        defaults=defaults,
        presets=_presets(composition),
        bash=BashTool(executor=executor_actor.client, approval=approval_client),
        fs=fs_tool,
        log_directory=str(store.directory) if isinstance(store, JsonlStore) else None,
        log_files=store_files(store),
        fallback_root_explicit=bool(executor_config.fallback_root or cwd),
        host_temp=host_temp(provider_config is not None and provider_config.allow_host_temp),
    )
    harness._check_log_is_out_of_reach(None)
    return actors, harness


def _plugin_actor(entry: Any) -> Any:
    factory = entry.plugin.factory
    return None if factory is None else factory(entry.config)

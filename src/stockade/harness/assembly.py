"""Assembling a composition: its actors built in start order, its Harness, `open_harness()`.

The composition root: the only place that knows which actor, answerer, store and
tool a composition's entries name; `open_harness` runs them in one nursery.
"""

from __future__ import annotations

import functools
import importlib
import os
import secrets
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import trio

from ..actors import running
from ..approval import (
    APPROVAL_EVENTS,
    ApprovalActor,
    CallbackAnswerer,
    RejectRule,
    RejectRules,
    ScriptedAnswerer,
    TerminalAnswerer,
)
from ..config import ApprovalConfig, Composition, facts_of_store, load_composition, plan
from ..errors import ConfigError, NotUnderTrio
from ..events import EventRegistry, SessionEvent
from ..executor import AuditConnection, ExecutorActor, raise_open_files_limit
from ..history import HISTORY_EVENTS, HistoryConfig
from ..messages import NetworkConnection, NetworkRequest
from ..policy import DEFAULT_PRESETS, PolicyDefaults, PresetTable
from ..sandbox import ProviderActor, host_temp
from ..sessionlog import (
    BUILTIN_EVENTS,
    SessionLogActor,
    SessionLogClient,
    build_store,
    store_files,
)
from ..tools import TOOL_EVENTS, BashTool, FsTool, NetworkConnected, NetworkRequested
from ..trust import check_trusted, host_temp_roots, state_directories
from ._history import Histories, HistorySetup
from .harness import Harness

ConfigSource = str | os.PathLike[str] | Sequence[Mapping[str, Any]] | Composition | None


def harness_registry(*extra: type[SessionEvent]) -> EventRegistry:
    """Every event type the shipped domains write, plus `extra` from plugins."""
    return BUILTIN_EVENTS.with_types(*TOOL_EVENTS, *APPROVAL_EVENTS, *HISTORY_EVENTS, *extra)


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


def _require_trio(name: str) -> None:
    """Refuse in one line to run outside Trio (a plain `asyncio.run`), where Trio's own
    failure is an AttributeError from deep inside it."""
    try:
        trio.lowlevel.current_task()
    except RuntimeError:
        raise NotUnderTrio(
            f"{name} runs under Trio, and this is not a Trio task (plain asyncio?): run "
            "trio.run at the top and reach it from asyncio through trio-asyncio "
            "(docs/embedding.md, 'asyncio hosts')"
        ) from None


@asynccontextmanager
async def open_harness(
    config: ConfigSource = None,
    *,
    answerers: Sequence[Any] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    extra_events: Sequence[type[SessionEvent]] = (),
    withhold: Sequence[str] = (),
    unreadable: Sequence[str] = (),
) -> AsyncIterator[Harness]:
    """Start the composition's actors; leaving the block stops them and kills every job.

    `config`: a stockade.yml path, a list of entry mappings, or None for the embedded
    default (the sandboxed product path). `answerers` replaces the configured
    answerer chain (after the reject rules), e.g. a callback or a scripted list.
    `withhold`: secret values of the host's own (the MCP server's tokens) that no
    command's environment may hold, under any name, whatever the policy says.
    `unreadable`: secret files of the host's own (an MCP `--token-file`) that no
    confined command may read (deny_read's `mcp-token` item).
    """
    _require_trio("open_harness")
    composition = config if isinstance(config, Composition) else load_composition(config, cwd=cwd)
    # The proxy's connections and the commands' pipes share this process's descriptors:
    # all the hard limit allows, before the executor works out its bounds from them.
    raise_open_files_limit()
    actors, harness = assemble(
        composition,
        answerers=answerers,
        cwd=cwd,
        extra_events=extra_events,
        withhold=withhold,
        unreadable=unreadable,
    )
    # Dependency order: log, provider, approval, executor.
    try:
        async with running(*(actor.run for actor in actors)):
            yield harness
    finally:
        # The executor has killed every command: what sessions left open leave goes.
        for session in list(harness._open):
            session.remove_private_tmp()
        harness._open.clear()
        if harness.history is not None:
            harness.history.close()


def assemble(
    composition: Composition,
    *,
    answerers: Sequence[Any] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    extra_events: Sequence[type[SessionEvent]] = (),
    withhold: Sequence[str] = (),
    unreadable: Sequence[str] = (),
) -> tuple[list[Any], Harness]:
    """Build (not start) the actors of `composition`, in start order, and their Harness."""
    registry = harness_registry(*extra_events)
    log_entry = composition.session_log
    # No log entry: sessions still have a log, in memory for this process's life only.
    store = build_store(
        log_entry.config if log_entry is not None else None,
        registry,
        composition_path=composition.path,
    )
    # The actor closes the store (a database's connections) when the harness stops.
    log_actor = SessionLogActor(store, owns_store=True)
    actors: list[Any] = [log_actor]

    decided = plan(
        composition,
        store=facts_of_store(store),
        cwd=cwd,
        withhold=withhold,
        unreadable=unreadable,
    )
    provider_config, executor_config = decided.provider, decided.executor
    provider_actor = None
    if provider_config is not None:
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

    confining = decided.confines
    deny_read = decided.deny_read
    # What every session's calls may write beside its root, and where their tools cache.
    writable_roots = decided.writable_roots()
    cache_setting = decided.tool_caches()
    # A named directory that cannot be used is the composition's error, now.
    if cache_setting is not None and cache_setting.directory is not None:
        cache_setting.directory_for(decided.hidden(), (decided.root,))
    executor_actor = ExecutorActor(
        config=executor_config,
        provider=provider_actor.client if confining and provider_actor is not None else None,
        audit_connection=_connection_audit(log_actor.client),
    )
    actors.append(executor_actor)

    # The rules' parser is made now: the bash tool judges every call before it runs.
    decided.rules.prepare()
    # Without confinement only danger-full-access and network `on` are true: every path
    # that would make a session resolve to a confining mode refuses (docs/embedding.md).
    defaults = PolicyDefaults(
        sandbox_mode=decided.mode,
        approval_policy=decided.approval_policy,
        fallback_root=decided.root,
        unconfined=decided.unconfined,
        network=decided.network,
        command_rules=decided.rules.rules,
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
            deny_read=deny_read,
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
        bash=BashTool(
            executor=executor_actor.client, approval=approval_client, rules=decided.rules
        ),
        fs=fs_tool,
        log_paths=store.protected_paths(),
        log_files=store_files(store),
        fallback_root_explicit=decided.root_explicit,
        host_temp=host_temp(provider_config is not None and provider_config.allow_host_temp),
        deny_read=deny_read if confining else None,
        writable_roots=writable_roots,
        tool_caches=cache_setting,
        agents=decided.agents,
    )
    harness.check_log_out_of_reach(None)
    harness.history = Histories(
        _history_setup(composition, store),
        protected=harness.out_of_confined_reach,
        untrusted=_untrusted_store,
        jobs=harness.executor.list,
        # The job's output stays unread (and the job kept) for the session's job_output.
        wait_job=functools.partial(harness.executor.wait, read=False),
    )
    return actors, harness


def _history_setup(composition: Composition, store: Any) -> HistorySetup:
    """How the harness keeps undo history (docs/undo.md): the bash entry's `history:`,
    the stores beside the session logs, or in the state directory for a store that is
    not a directory (a scratch one, removed when the harness stops, for logs that live
    in this process's memory: a store with no paths and no login)."""
    entry = composition.executor
    settings = getattr(entry.config, "history", None) if entry is not None else None
    if settings is not None and not settings.enabled:
        return HistorySetup(off="the composition's bash entry says history: off")
    config = HistoryConfig()
    wait = 10.0
    if settings is not None:
        config = HistoryConfig(
            file_budget=settings.file_budget,
            paths_budget=settings.paths_budget,
            rules_budget=settings.rules_budget,
            bytes_budget=settings.bytes_budget,
            record_ignored=settings.record_ignored,
            record_git=settings.record_git,
            listed_paths=settings.listed_paths,
        )
        wait = settings.baseline_wait
    # Real paths: the lock files are kept per real path, and where they stop is told
    # by comparing this directory with the roots' real folders.
    paths = store.protected_paths()
    if paths:
        return HistorySetup(config, wait, os.path.realpath(os.path.join(paths[0], "history")))
    base = os.path.realpath(os.path.join(state_directories()[0], "history"))
    names, values = store.credentials()
    if names or values or store.credential_files():
        return HistorySetup(config, wait, base)
    scratch = os.path.join(base, f"process-{os.getpid()}-{secrets.token_hex(4)}")
    return HistorySetup(config, wait, scratch, scratch=True)


def _untrusted_store(directory: str, root: str) -> str | None:
    """Why a command writing `root` (or a temp root) could swap the history's store
    directory, or None: the trust base's check 1, as for the session logs."""
    problem = check_trusted(
        directory, (root, *host_temp_roots()), what="the undo history's store", must_exist=False
    )
    if problem is None:
        return None
    return problem.message(
        "keep session logs and stockade's state directory outside workspace roots and "
        "temp directories"
    )


def _connection_audit(log: SessionLogClient) -> AuditConnection:
    """What the executor calls for each connection the proxy decides for a session's
    call, and each request to a ruled host it judges (issue 41): one `network/connect`
    or `network/request` event in that session's log (a request's credentials by name,
    never a value: none reaches this side)."""

    async def audit(
        session_id: str, call_id: str, decided: NetworkConnection | NetworkRequest
    ) -> None:
        fields = msgspec.structs.asdict(decided)
        event: SessionEvent
        if isinstance(decided, NetworkRequest):
            event = NetworkRequested(call_id=call_id, **fields)
        else:
            event = NetworkConnected(call_id=call_id, **fields)
        await log.append(session_id, event)

    return audit


def _plugin_actor(entry: Any) -> Any:
    factory = entry.plugin.factory
    return None if factory is None else factory(entry.config)

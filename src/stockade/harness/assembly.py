"""Assembling a composition: its actors built in start order, its Harness, `open_harness()`.

The composition root: the only place that knows which actor, answerer, store and
tool a composition's entries name; `open_harness` runs them in one nursery.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import msgspec
import trio

from ..actors.lifetime import running
from ..approval.actor import ApprovalActor
from ..approval.answerers import (
    CallbackAnswerer,
    RejectRule,
    RejectRules,
    ScriptedAnswerer,
    TerminalAnswerer,
)
from ..approval.events import APPROVAL_EVENTS
from ..config import ApprovalConfig, Composition, load_composition
from ..errors import ConfigError, NotUnderTrio
from ..events import EventRegistry, SessionEvent
from ..executor import AuditConnection
from ..executor.actor import ExecutorActor
from ..executor.config import ExecutorConfig, raise_open_files_limit
from ..executor.environment import Withheld
from ..messages import NetworkConnection
from ..policy.knobs import PolicyDefaults, unconfined_reason
from ..policy.presets import DEFAULT_PRESETS, PresetTable
from ..sandbox import tool_caches
from ..sandbox.actor import ProviderActor
from ..sandbox.config import trusted_provider
from ..sandbox.private_tmp import host_temp
from ..sessionlog import (
    BUILTIN_EVENTS,
    SessionLogActor,
    SessionLogClient,
    SessionStore,
    build_store,
    store_files,
)
from ..tools.bash import BashTool
from ..tools.events import TOOL_EVENTS, NetworkConnected
from ..tools.fs_tool import FsTool
from ..trust import check_extra_roots, host_temp_roots
from ..trust.secrets import deny_read_for
from ..vocab import ApprovalPolicy, Network, SandboxMode
from .harness import Harness

ConfigSource = str | os.PathLike[str] | Sequence[Mapping[str, Any]] | Composition | None


def harness_registry(*extra: type[SessionEvent]) -> EventRegistry:
    """Every event type the shipped domains write, plus `extra` from plugins."""
    return BUILTIN_EVENTS.with_types(*TOOL_EVENTS, *APPROVAL_EVENTS, *extra)


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

    executor_entry = composition.executor
    executor_config = (
        executor_entry.config.executor_config() if executor_entry is not None else ExecutorConfig()
    )
    # The harness's own secrets never reach a command, whatever `env:` says.
    executor_config = executor_config.withholding(withheld_secrets(store, withhold))
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
        if store.protected_paths():
            # Where this harness's logs are, wherever the composition put them:
            # deny_read's `state` item (the default directories are in the list already).
            provider_config = attrs.evolve(
                provider_config,
                secret_state=(*provider_config.secret_state, *store.protected_paths()),
            )
        # The host's own credential files (an MCP --token-file) and the store's (every
        # file libpq would read for its DSN: password, service and TLS files): deny_read's
        # `mcp-token` item, the harness's credentials kept outside the state directory.
        credentials = (*map(os.path.abspath, unreadable), *store.credential_files())
        if credentials:
            provider_config = attrs.evolve(
                provider_config,
                secret_tokens=(*provider_config.secret_tokens, *credentials),
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
    deny_read = deny_read_for(provider_config) if provider_config is not None else None
    # What every session's calls may write beside its root, and where their tools cache.
    writable_roots: tuple[str, ...] = ()
    cache_setting = None
    agents: tuple[str, ...] = ()
    if confining and provider_config is not None:
        agents = provider_config.agents
        hidden = deny_read.literal_paths() if deny_read is not None else []
        writable_roots = check_extra_roots(provider_config.writable_roots, hidden)
        if provider_config.tool_caches:
            # Made per session, for its root: never inside a workspace (sessions differ).
            cache_setting = tool_caches.CacheSetting(
                True, provider_config.tool_cache_directory, provider_config.tool_cache_tools
            )
            # A named directory that cannot be used is the composition's error, now.
            if cache_setting.directory is not None:
                cache_setting.directory_for(hidden, (fallback_root,))
            executor_config = attrs.evolve(
                executor_config, tool_cache_tools=provider_config.tool_cache_tools
            )
    executor_actor = ExecutorActor(
        config=executor_config,
        provider=provider_actor.client if confining and provider_actor is not None else None,
        audit_connection=_connection_audit(log_actor.client),
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
        bash=BashTool(executor=executor_actor.client, approval=approval_client),
        fs=fs_tool,
        log_paths=store.protected_paths(),
        log_files=store_files(store),
        fallback_root_explicit=bool(executor_config.fallback_root or cwd),
        host_temp=host_temp(provider_config is not None and provider_config.allow_host_temp),
        deny_read=deny_read if confining else None,
        writable_roots=writable_roots,
        tool_caches=cache_setting,
        agents=agents,
    )
    harness.check_log_out_of_reach(None)
    return actors, harness


def withheld_secrets(store: SessionStore, values: Sequence[str] = ()) -> Withheld:
    """What no command may inherit: the session store's credentials (by name and by
    value: `credentials()`) and `values` (a host's own, e.g. the MCP tokens)."""
    names, store_values = store.credentials()
    return Withheld(names, (*store_values, *values))


def _connection_audit(log: SessionLogClient) -> AuditConnection:
    """What the executor calls for each connection the proxy decides for a session's
    call: one `network/connect` event in that session's log."""

    async def audit(session_id: str, call_id: str, connection: NetworkConnection) -> None:
        await log.append(
            session_id, NetworkConnected(call_id=call_id, **msgspec.structs.asdict(connection))
        )

    return audit


def _plugin_actor(entry: Any) -> Any:
    factory = entry.plugin.factory
    return None if factory is None else factory(entry.config)

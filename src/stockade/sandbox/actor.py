"""ProviderActor: one task with a mailbox that turns an argv into a confined argv.

It selects one runner per lifetime on first use, caches the verdict (failure too),
and makes concurrent first callers wait for that single probe.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import assert_never

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
    request,
    running,
    serve_forever,
)
from ..messages import Confine, Describe, ProviderReport, ProviderRequest, Wrapped
from ..trust import (
    DenyRead,
    deny_read_for,
    installation_paths,
    resolve_workspace_root,
    startup_files,
)
from ..vocab import SandboxPolicy
from . import agents, tool_caches
from ._chain import Selection
from ._confine import Call, confine, guard_rules
from ._guard_memo import GuardMemo
from ._profiles import HostPaths, wrap
from ._select import select_backend
from ._sockets import SocketScan
from .config import ProviderConfig

Selector = Callable[[ProviderConfig], Selection]


@attrs.define(eq=False, repr=False)
class ProviderActor:
    config: ProviderConfig = attrs.field(factory=ProviderConfig)
    # Injectable so tests can stub the probes; the default runs the real ones.
    selector: Selector = select_backend
    # stockade's own files, which the next stockade process runs (the trust base).
    installation: tuple[str, ...] = attrs.field(factory=installation_paths)
    # The caller's shell, git and ssh startup files, protected in a root that holds them.
    startup: tuple[tuple[str, str], ...] = attrs.field(factory=startup_files)
    probe_count: int = attrs.field(default=0, init=False)
    # Guard answers for calls on an unchanged disk (sandbox/_guard_memo.py).
    _guards: GuardMemo = attrs.field(factory=GuardMemo, init=False)
    # The host's named Unix sockets, for network-off calls (sandbox/_sockets.py).
    _sockets: SocketScan = attrs.field(factory=SocketScan, init=False)
    # Whether each tool cache directory seen is the default one (`Call.own_roots`).
    _default_caches: dict[str, bool] = attrs.field(factory=dict, init=False)
    # deny_read's list, kept with its per-root search memo (trust/secrets.py).
    _deny_read: DenyRead = attrs.field(
        default=attrs.Factory(lambda self: deny_read_for(self.config), takes_self=True),
        init=False,
    )
    _selection: Selection | None = attrs.field(default=None, init=False)
    _select_lock: trio.Lock = attrs.field(factory=trio.Lock, init=False)
    _inbox: Inbox[ProviderRequest] = attrs.field(init=False)
    _mailbox: Mailbox[ProviderRequest] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._inbox, self._mailbox = open_inbox()

    @property
    def client(self) -> ProviderClient:
        return ProviderClient(self._inbox)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await serve_forever(
                self._mailbox, self._serve, task_status=task_status, quick=self._quick
            )
        finally:
            self._sockets.close()
            backend = self._selection.backend if self._selection is not None else None
            if backend is not None and backend.sealed_fd is not None:
                with contextlib.suppress(OSError):
                    os.close(backend.sealed_fd)

    def _quick(self, envelope: Envelope[ProviderRequest]) -> bool:
        """Once the verdict is cached, confining is pure: answer in the inbox loop."""
        message = envelope.message
        if isinstance(message, Confine) and self._selection is not None:
            selection = self._selection
            answer_now(envelope, lambda: self._wrap(selection, message))
            return True
        return False

    async def _serve(self, envelope: Envelope[ProviderRequest]) -> None:
        message = envelope.message
        match message:
            case Confine():
                await answer(envelope, lambda: self._confine(message))
            case Describe():
                await answer(envelope, self._describe)
            case _:
                assert_never(message)

    async def selection(self, root: str | None = None) -> Selection:
        """The cached verdict; the first caller runs the probes, the rest wait for it.

        A failure is cached too, unless it was only a passing shortage (a probe that
        met EMFILE): then the next caller probes again.
        """
        async with self._select_lock:
            if self._selection is not None:
                return self._selection
            self.probe_count += 1
            config = self.config
            if root is not None:
                config = attrs.evolve(config, probe_roots=(*config.probe_roots, root))
            selection = await trio.to_thread.run_sync(self.selector, config)
            if not selection.worth_retrying:
                self._selection = selection
            return selection

    async def _confine(self, message: Confine) -> Wrapped:
        # Checked before probing: a wrong root is the caller's error, not the sandbox's.
        root = resolve_workspace_root(message.policy.workspace_root)
        return self._wrap(await self.selection(root), message)

    def _own_roots(self, tool_cache: str | None) -> tuple[str, ...]:
        """The call's tool cache when it is the default directory, stockade's own
        (`Call.own_roots`; a named one may be the person's tools' too)."""
        if tool_cache is None:
            return ()
        known = self._default_caches.get(tool_cache)
        if known is None:
            known = self._default_caches[tool_cache] = tool_caches.is_default(tool_cache)
        return (tool_cache,) if known else ()

    def _wrap(self, selection: Selection, message: Confine) -> Wrapped:
        """THE confine sequence (`_confine`) on the cached verdict, with this actor's
        guard memo and socket scan; then the facts its argv carries (`wrap`)."""
        policy = message.policy
        backend = selection.backend
        # The call's own roots beside its root: its session's private directory, the
        # host's temp roots where the composition restores them, then the extra
        # writable roots (writable_roots, the tool caches): granted, guarded and
        # searched for deny_read matches alike.
        temp_roots = policy.granted_roots
        # The agents granted (sandbox/agents.py): their sockets, and their key
        # directories hidden all but the public files.
        granted = agents.grant(policy.agents) if policy.agents else agents.NO_GRANT
        confined = confine(
            Call(
                message.argv,
                policy.mode,
                policy.workspace_root,
                temp_roots,
                policy.network,
                message.proxy,
                message.workdir,
                agent_sockets=tuple((host, view) for _, host, view in granted.sockets),
                agent_files=granted.readable,
                unsearched=(policy.tool_cache,) if policy.tool_cache is not None else (),
                own_roots=self._own_roots(policy.tool_cache),
                in_sight=self.config.in_sight,
            ),
            backend.as_runner() if backend is not None else None,
            guard_rules(self.config, self.installation, self.startup, self._deny_read),
            unavailable=selection.detail,
            memo=self._guards,
            sockets=self._sockets.sockets,
        )
        assert backend is not None  # `confine` refused the call otherwise
        guard = confined.guard
        reachable = granted.reachable(confined.agents)
        return wrap(
            backend,
            msgspec.structs.replace(policy, workspace_root=confined.root),
            HostPaths(temp_roots=temp_roots),
            message.argv,
            protections=guard.protections,
            gaps=(*guard.gaps, *agents.claim(granted, reachable)),
            blockers=guard.creates,
            hidden_sockets=confined.hidden,
            confined=confined.argv,
            unreadable=confined.unreadable,
            agents=bool(confined.agents),
            fresh=confined.fresh,
            reachable_agents=reachable,
            new_repository=guard.new_repository,
        )

    async def _describe(self) -> ProviderReport:
        selection = await self.selection()
        return ProviderReport(
            platform=selection.platform,
            chain=selection.chain,
            candidates=selection.candidates,
            selected=selection.backend.name if selection.backend else None,
            detail=None if selection.backend else selection.detail,
        )


class ProviderClient(msgspec.Struct, frozen=True):
    """What callers hold: `await provider.confine(argv, policy)`."""

    inbox: Inbox[ProviderRequest]

    async def confine(
        self,
        argv: Sequence[str],
        policy: SandboxPolicy,
        *,
        proxy: str | None = None,
        workdir: str | None = None,
    ) -> Wrapped:
        """The confined argv for `argv` under `policy`; `proxy`: the call's proxy
        endpoint (a Unix socket), for network allowlist; `workdir`: the real path of
        the directory it starts in (`trust.judge_workdir`), refused when hidden."""
        result: Wrapped = await request(
            self.inbox, Confine(argv=tuple(argv), policy=policy, proxy=proxy, workdir=workdir)
        )
        return result

    async def describe(self) -> ProviderReport:
        result: ProviderReport = await request(self.inbox, Describe())
        return result


@asynccontextmanager
async def open_provider(
    config: ProviderConfig | None = None, *, selector: Selector = select_backend
) -> AsyncIterator[ProviderClient]:
    """Run a ProviderActor for the duration of the block (the harness does the same)."""
    actor = ProviderActor(config=config or ProviderConfig(), selector=selector)
    async with running(actor.run):
        yield actor.client

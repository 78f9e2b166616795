"""Session: one agent conversation's id, workspace root and policy, all read from its log.

A Session holds no policy state of its own: every answer (effective modes, the
execution policy of a call, the preset, whether the model must be told) is a fold
over the session's events at the moment of asking, combined with the composition's
defaults. Switches are appends. So a resumed session keeps its overrides, a changed
default shows up at the next resolution, and two sessions never share anything.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Sequence
from types import TracebackType

import attrs
import msgspec
import trio

from ..errors import ConfigError, InvalidPolicy, StockadeError
from ..errors import SessionExists as SessionExists
from ..errors import SessionNotFound as SessionNotFound
from ..events import EventView, SessionEvent, SessionHeader, append_decided
from ..policy import (
    DEFAULT_PRESETS,
    POLICY_SOURCE,
    ApprovalPolicySet,
    KnobState,
    NetworkSet,
    PolicyContext,
    PolicyDefaults,
    PresetTable,
    SandboxModeSet,
    check_events_available,
    current_preset,
    inherited_overrides,
    knob_state,
    policy_context_update,
    resolve_execution_policy,
    select_preset,
    set_approval_policy,
    set_network,
    set_sandbox_mode,
)
from ..reprs import fields_repr
from ..sandbox import PrivateTmp, default_parent, make_private_tmp, remove_private_tmp
from ..sessionlog import SessionLogClient, check_session_id
from ..vocab import ApprovalPolicy, ExecutionPolicy, Network, SandboxMode


class SessionMismatch(StockadeError):
    """A resumed session was asked to be something its log says it is not."""


def new_session_id() -> str:
    """A fresh id that sorts by creation time: `YYYYmmdd-HHMMSS-<8 hex>` (UTC)."""
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(4)}"


def _absolute(cwd: str | os.PathLike[str] | None) -> str | None:
    if cwd is None:
        return None
    path = os.fspath(cwd)
    if not os.path.isabs(path):
        raise SessionMismatch(f"a session's cwd must be an absolute path, got {path!r}")
    # Pinned to its real path now: the sandbox later refuses a root that resolves
    # elsewhere (a swapped symlink), so a root must be stored resolved.
    return os.path.realpath(path)


def check_workspace_root(cwd: str | os.PathLike[str] | None, what: str) -> None:
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


@attrs.define(eq=False)
class Session:
    """An open session. Create with `await Session.open(log, ...)`; close when done."""

    id: str
    cwd: str | None
    log: SessionLogClient
    defaults: PolicyDefaults
    presets: PresetTable = DEFAULT_PRESETS
    parent: str | None = None
    location: str = ""
    torn_lines_cut: int = 0
    # The session's private temp directory (made when it opened, removed when it
    # closes; a resumed session makes it again, at the same path when that is free)
    # and the host temp roots its calls may write beside it (`allow_host_temp`).
    private_tmp: PrivateTmp | None = None
    host_temp: tuple[str, ...] = ()
    # Directories writable beside the root in workspace-write: the composition's
    # writable_roots, then the session's own (its header's); and the sandbox-private
    # tool caches' directory (None: off).
    writable_roots: tuple[str, ...] = ()
    own_writable_roots: tuple[str, ...] = ()
    # The agents its confined calls reach: the composition's, then its own (its
    # header's).
    agents: tuple[str, ...] = ()
    own_agents: tuple[str, ...] = ()
    tool_cache: str | None = None
    tool_cache_for: Callable[[str], str | None] | None = None
    _closed: bool = attrs.field(default=False, init=False)

    def __repr__(self) -> str:
        # One line: the default would print the log client, the defaults and presets.
        state = "closed" if self._closed else "open"
        return f"Session(id={self.id!r}, cwd={self.cwd!r}, {state})"

    @property
    def temp_dir(self) -> str | None:
        """Its commands' TMPDIR: the private temp directory, or None without one."""
        return self.private_tmp.path if self.private_tmp is not None else None

    @classmethod
    async def open(
        cls,
        log: SessionLogClient,
        *,
        session_id: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        defaults: PolicyDefaults | None = None,
        presets: PresetTable = DEFAULT_PRESETS,
        seed: Sequence[SessionEvent] = (),
        parent: str | None = None,
        resume: bool | None = None,
        private_tmp: bool = False,
        host_temp: tuple[str, ...] = (),
        writable_roots: tuple[str, ...] = (),
        own_writable_roots: tuple[str, ...] = (),
        agents: tuple[str, ...] = (),
        own_agents: tuple[str, ...] = (),
        tool_cache_for: Callable[[str], str | None] | None = None,
    ) -> Session:
        """Open session `session_id`: create it, or resume it from its log.

        `resume` True: the log must hold the session (else SessionNotFound, nothing
        written); False: the session must be new (else SessionExists); None (this
        low-level default): create it when it has no log yet, resume it when it has.
        With no id, a new session is created under a fresh id. A new session's log
        starts with a `session/header` holding `cwd` (None: the session has no root
        of its own and resolves to the defaults' fallback root), then `seed`. A
        resumed session takes its cwd from its header; a different `cwd` is refused.
        `private_tmp`: make the session a private temp directory (sandbox/private_tmp.py),
        its calls' TMPDIR, removed by `close`; `host_temp`: the host temp roots its calls
        may write beside it. `writable_roots`: the composition's extra writable roots;
        `own_writable_roots`: a new session's own (checked by the caller, kept in its
        header; a resumed session takes its header's). `agents`, `own_agents`: the same
        for the agents granted. `tool_cache_for`: the tool
        caches' directory made for a workspace root, or None (none for that root).
        """
        defaults = PolicyDefaults() if defaults is None else defaults
        if session_id is None and resume:
            raise ValueError("resuming a session needs its id (session_id)")
        session_id = new_session_id() if session_id is None else check_session_id(session_id)
        root = _absolute(cwd)
        # A seed (a parent's overrides) naming a mode this composition cannot honour is
        # refused before any log exists.
        check_events_available(seed, defaults, _seeded_what(seed, parent))
        opened = await log.open(session_id)
        try:
            header = SessionHeader(
                cwd=root,
                parent=parent,
                writable_roots=tuple(own_writable_roots),
                agents=tuple(own_agents),
            )
            # The log is held exclusively from here: no one else creates it meanwhile.
            if resume and not await log.read(session_id):
                raise SessionNotFound(session_id, opened.location)
            created = await append_decided(
                _Appender(log, session_id), lambda events: [] if events else [header, *seed]
            )
            if resume is False and not created:
                raise SessionExists(session_id)
            events = await log.read(session_id)
            first = events[0]
            if not isinstance(first, SessionHeader):
                raise SessionMismatch(
                    f"{opened.location}:1: a session log must start with a session/header "
                    f"event, found {first.tag!r}"
                )
            if seed and not created:
                raise SessionMismatch(f"session {session_id!r} already exists; cannot seed it")
            if own_writable_roots and tuple(own_writable_roots) != first.writable_roots:
                raise SessionMismatch(
                    f"session {session_id!r} has writable roots "
                    f"{list(first.writable_roots)!r}, not {list(own_writable_roots)!r}; "
                    "resume it without writable_roots"
                )
            if own_agents and tuple(own_agents) != first.agents:
                raise SessionMismatch(
                    f"session {session_id!r} was opened with agents {list(first.agents)!r}, "
                    f"not {list(own_agents)!r}; resume it without allow_ssh_agent and "
                    "allow_gpg_agent"
                )
            if root is not None and first.cwd != root:
                raise SessionMismatch(
                    f"session {session_id!r} has workspace root {first.cwd!r}, not {root!r}; "
                    "resume it without a cwd or from its own root"
                )
            # A resumed log whose mode confines cannot be honoured by a composition
            # that runs commands without a sandbox: refuse rather than pretend.
            check_events_available(events, defaults, f"session {session_id!r}'s sandbox mode")
            tmp = _make_private_tmp(session_id, resumed=not created) if private_tmp else None
        except BaseException:
            await log.close(session_id)
            raise
        return cls(
            id=session_id,
            cwd=first.cwd,
            log=log,
            defaults=defaults,
            presets=presets,
            parent=first.parent,
            location=opened.location,
            torn_lines_cut=opened.torn_lines_cut,
            private_tmp=tmp,
            host_temp=tuple(host_temp),
            writable_roots=tuple(dict.fromkeys((*writable_roots, *first.writable_roots))),
            own_writable_roots=first.writable_roots,
            agents=tuple(dict.fromkeys((*agents, *first.agents))),
            own_agents=first.agents,
            # Made for its root: None for one that lies in or over the caches (a root
            # at HOME holds ~/.cache): nothing of stockade's own in a workspace.
            tool_cache=tool_cache_for(first.cwd or defaults.fallback_root)
            if tool_cache_for is not None
            else None,
            tool_cache_for=tool_cache_for,
        )

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                await self.log.close(self.id)
            finally:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(self.remove_private_tmp)

    def remove_private_tmp(self) -> None:
        """Remove the private temp directory and what is in it (never following a link a
        command planted there). Idempotent; the harness calls it for a session left
        open when it stops, once every command is gone."""
        tmp, self.private_tmp = self.private_tmp, None
        if tmp is not None:
            remove_private_tmp(tmp)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- the log ------------------------------------------------------------------------

    async def events(self) -> EventView:
        """Every committed event of this session, in seq order.

        An immutable view shared with the log (it compares equal to the tuple of its
        events): reading costs the same at any length, and the folds below answer from
        its index of the last event of each type rather than walking the log.
        """
        return await self.log.read(self.id)

    async def append(
        self, *events: SessionEvent, after_seq: int | None = None
    ) -> tuple[SessionEvent, ...]:
        """Append durably (conditionally on `after_seq`); returns the stamped events."""
        return await self.log.append(self.id, *events, after_seq=after_seq)

    # --- resolution (folds over the log + defaults) ---------------------------------------

    async def knobs(self) -> KnobState:
        return knob_state(await self.events(), self.defaults)

    async def sandbox_mode(self) -> SandboxMode:
        return (await self.knobs()).sandbox_mode

    async def approval_policy(self) -> ApprovalPolicy:
        return (await self.knobs()).approval_policy

    async def network(self) -> Network:
        """The network this session's calls get: the knob (override ?? default), but
        `on` under danger-full-access whatever the knob says."""
        return (await self.knobs()).effective_network

    async def execution_policy(
        self, explicit_mode: SandboxMode | None = None, explicit_network: Network | None = None
    ) -> ExecutionPolicy:
        """This call's policy: explicit escalation > session override > default, for the
        mode and the network; session cwd > fallback root."""
        policy = resolve_execution_policy(
            await self.events(),
            self.defaults,
            session_root=self.cwd,
            explicit_mode=explicit_mode,
            explicit_network=explicit_network,
        )
        if (
            self.private_tmp is None
            and not self.host_temp
            and not self.writable_roots
            and self.tool_cache is None
            and not self.agents
        ):
            return policy
        return msgspec.structs.replace(
            policy,
            temp_dir=self.temp_dir,
            host_temp=self.host_temp,
            extra_roots=self.writable_roots,
            tool_cache=self.tool_cache,
            agents=self.agents if policy.mode.confines else (),
        )

    async def current_preset(self) -> str:
        return current_preset(await self.events(), self.presets, self.defaults)

    # --- write paths ------------------------------------------------------------------

    async def set_sandbox_mode(self, mode: SandboxMode | str) -> SandboxModeSet | None:
        """Raises SandboxNotMounted (appending nothing) for a confining mode when the
        composition cannot confine."""
        return await set_sandbox_mode(self, mode, defaults=self.defaults)

    async def set_approval_policy(self, policy: ApprovalPolicy | str) -> ApprovalPolicySet | None:
        return await set_approval_policy(self, policy)

    async def set_network(self, network: Network | str) -> NetworkSet | None:
        """Switch the network knob (`off` | `on`). Raises SandboxNotMounted (appending
        nothing) for `off` when the composition cannot confine."""
        return await set_network(self, network, defaults=self.defaults)

    async def select_preset(self, name: str) -> tuple[SessionEvent, ...]:
        return await select_preset(self, name)

    async def pre_step(self, *, source: str = POLICY_SOURCE) -> PolicyContext | None:
        """Before a model step: append the policy message if it changed; return it, or None."""

        def decide(events: Sequence[SessionEvent]) -> list[SessionEvent]:
            update = policy_context_update(
                events,
                self.defaults,
                session_root=self.cwd,
                source=source,
                temp_dir=self.temp_dir,
                host_temp=self.host_temp,
                writable_roots=self.writable_roots,
                tool_cache=self.tool_cache,
                agents=self.agents,
            )
            return [] if update is None else [update]

        for event in await append_decided(self, decide):
            assert isinstance(event, PolicyContext)
            return event
        return None

    async def fork_child(
        self, *, session_id: str | None = None, cwd: str | os.PathLike[str] | None = None
    ) -> Session:
        """A new child session seeded with this session's explicit overrides.

        The child's log starts with its header and then this session's overrides
        (only those that exist) tagged `inherited:<parent id>`, so it can never
        resolve to a wider default than its parent. It shares this session's root
        unless `cwd` says otherwise; its later switches never touch this log.
        """
        seed = inherited_overrides(await self.events(), self.id)
        return await Session.open(
            self.log,
            session_id=session_id,
            cwd=self.cwd if cwd is None else cwd,
            defaults=self.defaults,
            presets=self.presets,
            seed=seed,
            parent=self.id,
            # A child is always new: an id that names a session is refused, never resumed.
            resume=False,
            # Its own private temp directory: a child's lifetime is its own.
            private_tmp=self.private_tmp is not None,
            host_temp=self.host_temp,
            # Its parent's writable roots: the composition's as they are, its own kept
            # in the child's header (a resumed child keeps them too).
            writable_roots=self.writable_roots,
            own_writable_roots=self.own_writable_roots,
            agents=self.agents,
            own_agents=self.own_agents,
            tool_cache_for=self.tool_cache_for,
        )


def _make_private_tmp(session_id: str, *, resumed: bool = False) -> PrivateTmp:
    try:
        # A resumed session takes back the one its killed process left (kill -9).
        return make_private_tmp(name=session_id, reuse=resumed)
    except OSError as error:
        raise ConfigError(
            f"cannot make the session's private temp directory in {default_parent()}: "
            f"{error.strerror or error}; set TMPDIR to a directory you may write"
        ) from None


def _seeded_what(seed: Sequence[SessionEvent], parent: str | None) -> str:
    if parent is not None:
        return f"the sandbox mode inherited from session {parent!r}"
    return "the seeded sandbox mode"


@attrs.frozen
class _Appender:
    """An EventLog over one session id, for use before the Session object exists."""

    __repr__ = fields_repr

    log: SessionLogClient
    session_id: str

    async def events(self) -> EventView:
        return await self.log.read(self.session_id)

    async def append(
        self, *events: SessionEvent, after_seq: int | None = None
    ) -> tuple[SessionEvent, ...]:
        return await self.log.append(self.session_id, *events, after_seq=after_seq)

"""network allowlist, the executor's side: the harness's proxy, one endpoint per call
it serves (open while the call's process lives), and the connections and requests it decided.

The audit is complete: a connection's decision, and a request's to a ruled host (issue
41), is kept with its call (its result) and, for a session's call, appended to the
session's log, before the proxy relays a byte of it; a call ends only once its endpoint
is closed and everything on it decided, so nothing is decided after its result is made.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import attrs
import trio

from ..errors import CommandStartError, SandboxUnavailable
from ..messages import ConnectionsRefused, NetworkConnection, NetworkRequest, ShellSpec
from ..vocab import Network
from ._facts import WrapFacts
from .config import ExecutorConfig

if TYPE_CHECKING:
    from ..network import ConnectionBudget, Decision, NetworkProxy, RequestRecord

# (session id, the tool call's id, the connection or the request to a ruled host):
# appends it to that session's log.
AuditConnection = Callable[[str, str, NetworkConnection | NetworkRequest], Awaitable[None]]
Decided = tuple[NetworkConnection, ...]
# How long a decision may wait for the log before the connection is refused instead.
AUDIT_TIMEOUT = 10.0
# How many proxy connections one call, and one session's calls together, may hold open
# at once (issue 35, hole 6); a session never takes more than half of the harness's
# own bound (ExecutorConfig.proxy_connections), so another always has room.
CALL_CONNECTIONS = 256
SESSION_CONNECTIONS = 1024


class CallEnded(Exception):
    """A connection decided after its call's end began: refused, never relayed."""


@attrs.define(eq=False, repr=False)
class _Endpoint:
    """One call's endpoint: whose it is, what it decided, how many connections it may
    hold open, and its two ends (`done`: asked to close; `closed`: closed, every
    connection on it settled)."""

    owner: str | None
    call_id: str
    budget: ConnectionBudget
    connections: list[NetworkConnection] = attrs.field(factory=list)
    requests: list[NetworkRequest] = attrs.field(factory=list)
    done: trio.Event = attrs.field(factory=trio.Event)
    closed: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False, repr=False)
class ProxyEndpoints:
    """Per call it serves: the connections the proxy decided (until its result carries
    them) and the events that end its endpoint. `audit` logs each decision in its
    session's log (None: results only)."""

    config: ExecutorConfig
    numbers: itertools.count[int]
    proxy: NetworkProxy | None = None
    audit: AuditConnection | None = None
    # Starts the proxy for the first call that needs it (None: no proxy here).
    start: Callable[[], Awaitable[NetworkProxy]] | None = None
    _starting: trio.Lock = attrs.field(factory=trio.Lock)
    _endpoints: dict[str, _Endpoint] = attrs.field(factory=dict)
    # The harness's bound over all calls, and each session's (with its open calls).
    _harness: ConnectionBudget | None = None
    _sessions: dict[str, tuple[ConnectionBudget, int]] = attrs.field(factory=dict)

    def _budget(self, owner: str | None) -> ConnectionBudget:
        """A new call's budget, under its session's, under the harness's."""
        from ..network import ConnectionBudget

        if self._harness is None:
            self._harness = ConnectionBudget(self.config.proxy_connections(), "the harness")
        per_session = max(1, min(SESSION_CONNECTIONS, self._harness.limit // 2))
        if owner is None:
            session = ConnectionBudget(per_session, "this call", self._harness)
        else:
            held = self._sessions.get(owner)
            if held is None:
                held = (ConnectionBudget(per_session, "this session", self._harness), 0)
            session = held[0]
            self._sessions[owner] = (session, held[1] + 1)
        return ConnectionBudget(min(CALL_CONNECTIONS, session.limit), "this call", session)

    def _let_go(self, endpoint: _Endpoint) -> None:
        """The call of `endpoint` no longer counts in its session's budget."""
        if endpoint.owner is None or endpoint.owner not in self._sessions:
            return
        session, calls = self._sessions[endpoint.owner]
        if calls <= 1:
            del self._sessions[endpoint.owner]
        else:
            self._sessions[endpoint.owner] = (session, calls - 1)

    def connections(self, key: str) -> list[NetworkConnection]:
        """The live list of the connections decided for call `key` so far."""
        return self._endpoints[key].connections

    def requests(self, key: str) -> list[NetworkRequest]:
        """The live list of the requests to ruled hosts judged for call `key` so far."""
        return self._endpoints[key].requests

    async def open(self, spec: ShellSpec, nursery: trio.Nursery) -> tuple[str | None, str | None]:
        """This call's proxy endpoint, held open in `nursery` until the call's process
        is gone (`finish`): (its call key, its socket), else (None, None)."""
        if spec.policy.sandbox_policy().network is not Network.ALLOWLIST:
            return None, None
        if self.proxy is None and self.start is not None:
            async with self._starting:
                if self.proxy is None:
                    self.proxy = await self.start()
        if self.proxy is None:
            raise SandboxUnavailable(
                "network allowlist needs the harness's proxy, which is not running"
            )
        from ..network import Rules

        # A person's per-call grant (`with_network` + `network_destinations`) adds its
        # destinations for this endpoint only, or is the whole list when the session's
        # network was off; the operator's deny list applies either way (deny wins).
        allow = (
            *(() if spec.network_allow_alone else self.config.network_allow),
            *spec.network_allow,
        )
        rules = Rules(allow, self.config.network_deny)
        key = f"call-{next(self.numbers)}"
        endpoint = _Endpoint(
            owner=spec.owner, call_id=spec.call_id or key, budget=self._budget(spec.owner)
        )
        self._endpoints[key] = endpoint
        proxy = self.proxy

        async def hold(*, task_status: trio.TaskStatus[str]) -> None:
            try:
                async with proxy.open_call(key, rules, endpoint.budget) as opened:
                    task_status.started(opened.path)
                    await endpoint.done.wait()
            finally:
                endpoint.closed.set()
                self._let_go(endpoint)

        try:
            path: str = await nursery.start(hold)
        except OSError as error:
            self._endpoints.pop(key, None)
            raise CommandStartError(
                f"the call's network proxy endpoint cannot be opened: "
                f"{error.strerror or error}; nothing ran"
            ) from None
        except BaseException:
            self._endpoints.pop(key, None)
            raise
        return key, path

    def close(self, key: str | None) -> None:
        """The call of `key` is over and no result will carry its connections (or one
        took them): its endpoint closes (its connections are cut) and is forgotten."""
        endpoint = self._endpoints.pop(key, None) if key is not None else None
        if endpoint is not None:
            endpoint.done.set()

    async def finish(self, key: str | None) -> None:
        """Close the endpoint of `key` and wait until it is closed: nothing more is
        accepted, every connection on it is decided (kept and logged) or cut."""
        endpoint = self._endpoints.get(key) if key is not None else None
        if endpoint is None:
            return
        endpoint.done.set()
        with trio.CancelScope(shield=True):
            await endpoint.closed.wait()

    async def decided(self, decision: Decision) -> None:
        """The proxy decided a connection: kept with its call and logged in its
        session, before any byte of it is relayed. CallEnded (the proxy then refuses
        it) once the call's end has begun; the log's own failure refuses it too."""
        endpoint = self._endpoints.get(decision.call_id)
        if endpoint is None or endpoint.done.is_set():
            raise CallEnded(f"{decision.call_id} has ended")
        connection = NetworkConnection(
            host=decision.host,
            port=decision.port,
            address=decision.address,
            allowed=decision.allowed,
            rule=decision.rule,
            reason=decision.reason,
            protocol=decision.protocol,
        )
        if self.audit is not None and endpoint.owner is not None:
            # Shielded: once the log is asked, the result keeps it too (the call's end
            # waits for this), so the two never disagree.
            with trio.CancelScope(shield=True), trio.fail_after(AUDIT_TIMEOUT):
                await self.audit(endpoint.owner, endpoint.call_id, connection)
        endpoint.connections.append(connection)

    async def requested(self, record: RequestRecord) -> None:
        """The proxy judged a request to a ruled host (issue 41): kept with its call
        and logged in its session before the request (or its refusal) goes anywhere,
        as `decided` does for a connection; CallEnded once the call's end has begun."""
        endpoint = self._endpoints.get(record.call_id)
        if endpoint is None or endpoint.done.is_set():
            raise CallEnded(f"{record.call_id} has ended")
        request = NetworkRequest(
            method=record.method,
            host=record.host,
            port=record.port,
            path=record.path,
            allowed=record.allowed,
            reason=record.reason,
            rule=record.rule,
            credentials=tuple(record.credentials),
            misplaced=tuple(record.misplaced),
            status=record.status,
            protocol=record.protocol,
            scrubbed=record.scrubbed,
        )
        if self.audit is not None and endpoint.owner is not None:
            with trio.CancelScope(shield=True), trio.fail_after(AUDIT_TIMEOUT):
                await self.audit(endpoint.owner, endpoint.call_id, request)
        endpoint.requests.append(request)

    def take_requests(self, facts: WrapFacts) -> tuple[NetworkRequest, ...]:
        """The requests judged for the call of `facts` (read before `take` forgets it)."""
        endpoint = self._endpoints.get(facts.proxy_call) if facts.proxy_call else None
        return () if endpoint is None else tuple(endpoint.requests)

    def take(
        self, facts: WrapFacts
    ) -> tuple[tuple[NetworkConnection, ...], ConnectionsRefused | None]:
        """The connections decided for the call of `facts` (its endpoint finished),
        and those refused unread over a bound, forgotten here: its result carries them."""
        if facts.proxy_call is None:
            return (), None
        endpoint = self._endpoints.pop(facts.proxy_call, None)
        if endpoint is None:
            return (), None
        return tuple(endpoint.connections), refused_over_budget(endpoint.budget)


def refused_over_budget(budget: ConnectionBudget) -> ConnectionsRefused | None:
    if not budget.refused:
        return None
    return ConnectionsRefused(count=budget.refused, reason=budget.refused_by or "")

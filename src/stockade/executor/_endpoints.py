"""network allowlist, the executor's side: the harness's proxy, one endpoint per call
it serves (open while the call's process lives), and the connections it decided."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import attrs
import trio

from ..errors import SandboxUnavailable
from ..messages import NetworkConnection, ShellSpec
from ..vocab import Network
from ._facts import WrapFacts
from .config import ExecutorConfig

if TYPE_CHECKING:
    from ..network.proxy import NetworkProxy
    from ..network.rules import Decision


@attrs.define(eq=False)
class ProxyEndpoints:
    """Per call it serves: the connections the proxy decided (until its result carries
    them) and the event that ends its endpoint."""

    config: ExecutorConfig
    numbers: itertools.count[int]
    proxy: NetworkProxy | None = None
    connections: dict[str, list[NetworkConnection]] = attrs.field(factory=dict)
    _endpoints: dict[str, trio.Event] = attrs.field(factory=dict)

    async def open(self, spec: ShellSpec, nursery: trio.Nursery) -> tuple[str | None, str | None]:
        """This call's proxy endpoint, held open in `nursery` until the call's process
        is gone (`close`): (its call key, its socket), else (None, None)."""
        if spec.policy.sandbox_policy().network is not Network.ALLOWLIST:
            return None, None
        if self.proxy is None:
            raise SandboxUnavailable(
                "network allowlist needs the harness's proxy, which is not running"
            )
        from ..network.rules import Rules

        # A person's per-call grant (`with_network` + `network_destinations`) adds its
        # destinations for this endpoint only, or is the whole list when the session's
        # network was off; the operator's deny list applies either way (deny wins).
        allow = (
            *(() if spec.network_allow_alone else self.config.network_allow),
            *spec.network_allow,
        )
        rules = Rules(allow, self.config.network_deny)
        key = f"call-{next(self.numbers)}"
        done = trio.Event()
        self._endpoints[key] = done
        self.connections[key] = []
        proxy = self.proxy

        async def hold(*, task_status: trio.TaskStatus[str]) -> None:
            async with proxy.open_call(key, rules) as endpoint:
                task_status.started(endpoint.path)
                await done.wait()

        path: str = await nursery.start(hold)
        return key, path

    def close(self, key: str | None) -> None:
        if key is not None and (done := self._endpoints.pop(key, None)) is not None:
            done.set()

    def decided(self, decision: Decision) -> None:
        """The proxy decided a connection: kept with its call, for its result."""
        kept = self.connections.get(decision.call_id)
        if kept is not None:
            kept.append(
                NetworkConnection(
                    host=decision.host,
                    port=decision.port,
                    address=decision.address,
                    allowed=decision.allowed,
                    rule=decision.rule,
                    reason=decision.reason,
                    protocol=decision.protocol,
                )
            )

    def take(self, facts: WrapFacts) -> tuple[NetworkConnection, ...]:
        """The connections decided for the call of `facts`, forgotten here: its result
        carries them."""
        if facts.proxy_call is None:
            return ()
        return tuple(self.connections.pop(facts.proxy_call, ()))

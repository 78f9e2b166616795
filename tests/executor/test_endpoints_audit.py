"""The executor's side of network allowlist keeps the audit complete (issue 35, hole 5):
a connection is in its call's result and its session's log before a byte of it is
relayed, or it is refused; a call's end waits until every connection on its endpoint
is decided or cut. A real proxy and a loopback origin; the slow step (a name being
resolved, the log being written) is held by the test, so the race is exact.
"""

from __future__ import annotations

import itertools
import socket

import attrs
import msgspec
import trio

from stockade.executor._endpoints import ProxyEndpoints
from stockade.executor._facts import WrapFacts
from stockade.executor.config import ExecutorConfig
from stockade.messages import NetworkConnection, ShellSpec
from stockade.network import open_proxy
from stockade.vocab import ExecutionPolicy, Network, SandboxMode

from ..network.test_proxy import LOOPBACK, servers  # noqa: F401


@attrs.define
class HeldResolver:
    """Resolves `slow.test` to loopback once the test lets it."""

    entered: trio.Event = attrs.field(factory=trio.Event)
    release: trio.Event = attrs.field(factory=trio.Event)

    async def __call__(self, host: str, port: int) -> list[str]:
        self.entered.set()
        await self.release.wait()
        return [LOOPBACK]


def _spec(owner: str | None = "session-1") -> ShellSpec:
    policy = ExecutionPolicy(
        mode=SandboxMode.WORKSPACE_WRITE, workspace_root="/", network=Network.ALLOWLIST
    )
    return ShellSpec(command="true", policy=policy, owner=owner, call_id="tool-call-1")


def _facts(key: str) -> WrapFacts:
    return msgspec.structs.replace(WrapFacts.unconfined(), proxy_call=key)


async def _ask(path: str, port: int) -> trio.SocketStream:
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await sock.connect(path)
    stream = trio.SocketStream(sock)
    await stream.send_all(
        f"GET http://slow.test:{port}/late HTTP/1.1\r\nHost: slow.test:{port}\r\n\r\n".encode()
    )
    return stream


async def test_a_connection_decided_as_its_call_ends_is_cut_never_relayed_unrecorded(
    servers,  # noqa: F811
    nursery,
):
    _, origin = servers
    allow = (f"slow.test:{origin.port}", f"{LOOPBACK}:{origin.port}")
    logged: list[tuple[str, str, NetworkConnection]] = []

    async def audit(session: str, call: str, connection: NetworkConnection) -> None:
        logged.append((session, call, connection))

    resolver = HeldResolver()
    endpoints = ProxyEndpoints(ExecutorConfig(network_allow=allow), itertools.count(1), audit=audit)
    async with open_proxy(on_decision=endpoints.decided, resolver=resolver) as proxy:
        endpoints.proxy = proxy
        key, path = await endpoints.open(_spec(), nursery)
        assert key is not None and path is not None
        client = await _ask(path, origin.port)
        await resolver.entered.wait()
        # The command is gone: the call ends while its connection is being decided.
        await endpoints.finish(key)
        taken, _ = endpoints.take(_facts(key))
        resolver.release.set()
        await trio.sleep(0.2)
        await client.aclose()
    assert taken == () and logged == []
    assert origin.requests == [], "a connection no result holds reached the origin"


async def test_without_that_rule_the_late_connection_reaches_the_origin_unrecorded(
    servers,  # noqa: F811
    nursery,
):
    """The control: a reporter that keeps what it can and never refuses (the old one),
    and a result made before the endpoint closed: the request goes through, and no
    result holds it. The attack is real."""
    _, origin = servers
    allow = (f"slow.test:{origin.port}", f"{LOOPBACK}:{origin.port}")
    kept: dict[str, list[str]] = {"call-1": []}

    def lenient(decision) -> None:
        if decision.call_id in kept:
            kept[decision.call_id].append(decision.host)

    resolver = HeldResolver()
    async with open_proxy(on_decision=lenient, resolver=resolver) as proxy:
        from stockade.network import Rules

        async with proxy.open_call("call-1", Rules(allow, ())) as endpoint:
            client = await _ask(endpoint.path, origin.port)
            await resolver.entered.wait()
            result = kept.pop("call-1")  # the result is made
            resolver.release.set()
            with trio.fail_after(5):
                while not origin.requests:
                    await trio.sleep(0.01)
            await client.aclose()
    assert result == []
    assert len(origin.requests) == 1


async def test_a_connection_is_logged_before_a_byte_of_it_is_relayed(
    servers,  # noqa: F811
    nursery,
):
    _, origin = servers
    allow = (f"slow.test:{origin.port}", f"{LOOPBACK}:{origin.port}")
    logging = trio.Event()
    written = trio.Event()
    seen_at_log: list[int] = []

    async def audit(session: str, call: str, connection: NetworkConnection) -> None:
        logging.set()
        seen_at_log.append(len(origin.requests))
        await written.wait()

    resolver = HeldResolver()
    resolver.release.set()
    endpoints = ProxyEndpoints(ExecutorConfig(network_allow=allow), itertools.count(1), audit=audit)
    async with open_proxy(on_decision=endpoints.decided, resolver=resolver) as proxy:
        endpoints.proxy = proxy
        key, path = await endpoints.open(_spec(), nursery)
        assert path is not None
        client = await _ask(path, origin.port)
        await logging.wait()
        await trio.sleep(0.2)
        assert origin.requests == [], "relayed before the log had it"
        written.set()
        with trio.fail_after(5):
            while not origin.requests:
                await trio.sleep(0.01)
        await endpoints.finish(key)
        taken, _ = endpoints.take(_facts(key))
        await client.aclose()
    assert seen_at_log == [0]
    assert [(c.host, c.allowed) for c in taken] == [("slow.test", True)]


async def test_a_log_that_fails_refuses_the_connection(servers, nursery):  # noqa: F811
    _, origin = servers
    allow = (f"slow.test:{origin.port}", f"{LOOPBACK}:{origin.port}")

    async def audit(session: str, call: str, connection: NetworkConnection) -> None:
        raise OSError("the disk is full")

    resolver = HeldResolver()
    resolver.release.set()
    endpoints = ProxyEndpoints(ExecutorConfig(network_allow=allow), itertools.count(1), audit=audit)
    async with open_proxy(on_decision=endpoints.decided, resolver=resolver) as proxy:
        endpoints.proxy = proxy
        key, path = await endpoints.open(_spec(), nursery)
        assert path is not None
        client = await _ask(path, origin.port)
        with trio.fail_after(5):
            answer = await client.receive_some(100)
        await endpoints.finish(key)
        taken, _ = endpoints.take(_facts(key))
        await client.aclose()
    assert answer == b""
    assert taken == () and origin.requests == []

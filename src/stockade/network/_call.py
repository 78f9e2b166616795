"""One call's side of the proxy: the decision and connection of one attempt (resolve,
check every address, connect by IP to a checked one, report), and the byte relay.

A Trio shell beside the pure rules; the protocol handlers (`_http`, `_socks`) ask it.
"""

from __future__ import annotations

import contextlib
import errno
import inspect
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, TypeVar

import attrs
import trio

from ..reprs import fields_repr
from ._authority import Leaf
from ._broker import Broker, OnRequest, RequestRecord
from ._requests import ruled_name
from .rules import Decision, Rules, Verdict, normalise_host, parse_address

Protocol = Literal["http", "connect", "socks5"]
# (name, port) -> addresses, in the order to try them.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
# (address, port) -> a connected stream. Always an IP literal: never a name.
Connector = Callable[[str, int], Awaitable[trio.abc.Stream]]
OnDecision = Callable[[Decision], Awaitable[None] | None]
# Looks at each chunk a tunnel's client sends before it goes on: False cuts the tunnel.
Watch = Callable[[bytes], Awaitable[bool]]
# The server contexts presenting each ruled host's leaf, shared by a harness's calls.
ServerContexts = dict[str, tuple[Leaf, ssl.SSLContext]]

BUFFER = 65536
Reported = TypeVar("Reported", Decision, RequestRecord)


async def resolve(host: str, port: int) -> list[str]:
    """The default resolver: the host's getaddrinfo (TCP), addresses in its order,
    each once."""
    found = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for _family, _type, _proto, _name, sockaddr in found:
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


async def connect_tcp(address: str, port: int) -> trio.abc.Stream:
    """The default connector: one TCP connection to an IP address (no resolution)."""
    parsed = parse_address(address)
    if parsed is None:
        raise OSError(errno.EINVAL, f"not an IP address: {address!r}")
    family = socket.AF_INET if parsed.version == 4 else socket.AF_INET6
    sock = trio.socket.socket(family, socket.SOCK_STREAM)
    try:
        await sock.connect((address, port))
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


@attrs.frozen
class Opened:
    """The upstream connection for an allowed attempt, and its reported decision."""

    __repr__ = fields_repr

    stream: trio.abc.Stream
    decision: Decision


@attrs.frozen
class Refused:
    """An attempt that reached nothing, and why: `rules` (refused by the rules),
    `resolve` (no address), `unreachable`, `refused` (the destination said no) or
    `timeout` (resolving or connecting took longer than the proxy waits)."""

    __repr__ = fields_repr

    why: Literal["rules", "resolve", "unreachable", "refused", "timeout"]
    decision: Decision


async def _report(
    reporter: Callable[[Reported], Awaitable[None] | None] | None, record: Reported
) -> None:
    if reporter is None:
        return
    result = reporter(record)
    if inspect.isawaitable(result):
        await result


@attrs.define
class Call:
    """One call's rules, served on one endpoint: what the protocol handlers ask."""

    __repr__ = fields_repr

    call_id: str
    rules: Rules
    on_decision: OnDecision | None = None
    resolver: Resolver = resolve
    connector: Connector = connect_tcp
    connect_timeout: float = 10.0
    handshake_timeout: float = 30.0
    broker: Broker | None = None
    on_request: OnRequest | None = None
    contexts: ServerContexts = attrs.field(factory=dict)

    def terminates(self, host: str) -> str | None:
        """The ruled name of `host` when the proxy terminates it, else None."""
        if self.broker is None:
            return None
        name = ruled_name(host)
        return name if name is not None and self.broker.terminates(name) else None

    async def report_request(self, record: RequestRecord) -> None:
        """Hand one judged request to the reporter; what it raises, the caller gets
        (and refuses the request: the log stays complete)."""
        await _report(self.on_request, record)

    async def report_refusal(self, record: RequestRecord) -> None:
        """Hand the reporter a request refused (or cut) whatever it does: what it
        raises changes nothing, so it is not passed on."""
        with contextlib.suppress(Exception):
            await _report(self.on_request, record)

    def decision(
        self, protocol: Protocol, host: str, port: int, verdict: Verdict, address: str | None
    ) -> Decision:
        return Decision(
            call_id=self.call_id,
            host=host,
            port=port,
            address=address,
            allowed=verdict.allowed,
            rule=verdict.rule,
            reason=verdict.reason,
            protocol=protocol,
        )

    async def refuse(self, protocol: Protocol, host: str, port: int, reason: str) -> Refused:
        """A refusal decided before the rules were asked (e.g. an unsupported SOCKS5
        command), reported like any other."""
        decision = self.decision(protocol, host, port, Verdict(False, None, reason), None)
        await _report(self.on_decision, decision)
        return Refused("rules", decision)

    async def open(self, protocol: Protocol, host: str, port: int) -> Opened | Refused:
        """Decide `host:port` and, when allowed, connect to one checked address. The
        decision is reported before this returns, so before any byte is relayed."""
        outcome = await self._decide_and_connect(protocol, host, port)
        try:
            await _report(self.on_decision, outcome.decision)
        except BaseException:
            if isinstance(outcome, Opened):
                await trio.aclose_forcefully(outcome.stream)
            raise
        return outcome

    async def _decide_and_connect(
        self, protocol: Protocol, host: str, port: int
    ) -> Opened | Refused:
        verdict = self.rules.check_name(host, port)
        literal = parse_address(host)
        if not verdict.allowed:
            # An IP literal was decided by the address check: that address is the one
            # refused.
            refused = None if literal is None else str(literal)
            return Refused("rules", self.decision(protocol, host, port, verdict, refused))
        if literal is not None:
            addresses: Sequence[str] = [str(literal)]
        else:
            name = normalise_host(host)  # check_name passed: the name is valid
            failure = None
            with trio.move_on_after(self.connect_timeout) as scope:
                try:
                    addresses = await self.resolver(name, port)
                except Exception as error:  # any resolver failure refuses, on the record
                    failure = f"cannot resolve {name}: {error}"
            if scope.cancelled_caught:
                failure = f"resolving {name} took over {self.connect_timeout:g} s"
            if failure is None and not addresses:
                failure = f"{name} resolved to no address"
            if failure is not None:
                why: Literal["resolve", "timeout"] = (
                    "timeout" if scope.cancelled_caught else "resolve"
                )
                return Refused(
                    why, self.decision(protocol, host, port, Verdict(False, None, failure), None)
                )
        passing: list[tuple[str, Verdict]] = []
        first_refusal: tuple[str, Verdict] | None = None
        for address in addresses:
            checked = self.rules.check_address(host, port, address)
            if checked.allowed:
                passing.append((address, checked))
            elif first_refusal is None:
                first_refusal = (address, checked)
        if not passing:
            assert first_refusal is not None
            address, checked = first_refusal
            return Refused("rules", self.decision(protocol, host, port, checked, address))
        errors: list[str] = []
        why_failed: Literal["unreachable", "refused", "timeout"] = "unreachable"
        with trio.move_on_after(self.connect_timeout) as scope:
            for address, checked in passing:
                try:
                    stream = await self.connector(address, port)
                except Exception as error:  # any connector failure: the next address
                    strerror = error.strerror if isinstance(error, OSError) else None
                    errors.append(f"{address}: {strerror or error}")
                    if isinstance(error, ConnectionRefusedError):
                        why_failed = "refused"
                    continue
                return Opened(stream, self.decision(protocol, host, port, checked, address))
        if scope.cancelled_caught:
            why_failed = "timeout"
            errors.append(f"connecting took over {self.connect_timeout:g} s")
        verdict = passing[0][1]
        reason = f"{verdict.reason}, but no allowed address could be reached ({'; '.join(errors)})"
        failed = Verdict(True, verdict.rule, reason)
        return Refused(why_failed, self.decision(protocol, host, port, failed, None))


async def relay(
    client: trio.abc.Stream, upstream: trio.abc.Stream, watch: Watch | None = None
) -> None:
    """Copy bytes both ways until both sides have finished; an end of file is passed on
    as a half-close, a broken side ends both directions. `watch` sees each chunk the
    client sends before it goes on, and cuts the tunnel (both ways) by saying False."""

    async def pump(source: trio.abc.Stream, sink: trio.abc.Stream, done: trio.CancelScope) -> None:
        try:
            while data := await source.receive_some(BUFFER):
                await sink.send_all(data)
            if isinstance(sink, trio.abc.HalfCloseableStream):
                await sink.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            done.cancel()

    async def watched(
        source: trio.abc.Stream, sink: trio.abc.Stream, done: trio.CancelScope
    ) -> None:
        assert watch is not None
        try:
            while data := await source.receive_some(BUFFER):
                if not await watch(bytes(data)):
                    done.cancel()
                    return
                await sink.send_all(data)
            if isinstance(sink, trio.abc.HalfCloseableStream):
                await sink.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            done.cancel()

    async with trio.open_nursery() as nursery:
        outward = pump if watch is None else watched
        nursery.start_soon(outward, client, upstream, nursery.cancel_scope)
        nursery.start_soon(pump, upstream, client, nursery.cancel_scope)

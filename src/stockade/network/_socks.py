"""The proxy's SOCKS5 side (RFC 1928): no-auth only, CONNECT only, with remote DNS;
socksio's vocabulary (methods, commands, address types, reply codes) and a Trio shell.

socksio is a client-side library: it writes requests and reads replies, and has no
reader for what a client sends. The two client messages are read here, by their fixed
layout, strictly (a wrong version, reserved byte or length closes the connection), with
socksio's enums for every field; the tests drive this side with socksio's own client.
"""

from __future__ import annotations

import attrs
import trio
from socksio import SOCKS5AType, SOCKS5AuthMethod, SOCKS5Command, SOCKS5ReplyCode
from socksio.utils import AddressType, decode_address

from ..reprs import fields_repr
from ._call import BUFFER, Call, Opened, relay
from ._terminate import reached_otherwise, terminate, tunnel_watch

VERSION = 0x05


class SocksError(Exception):
    """A client message that is not SOCKS5: the connection closes without a reply."""


@attrs.frozen
class Greeting:
    __repr__ = fields_repr
    methods: bytes


@attrs.frozen
class Request:
    """A client's request: `command` and `atype` are the raw bytes (an unknown one is
    answered with its reply code), `host` the address or the name as sent (a name
    decoded as UTF-8, with backslash escapes where it is not; the rules refuse it)."""

    __repr__ = fields_repr

    command: int
    atype: int
    host: str
    port: int


def read_greeting(data: bytes) -> tuple[Greeting, int] | None:
    """The method selection message (VER NMETHODS METHODS...) at the start of `data` and
    its length, or None when more bytes are needed."""
    if len(data) < 2:
        return None
    if data[0] != VERSION:
        raise SocksError("not SOCKS5")
    end = 2 + data[1]
    if data[1] == 0:
        raise SocksError("a SOCKS5 greeting with no method")
    if len(data) < end:
        return None
    return Greeting(data[2:end]), end


def read_request(data: bytes) -> tuple[Request, int] | None:
    """The request (VER CMD RSV ATYP DST.ADDR DST.PORT) at the start of `data` and its
    length, or None when more bytes are needed. An unknown ATYP raises: its address's
    length is unknown, so nothing after it can be read (reply 0x08, then close)."""
    if (data[:1] and data[0] != VERSION) or (data[2:3] and data[2] != 0x00):
        raise SocksError("not a SOCKS5 request")
    if len(data) < 5:
        return None
    atype = data[3]
    if atype == SOCKS5AType.IPV4_ADDRESS[0]:
        start, length, kind = 4, 4, AddressType.IPV4
    elif atype == SOCKS5AType.IPV6_ADDRESS[0]:
        start, length, kind = 4, 16, AddressType.IPV6
    elif atype == SOCKS5AType.DOMAIN_NAME[0]:
        start, length, kind = 5, data[4], AddressType.DN
        if length == 0:
            raise SocksError("an empty SOCKS5 domain name")
    else:
        raise UnsupportedAddressType(atype)
    end = start + length + 2
    if len(data) < end:
        return None
    raw = data[start : start + length]
    if kind is AddressType.DN:
        host = raw.decode("utf-8", errors="backslashreplace")
    else:
        host = decode_address(kind, raw)
    port = int.from_bytes(data[end - 2 : end], "big")
    return Request(data[1], atype, host, port), end


class UnsupportedAddressType(SocksError):
    def __init__(self, atype: int) -> None:
        super().__init__(f"SOCKS5 address type {atype:#04x} is not supported")


def reply(code: SOCKS5ReplyCode) -> bytes:
    """A reply with a zero bound address: clients of CONNECT do not use it, and the
    proxy's own addresses are nothing the sandbox needs to know."""
    return (
        bytes([VERSION])
        + code
        + b"\x00"
        + SOCKS5AType.IPV4_ADDRESS
        + b"\x00\x00\x00\x00"
        + b"\x00\x00"
    )


_REPLY_FOR = {
    "rules": SOCKS5ReplyCode.CONNECTION_NOT_ALLOWED_BY_RULESET,
    "resolve": SOCKS5ReplyCode.HOST_UNREACHABLE,
    "unreachable": SOCKS5ReplyCode.HOST_UNREACHABLE,
    "refused": SOCKS5ReplyCode.CONNECTION_REFUSED,
    "timeout": SOCKS5ReplyCode.HOST_UNREACHABLE,
}


async def _handshake(stream: trio.abc.Stream, first: bytes) -> tuple[Request, bytes] | None:
    """Method selection, then the request: the request and the bytes after it, or None
    when the connection is over (closed, no acceptable method, an unknown ATYP)."""
    buffer = bytearray(first)
    while (greeting := read_greeting(bytes(buffer))) is None:
        data = await stream.receive_some(BUFFER)
        if not data:
            return None
        buffer += data
    offered, used = greeting
    del buffer[:used]
    if SOCKS5AuthMethod.NO_AUTH_REQUIRED[0] not in offered.methods:
        await stream.send_all(bytes([VERSION]) + SOCKS5AuthMethod.NO_ACCEPTABLE_METHODS)
        return None
    await stream.send_all(bytes([VERSION]) + SOCKS5AuthMethod.NO_AUTH_REQUIRED)
    try:
        while (parsed := read_request(bytes(buffer))) is None:
            data = await stream.receive_some(BUFFER)
            if not data:
                return None
            buffer += data
    except UnsupportedAddressType:
        await stream.send_all(reply(SOCKS5ReplyCode.ADDRESS_TYPE_NOT_SUPPORTED))
        return None
    request, used = parsed
    return request, bytes(buffer[used:])


async def serve_socks5(call: Call, stream: trio.abc.Stream, first: bytes) -> None:
    """Serve one SOCKS5 connection whose first bytes are `first`."""
    handshake = None
    with trio.move_on_after(call.handshake_timeout):
        handshake = await _handshake(stream, first)
    if handshake is None:
        return
    request, rest = handshake
    if request.command != SOCKS5Command.CONNECT[0]:
        names = {command[0]: command.name for command in SOCKS5Command}
        what = names.get(request.command, f"{request.command:#04x}")
        await call.refuse(
            "socks5",
            request.host,
            request.port,
            f"the SOCKS5 command {what} is not supported (only CONNECT)",
        )
        await stream.send_all(reply(SOCKS5ReplyCode.COMMAND_NOT_SUPPORTED))
        return
    outcome = await call.open("socks5", request.host, request.port)
    if not isinstance(outcome, Opened):
        await stream.send_all(reply(_REPLY_FOR[outcome.why]))
        return
    async with outcome.stream as upstream:
        await stream.send_all(reply(SOCKS5ReplyCode.SUCCEEDED))
        ruled = call.terminates(request.host)
        if ruled is not None:
            await terminate(call, stream, rest, upstream, ruled, request.port)
            return
        cut = reached_otherwise(call, request.host, request.port, outcome.decision.address)
        if cut is not None:
            await call.report_refusal(cut)
            return
        watch = tunnel_watch(call, request.host, request.port)
        if rest:
            if watch is not None and not await watch(rest):
                return
            await upstream.send_all(rest)
        await relay(stream, upstream, watch)

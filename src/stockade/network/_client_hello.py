"""What a terminated connection's first bytes say before TLS starts: a TLS ClientHello
(and the application protocols it offers, ALPN), or not TLS at all. Pure.

`ssl` does not show a server what ALPN a client offered, nor lets it refuse with the
alert RFC 7301 names; reading the ClientHello here lets the proxy say plainly that a
client insists on HTTP/2, and answer it with that alert.
"""

from __future__ import annotations

from typing import Literal

import attrs

_HANDSHAKE = 0x16  # TLS record content type
_CLIENT_HELLO = 0x01  # handshake message type
_ALPN = 16  # extension type (RFC 7301)
# A ClientHello larger than this is not read here (the handshake still goes on).
HELLO_LIMIT = 65536
# The fatal alert `no_application_protocol` (120), as a plaintext TLS 1.2 record: the
# answer to a ClientHello offering no protocol the proxy serves.
NO_APPLICATION_PROTOCOL = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 120])
HTTP1 = frozenset({b"http/1.1", b"http/1.0"})


@attrs.frozen
class Hello:
    """What the first bytes are: `tls` (a ClientHello; `alpn` its offered protocols,
    None when it offers none), `plain` (not TLS), or `unknown` (TLS that could not be
    read here: the handshake decides)."""

    kind: Literal["tls", "plain", "unknown"]
    alpn: tuple[bytes, ...] | None = None

    @property
    def refuses_http1(self) -> bool:
        """Whether the client offers ALPN protocols and HTTP/1 is none of them."""
        return self.alpn is not None and not HTTP1.intersection(self.alpn)


def _handshake_bytes(data: bytes) -> bytes | None:
    """The handshake bytes the TLS records at the start of `data` carry, up to the
    first record of another type; None when the first record is not complete yet."""
    out = bytearray()
    index = 0
    while index + 5 <= len(data) and data[index] == _HANDSHAKE:
        length = int.from_bytes(data[index + 3 : index + 5], "big")
        if index + 5 + length > len(data):
            break
        out += data[index + 5 : index + 5 + length]
        index += 5 + length
    if index == 0:
        return None
    return bytes(out)


class _Short(Exception):
    """The bytes end inside the message: more are needed."""


class _Reader:
    __slots__ = ("data", "index")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.index = 0

    def take(self, count: int) -> bytes:
        if self.index + count > len(self.data):
            raise _Short
        piece = self.data[self.index : self.index + count]
        self.index += count
        return piece

    def number(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")

    def vector(self, size: int) -> bytes:
        return self.take(self.number(size))


def _alpn(extension: bytes) -> tuple[bytes, ...]:
    reader = _Reader(extension)
    names = _Reader(reader.vector(2))
    offered: list[bytes] = []
    while names.index < len(names.data):
        offered.append(names.vector(1))
    return tuple(offered)


def read_hello(data: bytes) -> Hello | None:
    """What `data`, a connection's first bytes, is; None when more bytes are needed to
    tell (a ClientHello not whole yet, under `HELLO_LIMIT`)."""
    if not data:
        return None
    if data[0] != _HANDSHAKE:
        return Hello("plain")
    if len(data) < 5:
        return None
    handshake = _handshake_bytes(data)
    if handshake is None:
        return None if len(data) < HELLO_LIMIT else Hello("unknown")
    reader = _Reader(handshake)
    try:
        if reader.number(1) != _CLIENT_HELLO:
            return Hello("unknown")
        body = _Reader(reader.take(reader.number(3)))
    except _Short:
        # The handshake bytes end inside the ClientHello: more records are coming,
        # unless the limit says to stop reading here.
        return None if len(data) < HELLO_LIMIT else Hello("unknown")
    try:
        return _parsed(body)
    except _Short:  # the ClientHello is whole but its inner lengths disagree
        return Hello("unknown")


def _parsed(body: _Reader) -> Hello:
    body.take(2 + 32)  # legacy version, random
    body.vector(1)  # session id
    body.vector(2)  # cipher suites
    body.vector(1)  # compression methods
    if body.index == len(body.data):
        return Hello("tls")  # no extensions at all
    extensions = _Reader(body.vector(2))
    alpn = None
    while extensions.index < len(extensions.data):
        kind = extensions.number(2)
        content = extensions.vector(2)
        if kind == _ALPN:
            alpn = _alpn(content)
    return Hello("tls", alpn)

"""What a tunnel's first bytes say before TLS starts: a TLS ClientHello (the host its
SNI names, the application protocols it offers), or not TLS at all; and the hosts a
plain-text tunnel's requests name. Pure.

`ssl` does not show a server what ALPN a client offered, nor lets it refuse with the
alert RFC 7301 names; reading the ClientHello here lets the proxy say plainly that a
client insists on HTTP/2, and answer it with that alert.
"""

from __future__ import annotations

import re
from typing import Literal

import attrs

from ..reprs import fields_repr

_HANDSHAKE = 0x16  # TLS record content type
_CLIENT_HELLO = 0x01  # handshake message type
_ALPN = 16  # extension type (RFC 7301)
_SERVER_NAME = 0  # extension type (RFC 6066)
# A ClientHello larger than this is not read here (the handshake still goes on).
HELLO_LIMIT = 65536
# The fatal alert `no_application_protocol` (120), as a plaintext TLS 1.2 record: the
# answer to a ClientHello offering no protocol the proxy serves.
NO_APPLICATION_PROTOCOL = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 120])
HTTP1 = frozenset({b"http/1.1", b"http/1.0"})


@attrs.frozen
class Hello:
    """What the first bytes are: `tls` (a ClientHello; `alpn` its offered protocols,
    None when it offers none; `server_name` the host its SNI names, as sent), `plain`
    (not TLS), or `unknown` (TLS that could not be read here: the handshake decides)."""

    __repr__ = fields_repr

    kind: Literal["tls", "plain", "unknown"]
    alpn: tuple[bytes, ...] | None = None
    server_name: str | None = None

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


def _server_name(extension: bytes) -> str | None:
    reader = _Reader(extension)
    names = _Reader(reader.vector(2))
    while names.index < len(names.data):
        kind = names.number(1)
        name = names.vector(2)
        if kind == 0:  # host_name
            return name.decode("ascii", "backslashreplace")
    return None


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
    server_name = None
    while extensions.index < len(extensions.data):
        kind = extensions.number(2)
        content = extensions.vector(2)
        if kind == _ALPN:
            alpn = _alpn(content)
        elif kind == _SERVER_NAME:
            server_name = _server_name(content)
    return Hello("tls", alpn, server_name)


# A request line or header line longer than this is not read for a host (an origin
# refuses a head that long anyway).
LINE_LIMIT = 8192
_REQUEST_LINE = re.compile(rb"^[!-~]+[ \t]+[A-Za-z][A-Za-z0-9+.-]*://([^/?#\s]*)")
_HOST_LINE = re.compile(rb"^[ \t]*host[ \t]*:[ \t]*([^\s]*)", re.IGNORECASE)


class HostLines:
    """The hosts named by the plain-text requests in a stream fed in chunks: each
    `Host` header line and each absolute-form request line's authority, across chunk
    boundaries. It reads lines, not HTTP: anything that looks like one counts (a body
    holding such a line too), which errs on the side of finding a host."""

    __slots__ = ("_line", "_skipping")

    def __init__(self) -> None:
        self._line = b""
        self._skipping = False

    def feed(self, chunk: bytes) -> list[str]:
        found: list[str] = []
        pieces = re.split(rb"[\r\n]", chunk)
        for index, piece in enumerate(pieces):
            ends = index < len(pieces) - 1
            if not self._skipping:
                self._line += piece
                if len(self._line) > LINE_LIMIT:
                    self._line, self._skipping = b"", True
            if ends:
                if not self._skipping:
                    found.extend(hosts_in_line(self._line))
                self._line, self._skipping = b"", False
        return found


def hosts_in_line(line: bytes) -> list[str]:
    """The host (without port) a request line's absolute URI or a `Host` header line
    names; none for any other line."""
    match = _HOST_LINE.match(line) or _REQUEST_LINE.match(line)
    if match is None:
        return []
    authority = match.group(1).rpartition(b"@")[2].decode("ascii", "backslashreplace")
    if authority.startswith("["):
        return [authority[1:].partition("]")[0]]
    return [authority.partition(":")[0]] if authority else []

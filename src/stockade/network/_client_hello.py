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
_OTHER_RECORDS = frozenset({0x14, 0x15, 0x17})  # change cipher spec, alert, data
_CLIENT_HELLO = 0x01  # handshake message type
_ALPN = 16  # extension type (RFC 7301)
_SERVER_NAME = 0  # extension type (RFC 6066)
# A ClientHello larger than this is not read here (the handshake still goes on).
HELLO_LIMIT = 65536
# The most TLS records a ClientHello is read across: a client needs four at most for
# one of HELLO_LIMIT bytes (records carry 16 KiB); a hello in hundreds of records
# only makes the proxy walk them.
MAX_RECORDS = 64
# The fatal alert `no_application_protocol` (120), as a plaintext TLS 1.2 record: the
# answer to a ClientHello offering no protocol the proxy serves.
NO_APPLICATION_PROTOCOL = bytes([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 120])
HTTP1 = frozenset({b"http/1.1", b"http/1.0"})


@attrs.frozen
class Hello:
    """What the first bytes are: `tls` (a ClientHello; `alpn` its offered protocols,
    None when it offers none; `server_name` the host its SNI names, as sent), `plain`
    (not TLS), `unknown` (TLS that could not be read here: the handshake decides), or
    `malformed` (records TLS forbids, or a hello in more than MAX_RECORDS: `problem`
    says which; refused, since it could hide the host a hello names)."""

    __repr__ = fields_repr

    kind: Literal["tls", "plain", "unknown", "malformed"]
    alpn: tuple[bytes, ...] | None = None
    server_name: str | None = None
    problem: str | None = None

    @property
    def refuses_http1(self) -> bool:
        """Whether the client offers ALPN protocols and HTTP/1 is none of them."""
        return self.alpn is not None and not HTTP1.intersection(self.alpn)


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


class HelloReader:
    """Reads a connection's first bytes as they come: each record is looked at once,
    when its header and then all it announces are there (never the bytes before it
    again), and the ClientHello parsed once, when all it announces is there."""

    __slots__ = ("_data", "_handshake", "_index", "_records", "_seen")

    def __init__(self) -> None:
        self._data = bytearray()
        self._handshake = bytearray()
        self._index = 0  # where the next record begins
        self._records = 0
        self._seen: Hello | None = None

    def feed(self, chunk: bytes) -> Hello | None:
        """What the bytes so far are; None when more are needed to tell (a ClientHello
        not whole yet, under `HELLO_LIMIT`). Once told, it stays told."""
        if self._seen is None:
            self._data += chunk
            self._seen = self._read()
            if self._seen is not None:  # told: what it read is not needed any more
                self._data, self._handshake = bytearray(), bytearray()
        return self._seen

    def _read(self) -> Hello | None:
        data = self._data
        if not data:
            return None
        if data[0] in _OTHER_RECORDS:
            # An alert or a change of cipher spec first: some TLS servers drop a warning
            # alert and read the hello after it, whose name would then pass unread.
            return Hello("malformed", problem="a TLS record other than a handshake")
        if data[0] != _HANDSHAKE:
            return Hello("plain")
        while self._index + 5 <= len(data):
            if data[self._index] != _HANDSHAKE:
                # Another kind of record before the hello is whole: the handshake decides.
                return Hello("unknown")
            length = int.from_bytes(data[self._index + 3 : self._index + 5], "big")
            if length == 0:
                return Hello("malformed", problem="an empty handshake record")
            if self._index + 5 + length > len(data):
                break
            self._records += 1
            if self._records > MAX_RECORDS:
                return Hello(
                    "malformed", problem=f"a ClientHello in more than {MAX_RECORDS} records"
                )
            self._handshake += data[self._index + 5 : self._index + 5 + length]
            self._index += 5 + length
            hello = self._message()
            if hello is not None:
                return hello
        return None if len(data) < HELLO_LIMIT else Hello("unknown")

    def _message(self) -> Hello | None:
        """The ClientHello, once its handshake bytes hold all it announces."""
        handshake = self._handshake
        if handshake[0] != _CLIENT_HELLO:
            return Hello("unknown")
        if len(handshake) < 4:
            return None
        size = int.from_bytes(handshake[1:4], "big")
        if len(handshake) < 4 + size:
            return None if 4 + size <= HELLO_LIMIT else Hello("unknown")
        try:
            return _parsed(_Reader(bytes(handshake[4 : 4 + size])))
        except _Short:  # the ClientHello is whole but its inner lengths disagree
            return Hello("unknown")


def read_hello(data: bytes) -> Hello | None:
    """What `data`, a connection's first bytes, is; None when more bytes are needed to
    tell (a ClientHello not whole yet, under `HELLO_LIMIT`)."""
    return HelloReader().feed(data)


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


# A request line or header line is read for a host up to this many bytes (runs of
# spaces and tabs counted as one); a Host line, or an absolute target's host, going on
# past it is refused (no client sends one; an origin may still read it).
LINE_LIMIT = 8192
_REQUEST_LINE = re.compile(rb"^[!-~]+[ \t]+[A-Za-z][A-Za-z0-9+.-]*://([^/?#\s]*)")
_HOST_LINE = re.compile(rb"^[ \t]*host[ \t]*:[ \t]*([^\s]*)", re.IGNORECASE)
_HOST_START = re.compile(rb"^[ \t]*host[ \t]*:", re.IGNORECASE)
_LINE_END = re.compile(rb"\r\n|\r|\n")
_SPACES = re.compile(rb"[ \t]+")
# A Host line with nothing after its colon yet: the one line a fold can give a host to
# (folded onto any other line, what follows makes no host an origin would take).
_HOST_WITHOUT_VALUE = re.compile(rb"^[ \t]*host[ \t]*:[ \t]*$", re.IGNORECASE)


class HostLines:
    """The hosts named by the plain-text requests in a stream fed in chunks: each
    `Host` header line and each absolute-form request line's authority, across chunk
    boundaries. It reads lines, not HTTP: anything that looks like one counts (a body
    holding such a line too), which errs on the side of finding a host. A line
    beginning with a space or tab continues the one before (obs-fold, which origins
    join), and is read joined to it; runs of spaces and tabs count as one (so no
    padding pushes a host past the limit), and a first token past the limit (a method
    that long) as one byte. `refused` says why the stream cannot be read for a host,
    once it cannot: a Host line, or an absolute target's host, past LINE_LIMIT."""

    __slots__ = ("_cr", "_fresh", "_line", "_mode", "_previous", "_started", "refused")

    def __init__(self) -> None:
        self._line = bytearray()  # the current line, as read (spaces collapsed)
        self._mode: Literal["keep", "token", "skip"] = "keep"
        self._previous: bytes | None = None  # the last line, that a fold may continue
        self._fresh = True  # nothing of the current line seen yet
        self._started = False  # a line has ended before
        self._cr = False  # the last chunk ended with CR (its LF may begin the next)
        self.refused: str | None = None

    def feed(self, chunk: bytes) -> list[str]:
        if self._cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._cr = chunk.endswith(b"\r")
        found: list[str] = []
        pieces = _LINE_END.split(chunk)
        for index, piece in enumerate(pieces):
            found += self._take(piece)
            if index < len(pieces) - 1:
                found += self._end()
        return found

    def _take(self, piece: bytes) -> list[str]:
        if not piece:
            return []
        if self._fresh:
            self._fresh = False
            if self._started and piece[:1] in (b" ", b"\t"):  # obs-fold: joined
                if self._previous is None:
                    self._mode = "skip"
                else:
                    self._line = bytearray(self._previous)
        if self._mode == "skip":
            return []
        data = _SPACES.sub(b" ", piece)
        if self._line.endswith(b" ") and data.startswith(b" "):
            data = data[1:]
        if self._mode == "token":  # a first token past the limit, until its end
            at = data.find(b" ")
            if at == -1:
                return []
            self._mode = "keep"
            data = data[at:]
        self._line += data
        return self._overflow() if len(self._line) > LINE_LIMIT else []

    def _overflow(self) -> list[str]:
        """The current line has gone past the limit: its host, or why it is refused,
        or it cannot name one (the rest of it is not read)."""
        start = bytes(self._line[:LINE_LIMIT])
        self._mode = "skip"
        if _HOST_START.match(start):
            self.refused = f"a Host header line goes on past {LINE_LIMIT} bytes"
            return []
        target = _REQUEST_LINE.match(start)
        if target is not None:
            if target.end() == len(start):
                self.refused = f"a request target's host goes on past {LINE_LIMIT} bytes"
                return []
            return hosts_in_line(start)
        if b" " not in start:
            # One token this long: were it a method, the target follows it.
            rest = bytes(self._line[LINE_LIMIT:])
            at = rest.find(b" ")
            self._mode = "token" if at == -1 else "keep"
            self._line = bytearray(b"X" + (rest[at:] if at != -1 else b""))
            if len(self._line) > LINE_LIMIT:
                return self._overflow()
        return []

    def _end(self) -> list[str]:
        hosts: list[str] = []
        if self._mode == "skip":
            self._previous = None
        else:
            line = bytes(self._line)
            if not self._started and line.startswith(b"PRI * HTTP/2"):
                # HTTP/2 with prior knowledge: its authority is in compressed frames.
                self.refused = "it speaks HTTP/2 without TLS, whose host is not read"
            hosts = hosts_in_line(line)
            # Kept only where a fold could still name a host: joining every fold to a
            # long line and reading it again was quadratic (20 s a MiB of folds).
            self._previous = line if _HOST_WITHOUT_VALUE.match(line) else None
        self._line = bytearray()
        self._mode = "keep"
        self._fresh = True
        self._started = True
        return hosts


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

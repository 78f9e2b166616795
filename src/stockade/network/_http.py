"""The proxy's HTTP/1.1 side, on h11: `CONNECT host:port` (200, then a byte tunnel) and
absolute-URI requests (`GET http://host/path`), forwarded in origin form.

One request per connection: the answer carries `Connection: close`, and so does the
request sent upstream. A Host header that disagrees with the target is a 400; a
refusal is a 403 whose short text body names the destination and the rule.
"""

from __future__ import annotations

import urllib.parse

import h11
import trio

from ._call import BUFFER, Call, Opened, Refused, relay
from ._requests import BadRequest, host_agrees, split_authority

# Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own: never passed on.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"proxy-authorization",
        b"proxy-authenticate",
        b"te",
        b"trailer",
        b"upgrade",
    }
)
_STATUS_FOR = {"rules": 403, "resolve": 502, "unreachable": 502, "refused": 502, "timeout": 504}
# h11's limit on a request or response head, in bytes.
MAX_HEAD = 16384

Headers = list[tuple[bytes, bytes]]


def _forwarded_headers(headers: Headers, *, drop: frozenset[bytes] = frozenset()) -> Headers:
    listed = {
        token.strip().lower()
        for name, value in headers
        if name == b"connection"
        for token in value.split(b",")
    }
    banned = HOP_BY_HOP | listed | drop
    return [(name, value) for name, value in headers if name not in banned]


async def _next_event(conn: h11.Connection, stream: trio.abc.Stream) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(bytes(await stream.receive_some(BUFFER)))


async def _answer(
    conn: h11.Connection, stream: trio.abc.Stream, status: int, text: str, *, head: bool = False
) -> None:
    """A short plain-text answer, then the connection closes."""
    if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return
    body = text.encode("utf-8", errors="backslashreplace") + b"\n"
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    data = conn.send(h11.Response(status_code=status, headers=headers)) or b""
    if not head:
        data += conn.send(h11.Data(data=body)) or b""
    data += conn.send(h11.EndOfMessage()) or b""
    await stream.send_all(data)


def _refusal_text(outcome: Refused) -> str:
    decision = outcome.decision
    where = f"{decision.host}:{decision.port}"
    rule = f" (rule: {decision.rule})" if decision.rule and not decision.allowed else ""
    if outcome.why == "rules":
        return f"stockade: network access to {where} denied{rule}: {decision.reason}"
    return f"stockade: {where} could not be reached: {decision.reason}"


async def serve_http(call: Call, stream: trio.abc.Stream, first: bytes) -> None:
    """Serve one HTTP connection whose first bytes are `first`: one request."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    conn.receive_data(first)
    request = None
    with trio.move_on_after(call.handshake_timeout):
        try:
            event = await _next_event(conn, stream)
        except h11.RemoteProtocolError as error:
            await _answer(
                conn, stream, error.error_status_hint, f"stockade: invalid request: {error}"
            )
            return
        if not isinstance(event, h11.Request):
            return
        request = event
    if request is None:
        await _answer(conn, stream, 408, "stockade: the request's head took too long")
        return
    head = request.method == b"HEAD"
    try:
        target = request.target.decode("ascii")
        if request.method == b"CONNECT":
            host, port = split_authority(target, None)
            host_agrees(request.headers, host, port, port)
        else:
            parts = urllib.parse.urlsplit(target)
            if parts.scheme != "http" or not parts.netloc:
                raise BadRequest(
                    f"{target!r}: this is a proxy; send `CONNECT host:port` (for https and "
                    "anything else) or an absolute http:// URI"
                )
            host, port = split_authority(parts.netloc, 80)
            host_agrees(request.headers, host, port, 80)
    except (BadRequest, UnicodeDecodeError) as error:
        await _answer(conn, stream, 400, f"stockade: invalid request: {error}", head=head)
        return
    if request.method == b"CONNECT":
        await _tunnel(call, conn, stream, host, port)
    else:
        origin = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        await _forward(call, conn, stream, request, host, port, origin.encode("ascii"))


async def _tunnel(
    call: Call, conn: h11.Connection, stream: trio.abc.Stream, host: str, port: int
) -> None:
    # The CONNECT request's (empty) body: h11 then pauses, holding what followed.
    event = await _next_event(conn, stream)
    if not isinstance(event, h11.EndOfMessage):
        await _answer(conn, stream, 400, "stockade: invalid request: a CONNECT with a body")
        return
    outcome = await call.open("connect", host, port)
    if not isinstance(outcome, Opened):
        await _answer(conn, stream, _STATUS_FOR[outcome.why], _refusal_text(outcome))
        return
    async with outcome.stream as upstream:
        response = h11.Response(status_code=200, headers=[], reason=b"Connection established")
        await stream.send_all(conn.send(response) or b"")
        leftover, _closed = conn.trailing_data
        if leftover:
            await upstream.send_all(leftover)
        await relay(stream, upstream)


async def _forward(
    call: Call,
    conn: h11.Connection,
    stream: trio.abc.Stream,
    request: h11.Request,
    host: str,
    port: int,
    origin: bytes,
) -> None:
    head = request.method == b"HEAD"
    outcome = await call.open("http", host, port)
    if not isinstance(outcome, Opened):
        await _answer(conn, stream, _STATUS_FOR[outcome.why], _refusal_text(outcome), head=head)
        return
    upstream_conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    headers = [*_forwarded_headers(list(request.headers)), (b"connection", b"close")]
    async with outcome.stream as upstream:
        sent = upstream_conn.send(
            h11.Request(method=request.method, target=origin, headers=headers)
        )
        await upstream.send_all(sent or b"")

        async def request_body() -> None:
            while True:
                event = await _next_event(conn, stream)
                if isinstance(event, h11.Data):
                    await upstream.send_all(upstream_conn.send(event) or b"")
                elif isinstance(event, h11.EndOfMessage):
                    await upstream.send_all(upstream_conn.send(h11.EndOfMessage()) or b"")
                    return
                else:
                    return

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(request_body)
                await _relay_response(conn, stream, upstream_conn, upstream)
                nursery.cancel_scope.cancel()
        except* (h11.ProtocolError, trio.BrokenResourceError, OSError):
            await _answer(
                conn, stream, 502, f"stockade: {host}:{port} sent no valid answer", head=head
            )


async def _relay_response(
    conn: h11.Connection,
    stream: trio.abc.Stream,
    upstream_conn: h11.Connection,
    upstream: trio.abc.Stream,
) -> None:
    while True:
        event = await _next_event(upstream_conn, upstream)
        if isinstance(event, h11.InformationalResponse):
            if event.status_code == 100:
                sent = conn.send(h11.InformationalResponse(status_code=100, headers=[]))
                await stream.send_all(sent or b"")
        elif isinstance(event, h11.Response):
            headers = _forwarded_headers(
                list(event.headers), drop=frozenset({b"transfer-encoding"})
            )
            response = h11.Response(
                status_code=event.status_code,
                headers=[*headers, (b"connection", b"close")],
                reason=event.reason,
            )
            await stream.send_all(conn.send(response) or b"")
        elif isinstance(event, h11.Data):
            await stream.send_all(conn.send(h11.Data(data=event.data)) or b"")
        elif isinstance(event, h11.EndOfMessage):
            await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
            return
        else:
            raise h11.RemoteProtocolError("the upstream closed before its answer ended")

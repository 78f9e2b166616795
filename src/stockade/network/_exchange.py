"""HTTP/1.1 exchanges the proxy relays, on h11: one request forwarded and its answer
relayed (bodies streamed, a request body watched for placeholders), and the request
loop of a connection to a ruled host, each request judged and reported first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import h11
import trio

from ._broker import Broker, RequestRecord
from ._call import BUFFER, Call
from ._credentials import PlaceholderMisplaced, PlaceholderScanner
from ._requests import (
    Carried,
    Forward,
    Headers,
    answer_secrets,
    judge_request,
    misplaced_record,
    placeholders_held,
    record_path,
    scrubbed_record,
)
from ._scrub import AnswerScrub, ScrubError, request_headers

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
# h11's limit on a request or response head, in bytes.
MAX_HEAD = 16384


def forwarded_headers(headers: Headers, *, drop: frozenset[bytes] = frozenset()) -> Headers:
    """`headers` (as h11 read them) without the hop-by-hop ones (and those `Connection`
    names) or `drop`, framed as h11 read the body: a `Content-Length` beside
    `Transfer-Encoding: chunked` goes (h11 reads chunked, and a peer reading the length
    instead would take the rest of the body for a message nobody judged: smuggling)."""
    listed = {
        token.strip().lower()
        for name, value in headers
        if name == b"connection"
        for token in value.split(b",")
    }
    banned = HOP_BY_HOP | listed | drop
    if any(name == b"transfer-encoding" for name, _value in headers):
        banned |= {b"content-length"}
    return [(name, value) for name, value in headers if name not in banned]


async def next_event(conn: h11.Connection, stream: trio.abc.Stream) -> object:
    """h11's next event on `conn`, reading `stream` as it needs."""
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(bytes(await stream.receive_some(BUFFER)))


async def answer(
    conn: h11.Connection, stream: trio.abc.Stream, status: int, text: str, *, head: bool = False
) -> None:
    """A short plain-text answer, then the connection closes (nothing when an answer
    has begun already)."""
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


def _ends_connection(response: h11.Response) -> bool:
    """Whether the origin closes its connection after this answer."""
    if response.http_version != b"1.1":
        return True
    return any(
        token.strip().lower() == b"close"
        for name, value in response.headers
        if name == b"connection"
        for token in value.split(b",")
    )


async def relay_response(
    conn: h11.Connection,
    stream: trio.abc.Stream,
    upstream_conn: h11.Connection,
    upstream: trio.abc.Stream,
    *,
    close: bool = True,
    scrub: AnswerScrub | None = None,
    head: bool = False,
    before_end: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Relay the origin's answer to the client (a 100 Continue, then the response),
    re-framed by h11; with `close`, or when the origin ends its connection after it,
    the answer says `Connection: close`. With `scrub`, the answer's reason, headers and
    body are scrubbed of credentials' values (ScrubError when it cannot be read), and
    `before_end` is awaited before the client is told the answer ended."""
    while True:
        event = await next_event(upstream_conn, upstream)
        if isinstance(event, h11.InformationalResponse):
            if event.status_code == 100:
                sent = conn.send(h11.InformationalResponse(status_code=100, headers=[]))
                await stream.send_all(sent or b"")
        elif isinstance(event, h11.Response):
            headers = forwarded_headers(list(event.headers), drop=frozenset({b"transfer-encoding"}))
            reason = event.reason
            if scrub is not None:
                headers = scrub.head(event.status_code, headers, head_request=head)
                reason = scrub.reason(reason)
            if close or _ends_connection(event):
                headers.append((b"connection", b"close"))
            response = h11.Response(status_code=event.status_code, headers=headers, reason=reason)
            await stream.send_all(conn.send(response) or b"")
        elif isinstance(event, h11.Data):
            pieces = [event.data] if scrub is None else scrub.body(bytes(event.data))
            for piece in pieces:
                await stream.send_all(conn.send(h11.Data(data=piece)) or b"")
        elif isinstance(event, h11.EndOfMessage):
            if scrub is not None:
                rest = scrub.end()
                if rest:
                    await stream.send_all(conn.send(h11.Data(data=rest)) or b"")
            if before_end is not None:
                await before_end()
            await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
            return
        else:
            raise h11.RemoteProtocolError("the upstream closed before its answer ended")


async def exchange(
    call: Call,
    conn: h11.Connection,
    client: trio.abc.Stream,
    upstream_conn: h11.Connection,
    upstream: trio.abc.Stream,
    forward: Forward,
    *,
    host: str,
    port: int,
    carried: Carried,
    close: bool,
    scanner: PlaceholderScanner | None = None,
    scrub: AnswerScrub | None = None,
) -> bool:
    """Send `forward` upstream, then stream the client's request body after it (each
    chunk shown to `scanner` before it goes: a placeholder cuts the request, reported,
    with a 403 when the answer has not begun) while the origin's answer is relayed
    back (through `scrub`: what it replaced is reported before the answer ends; an
    answer it cannot read is a 502, or cut once begun, reported). True when both
    connections may carry another request."""
    head = forward.method == b"HEAD"
    request = h11.Request(method=forward.method, target=forward.target, headers=forward.headers)
    found: list[PlaceholderMisplaced] = []
    method = forward.method.decode("ascii", "backslashreplace")
    path = record_path(forward.target.decode("ascii", "backslashreplace"))
    reported = False

    async def report_scrubbed() -> None:
        nonlocal reported
        if scrub is not None and scrub.count and not reported:
            reported = True
            record = scrubbed_record(call.call_id, method, host, port, path, scrub.found, carried)
            await call.report_refusal(record)

    async def request_body(done: trio.CancelScope) -> None:
        while True:
            event = await next_event(conn, client)
            if isinstance(event, h11.Data):
                if scanner is not None and (seen := scanner.feed(bytes(event.data))):
                    found.extend(seen)
                    done.cancel()
                    return
                await upstream.send_all(upstream_conn.send(event) or b"")
            elif isinstance(event, h11.EndOfMessage):
                await upstream.send_all(upstream_conn.send(h11.EndOfMessage()) or b"")
                return
            else:
                return

    failed = False
    unreadable: str | None = None
    try:
        await upstream.send_all(upstream_conn.send(request) or b"")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(request_body, nursery.cancel_scope)
            await relay_response(
                conn,
                client,
                upstream_conn,
                upstream,
                close=close,
                scrub=scrub,
                head=head,
                before_end=report_scrubbed,
            )
            nursery.cancel_scope.cancel()
    except* ScrubError as group:
        unreadable = str(group.exceptions[0])
    except* (h11.ProtocolError, trio.BrokenResourceError, OSError):
        failed = True
    await report_scrubbed()  # an answer cut after values were replaced
    if unreadable is not None:
        begun = conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE)
        reason = f"the answer of {host}:{port} was cut: {unreadable}" if begun else unreadable
        record = RequestRecord(
            call_id=call.call_id,
            method=method,
            host=host,
            port=port,
            path=path,
            allowed=False,
            reason=reason,
            protocol=carried,
        )
        await call.report_refusal(record)
        await answer(conn, client, 502, f"stockade: {unreadable}", head=head)
        return False
    if found:
        record = misplaced_record(
            call.call_id, method, host, port, found, path=path, carried=carried, cut=True
        )
        await call.report_refusal(record)
        await answer(conn, client, 403, f"stockade: {record.reason}", head=head)
        return False
    if failed:
        await answer(conn, client, 502, f"stockade: {host}:{port} sent no valid answer", head=head)
        return False
    return all(
        state is h11.DONE
        for state in (
            conn.our_state,
            conn.their_state,
            upstream_conn.our_state,
            upstream_conn.their_state,
        )
    )


async def judge_and_exchange(
    call: Call,
    broker: Broker,
    conn: h11.Connection,
    client: trio.abc.Stream,
    request: h11.Request,
    upstream_conn: h11.Connection,
    upstream: trio.abc.Stream,
    *,
    host: str,
    port: int,
    carried: Carried,
    close: bool,
) -> bool:
    """Judge one request to the ruled `host`, report it, then refuse it (403) or relay
    it (`exchange`). True when both connections may carry another request."""
    head = request.method == b"HEAD"
    headers = forwarded_headers(list(request.headers))
    judged = judge_request(
        call.call_id, broker, request.method, request.target, headers, host, port, carried
    )
    try:
        await call.report_request(judged.record)
    except Exception:  # the log is not complete without it: refused
        text = f"stockade: the request to {host} could not be recorded, so it was refused"
        await answer(conn, client, 403, text, head=head)
        return False
    if judged.forward is None:
        await answer(conn, client, 403, judged.refusal or "stockade: refused", head=head)
        return False
    forward = judged.forward
    secrets = answer_secrets(broker, host)
    if secrets:
        forward = Forward(forward.method, forward.target, request_headers(forward.headers))
    if close:
        headers = [*forward.headers, (b"connection", b"close")]
        forward = Forward(forward.method, forward.target, headers)
    held = placeholders_held(broker.credentials)
    return await exchange(
        call,
        conn,
        client,
        upstream_conn,
        upstream,
        forward,
        host=host,
        port=port,
        carried=carried,
        close=close,
        scanner=PlaceholderScanner(host, "the request body", held) if held else None,
        scrub=AnswerScrub(secrets, host) if secrets else None,
    )


async def _next_request(
    call: Call, conn: h11.Connection, client: trio.abc.Stream, upstream: trio.abc.Stream
) -> h11.Request | None:
    """The client's next request on a kept-alive connection; None when the client
    closes, says nothing for `handshake_timeout`, or sends what is not HTTP/1.1, or
    when the origin closes its side meanwhile (the client then sees its connection
    close, as it would have talking to the origin itself)."""
    request = None
    async with trio.open_nursery() as nursery:

        async def watch_upstream() -> None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                await upstream.receive_some(BUFFER)  # an end, or bytes nobody asked for
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch_upstream)
        with trio.move_on_after(call.handshake_timeout):
            try:
                event = await next_event(conn, client)
            except h11.RemoteProtocolError as error:
                text = f"stockade: invalid request: {error}"
                await answer(conn, client, error.error_status_hint, text)
                event = None
            if isinstance(event, h11.Request):
                request = event
        nursery.cancel_scope.cancel()
    return request


async def serve_ruled(
    call: Call,
    broker: Broker,
    client: trio.abc.Stream,
    upstream: trio.abc.Stream,
    host: str,
    port: int,
    carried: Carried,
) -> None:
    """Serve the requests a client sends to the ruled `host` over one connection
    (terminated TLS, or plain http), one at a time, each judged and reported before
    anything of it goes upstream; the connection is kept alive between them while both
    sides allow it, and closed after a refusal."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    upstream_conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    while True:
        request = await _next_request(call, conn, client, upstream)
        if request is None:
            return
        again = await judge_and_exchange(
            call,
            broker,
            conn,
            client,
            request,
            upstream_conn,
            upstream,
            host=host,
            port=port,
            carried=carried,
            close=False,
        )
        if not again:
            return
        conn.start_next_cycle()
        upstream_conn.start_next_cycle()

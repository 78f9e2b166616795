"""The proxy's HTTP/1.1 side, on h11: `CONNECT host:port` (200, then a byte tunnel, or
the TLS of a ruled host ended and its requests judged) and absolute-URI requests (`GET
http://host/path`), forwarded in origin form (judged first when the host is ruled).

One absolute-URI request per connection: the answer carries `Connection: close`, and
so does the request sent upstream. A Host header that disagrees with the target is a
400; a refusal is a 403 whose short text body names the destination and the rule.
"""

from __future__ import annotations

import urllib.parse

import attrs
import h11
import trio

from ._call import Call, Opened, Refused, relay
from ._credentials import PlaceholderScanner
from ._exchange import (
    MAX_HEAD,
    answer,
    exchange,
    forwarded_headers,
    judge_and_exchange,
    next_event,
)
from ._requests import (
    BadRequest,
    Forward,
    host_agrees,
    misplaced_record,
    placeholders_held,
    record_path,
    ruled_name,
    scan_unruled,
    split_authority,
)
from ._terminate import reached_otherwise, terminate, tunnel_watch

_STATUS_FOR = {"rules": 403, "resolve": 502, "unreachable": 502, "refused": 502, "timeout": 504}


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
            event = await next_event(conn, stream)
        except h11.RemoteProtocolError as error:
            await answer(
                conn, stream, error.error_status_hint, f"stockade: invalid request: {error}"
            )
            return
        if not isinstance(event, h11.Request):
            return
        request = event
    if request is None:
        await answer(conn, stream, 408, "stockade: the request's head took too long")
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
        await answer(conn, stream, 400, f"stockade: invalid request: {error}", head=head)
        return
    if request.method == b"CONNECT":
        await _tunnel(call, conn, stream, host, port)
    else:
        origin = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        await _forward(call, conn, stream, request, host, port, origin.encode("ascii"))


async def _tunnel(
    call: Call, conn: h11.Connection, stream: trio.abc.Stream, host: str, port: int
) -> None:
    # The CONNECT request's (empty) body: h11 then pauses, holding what followed. A
    # body announced and never sent is not waited for past the handshake timeout.
    event = None
    with trio.move_on_after(call.handshake_timeout):
        try:
            event = await next_event(conn, stream)
        except h11.RemoteProtocolError:
            event = None
    if event is None:
        await answer(conn, stream, 408, "stockade: the CONNECT request's body never came")
        return
    if not isinstance(event, h11.EndOfMessage):
        await answer(conn, stream, 400, "stockade: invalid request: a CONNECT with a body")
        return
    outcome = await call.open("connect", host, port)
    if not isinstance(outcome, Opened):
        await answer(conn, stream, _STATUS_FOR[outcome.why], _refusal_text(outcome))
        return
    async with outcome.stream as upstream:
        response = h11.Response(status_code=200, headers=[], reason=b"Connection established")
        await stream.send_all(conn.send(response) or b"")
        leftover, _closed = conn.trailing_data
        ruled = call.terminates(host)
        if ruled is not None:
            await terminate(call, stream, bytes(leftover), upstream, ruled, port)
            return
        cut = reached_otherwise(call, host, port, outcome.decision.address)
        if cut is not None:
            await call.report_refusal(cut)
            return
        watch = tunnel_watch(call, host, port)
        if leftover:
            if watch is not None and not await watch(bytes(leftover)):
                return
            await upstream.send_all(leftover)
        await relay(stream, upstream, watch)


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
        await answer(conn, stream, _STATUS_FOR[outcome.why], _refusal_text(outcome), head=head)
        return
    upstream_conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    async with outcome.stream as upstream:
        broker = call.broker
        ruled = call.terminates(host)
        if broker is not None and ruled is not None:
            await judge_and_exchange(
                call,
                broker,
                conn,
                stream,
                request,
                upstream_conn,
                upstream,
                host=ruled,
                port=port,
                carried="http",
                close=True,
            )
            return
        # A ruled address reached by a name no rule names (the rules name the address,
        # or another name for it): refused, as a tunnel to it is cut, since the request
        # would reach the ruled host unjudged.
        cut = reached_otherwise(
            call, host, port, outcome.decision.address, what="the request was refused"
        )
        if cut is not None:
            method = request.method.decode("ascii", "backslashreplace")
            record = attrs.evolve(
                cut, method=method, path=record_path(origin.decode("ascii")), protocol="http"
            )
            await call.report_refusal(record)
            await answer(conn, stream, 403, f"stockade: {record.reason}", head=head)
            return
        headers = [*forwarded_headers(list(request.headers)), (b"connection", b"close")]
        held = placeholders_held(broker.credentials) if broker is not None else ()
        scanner = None
        if broker is not None and held:
            found = scan_unruled(host, request.target, request.headers, broker)
            if found:
                method = request.method.decode("ascii", "backslashreplace")
                path = record_path(origin.decode("ascii"))
                shown = ruled_name(host) or host
                record = misplaced_record(
                    call.call_id, method, shown, port, found, path=path, carried="http"
                )
                await call.report_refusal(record)
                await answer(conn, stream, 403, f"stockade: {record.reason}", head=head)
                return
            scanner = PlaceholderScanner(host, "the request body", held)
        await exchange(
            call,
            conn,
            stream,
            upstream_conn,
            upstream,
            Forward(request.method, origin, headers),
            host=host,
            port=port,
            carried="http",
            close=True,
            scanner=scanner,
        )

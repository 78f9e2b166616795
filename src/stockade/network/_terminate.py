"""What the proxy does inside a tunnel (issue 41): for a ruled host it ends the client's
TLS with a leaf the harness's CA minted for that host, opens and verifies the origin's,
then judges the requests between them; every other tunnel stays blind, its client's
bytes watched for placeholders.
"""

from __future__ import annotations

import contextlib
import ssl

import attrs
import h11
import trio

from ._authority import CertificateRefused
from ._broker import Broker, RequestRecord
from ._call import BUFFER, Call, Watch
from ._client_hello import NO_APPLICATION_PROTOCOL, HelloReader, HostLines
from ._credentials import PlaceholderScanner
from ._exchange import MAX_HEAD, answer, next_event, serve_ruled
from ._requests import (
    certificate_refused,
    connection_record,
    insists_on_http2,
    misplaced_record,
    placeholders_held,
    record_path,
    ruled_name,
)

# What OpenSSL names the alerts a client sends when it refuses a server's certificate.
_CERTIFICATE_ALERTS = ("CERTIFICATE", "UNKNOWN_CA", "ACCESS_DENIED")


class Prefixed(trio.abc.Stream):
    """`stream`, whose next received bytes are `prefix` (read before TLS began)."""

    def __init__(self, stream: trio.abc.Stream, prefix: bytes) -> None:
        self._stream = stream
        self._prefix = prefix

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        if not self._prefix:
            return await self._stream.receive_some(max_bytes)
        await trio.lowlevel.checkpoint()
        size = len(self._prefix) if max_bytes is None else max_bytes
        data, self._prefix = self._prefix[:size], self._prefix[size:]
        return data

    async def aclose(self) -> None:
        await self._stream.aclose()


def server_context(call: Call, broker: Broker, host: str) -> ssl.SSLContext:
    """The context presenting `host`'s leaf, made once per leaf (a renewed leaf gets a
    new one); CertificateRefused for a host the CA was not made for."""
    leaf = broker.authority.leaf_for(host)
    cached = call.contexts.get(host)
    if cached is not None and cached[0] is leaf:
        return cached[1]
    context = leaf.server_context()
    call.contexts[host] = (leaf, context)
    return context


def _client_failure(host: str, error: BaseException) -> str:
    cause = error.__cause__
    reason = str(getattr(cause, "reason", None) or "")
    if "ALERT" in reason and any(word in reason for word in _CERTIFICATE_ALERTS):
        return certificate_refused(host, alert=True)
    # A client gone mid-handshake: OpenSSL 3's builds (Debian 12's Python 3.11.2) raise
    # SSLZeroReturnError where others raise SSLEOFError.
    gone = (ssl.SSLEOFError, ssl.SSLSyscallError, ssl.SSLZeroReturnError)
    if cause is None or isinstance(cause, gone):
        return certificate_refused(host, alert=False)
    return f"the TLS handshake with the client for {host} failed: {cause}"


def _upstream_failure(host: str, port: int, error: BaseException) -> str:
    cause = error.__cause__
    if isinstance(cause, ssl.SSLCertVerificationError):
        return (
            f"{host}:{port}'s certificate is not trusted: {cause.verify_message} (origins "
            "are checked against the system's CA store, or the configured upstream CA)"
        )
    return f"the TLS handshake with {host}:{port} failed: {cause or error}"


async def _handshakes(
    call: Call,
    client: trio.SSLStream[Prefixed],
    upstream: trio.SSLStream[trio.abc.Stream],
    host: str,
    port: int,
) -> tuple[str | None, str | None]:
    """Both TLS handshakes at once, each bounded by `handshake_timeout`: why the
    client's failed (its failure stops the origin's too), why the origin's failed."""
    failed: dict[str, str] = {}
    done: set[str] = set()
    with trio.move_on_after(call.handshake_timeout):
        async with trio.open_nursery() as nursery:

            async def client_side() -> None:
                try:
                    await client.do_handshake()
                except trio.BrokenResourceError as error:
                    failed["client"] = _client_failure(host, error)
                    nursery.cancel_scope.cancel()
                done.add("client")

            async def upstream_side() -> None:
                try:
                    await upstream.do_handshake()
                except trio.BrokenResourceError as error:
                    failed["upstream"] = _upstream_failure(host, port, error)
                done.add("upstream")

            nursery.start_soon(client_side)
            nursery.start_soon(upstream_side)
    took = f"{call.handshake_timeout:g} s"
    if "client" not in done:
        failed.setdefault(
            "client", f"the client did not finish its TLS handshake for {host} in {took}"
        )
    if "upstream" not in done and "client" not in failed:
        failed["upstream"] = f"{host}:{port} did not finish its TLS handshake in {took}"
    return failed.get("client"), failed.get("upstream")


async def _refuse_first(
    call: Call, client: trio.abc.Stream, host: str, port: int, reason: str
) -> None:
    """The origin's TLS failed: the client's first request is answered 502 with the
    reason, and reported (a client that sends none: the connection is)."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    request = None
    with trio.move_on_after(call.handshake_timeout):
        try:
            event = await next_event(conn, client)
        except (h11.RemoteProtocolError, trio.BrokenResourceError):
            event = None
        if isinstance(event, h11.Request):
            request = event
    if request is None:
        await call.report_request(connection_record(call.call_id, host, port, reason))
        return
    method = request.method.decode("ascii", "backslashreplace").upper()
    target = request.target.decode("ascii", "backslashreplace")
    record = RequestRecord(
        call_id=call.call_id,
        method=method,
        host=host,
        port=port,
        path=record_path(target),
        allowed=False,
        reason=reason,
    )
    await call.report_request(record)
    await answer(conn, client, 502, f"stockade: {reason}", head=method == "HEAD")


async def _close(stream: trio.abc.Stream) -> None:
    """Close `stream`, saying so in TLS where it can."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        await stream.aclose()


async def terminate(
    call: Call,
    client: trio.abc.Stream,
    rest: bytes,
    upstream: trio.abc.Stream,
    host: str,
    port: int,
) -> None:
    """Serve a tunnel to the ruled `host` (normalised) whose upstream is connected, its
    client's first bytes being `rest`: TLS ended and begun again, or plain http, the
    requests judged either way; what goes wrong before a request is reported."""
    broker = call.broker
    assert broker is not None
    first = bytearray(rest)
    # Read as it comes, each byte looked at once (re-reading all of it on each read
    # let a client trickling empty records cost the proxy quadratic time).
    reader = HelloReader()
    hello = reader.feed(rest)
    with trio.move_on_after(call.handshake_timeout) as waited:
        while hello is None:
            more = await client.receive_some(BUFFER)
            if not more:
                return  # the client gave up before its TLS began
            first += more
            hello = reader.feed(bytes(more))
    if hello is None:
        took = f"{call.handshake_timeout:g} s"
        if first:
            reason = f"the client did not finish its TLS handshake for {host} in {took}"
        else:
            reason = f"the client began no TLS handshake for {host} in {took}"
        if waited.cancelled_caught:
            await call.report_request(connection_record(call.call_id, host, port, reason))
        return
    if hello.kind == "malformed":
        reason = f"the client's TLS for {host} began with {hello.problem}, which TLS forbids"
        await call.report_request(connection_record(call.call_id, host, port, reason))
        return
    stream = Prefixed(client, bytes(first))
    if hello.kind == "plain":
        await serve_ruled(call, broker, stream, upstream, host, port, "http")
        return
    if hello.refuses_http1:
        reason = insists_on_http2(host, hello.alpn or ())
        await call.report_request(connection_record(call.call_id, host, port, reason))
        await client.send_all(NO_APPLICATION_PROTOCOL)
        return
    try:
        context = server_context(call, broker, host)
    except CertificateRefused as error:  # the broker terminates only hosts its CA names
        await call.report_request(connection_record(call.call_id, host, port, str(error)))
        return
    tls_client = trio.SSLStream(stream, context, server_side=True, https_compatible=True)
    tls_upstream = trio.SSLStream(
        upstream, broker.upstream, server_hostname=host, https_compatible=True
    )
    try:
        client_failed, upstream_failed = await _handshakes(
            call, tls_client, tls_upstream, host, port
        )
        if client_failed is not None:
            await call.report_request(connection_record(call.call_id, host, port, client_failed))
        elif upstream_failed is not None:
            await _refuse_first(call, tls_client, host, port, upstream_failed)
        else:
            await serve_ruled(call, broker, tls_client, tls_upstream, host, port, "https")
    finally:
        # Bounded: a client that reads nothing more is not waited for (a cancelled
        # close still closes).
        with trio.move_on_after(call.handshake_timeout):
            await _close(tls_client)
            await _close(tls_upstream)


def _ruled_by(broker: Broker, name: str) -> str:
    """What rules `name`, for a reason: request rules, or a credential only."""
    if any(rule.host == name for rule in broker.request_rules):
        return "a host with request rules"
    return "a host with a credential rule"


def _named_ruled(call: Call, named: str | None) -> str | None:
    """The ruled host `named` (as SNI or a Host header gives it: any case, a trailing
    dot) is, or None."""
    if named is None or call.broker is None:
        return None
    return call.terminates(named)


def reached_otherwise(
    call: Call, host: str, port: int, address: str | None, *, what: str = "the tunnel was cut"
) -> RequestRecord | None:
    """The record cutting a tunnel (or refusing a plain-http request: `what` says
    which) to `host`, a host no rule names, that was connected to `address`, a ruled
    address (reached by another name); None otherwise."""
    ruled = _named_ruled(call, address)
    if ruled is None or call.broker is None:
        return None
    done, _, verb = what.rpartition(" was ")
    reason = (
        f"{done} to {host}:{port} was {verb}: it reaches {ruled}, "
        f"{_ruled_by(call.broker, ruled)}; reach it by its address"
    )
    return connection_record(call.call_id, ruled_name(host) or host, port, reason)


def tunnel_watch(call: Call, host: str, port: int) -> Watch | None:
    """What watches a blind tunnel's client bytes (a host no rule names): a
    ClientHello whose SNI names a ruled host, or a plain-text request whose Host
    header or absolute target does (the ruled host reached by another name or its
    address, where no rule would judge it), cuts the tunnel, reported; so does a
    placeholder seen. None without a broker (nothing is ruled)."""
    broker = call.broker
    if broker is None:
        return None
    held = placeholders_held(broker.credentials)
    scanner = PlaceholderScanner(host, "a blind tunnel", held) if held else None
    shown = ruled_name(host) or host
    first = bytearray()
    kind: list[str] = []  # what the first bytes were, once known
    reader = HelloReader()
    lines = HostLines()

    def named_ruled(chunk: bytes) -> tuple[str, str] | None:
        """(the ruled host named, how), or (why the bytes cannot be read for one,
        "unreadable"), once the bytes so far say."""
        if kind == ["plain"]:
            names = lines.feed(chunk)
        elif kind:
            return None
        else:
            first.extend(chunk)
            hello = reader.feed(chunk)
            if hello is None:
                return None
            kind.append(hello.kind)
            if hello.kind != "plain":
                first.clear()  # read: nothing of it is needed any more
            if hello.kind == "tls":
                ruled = _named_ruled(call, hello.server_name)
                return None if ruled is None else (ruled, "SNI")
            if hello.kind == "malformed":
                return f"its TLS began with {hello.problem}, which TLS forbids", "unreadable"
            if hello.kind == "unknown":
                # A hello past HELLO_LIMIT, or another record amid it: no client sends
                # one, and an origin may still read a name in it.
                return "its TLS began with a ClientHello the proxy cannot read", "unreadable"
            names = lines.feed(bytes(first)) if hello.kind == "plain" else []
            first.clear()
        if lines.refused is not None:
            return lines.refused, "unreadable"
        for named in names:
            ruled = _named_ruled(call, named)
            if ruled is not None:
                return ruled, "Host"
        return None

    async def watch(chunk: bytes) -> bool:
        named = named_ruled(chunk)
        if named is not None:
            ruled, how = named
            what = "SNI names" if how == "SNI" else "a request's Host names"
            reason = (
                f"the tunnel to {shown}:{port} was cut: {what} {ruled}, "
                f"{_ruled_by(broker, ruled)}; reach it by its name"
            )
            if how == "unreadable":
                # It could hide the host it names from the watch, not from the origin.
                reason = (
                    f"the tunnel to {shown}:{port} was cut: {ruled}, so the proxy cannot "
                    "tell whether it names a ruled host"
                )
            record = connection_record(call.call_id, shown, port, reason)
            if kind == ["plain"]:
                record = attrs.evolve(record, protocol="http")
            await call.report_refusal(record)
            return False
        found = scanner.feed(chunk) if scanner is not None else ()
        if not found:
            return True
        record = misplaced_record(call.call_id, "CONNECT", shown, port, found, cut=True)
        await call.report_refusal(record)
        return False

    return watch

"""What the terminating proxy's tests share: origins started in-process (HTTPS with a
`trustme` CA, and plain HTTP) that answer each request with what they received, the
proxy with a broker over them, and clients (h11 over CONNECT or SOCKS5, then TLS)."""

from __future__ import annotations

import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Sequence
from functools import partial

import attrs
import h11
import trio
import trustme
from socksio import (
    SOCKS5AuthMethod,
    SOCKS5AuthMethodsRequest,
    SOCKS5Command,
    SOCKS5CommandRequest,
    SOCKS5Connection,
    SOCKS5ReplyCode,
)

from stockade.network import (
    Broker,
    Decision,
    RequestRecord,
    Rules,
    make_broker,
    open_proxy,
    parse_credential_rules,
    parse_request_rules,
)

LOOPBACK = "127.0.0.1"
# Names the good origin's certificate holds; `wrong.test` and `bad.test` it does not.
ORIGIN_NAMES = ("api.test", "key.test", "rules.test", "free.test", "plain.test")
REAL_API = "real-api-value-0001"
REAL_KEY = "real-key-value-0002"
CREDENTIALS = parse_credential_rules(
    [
        # The placeholder form: the command holds API_TOKEN, a placeholder.
        {
            "host": "api.test",
            "header": "Authorization",
            "value_from": "REAL_API",
            "placeholder_env": "API_TOKEN",
        },
        # The header form: the proxy sets X-Api-Key itself.
        {"host": "key.test", "header": "X-Api-Key", "value_from": "REAL_KEY"},
    ]
)
REQUESTS = parse_request_rules(
    [
        {"host": "api.test", "methods": ["GET", "HEAD", "POST"], "paths": ["/repos/org/**"]},
        {"host": "rules.test", "methods": ["GET"], "paths": ["/ok/*"], "name": "read ok"},
        {"host": "wrong.test", "methods": ["GET"]},
        {"host": "bad.test", "methods": ["GET"]},
        {"host": "plain.test", "methods": ["GET"]},
    ]
)
ENVIRON = {"REAL_API": REAL_API, "REAL_KEY": REAL_KEY}


@attrs.define
class Seen:
    """One request an origin received, whole."""

    method: bytes
    target: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes
    connection: int

    def header(self, name: bytes) -> list[bytes]:
        return [value for key, value in self.headers if key == name]


@attrs.define
class Origin:
    """What one origin received: every request, every body chunk as it came."""

    port: int = 0
    requests: list[Seen] = attrs.field(factory=list)
    chunks: list[bytes] = attrs.field(factory=list)
    connections: int = 0

    def received(self) -> bytes:
        """Everything of every request it was sent: heads and bodies."""
        heads = b"".join(
            seen.method + seen.target + b"".join(k + v for k, v in seen.headers)
            for seen in self.requests
        )
        return heads + b"".join(self.chunks)


async def _serve_origin(origin: Origin, stream: trio.abc.Stream) -> None:
    """Answers each request (kept alive) with JSON of what it received; a target
    ending in `/close` is answered with `Connection: close`."""
    origin.connections += 1
    number = origin.connections
    conn = h11.Connection(h11.SERVER)
    async with stream:
        try:
            while True:
                request, body = None, b""
                while True:
                    event = conn.next_event()
                    if event is h11.NEED_DATA:
                        conn.receive_data(await stream.receive_some(65536))
                    elif isinstance(event, h11.Request):
                        request = event
                    elif isinstance(event, h11.Data):
                        body += event.data
                        origin.chunks.append(bytes(event.data))
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                assert request is not None
                seen = Seen(request.method, request.target, list(request.headers), body, number)
                origin.requests.append(seen)
                answer = json.dumps(
                    {
                        "method": request.method.decode(),
                        "target": request.target.decode(),
                        "headers": [[k.decode(), v.decode()] for k, v in request.headers],
                        "body": body.decode("latin-1"),
                    }
                ).encode()
                headers = [
                    ("content-type", "application/json"),
                    ("content-length", str(len(answer))),
                ]
                if request.target.endswith(b"/close"):
                    headers.append(("connection", "close"))
                data = conn.send(h11.Response(status_code=200, headers=headers)) or b""
                if request.method != b"HEAD":
                    data += conn.send(h11.Data(data=answer)) or b""
                data += conn.send(h11.EndOfMessage()) or b""
                await stream.send_all(data)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
            return


@attrs.define
class World:
    """The origins, their CA, and the names mapped to them."""

    origin_ca: trustme.CA
    origin_bundle: str
    https: Origin
    bad: Origin  # HTTPS, with a certificate from a CA the proxy does not trust
    plain: Origin  # plain HTTP
    names: dict[str, list[str]]

    def port_of(self, host: str) -> int:
        if host == "bad.test":
            return self.bad.port
        return self.https.port

    def broker(self, **rules: Sequence[object]) -> Broker:
        credentials = rules.get("credentials", CREDENTIALS)
        requests = rules.get("requests", REQUESTS)
        broker = make_broker(credentials, requests, ENVIRON, upstream_ca=self.origin_bundle)
        assert broker is not None
        return broker


async def start_world(nursery: trio.Nursery, directory: str) -> World:
    origin_ca = trustme.CA()
    bundle = f"{directory}/origin-ca.pem"
    origin_ca.cert_pem.write_to_path(bundle)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    origin_ca.issue_cert(*ORIGIN_NAMES, LOOPBACK).configure_cert(server)
    stranger = trustme.CA()
    bad_server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    stranger.issue_cert("bad.test").configure_cert(bad_server)
    https, bad, plain = Origin(), Origin(), Origin()
    for origin, context in ((https, server), (bad, bad_server), (plain, None)):
        handler = partial(_serve_origin, origin)
        if context is None:
            serve = partial(trio.serve_tcp, handler, 0, host=LOOPBACK)
        else:
            serve = partial(
                trio.serve_ssl_over_tcp,
                handler,
                0,
                context,
                host=LOOPBACK,
                https_compatible=True,
            )
        [listener] = await nursery.start(serve)
        if context is not None:
            listener = listener.transport_listener
        origin.port = listener.socket.getsockname()[1]
    names = {name: [LOOPBACK] for name in (*ORIGIN_NAMES, "wrong.test", "bad.test")}
    return World(origin_ca, bundle, https, bad, plain, names)


def resolver_of(names: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        if host not in names:
            raise OSError(f"no such test name {host!r}")
        return names[host]

    return resolve


@attrs.define
class Proxied:
    """A proxy running over the world: one call's endpoint, and what it reported."""

    path: str
    broker: Broker
    records: list[RequestRecord]
    decisions: list[Decision]


@contextlib.asynccontextmanager
async def proxied(
    world: World, broker: Broker, on_request=None, **options
) -> AsyncIterator[Proxied]:
    records: list[RequestRecord] = []
    decisions: list[Decision] = []
    async with (
        open_proxy(
            on_decision=decisions.append,
            resolver=resolver_of(world.names),
            broker=broker,
            on_request=on_request or records.append,
            **options,
        ) as proxy,
        proxy.open_call("call-41", Rules(allow=[LOOPBACK])) as endpoint,
    ):
        yield Proxied(endpoint.path, broker, records, decisions)


def client_context(
    broker: Broker | None = None,
    *,
    alpn: Sequence[str] = ("http/1.1",),
    trust: trustme.CA | None = None,
) -> ssl.SSLContext:
    """A client trusting the broker's CA (or `trust`'s, or the system's)."""
    if broker is not None:
        context = ssl.create_default_context(cadata=broker.authority.certificate_pem.decode())
    else:
        context = ssl.create_default_context()
        if trust is not None:
            trust.configure_trust(context)
    context.set_alpn_protocols(list(alpn))
    return context


async def read_head(stream: trio.abc.Stream) -> tuple[bytes, bytes]:
    """An HTTP answer's head (through the blank line) and what followed it."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = await stream.receive_some(65536)
        if not more:
            break
        data += more
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


async def open_connect(path: str, host: str, port: int) -> trio.abc.Stream:
    """A tunnel through the proxy by HTTP CONNECT (answered 200)."""
    stream = await trio.open_unix_socket(path)
    authority = f"{host}:{port}"
    await stream.send_all(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    head, rest = await read_head(stream)
    assert head.startswith(b"HTTP/1.1 200"), head
    assert rest == b""
    return stream


async def open_socks(path: str, host: str, port: int) -> trio.abc.Stream:
    """A tunnel through the proxy by SOCKS5 (succeeded)."""
    stream = await trio.open_unix_socket(path)
    client = SOCKS5Connection()
    client.send(SOCKS5AuthMethodsRequest([SOCKS5AuthMethod.NO_AUTH_REQUIRED]))
    await stream.send_all(client.data_to_send())
    client.receive_data(await stream.receive_some(2))
    client.send(SOCKS5CommandRequest.from_address(SOCKS5Command.CONNECT, (host, port)))
    await stream.send_all(client.data_to_send())
    reply = client.receive_data(await stream.receive_some(10))
    assert reply.reply_code == SOCKS5ReplyCode.SUCCEEDED
    return stream


async def open_tls(
    path: str, host: str, port: int, context: ssl.SSLContext, *, socks: bool = False
) -> trio.SSLStream[trio.abc.Stream]:
    raw = await (open_socks if socks else open_connect)(path, host, port)
    tls = trio.SSLStream(raw, context, server_hostname=host, https_compatible=True)
    try:
        await tls.do_handshake()
    except BaseException:
        await trio.aclose_forcefully(raw)
        raise
    return tls


@attrs.frozen
class Reply:
    status: int
    headers: dict[bytes, bytes]
    body: bytes

    def echoed(self) -> dict:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode()


class Client:
    """HTTP/1.1 requests on one connection, kept alive, written by h11."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.conn = h11.Connection(h11.CLIENT)

    async def request(
        self,
        method: str,
        target: str,
        host: str,
        headers: Sequence[tuple[str, str]] = (),
        body: Sequence[bytes] = (),
        between=None,
    ) -> Reply:
        """One request; its body in `body`'s chunks (`between(i)` awaited after
        chunk i is sent), then its answer."""
        if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
            self.conn.start_next_cycle()
        sent = [("host", host), *headers]
        if body:
            sent.append(("content-length", str(sum(map(len, body)))))
        await self.stream.send_all(
            self.conn.send(h11.Request(method=method, target=target, headers=sent)) or b""
        )
        for index, chunk in enumerate(body):
            await self.stream.send_all(self.conn.send(h11.Data(data=chunk)) or b"")
            if between is not None:
                await between(index)
        await self.stream.send_all(self.conn.send(h11.EndOfMessage()) or b"")
        return await self.answer()

    async def answer(self) -> Reply:
        received = b""
        response = None
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(await self.stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                response = event
            elif isinstance(event, h11.Data):
                received += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert response is not None
                return Reply(response.status_code, dict(response.headers), received)
            else:
                raise AssertionError(f"the proxy closed before its answer ended: {event}")


def client_hello(alpn: list[str] | None) -> bytes:
    """A real ClientHello, as Python's `ssl` writes it."""
    context = ssl.create_default_context()
    if alpn is not None:
        context.set_alpn_protocols(alpn)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="api.test")
    with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the server's answer
        tls.do_handshake()
    return outgoing.read()

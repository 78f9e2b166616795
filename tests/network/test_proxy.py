"""The network proxy (stockade.network.proxy) on real sockets, loopback only: an echo
server and an HTTP origin this test starts on 127.0.0.1, names mapped by an injected
resolver, clients written with h11 and socksio over the call's Unix socket."""

from __future__ import annotations

import os
import stat
from functools import partial

import attrs
import h11
import pytest
import trio
from socksio import (
    SOCKS5AType,
    SOCKS5AuthMethod,
    SOCKS5AuthMethodsRequest,
    SOCKS5Command,
    SOCKS5CommandRequest,
    SOCKS5Connection,
    SOCKS5ReplyCode,
)

from stockade.network import Decision, Rules, open_proxy
from stockade.network._socks import SocksError, read_request

LOOPBACK = "127.0.0.1"


@attrs.define
class Origin:
    """What the HTTP origin received."""

    port: int = 0
    requests: list[tuple[h11.Request, bytes]] = attrs.field(factory=list)
    connections: int = 0


async def _echo(stream: trio.SocketStream) -> None:
    async with stream:
        try:
            while data := await stream.receive_some(65536):
                await stream.send_all(data)
        except trio.BrokenResourceError:
            pass


async def _origin(origin: Origin, stream: trio.SocketStream) -> None:
    origin.connections += 1
    conn = h11.Connection(h11.SERVER)
    async with stream:
        request, body = None, b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
            else:
                return
        assert request is not None
        origin.requests.append((request, body))
        answer = b"origin saw " + body
        headers = [("content-length", str(len(answer))), ("x-origin", "yes")]
        data = conn.send(h11.Response(status_code=201, headers=headers))
        data += conn.send(h11.Data(data=answer)) + conn.send(h11.EndOfMessage())
        await stream.send_all(data)


@pytest.fixture
async def servers(nursery):
    """(echo port, Origin) on 127.0.0.1."""
    echo = (await nursery.start(partial(trio.serve_tcp, _echo, 0, host=LOOPBACK)))[0]
    origin = Origin()
    web = (
        await nursery.start(partial(trio.serve_tcp, partial(_origin, origin), 0, host=LOOPBACK))
    )[0]
    origin.port = web.socket.getsockname()[1]
    return echo.socket.getsockname()[1], origin


def resolver_of(names: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        if host not in names:
            raise OSError(f"no such test name {host!r}")
        return names[host]

    return resolve


NAMES = {
    "echo.test": [LOOPBACK],
    "web.test": [LOOPBACK],
    # A public name whose resolver answers a private address: DNS rebinding.
    "public.test": [LOOPBACK],
    "metadata.test": ["169.254.169.254", LOOPBACK],
    "mixed.test": ["10.0.0.1", LOOPBACK],
}


@attrs.frozen
class Reply:
    status: int
    headers: dict[bytes, bytes]
    body: bytes  # for a CONNECT answered 200: what came back through the tunnel


async def _ask(path, method, target, *, host=None, body=b"", tunnel=b"") -> Reply:
    """One request to the proxy, written by h11; for a CONNECT, `tunnel` follows the
    request in the same write and the echo of it is read back."""
    stream = await trio.open_unix_socket(path)
    async with stream:
        conn = h11.Connection(h11.CLIENT)
        if host is None:
            host = target if method == "CONNECT" else target.split("/")[2]
        headers = [("host", host)]
        if body:
            headers.append(("content-length", str(len(body))))
        data = conn.send(h11.Request(method=method, target=target, headers=headers))
        data += (conn.send(h11.Data(data=body)) if body else b"") + conn.send(h11.EndOfMessage())
        await stream.send_all(data + tunnel)
        received = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                response = event
                if method == "CONNECT" and event.status_code == 200:
                    echoed = conn.trailing_data[0]
                    while len(echoed) < len(tunnel):
                        echoed += await stream.receive_some(65536)
                    return Reply(200, dict(event.headers), bytes(echoed))
            elif isinstance(event, h11.Data):
                received += event.data
            else:
                assert isinstance(event, h11.EndOfMessage), event
                return Reply(response.status_code, dict(response.headers), received)


async def _socks(path: str, host: str, port: int, command=SOCKS5Command.CONNECT):
    """A socksio client: (reply code, echoed 'ping' or b'')."""
    stream = await trio.open_unix_socket(path)
    async with stream:
        client = SOCKS5Connection()
        client.send(SOCKS5AuthMethodsRequest([SOCKS5AuthMethod.NO_AUTH_REQUIRED]))
        await stream.send_all(client.data_to_send())
        auth = client.receive_data(await stream.receive_some(2))
        assert auth.method == SOCKS5AuthMethod.NO_AUTH_REQUIRED
        if "\x00" in host:  # socksio's encoder would not send this; the bytes are the same
            raw = host.encode()
            request = SOCKS5CommandRequest(command, SOCKS5AType.DOMAIN_NAME, raw, port)
        else:
            request = SOCKS5CommandRequest.from_address(command, (host, port))
        client.send(request)
        await stream.send_all(client.data_to_send())
        reply = client.receive_data(await stream.receive_some(10))
        if reply.reply_code != SOCKS5ReplyCode.SUCCEEDED:
            assert await stream.receive_some(10) == b""  # then closed
            return reply.reply_code, b""
        await stream.send_all(b"ping")
        echoed = b""
        while len(echoed) < 4:
            echoed += await stream.receive_some(65536)
        return reply.reply_code, echoed


def _decision(call_id, host, port, address, allowed, rule, protocol) -> dict:
    return {
        "call_id": call_id,
        "host": host,
        "port": port,
        "address": address,
        "allowed": allowed,
        "rule": rule,
        "protocol": protocol,
    }


def _fields(decision: Decision) -> dict:
    return {
        name: getattr(decision, name)
        for name in ("call_id", "host", "port", "address", "allowed", "rule", "protocol")
    }


async def test_connect_tunnels_an_allowed_destination_and_refuses_the_rest(servers):
    echo, _origin = servers
    decisions: list[Decision] = []
    rules = Rules(allow=[f"{LOOPBACK}:{echo}"], deny=["denied.test"])
    async with open_proxy(on_decision=decisions.append, resolver=resolver_of(NAMES)) as proxy:
        closed = trio.socket.socket()
        await closed.bind((LOOPBACK, 0))
        shut_port = closed.getsockname()[1]
        closed.close()  # nothing listens there now
        async with proxy.open_call("call-1", rules) as endpoint:
            # The tunnel's first bytes ride in the CONNECT's own write.
            ok = await _ask(endpoint.path, "CONNECT", f"echo.test:{echo}", tunnel=b"ping")
            assert (ok.status, ok.body) == (200, b"ping")
            denied = await _ask(endpoint.path, "CONNECT", f"denied.test:{echo}")
            wrong_port = await _ask(endpoint.path, "CONNECT", f"echo.test:{echo + 1}")
            mismatch = await _ask(
                endpoint.path, "CONNECT", f"echo.test:{echo}", host="evil.test", tunnel=b"x"
            )
        async with proxy.open_call("call-1b", Rules(allow=[LOOPBACK])) as endpoint:
            unreachable = await _ask(endpoint.path, "CONNECT", f"echo.test:{shut_port}")
    assert denied.status == 403
    body = denied.body.decode()
    assert f"network access to denied.test:{echo} denied (rule: denied.test)" in body
    assert wrong_port.status == 403
    assert "matches no allow entry" in wrong_port.body.decode()
    assert mismatch.status == 400
    assert b"Host header" in mismatch.body
    assert unreachable.status == 502
    assert b"could not be reached" in unreachable.body
    assert [_fields(d) for d in decisions] == [
        _decision("call-1", "echo.test", echo, LOOPBACK, True, f"{LOOPBACK}:{echo}", "connect"),
        _decision("call-1", "denied.test", echo, None, False, "denied.test", "connect"),
        _decision("call-1", "echo.test", echo + 1, None, False, None, "connect"),
        # The 400 was decided by no rule: no decision. Allowed but unreachable:
        _decision("call-1b", "echo.test", shut_port, None, True, LOOPBACK, "connect"),
    ]
    assert "no allowed address could be reached" in decisions[-1].reason


async def test_an_absolute_uri_is_forwarded_in_origin_form_with_its_body(servers):
    _echo_port, origin = servers
    decisions: list[Decision] = []

    async def record(decision: Decision) -> None:  # an async reporter is awaited
        await trio.lowlevel.checkpoint()
        decisions.append(decision)

    rules = Rules(allow=["web.test", LOOPBACK])
    async with (
        open_proxy(on_decision=record, resolver=resolver_of(NAMES)) as proxy,
        proxy.open_call("call-2", rules) as endpoint,
    ):
        url = f"http://web.test:{origin.port}/path/x?q=1"
        answer = await _ask(endpoint.path, "POST", url, body=b"the body")
        mismatch = await _ask(endpoint.path, "GET", url, host="other.test")
        big = bytes(range(256)) * 4096  # 1 MiB each way, streamed
        large = await _ask(endpoint.path, "PUT", f"http://web.test:{origin.port}/big", body=big)
        https = await _ask(endpoint.path, "GET", f"https://web.test:{origin.port}/")
        origin_form = await _ask(endpoint.path, "GET", "/", host="web.test")
    assert (answer.status, answer.body) == (201, b"origin saw the body")
    assert answer.headers[b"x-origin"] == b"yes"
    assert answer.headers[b"connection"] == b"close"
    assert (large.status, large.body) == (201, b"origin saw " + big)
    [(request, body), _big] = origin.requests  # the refused ones reached nothing
    assert (request.method, request.target, body) == (b"POST", b"/path/x?q=1", b"the body")
    headers = dict(request.headers)
    assert headers[b"host"] == f"web.test:{origin.port}".encode()
    assert headers[b"connection"] == b"close"
    assert (mismatch.status, https.status, origin_form.status) == (400, 400, 400)
    assert b"disagrees" in mismatch.body
    assert b"CONNECT" in https.body
    assert [_fields(d) for d in decisions] == [
        _decision("call-2", "web.test", origin.port, LOOPBACK, True, LOOPBACK, "http"),
    ] * 2


async def test_socks5_connects_by_name_and_refuses_nul_ipv6_and_other_commands(servers):
    echo, _origin = servers
    decisions: list[Decision] = []
    asked: list[tuple[str, int]] = []

    async def connector(address: str, port: int) -> trio.abc.Stream:
        # ::1 is reached on 127.0.0.1 (the host may have no IPv6); what was asked is kept.
        asked.append((address, port))
        return await trio.open_tcp_stream(LOOPBACK, port)

    allow_v4 = Rules(allow=[LOOPBACK])
    allow_v6 = Rules(allow=[f"[::1]:{echo}"])
    async with (
        open_proxy(
            on_decision=decisions.append, resolver=resolver_of(NAMES), connector=connector
        ) as proxy,
        proxy.open_call("v4", allow_v4) as v4,
        proxy.open_call("v6", allow_v6) as v6,
    ):
        assert await _socks(v4.path, "echo.test", echo) == (SOCKS5ReplyCode.SUCCEEDED, b"ping")
        nul = await _socks(v4.path, "evil.test\x00echo.test", echo)
        assert nul == (SOCKS5ReplyCode.CONNECTION_NOT_ALLOWED_BY_RULESET, b"")
        refused_v6 = await _socks(v4.path, "::1", echo)
        assert refused_v6 == (SOCKS5ReplyCode.CONNECTION_NOT_ALLOWED_BY_RULESET, b"")
        assert await _socks(v6.path, "::1", echo) == (SOCKS5ReplyCode.SUCCEEDED, b"ping")
        bind = await _socks(v4.path, "echo.test", echo, SOCKS5Command.BIND)
        assert bind == (SOCKS5ReplyCode.COMMAND_NOT_SUPPORTED, b"")
        unresolvable = await _socks(v4.path, "nowhere.test", echo)
        assert unresolvable == (SOCKS5ReplyCode.HOST_UNREACHABLE, b"")
    assert asked == [(LOOPBACK, echo), ("::1", echo)]
    assert [_fields(d) for d in decisions] == [
        _decision("v4", "echo.test", echo, LOOPBACK, True, LOOPBACK, "socks5"),
        _decision("v4", "evil.test\x00echo.test", echo, None, False, None, "socks5"),
        _decision("v4", "::1", echo, "::1", False, None, "socks5"),
        _decision("v6", "::1", echo, "::1", True, f"[::1]:{echo}", "socks5"),
        _decision("v4", "echo.test", echo, None, False, None, "socks5"),
        _decision("v4", "nowhere.test", echo, None, False, None, "socks5"),
    ]
    assert "not a valid host name" in decisions[1].reason
    assert "loopback" in decisions[2].reason
    assert "BIND is not supported" in decisions[4].reason
    assert "cannot resolve nowhere.test" in decisions[5].reason


async def test_a_public_name_resolving_to_a_private_address_is_refused(servers):
    echo, _origin = servers
    decisions: list[Decision] = []
    rules = Rules(allow=["public.test", "metadata.test", "mixed.test", "127.0.0.1"])
    async with (
        open_proxy(on_decision=decisions.append, resolver=resolver_of(NAMES)) as proxy,
        proxy.open_call("c", Rules(allow=["public.test", "*.test"])) as endpoint,
    ):
        rebound = await _ask(endpoint.path, "CONNECT", f"public.test:{echo}")
        socks = await _socks(endpoint.path, "metadata.test", echo)
        async with proxy.open_call("d", rules) as endpoint:
            # Refused addresses are skipped; the first that passes is the one used.
            mixed = await _ask(endpoint.path, "CONNECT", f"mixed.test:{echo}", tunnel=b"hi")
            # 169.254.169.254 refused, 127.0.0.1 allowed by its own entry.
            metadata = await _ask(endpoint.path, "CONNECT", f"metadata.test:{echo}", tunnel=b"m")
    assert rebound.status == 403
    assert b"loopback" in rebound.body
    assert socks == (SOCKS5ReplyCode.CONNECTION_NOT_ALLOWED_BY_RULESET, b"")
    assert ((mixed.status, mixed.body), (metadata.status, metadata.body)) == (
        (200, b"hi"),
        (200, b"m"),
    )
    assert [_fields(d) for d in decisions] == [
        _decision("c", "public.test", echo, LOOPBACK, False, None, "connect"),
        _decision("c", "metadata.test", echo, "169.254.169.254", False, None, "socks5"),
        _decision("d", "mixed.test", echo, LOOPBACK, True, LOOPBACK, "connect"),
        _decision("d", "metadata.test", echo, LOOPBACK, True, LOOPBACK, "connect"),
    ]
    assert "cloud metadata" in decisions[1].reason


async def test_the_socket_is_private_and_gone_after_the_call_with_its_connections(servers):
    echo, _origin = servers
    async with open_proxy(resolver=resolver_of(NAMES)) as proxy:
        rules = Rules(allow=[LOOPBACK])
        async with proxy.open_call("c", rules) as endpoint:
            directory = os.path.dirname(endpoint.path)
            assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
            assert stat.S_ISSOCK(os.stat(endpoint.path).st_mode)
            stream = await trio.open_unix_socket(endpoint.path)
            await stream.send_all(
                f"CONNECT echo.test:{echo} HTTP/1.1\r\nHost: echo.test:{echo}\r\n\r\n".encode()
            )
            assert (await stream.receive_some(65536)).startswith(b"HTTP/1.1 200")
        assert not os.path.exists(directory)
        # The tunnel still open at the call's end was closed with it.
        with trio.fail_after(5):
            assert await stream.receive_some(65536) == b""
        await stream.aclose()
        with pytest.raises(OSError):
            await trio.open_unix_socket(endpoint.path)


async def test_concurrent_calls_keep_their_own_rules(servers):
    echo, _origin = servers
    decisions: list[Decision] = []
    async with (
        open_proxy(on_decision=decisions.append, resolver=resolver_of(NAMES)) as proxy,
        proxy.open_call("open", Rules(allow=[LOOPBACK])) as wide,
        proxy.open_call("shut", Rules()) as shut,
    ):
        results: dict[str, list[int]] = {"open": [], "shut": []}

        async def one(name: str, path: str) -> None:
            reply = await _ask(path, "CONNECT", f"echo.test:{echo}", tunnel=b"z")
            results[name].append(reply.status)

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(one, "open", wide.path)
                nursery.start_soon(one, "shut", shut.path)
    assert results == {"open": [200] * 5, "shut": [403] * 5}
    assert (
        sorted((d.call_id, d.allowed) for d in decisions)
        == [("open", True)] * 5 + [("shut", False)] * 5
    )
    assert {d.reason for d in decisions if not d.allowed} == {
        f"echo.test:{echo}: the allowlist is empty, so nothing is allowed"
    }


async def test_a_reporter_that_fails_refuses_the_connection(servers):
    echo, _origin = servers

    def broken(decision: Decision) -> None:
        raise RuntimeError("the log is down")

    async with (
        open_proxy(on_decision=broken, resolver=resolver_of(NAMES)) as proxy,
        proxy.open_call("c", Rules(allow=[LOOPBACK])) as endpoint,
    ):
        stream = await trio.open_unix_socket(endpoint.path)
        async with stream:
            await stream.send_all(
                f"CONNECT echo.test:{echo} HTTP/1.1\r\nHost: echo.test:{echo}\r\n\r\n".encode()
            )
            assert await stream.receive_some(65536) == b""  # closed, no 200
        # The proxy still serves the call.
        assert (await _ask(endpoint.path, "GET", "/", host="x")).status == 400


async def test_resolving_and_connecting_time_out(autojump_clock):
    decisions: list[Decision] = []

    async def slow_resolver(host: str, port: int) -> list[str]:
        await trio.sleep_forever()
        raise AssertionError

    async def slow_connector(address: str, port: int) -> trio.abc.Stream:
        await trio.sleep_forever()
        raise AssertionError

    rules = Rules(allow=["slow.test", "93.184.216.34"])
    async with (
        open_proxy(
            on_decision=decisions.append, resolver=slow_resolver, connector=slow_connector
        ) as proxy,
        proxy.open_call("c", rules) as endpoint,
    ):
        start = trio.current_time()
        by_name = await _ask(endpoint.path, "CONNECT", "slow.test:443")
        by_address = await _socks(endpoint.path, "93.184.216.34", 443)
        assert trio.current_time() - start == pytest.approx(20)
        # A client that says nothing is let go after the handshake timeout (30 s).
        silent = await trio.open_unix_socket(endpoint.path)
        async with silent:
            before = trio.current_time()
            assert await silent.receive_some(65536) == b""
            assert trio.current_time() - before == pytest.approx(30)
    assert by_name.status == 504
    assert by_address == (SOCKS5ReplyCode.HOST_UNREACHABLE, b"")
    assert [(d.allowed, d.address) for d in decisions] == [(False, None), (True, None)]
    assert "resolving slow.test took over 10 s" in decisions[0].reason
    assert "connecting took over 10 s" in decisions[1].reason


def test_socks5_requests_are_read_strictly():
    assert read_request(b"\x05\x01\x00\x03") is None  # more bytes needed
    assert read_request(b"\x05\x01\x00\x03\x04abc") is None
    request, used = read_request(b"\x05\x01\x00\x03\x03abc\x01\xbbEXTRA")
    assert (request.host, request.port, used) == ("abc", 443, 10)
    request, _ = read_request(b"\x05\x01\x00\x04" + bytes(15) + b"\x01\x00\x50")
    assert request.host == "::1"
    for bad in (
        b"\x04\x01\x00\x01\x7f\x00\x00\x01\x00\x50",
        b"\x05\x01\x01\x01",
        b"\x05\x01\x00\x03\x00\x00\x50",
    ):
        with pytest.raises(SocksError):
            read_request(bad)


async def test_an_allowed_address_on_another_port_is_refused_for_its_port(servers):
    """`--allow 127.0.0.1:P` and a request to P+1: the refusal names the port, not the
    loopback rule (an entry does name the address; issue 38, item 5)."""
    echo, _origin = servers
    decisions: list[Decision] = []
    rules = Rules(allow=[f"{LOOPBACK}:{echo}"])
    async with (
        open_proxy(on_decision=decisions.append, resolver=resolver_of(NAMES)) as proxy,
        proxy.open_call("call-port", rules) as endpoint,
    ):
        other = await _ask(endpoint.path, "CONNECT", f"{LOOPBACK}:{echo + 1}")
        same = await _ask(endpoint.path, "CONNECT", f"{LOOPBACK}:{echo}", tunnel=b"ping")
    assert other.status == 403
    body = other.body.decode()
    assert (
        f"{LOOPBACK}:{echo + 1}: port {echo + 1} is not allowed; the allow entry "
        f"'{LOOPBACK}:{echo}' names this destination for another port only"
    ) in body
    assert "loopback" not in body
    assert (same.status, same.body) == (200, b"ping")
    assert [d.allowed for d in decisions] == [False, True]

"""What the proxy reads of a tunnel's first bytes, against the audit of issue 41: a
ClientHello read as it comes (a trickle of empty records made it re-read everything
on every read: quadratic CPU on the event loop); a plain tunnel's Host lines read
whatever their padding or folding (a line over 8 KiB, or `Host:` folded onto the
next line, hid a ruled host from the watch); and a plain-http request to a name that
resolves to a ruled address refused as a tunnel to it is cut. Loopback only; every
assertion is on what the origin received, what the client read, or what the proxy
reported, each beside a control showing the attack is real."""

from __future__ import annotations

import pytest
import trio

from stockade.network import _client_hello, parse_request_rules
from stockade.network._client_hello import (
    LINE_LIMIT,
    MAX_RECORDS,
    Hello,
    HelloReader,
    HostLines,
    read_hello,
)

from ._origins import LOOPBACK, client_hello, open_connect, proxied, read_head, start_world

EMPTY_RECORD = b"\x16\x03\x01\x00\x00"


@pytest.fixture
async def world(nursery, tmp_path):
    return await start_world(nursery, str(tmp_path))


def _records(hello: bytes, size: int) -> bytes:
    """`hello` (one record) re-cut into records of `size` bytes each."""
    body = hello[5:]
    return b"".join(
        hello[:3] + len(piece).to_bytes(2, "big") + piece
        for piece in (body[i : i + size] for i in range(0, len(body), size))
    )


def test_a_hello_trickled_in_many_records_is_parsed_once(monkeypatch):
    """Fed a byte at a time, over 40 records: each record read once, the hello parsed
    once (re-reading from the start on each read parsed records 40 * bytes / 2 times)."""
    parsed = []
    real = _client_hello._parsed
    monkeypatch.setattr(_client_hello, "_parsed", lambda body: parsed.append(1) or real(body))
    hello = client_hello(["http/1.1"])
    size = -(-(len(hello) - 5) // 40)
    records = _records(hello, size)
    reader = HelloReader()
    seen = [reader.feed(records[i : i + 1]) for i in range(len(records))]
    assert seen[-1] == Hello("tls", (b"http/1.1",), "api.test") == read_hello(hello)
    assert all(one is None for one in seen[:-1])
    assert len(parsed) == 2  # this reader's once, and read_hello's for the control
    assert reader._records == -(-(len(hello) - 5) // size)


def test_empty_records_and_too_many_are_malformed():
    assert read_hello(EMPTY_RECORD) == Hello("malformed", problem="an empty handshake record")
    reader = HelloReader()
    assert reader.feed(EMPTY_RECORD[:3]) is None
    assert reader.feed(EMPTY_RECORD[3:]).kind == "malformed"
    # What once hid behind them: an empty record, then a real hello.
    assert read_hello(EMPTY_RECORD + client_hello(None)).kind == "malformed"
    tiny = _records(client_hello(None), 1)
    assert read_hello(tiny).problem == f"a ClientHello in more than {MAX_RECORDS} records"
    # The control: the same hello in few records reads.
    assert read_hello(_records(client_hello(None), 100)).kind == "tls"


async def test_empty_handshake_records_are_refused_at_once(world, autojump_clock):
    """Empty handshake records trickled to a ruled host (the proxy re-read them all on
    each read until 64 KiB or its handshake timeout) end the connection at the first,
    reported; to a blind tunnel, they cut it (they could hide the SNI that follows)."""
    broker = world.broker()
    port = world.https.port
    async with proxied(world, broker) as proxy:
        for host in ("api.test", "free.test"):
            async with await open_connect(proxy.path, host, port) as tunnel:
                await tunnel.send_all(EMPTY_RECORD)
                with trio.fail_after(1):  # the handshake timeout is 30 s (a virtual clock)
                    assert await tunnel.receive_some(65536) == b""
    ruled, blind = proxy.records
    assert ruled.reason == (
        "the client's TLS for api.test began with an empty handshake record, which TLS forbids"
    )
    assert blind.reason == (
        f"the tunnel to free.test:{port} was cut: its TLS began with an empty handshake "
        "record, which TLS forbids, so the proxy cannot tell whether it names a ruled host"
    )
    assert world.https.requests == []


def _hosts(stream: bytes, size: int) -> tuple[list[str], str | None]:
    lines = HostLines()
    found = [host for i in range(0, len(stream), size) for host in lines.feed(stream[i : i + size])]
    return found, lines.refused


@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_padding_and_folding_hide_no_host(size: int):
    padded = b"GET /admin HTTP/1.1\r\nHost: rules.test" + b" " * 9000 + b"\r\n\r\n"
    assert _hosts(padded, size) == (["rules.test"], None)
    before = b"GET /admin HTTP/1.1\r\nHost:" + b" \t" * 9000 + b"rules.test\r\n\r\n"
    assert _hosts(before, size) == (["rules.test"], None)
    folded = b"GET /admin HTTP/1.1\r\nHost:\r\n rules.test\r\n\r\n"
    assert _hosts(folded, size)[0][-1:] == ["rules.test"]
    twice = b"GET /admin HTTP/1.1\nHost:\n\t\n  rules.test\n\n"
    assert _hosts(twice, size)[0][-1:] == ["rules.test"]
    method = b"A" * 20_000 + b" http://rules.test/admin HTTP/1.1\r\n\r\n"
    assert _hosts(method, size) == (["rules.test"], None)


@pytest.mark.parametrize("size", [1, 4096, 1 << 20])
def test_a_host_past_the_limit_is_refused_and_other_long_lines_pass(size: int):
    value = b"GET / HTTP/1.1\r\nHost: " + b"a" * LINE_LIMIT + b"rules.test\r\n\r\n"
    assert _hosts(value, size) == ([], f"a Host header line goes on past {LINE_LIMIT} bytes")
    target = b"GET http://" + b"a" * LINE_LIMIT + b"@rules.test/ HTTP/1.1\r\n\r\n"
    assert _hosts(target, size)[1] == f"a request target's host goes on past {LINE_LIMIT} bytes"
    # The controls: a long line of a body (a JSON document, a websocket frame), a long
    # header, a fold of it: read past, no host, nothing refused.
    body = b'{"data": "' + b"x y " * 50_000 + b'"}\r\n' + bytes(range(256)) * 100
    assert _hosts(body, size) == ([], None)
    header = b"X-Long: " + b"a" * 10_000 + b"\r\n Host: rules.test\r\nHost: b.test\r\n"
    assert _hosts(header, size) == (["b.test"], None)


async def _tunnel_answer(path: str, port: int, request: bytes) -> bytes:
    async with await open_connect(path, LOOPBACK, port) as tunnel:
        await tunnel.send_all(request)
        with trio.fail_after(5):
            head, _ = await read_head(tunnel)
    return head


async def test_a_padded_or_folded_host_line_cuts_the_tunnel(world):
    """A plain tunnel to the ruled host's address: `Host: rules.test` padded past 8 KiB,
    or folded onto the next line, is read for what it names and cut; the origin (h11,
    like Go and Node) read `rules.test` from each before. The control: the same
    request naming free.test reaches it."""
    broker = world.broker()
    port = world.plain.port
    attacks = [
        b"GET /admin/delete HTTP/1.1\r\nHost: rules.test" + b" " * 9000 + b"\r\n\r\n",
        b"GET /admin/delete HTTP/1.1\r\nHost:\r\n rules.test\r\n\r\n",
    ]
    async with proxied(world, broker) as proxy:
        control = await _tunnel_answer(proxy.path, port, attacks[0].replace(b"rules", b"free"))
        cut = [await _tunnel_answer(proxy.path, port, attack) for attack in attacks]
    assert control.startswith(b"HTTP/1.1 200")
    assert cut == [b"", b""]
    assert [seen.target for seen in world.plain.requests] == [b"/admin/delete"]
    assert [record.reason for record in proxy.records] == [
        f"the tunnel to {LOOPBACK}:{port} was cut: a request's Host names rules.test, a host "
        "with request rules; reach it by its name"
    ] * 2


async def test_plain_http_to_another_name_of_a_ruled_address_is_refused(world):
    """A request rule names the address (GET /ok/* only) and alias.test resolves to it:
    `GET http://alias.test/admin` was forwarded unjudged, while a tunnel to alias.test
    is cut. Now refused the same way. The controls: the address itself is judged (its
    /ok/x served, its /admin refused), and with the rule naming another address the
    same request reaches the origin."""
    world.names["alias.test"] = [LOOPBACK]
    port = world.plain.port

    async def get(path: str, host: str, target: str) -> bytes:
        stream = await trio.open_unix_socket(path)
        async with stream:
            await stream.send_all(
                f"GET http://{host}:{port}{target} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
            )
            with trio.fail_after(5):
                return (await read_head(stream))[0].split(b"\r\n")[0]

    def broker_ruling(address: str):
        rule = {"host": address, "methods": ["GET"], "paths": ["/ok/*"]}
        return world.broker(credentials=(), requests=parse_request_rules([rule]))

    async with proxied(world, broker_ruling("10.9.9.9")) as proxy:
        assert await get(proxy.path, "alias.test", "/admin") == b"HTTP/1.1 200 "
    async with proxied(world, broker_ruling(LOOPBACK)) as proxy:
        assert await get(proxy.path, LOOPBACK, "/ok/x") == b"HTTP/1.1 200 "
        assert await get(proxy.path, LOOPBACK, "/admin") == b"HTTP/1.1 403 "
        refused = await get(proxy.path, "alias.test", "/admin")
    assert refused == b"HTTP/1.1 403 "
    assert [seen.target for seen in world.plain.requests] == [b"/admin", b"/ok/x"]
    record = proxy.records[-1]
    assert (record.method, record.host, record.path, record.allowed, record.protocol) == (
        "GET",
        "alias.test",
        "/admin",
        False,
        "http",
    )
    assert record.reason == (
        f"the request to alias.test:{port} was refused: it reaches {LOOPBACK}, a host with "
        "request rules; reach it by its address"
    )


ALERT = b"\x15\x03\x01\x00\x02\x01\x5a"  # a warning alert (user_canceled)


def test_a_record_other_than_a_handshake_first_is_malformed():
    """Go's TLS server drops a warning alert before the hello and reads the hello after
    it: read as plain text, its SNI passed unread. The control: the hello alone reads."""
    hello = client_hello(None)
    for first in (ALERT, b"\x14\x03\x01\x00\x01\x01", b"\x17\x03\x03\x00\x01\x00"):
        assert read_hello(first + hello).kind == "malformed", first
    assert read_hello(hello).kind == "tls"


async def test_a_hello_the_proxy_cannot_read_cuts_a_blind_tunnel(world):
    """A hello naming the ruled api.test, to a host no rule names, with an alert amid
    its two records (an origin may drop the alert and read the name after it): cut as
    unreadable, where it passed unread. The control: the same two records without the
    alert are read, and cut for the name."""
    broker = world.broker()
    port = world.https.port
    hello = client_hello(None)
    split = _records(hello, -(-(len(hello) - 5) // 2))
    first_end = 5 + int.from_bytes(split[3:5], "big")
    amid = split[:first_end] + ALERT + split[first_end:]
    async with proxied(world, broker) as proxy:
        for stream in (amid, split):
            async with await open_connect(proxy.path, "free.test", port) as tunnel:
                await tunnel.send_all(stream)
                with trio.fail_after(5):
                    assert await tunnel.receive_some(65536) == b""
    unreadable, named = (record.reason for record in proxy.records)
    assert "a ClientHello the proxy cannot read" in unreadable, unreadable
    assert "SNI names api.test" in named, named


def test_folds_after_long_lines_cost_what_they_hold(monkeypatch):
    """A fold joined every continuation to the line before and read it again: 20 s a
    MiB after one 8,000-byte line. Only an empty Host line keeps what a fold joins."""
    read: list[int] = []
    real = _client_hello.hosts_in_line
    monkeypatch.setattr(
        _client_hello, "hosts_in_line", lambda line: read.append(len(line)) or real(line)
    )
    stream = b"GET / HTTP/1.1\r\nX-Long: " + b"a" * 8000 + b"\r\n x" * 20_000 + b"\r\n\r\n"
    assert _hosts(stream, 4096) == ([], None)
    assert sum(read) < 2 * len(stream)


def test_http2_with_prior_knowledge_is_refused():
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    assert _hosts(preface, 7)[1] == "it speaks HTTP/2 without TLS, whose host is not read"
    assert _hosts(b"GET / HTTP/1.1\r\nHost: free.test\r\n\r\n", 7) == (["free.test"], None)

"""The proxy terminating TLS for ruled hosts (issue 41), on real sockets, loopback only:
origins this test starts (HTTPS with a `trustme` CA, plain HTTP) answer with what they
received; clients are Python's `ssl` (through trio) and h11 over the call's Unix
socket by CONNECT and SOCKS5, and curl. Every assertion is on an effect: what the
origin received, what the client was answered, what the proxy reported."""

from __future__ import annotations

import json
import shutil
import socket
import ssl
from functools import partial

import pytest
import trio
import trio.testing

from stockade.network import RequestRecord, Rules, parse_request_rules
from stockade.network._call import relay

from ..support import IN_CI
from ._origins import (
    CREDENTIALS,
    LOOPBACK,
    REAL_API,
    REAL_KEY,
    Client,
    client_context,
    client_hello,
    open_connect,
    open_tls,
    proxied,
    start_world,
)


@pytest.fixture
async def world(nursery, tmp_path):
    return await start_world(nursery, str(tmp_path))


def _fields(record: RequestRecord) -> tuple:
    return (record.method, record.host, record.path, record.allowed)


async def test_the_real_value_goes_to_its_own_host_only_and_requests_are_kept_alive(world):
    broker = world.broker()
    placeholder = broker.placeholders["API_TOKEN"]
    port = world.https.port
    async with proxied(world, broker) as proxy:
        tls = await open_tls(proxy.path, "api.test", port, client_context(broker))
        async with tls:
            client = Client(tls)
            first = await client.request(
                "GET",
                "/repos/org/one?page=2",
                f"api.test:{port}",
                [("Authorization", f"Bearer {placeholder}")],
            )
            second = await client.request(
                "POST",
                "/repos/org/two",
                f"api.test:{port}",
                [("Authorization", f"Bearer {placeholder}")],
                body=[b"a body"],
            )
            head = await client.request("HEAD", "/repos/org/h", f"api.test:{port}")
            big = bytes(range(256)) * 12288  # 3 MiB, streamed through both TLS sessions
            large = await client.request(
                "POST", "/repos/org/big", f"api.test:{port}", body=[big[:1000], big[1000:]]
            )
            assert tls.selected_alpn_protocol() == "http/1.1"
            # The certificate the client saw: minted by the harness's CA for api.test.
            issuer = dict(item[0] for item in tls.getpeercert()["issuer"])
            assert issuer["commonName"] == "stockade harness CA"
        # The header form: the proxy sets X-Api-Key, dropping the command's own.
        keyed = await open_tls(proxy.path, "key.test", port, client_context(broker))
        async with keyed:
            key = await Client(keyed).request(
                "GET", "/anything", f"key.test:{port}", [("X-Api-Key", "the command's own")]
            )
    assert (first.status, second.status, key.status) == (200, 200, 200)
    assert (head.status, head.body, large.status) == (200, b"", 200)
    assert large.echoed()["body"].encode("latin-1") == big
    one, two, _head, _large, three = world.https.requests
    assert (one.method, one.target) == (b"GET", b"/repos/org/one?page=2")
    assert one.header(b"authorization") == [f"Bearer {REAL_API}".encode()]
    assert (two.method, two.target, two.body) == (b"POST", b"/repos/org/two", b"a body")
    assert two.header(b"authorization") == [f"Bearer {REAL_API}".encode()]
    assert one.connection == two.connection  # one upstream connection, kept alive
    assert three.header(b"x-api-key") == [REAL_KEY.encode()]
    assert REAL_KEY.encode() not in b"".join(v for _k, v in one.headers + two.headers)
    assert first.echoed()["target"] == "/repos/org/one?page=2"
    # The origin echoes what it read: the command reads its placeholder back, never
    # the value (each scrubbed answer its own record, as it ended).
    assert ["authorization", f"Bearer {placeholder}"] in first.echoed()["headers"]
    assert ["x-api-key", "stockade-withheld-REAL_KEY"] in key.echoed()["headers"]
    for reply in (first, second, head, large, key):
        assert REAL_API.encode() not in reply.body and REAL_KEY.encode() not in reply.body
    scrubbed = [(r.method, r.path, r.scrubbed) for r in proxy.records if r.scrubbed]
    assert scrubbed == [
        ("GET", "/repos/org/one", 1),
        ("POST", "/repos/org/two", 1),
        ("GET", "/anything", 1),
    ]
    proxy.records[:] = [r for r in proxy.records if not r.scrubbed]
    assert [_fields(r) for r in proxy.records] == [
        ("GET", "api.test", "/repos/org/one", True),
        ("POST", "api.test", "/repos/org/two", True),
        ("HEAD", "api.test", "/repos/org/h", True),
        ("POST", "api.test", "/repos/org/big", True),
        ("GET", "key.test", "/anything", True),
    ]
    record = proxy.records[0]
    assert record.credentials == ("REAL_API",)
    assert record.rule == "api.test GET,HEAD,POST /repos/org/**"
    assert (record.status, record.protocol, record.port, record.call_id) == (
        None,
        "https",
        port,
        "call-41",
    )
    assert proxy.records[3].credentials == ()  # no placeholder sent, none put in
    assert proxy.records[4].credentials == ("REAL_KEY",)
    # Leaves were minted for the hosts terminated, and those only.
    assert broker.authority._leaves.keys() == {"api.test", "key.test"}
    for record in proxy.records:
        assert REAL_API not in repr(record) and REAL_KEY not in repr(record)
    # Each tunnel was one decision, as before.
    assert [(d.host, d.protocol, d.allowed) for d in proxy.decisions] == [
        ("api.test", "connect", True),
        ("key.test", "connect", True),
    ]


async def test_the_placeholder_elsewhere_is_refused_and_never_replaced(world):
    broker = world.broker()
    placeholder = broker.placeholders["API_TOKEN"]
    port = world.https.port
    bearer = [("Authorization", f"Bearer {placeholder}")]
    async with proxied(world, broker) as proxy:
        # To another ruled host, in a header.
        keyed = await open_tls(proxy.path, "key.test", port, client_context(broker))
        async with keyed:
            other_host = await Client(keyed).request("GET", "/", f"key.test:{port}", bearer)
        # In the target (percent-encoded too), to its own host.
        async with await open_tls(proxy.path, "api.test", port, client_context(broker)) as tls:
            encoded = placeholder.replace("-", "%2D")
            in_url = await Client(tls).request(
                "GET", f"/repos/org/x?token={encoded}", f"api.test:{port}"
            )
        # In a header its rule does not name.
        async with await open_tls(proxy.path, "api.test", port, client_context(broker)) as tls:
            wrong_header = await Client(tls).request(
                "GET", "/repos/org/x", f"api.test:{port}", [("X-Token", placeholder)]
            )
        # In the body: the first chunk went, the one holding the placeholder did not.
        async with await open_tls(proxy.path, "api.test", port, client_context(broker)) as tls:

            async def first_chunk_arrived(index: int) -> None:
                if index == 0:
                    while b"harmless" not in b"".join(world.https.chunks):
                        await trio.sleep(0.01)

            in_body = await Client(tls).request(
                "POST",
                "/repos/org/x",
                f"api.test:{port}",
                bearer,
                body=[b"harmless start ", f"token={placeholder}".encode()],
                between=first_chunk_arrived,
            )
    for reply in (other_host, in_url, wrong_header, in_body):
        assert reply.status == 403
        assert reply.text.startswith("stockade: ")
        assert "the placeholder of REAL_API (for api.test)" in reply.text
        assert reply.text.count("\n") == 1
    assert "was sent to key.test in the header 'authorization'" in other_host.text
    assert "in the request target" in in_url.text
    assert "the rule names the header Authorization only" in wrong_header.text
    assert "the POST request to api.test:" in in_body.text and "was cut" in in_body.text
    # The origin got only the harmless first chunk of all that.
    assert world.https.requests == []
    assert world.https.chunks == [b"harmless start "]
    assert placeholder.encode() not in world.https.received()
    assert REAL_API.encode() not in world.https.received()
    records = proxy.records
    assert [(r.method, r.host, r.allowed) for r in records] == [
        ("GET", "key.test", False),
        ("GET", "api.test", False),
        ("GET", "api.test", False),
        ("POST", "api.test", True),  # judged on its head, before anything of it went
        ("POST", "api.test", False),  # then cut for its body
    ]
    for record, reply in zip(
        (records[0], records[1], records[2], records[4]),
        (other_host, in_url, wrong_header, in_body),
        strict=True,
    ):
        assert reply.text == f"stockade: {record.reason}\n"
        assert record.misplaced[0] in record.reason
        assert record.credentials == ()
    assert records[1].path == "/repos/org/x"  # never the query


async def test_method_and_path_are_judged_on_the_normalised_path(world):
    broker = world.broker()
    port = world.https.port
    asked = [
        ("GET", "/ok/file"),
        ("get", "/ok/lower"),  # compared upper-cased, sent upper-cased
        ("GET", "//ok//twice"),  # collapsed: /ok/twice
        ("GET", "/ok/%61b"),  # an unreserved escape decoded: /ok/ab
        ("POST", "/ok/file"),
        ("GET", "/ok/../secret"),
        ("GET", "/ok/%2e%2e/secret"),
        ("GET", "/ok/x;jsessionid=1"),
        ("GET", "/ok/%2Fsecret"),
        ("GET", "/OK/file"),  # a path is case-sensitive
        ("GET", "/ok/a/b"),  # `*` is one segment
    ]
    replies = []
    async with proxied(world, broker) as proxy:
        for method, target in asked:
            async with await open_tls(
                proxy.path, "rules.test", port, client_context(broker)
            ) as tls:
                replies.append(await Client(tls).request(method, target, f"rules.test:{port}"))
    statuses = [reply.status for reply in replies]
    assert statuses == [200, 200, 200, 200] + [403] * 7
    assert [(seen.method, seen.target) for seen in world.https.requests] == [
        (b"GET", b"/ok/file"),
        (b"GET", b"/ok/lower"),
        (b"GET", b"/ok/twice"),
        (b"GET", b"/ok/ab"),
    ]
    texts = [reply.text for reply in replies[4:]]
    assert texts[0] == (
        "stockade: POST '/ok/file' to rules.test is refused: rules.test allows GET on /ok/*\n"
    )
    assert "GET '/secret' to rules.test is refused" in texts[1]
    assert "GET '/secret' to rules.test is refused" in texts[2]
    assert "path parameters are refused" in texts[3]
    assert "an encoded '/'" in texts[4]
    assert "'/OK/file'" in texts[5]
    assert "'/ok/a/b'" in texts[6]
    assert [r.path for r in proxy.records] == [
        "/ok/file",
        "/ok/lower",
        "/ok/twice",
        "/ok/ab",
        "/ok/file",
        "/secret",
        "/secret",
        "/ok/x;jsessionid=1",
        "/ok/%2Fsecret",
        "/OK/file",
        "/ok/a/b",
    ]
    assert [r.rule for r in proxy.records[:4]] == ["read ok"] * 4
    assert all(r.rule is None and not r.allowed for r in proxy.records[4:])


async def test_a_request_for_another_host_inside_a_terminated_tunnel_is_refused(world):
    broker = world.broker()
    port = world.https.port
    async with proxied(world, broker) as proxy:
        replies = []
        for target, host in (
            ("/repos/org/x", "free.test"),  # a Host header naming another host
            (f"https://free.test:{port}/repos/org/x", f"api.test:{port}"),  # absolute form
            (f"https://api.test:{port}/repos/org/x", f"api.test:{port}"),  # the same host
        ):
            async with await open_tls(proxy.path, "api.test", port, client_context(broker)) as tls:
                replies.append(await Client(tls).request("GET", target, host))
        async with await open_tls(proxy.path, "api.test", port, client_context(broker)) as tls:
            connect = await Client(tls).request("CONNECT", f"free.test:{port}", f"free.test:{port}")
    assert [reply.status for reply in replies] == [403, 403, 200]
    assert "the Host header 'free.test' disagrees with the target api.test:" in replies[0].text
    assert "the target names free.test, not api.test" in replies[1].text
    assert connect.status == 403
    assert [(seen.target) for seen in world.https.requests] == [b"/repos/org/x"]


async def test_socks5_to_a_ruled_host_is_terminated_too(world):
    broker = world.broker()
    placeholder = broker.placeholders["API_TOKEN"]
    port = world.https.port
    async with proxied(world, broker) as proxy:
        tls = await open_tls(proxy.path, "api.test", port, client_context(broker), socks=True)
        async with tls:
            reply = await Client(tls).request(
                "GET",
                "/repos/org/s",
                f"api.test:{port}",
                [("Authorization", f"token {placeholder}")],
            )
    assert reply.status == 200
    [seen] = world.https.requests
    assert seen.header(b"authorization") == [f"token {REAL_API}".encode()]
    assert [(d.protocol, d.allowed) for d in proxy.decisions] == [("socks5", True)]
    assert [_fields(r) for r in proxy.records] == [("GET", "api.test", "/repos/org/s", True)] * 2
    assert [r.scrubbed for r in proxy.records] == [0, 1]  # the echo of the value, replaced


async def test_a_host_no_rule_names_keeps_the_blind_tunnel_and_gets_no_certificate(world):
    broker = world.broker()
    placeholder = broker.placeholders["API_TOKEN"]
    port = world.https.port
    async with proxied(world, broker) as proxy:
        # TLS straight to the origin: its own certificate, from its own CA.
        tls = await open_tls(proxy.path, "free.test", port, client_context(trust=world.origin_ca))
        async with tls:
            issuer = dict(item[0] for item in tls.getpeercert()["issuer"])
            reply = await Client(tls).request("GET", "/x", f"free.test:{port}")
        # A placeholder in a blind tunnel's bytes (plain text here) cuts it.
        raw = await open_connect(proxy.path, "free.test", world.plain.port)
        async with raw:
            await raw.send_all(
                f"GET / HTTP/1.1\r\nHost: free.test\r\nAuthorization: {placeholder}\r\n\r\n".encode()
            )
            assert await raw.receive_some(65536) == b""  # cut, nothing answered
    assert issuer.get("commonName") != "stockade harness CA"
    assert reply.status == 200
    assert world.https.requests[0].header(b"authorization") == []
    assert world.plain.requests == [] and world.plain.chunks == []
    [record] = proxy.records
    assert (record.method, record.host, record.port, record.allowed) == (
        "CONNECT",
        "free.test",
        world.plain.port,
        False,
    )
    assert record.reason.startswith(f"the tunnel to free.test:{world.plain.port} was cut: ")
    assert "in a blind tunnel" in record.misplaced[0]
    assert broker.authority._leaves.keys() == set()  # nothing was minted


async def test_a_client_insisting_on_http2_is_refused_with_a_record_naming_it(world):
    broker = world.broker()
    port = world.https.port
    async with proxied(world, broker) as proxy:
        with pytest.raises(trio.BrokenResourceError) as raised:
            await open_tls(proxy.path, "api.test", port, client_context(broker, alpn=["h2"]))
        # One that offers both gets HTTP/1.1.
        async with await open_tls(
            proxy.path, "api.test", port, client_context(broker, alpn=["h2", "http/1.1"])
        ) as tls:
            assert tls.selected_alpn_protocol() == "http/1.1"
    assert "no application protocol" in str(raised.value.__cause__)
    [record] = proxy.records
    assert (record.method, record.host, record.path, record.allowed) == (
        "CONNECT",
        "api.test",
        "",
        False,
    )
    assert record.reason == (
        "api.test: the client insists on HTTP/2, which the proxy does not terminate yet"
    )
    assert world.https.requests == []


def _sync_tls(path: str, host: str, port: int, context: ssl.SSLContext) -> str:
    """Python's blocking `ssl` (which sends its alert) through CONNECT: the error."""
    with socket.socket(socket.AF_UNIX) as raw:
        raw.connect(path)
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += raw.recv(1)
        assert head.startswith(b"HTTP/1.1 200")
        try:
            with context.wrap_socket(raw, server_hostname=host):
                return "no error"
        except ssl.SSLError as error:
            return str(error)


async def test_a_client_that_does_not_trust_the_ca_is_recorded_clearly(world):
    broker = world.broker()
    port = world.https.port
    # The system's store only: stockade's CA is not in it.
    async with proxied(world, broker) as proxy:
        error = await trio.to_thread.run_sync(
            _sync_tls, proxy.path, "api.test", port, client_context()
        )
        with pytest.raises(trio.BrokenResourceError):  # trio's client sends no alert
            await open_tls(proxy.path, "key.test", port, client_context())
        # Wait for the proxy to see the second client go.
        with trio.fail_after(5):
            while len(proxy.records) < 2:
                await trio.sleep(0.01)
    assert "CERTIFICATE_VERIFY_FAILED" in error
    alerted, closed = proxy.records
    assert (alerted.method, alerted.host, alerted.allowed) == ("CONNECT", "api.test", False)
    assert alerted.reason == (
        "the client refused stockade's certificate for api.test: it pins its own or does not "
        "trust the harness CA (SSL_CERT_FILE and the other trust variables name it)"
    )
    assert closed.host == "key.test"
    assert closed.reason.startswith(
        "the client closed the connection during the TLS handshake for key.test: it may "
        "refuse stockade's certificate"
    )
    assert world.https.requests == []


async def test_an_origin_whose_certificate_is_not_trusted_is_a_502(world):
    broker = world.broker()
    async with proxied(world, broker) as proxy:
        answers = {}
        for host, port in (("bad.test", world.bad.port), ("wrong.test", world.https.port)):
            async with await open_tls(proxy.path, host, port, client_context(broker)) as tls:
                answers[host] = await Client(tls).request("GET", "/x?q=1", f"{host}:{port}")
    bad, wrong = answers["bad.test"], answers["wrong.test"]
    assert (bad.status, wrong.status) == (502, 502)
    assert bad.text.startswith(
        f"stockade: bad.test:{world.bad.port}'s certificate is not trusted: "
    )
    assert "self-signed" in bad.text or "local issuer" in bad.text
    assert f"wrong.test:{world.https.port}'s certificate is not trusted: Hostname mismatch" in (
        wrong.text
    )
    assert bad.text.count("\n") == wrong.text.count("\n") == 1
    assert world.bad.requests == [] and world.https.requests == []
    assert [(r.method, r.host, r.path, r.allowed) for r in proxy.records] == [
        ("GET", "bad.test", "/x", False),
        ("GET", "wrong.test", "/x", False),
    ]
    assert proxy.records[0].reason == bad.text.removeprefix("stockade: ").rstrip("\n")


async def test_plain_http_to_a_ruled_host_is_judged_and_never_gets_a_credential(world):
    broker = world.broker()
    placeholder = broker.placeholders["API_TOKEN"]
    port = world.plain.port
    replies = []
    async with proxied(world, broker) as proxy:
        for method, host, target, headers in (
            ("GET", "plain.test", "/x", []),
            ("POST", "plain.test", "/x", []),
            ("GET", "api.test", "/repos/org/x", [("Authorization", f"Bearer {placeholder}")]),
            ("GET", "api.test", "/repos/org/x", []),
            ("GET", "key.test", "/", []),
        ):
            stream = await trio.open_unix_socket(proxy.path)
            async with stream:
                url = f"http://{host}:{port}{target}"
                replies.append(await Client(stream).request(method, url, f"{host}:{port}", headers))
    assert [reply.status for reply in replies] == [200, 403, 403, 200, 200]
    assert (
        "POST '/x' to plain.test is refused: plain.test allows GET on any path" in replies[1].text
    )
    assert "a credential never goes over plain http" in replies[2].text
    assert [(seen.target) for seen in world.plain.requests] == [b"/x", b"/repos/org/x", b"/"]
    for seen in world.plain.requests:
        assert seen.header(b"authorization") == seen.header(b"x-api-key") == []
        assert seen.header(b"connection") == [b"close"]
    assert placeholder.encode() not in world.plain.received()
    records = proxy.records
    assert [(r.method, r.host, r.allowed, r.protocol) for r in records] == [
        ("GET", "plain.test", True, "http"),
        ("POST", "plain.test", False, "http"),
        ("GET", "api.test", False, "http"),
        ("GET", "api.test", True, "http"),
        ("GET", "key.test", True, "http"),
    ]
    assert records[3].credentials == records[4].credentials == ()
    assert records[4].reason.endswith("; no credential for key.test goes over plain http")


async def test_plain_http_and_tunnels_to_other_hosts_carry_no_placeholder(world):
    broker = world.broker()
    placeholder = broker.placeholders["API_TOKEN"]
    port = world.plain.port
    async with proxied(world, broker) as proxy:
        stream = await trio.open_unix_socket(proxy.path)
        async with stream:
            in_header = await Client(stream).request(
                "GET",
                f"http://free.test:{port}/x",
                f"free.test:{port}",
                [("Authorization", f"Basic {placeholder}")],
            )
        stream = await trio.open_unix_socket(proxy.path)
        async with stream:

            async def first_chunk_arrived(index: int) -> None:
                if index == 0:
                    while not world.plain.chunks:
                        await trio.sleep(0.01)

            in_body = await Client(stream).request(
                "PUT",
                f"http://free.test:{port}/y",
                f"free.test:{port}",
                body=[b"first ", placeholder.upper().encode()],
                between=first_chunk_arrived,
            )
        stream = await trio.open_unix_socket(proxy.path)
        async with stream:
            clean = await Client(stream).request(
                "GET", f"http://free.test:{port}/z", f"free.test:{port}"
            )
    assert (in_header.status, in_body.status, clean.status) == (403, 403, 200)
    assert world.plain.chunks == [b"first "]
    assert [seen.target for seen in world.plain.requests] == [b"/z"]
    assert placeholder.encode().lower() not in world.plain.received().lower()
    assert [(r.method, r.host, r.path, r.allowed, r.protocol) for r in proxy.records] == [
        ("GET", "free.test", "/x", False, "http"),
        ("PUT", "free.test", "/y", False, "http"),
    ]
    assert "was sent to free.test in the header 'authorization'" in proxy.records[0].reason
    assert "was sent to free.test in the request body" in proxy.records[1].reason


async def test_plain_text_inside_a_tunnel_to_a_ruled_host_is_judged_as_http(world):
    broker = world.broker()
    port = world.plain.port
    async with proxied(world, broker) as proxy:
        raw = await open_connect(proxy.path, "plain.test", port)
        async with raw:
            client = Client(raw)
            allowed = await client.request("GET", "/a", f"plain.test:{port}")
            kept = await client.request("GET", "/b", f"plain.test:{port}")
            refused = await client.request("DELETE", "/a", f"plain.test:{port}")
    assert (allowed.status, kept.status, refused.status) == (200, 200, 403)
    assert [seen.target for seen in world.plain.requests] == [b"/a", b"/b"]
    assert world.plain.requests[0].connection == world.plain.requests[1].connection
    assert [(r.method, r.allowed, r.protocol) for r in proxy.records] == [
        ("GET", True, "http"),
        ("GET", True, "http"),
        ("DELETE", False, "http"),
    ]


async def test_a_reporter_that_fails_refuses_the_request(world):
    broker = world.broker()
    port = world.https.port

    def broken(record: RequestRecord) -> None:
        raise RuntimeError("the log is down")

    async with (
        proxied(world, broker, on_request=broken) as proxy,
        await open_tls(proxy.path, "rules.test", port, client_context(broker)) as tls,
    ):
        reply = await Client(tls).request("GET", "/ok/x", f"rules.test:{port}")
    assert reply.status == 403
    assert (
        reply.text
        == "stockade: the request to rules.test could not be recorded, so it was refused\n"
    )
    assert world.https.requests == []


async def test_an_origin_that_ends_its_connection_ends_the_clients(world):
    broker = world.broker()
    port = world.https.port
    async with (
        proxied(world, broker) as proxy,
        await open_tls(proxy.path, "rules.test", port, client_context(broker)) as tls,
    ):
        client = Client(tls)
        kept = await client.request("GET", "/ok/keep", f"rules.test:{port}")
        closing = await client.request("GET", "/ok/close", f"rules.test:{port}")
        with trio.fail_after(5):
            assert await tls.receive_some(65536) == b""
    assert kept.status == closing.status == 200
    assert b"connection" not in kept.headers
    assert closing.headers[b"connection"] == b"close"
    assert len(proxy.records) == 2


CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None and not IN_CI, reason="curl is not installed")


async def _forward_tcp_to(path: str, stream: trio.SocketStream) -> None:
    """A TCP listener's connection relayed to the proxy's Unix socket (curl takes no
    Unix-socket HTTP proxy)."""
    async with stream, await trio.open_unix_socket(path) as proxy:
        await relay(stream, proxy)


async def _curl(*args: str) -> tuple[int, str, str]:
    assert CURL is not None, "curl is not installed"
    done = await trio.run_process(
        [CURL, "-sS", "--max-time", "10", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@needs_curl
async def test_curl_through_connect_and_socks5_gets_its_token_swapped(world, nursery, tmp_path):
    broker = world.broker()
    placeholder = broker.placeholders["API_TOKEN"]
    port = world.https.port
    bundle = tmp_path / "stockade-ca.pem"
    bundle.write_bytes(broker.authority.certificate_pem)
    async with proxied(world, broker) as proxy:
        [listener] = await nursery.start(
            partial(trio.serve_tcp, partial(_forward_tcp_to, proxy.path), 0, host=LOOPBACK)
        )
        http_proxy = f"http://{LOOPBACK}:{listener.socket.getsockname()[1]}"
        socks_proxy = f"socks5h://localhost{proxy.path}"
        token = ["-H", f"Authorization: Bearer {placeholder}", "--cacert", str(bundle)]
        url = f"https://api.test:{port}/repos/org/curl"
        # curl built with nghttp2 offers h2 and http/1.1: it gets HTTP/1.1.
        by_connect = await _curl("--proxy", http_proxy, *token, url)
        by_socks = await _curl("--proxy", socks_proxy, *token, url)
        posted = await _curl("--proxy", http_proxy, *token, "--data-binary", "@-", url + "?x=1")
        in_body = await _curl(
            "--proxy", socks_proxy, *token, "--data-binary", f"token={placeholder}", url
        )
        refused = await _curl("--proxy", http_proxy, *token, f"https://api.test:{port}/other")
        # curl with the system's store only: it does not trust stockade's CA.
        untrusting = await _curl("--proxy", http_proxy, url)
    for code, out, _err in (by_connect, by_socks):
        assert code == 0, _err
        # The origin read the real value; curl reads its echo as the placeholder.
        echoed = json.loads(out)
        assert ["authorization", f"Bearer {placeholder}"] in echoed["headers"]
        assert REAL_API not in out
    for seen in world.https.requests[:2]:
        assert seen.header(b"authorization") == [f"Bearer {REAL_API}".encode()]
    assert posted[0] == 0 and json.loads(posted[1])["method"] == "POST"
    assert in_body[0] == 0 and in_body[1].startswith("stockade: the POST request to api.test:")
    assert refused[0] == 0
    assert refused[1] == (
        "stockade: GET '/other' to api.test is refused: api.test allows GET, HEAD, POST on "
        "/repos/org/**\n"
    )
    assert untrusting[0] == 60, untrusting  # curl: the peer's certificate is not trusted
    assert [seen.target for seen in world.https.requests] == [
        b"/repos/org/curl",
        b"/repos/org/curl",
        b"/repos/org/curl?x=1",
    ]
    assert placeholder.encode() not in world.https.received()
    assert [(r.path, r.scrubbed) for r in proxy.records if r.scrubbed] == [
        ("/repos/org/curl", 1),
        ("/repos/org/curl", 1),
        ("/repos/org/curl", 1),
    ]
    proxy.records[:] = [r for r in proxy.records if not r.scrubbed]
    assert [(r.method, r.path, r.allowed) for r in proxy.records] == [
        ("GET", "/repos/org/curl", True),
        ("GET", "/repos/org/curl", True),
        ("POST", "/repos/org/curl", True),
        ("POST", "/repos/org/curl", True),
        ("POST", "/repos/org/curl", False),  # cut for its body
        ("GET", "/other", False),
        ("CONNECT", "", False),
    ]
    assert proxy.records[6].reason.startswith(
        "the client refused stockade's certificate for api.test"
    )


async def test_handshakes_are_bounded_by_the_handshake_timeout(world, autojump_clock):
    """A client that says nothing, one that stops inside its handshake, and an origin
    that never answers its TLS: each let go after 30 s, on the record."""
    broker = world.broker()
    kept = []

    async def silent_origin(address: str, port: int) -> trio.abc.Stream:
        proxy_side, origin_side = trio.testing.memory_stream_pair()
        kept.append(origin_side)  # never read, never answered
        return proxy_side

    async with proxied(world, broker, connector=silent_origin) as proxy:
        start = trio.current_time()
        silent = await open_connect(proxy.path, "api.test", 443)
        async with silent:
            assert await silent.receive_some(65536) == b""
        assert trio.current_time() - start == pytest.approx(30)
        stalled = await open_connect(proxy.path, "api.test", 443)
        async with stalled:
            await stalled.send_all(b"\x16\x03\x01\x00\x05\x01\x00")  # a hello never whole
            assert await stalled.receive_some(65536) == b""
        after_hello = await open_connect(proxy.path, "api.test", 443)
        async with after_hello:
            await after_hello.send_all(client_hello(["http/1.1"]))
            while await after_hello.receive_some(65536):  # the server's flight, then the end
                pass
        async with await open_tls(proxy.path, "rules.test", 443, client_context(broker)) as tls:
            before = trio.current_time()
            reply = await Client(tls).request("GET", "/ok/x", "rules.test")
            assert trio.current_time() - before == pytest.approx(30)
    assert reply.status == 502
    assert reply.text == "stockade: rules.test:443 did not finish its TLS handshake in 30 s\n"
    assert [(r.method, r.host, r.reason) for r in proxy.records] == [
        ("CONNECT", "api.test", "the client began no TLS handshake for api.test in 30 s"),
        ("CONNECT", "api.test", "the client did not finish its TLS handshake for api.test in 30 s"),
        ("CONNECT", "api.test", "the client did not finish its TLS handshake for api.test in 30 s"),
        ("GET", "rules.test", "rules.test:443 did not finish its TLS handshake in 30 s"),
    ]


async def test_no_broker_means_no_tunnel_is_watched(world):
    """Without a broker a blind tunnel relays its bytes unwatched: nothing is ruled.
    With one, even holding no placeholder (header-form credentials and request rules
    only), its first bytes are read for a ruled host's name."""
    from stockade.network._call import Call
    from stockade.network._terminate import tunnel_watch

    no_placeholder = world.broker(credentials=CREDENTIALS[1:])
    rules = Rules(allow=[LOOPBACK])
    assert tunnel_watch(Call("c", rules), "free.test", 443) is None
    watch = tunnel_watch(Call("c", rules, broker=no_placeholder), "free.test", 443)
    assert watch is not None
    assert await watch(b"GET / HTTP/1.1\r\nHost: free.test\r\n\r\n")
    assert not await watch(b"GET / HTTP/1.1\r\nHost: Rules.Test.\r\n\r\n")


async def test_a_ruled_ip_address_is_terminated_with_a_leaf_for_that_address(world):
    broker = world.broker(
        credentials=(), requests=parse_request_rules([{"host": LOOPBACK, "methods": ["GET"]}])
    )
    port = world.https.port
    async with proxied(world, broker) as proxy:
        async with await open_tls(proxy.path, LOOPBACK, port, client_context(broker)) as tls:
            alt_names = tls.getpeercert()["subjectAltName"]
            allowed = await Client(tls).request("GET", "/x", f"{LOOPBACK}:{port}")
        async with await open_tls(proxy.path, LOOPBACK, port, client_context(broker)) as tls:
            refused = await Client(tls).request("PUT", "/x", f"{LOOPBACK}:{port}")
    assert alt_names == (("IP Address", LOOPBACK),)
    assert (allowed.status, refused.status) == (200, 403)
    assert [(r.host, r.method, r.allowed) for r in proxy.records] == [
        (LOOPBACK, "GET", True),
        (LOOPBACK, "PUT", False),
    ]


async def _through_address(proxy_path: str, name: str | None, port: int, *, socks: bool, world):
    """A TLS client tunnelling to the origin's address, naming `name` in SNI (the
    bypass `curl --connect-to` or `--resolve` makes): what it got."""
    from ._origins import open_socks

    raw = await (open_socks if socks else open_connect)(proxy_path, LOOPBACK, port)
    context = client_context(trust=world.origin_ca)
    if name is None:
        context.check_hostname = False
    tls = trio.SSLStream(raw, context, server_hostname=name, https_compatible=True)
    try:
        await tls.do_handshake()
        reply = await Client(tls).request("POST", "/anything", f"{name or LOOPBACK}:{port}")
    except (trio.BrokenResourceError, AssertionError) as error:
        return f"cut: {type(error).__name__}"
    finally:
        await trio.aclose_forcefully(tls)
    return reply.status


@pytest.mark.parametrize("socks", [False, True])
async def test_a_ruled_host_by_its_address_with_its_name_in_sni_is_cut(world, socks):
    """CONNECT or SOCKS5 to the origin's address with the ruled host's name in SNI
    (curl's --connect-to / --resolve) would be a blind tunnel that no request rule
    judges: the proxy reads the SNI and cuts it, saying why. A name no rule names, or
    none, passes blind (the control: the same origin answers)."""
    broker = world.broker()
    port = world.https.port
    async with proxied(world, broker) as proxy:
        cut = await _through_address(proxy.path, "api.test", port, socks=socks, world=world)
        cased = await _through_address(proxy.path, "RULES.test.", port, socks=socks, world=world)
        free = await _through_address(proxy.path, "free.test", port, socks=socks, world=world)
        bare = await _through_address(proxy.path, None, port, socks=socks, world=world)
    assert cut == cased == "cut: BrokenResourceError"
    assert free == bare == 200
    assert [seen.target for seen in world.https.requests] == [b"/anything", b"/anything"]
    reasons = [record.reason for record in proxy.records]
    assert reasons == [
        f"the tunnel to {LOOPBACK}:{port} was cut: SNI names api.test, a host with request "
        "rules; reach it by its name",
        f"the tunnel to {LOOPBACK}:{port} was cut: SNI names rules.test, a host with request "
        "rules; reach it by its name",
    ]
    assert all(r.method == "CONNECT" and not r.allowed for r in proxy.records)


async def test_a_plain_request_naming_a_ruled_host_over_another_tunnel_is_cut(world):
    broker = world.broker()
    port = world.plain.port
    async with (
        proxied(world, broker) as proxy,
        await open_connect(proxy.path, LOOPBACK, port) as tunnel,
    ):
        await tunnel.send_all(b"GET /ok/x HTTP/1.1\r\nHost: free.test\r\n\r\n")
        passed, _ = await read_head_of(tunnel)
        await tunnel.send_all(b"POST /admin HTTP/1.1\r\nHOST: plain.test.:80\r\n\r\n")
        with trio.fail_after(5):
            rest = await tunnel.receive_some(65536)
    assert passed.startswith(b"HTTP/1.1 200") and rest == b""
    assert [seen.target for seen in world.plain.requests] == [b"/ok/x"]
    (record,) = proxy.records
    assert record.protocol == "http" and not record.allowed
    assert "a request's Host names plain.test, a host with request rules" in record.reason


async def read_head_of(stream):
    from ._origins import read_head

    return await read_head(stream)


async def test_a_name_resolving_to_a_ruled_address_is_cut(world):
    broker = world.broker(
        credentials=(), requests=parse_request_rules([{"host": LOOPBACK, "methods": ["GET"]}])
    )
    port = world.https.port
    async with proxied(world, broker) as proxy:
        stream = await trio.open_unix_socket(proxy.path)
        async with stream:
            await stream.send_all(
                b"CONNECT free.test:%d HTTP/1.1\r\nHost: free.test\r\n\r\n" % port
            )
            with trio.fail_after(5):
                data = b""
                while more := await stream.receive_some(65536):
                    data += more
    assert data.startswith(b"HTTP/1.1 200")  # the destination rules allowed it
    (record,) = proxy.records
    assert record.reason == (
        f"the tunnel to free.test:{port} was cut: it reaches {LOOPBACK}, a host with request "
        "rules; reach it by its address"
    )
    assert world.https.connections == 1 and world.https.requests == []


async def test_a_connect_whose_body_never_comes_is_answered(world):
    broker = world.broker()
    async with proxied(world, broker, handshake_timeout=0.5) as proxy:
        stream = await trio.open_unix_socket(proxy.path)
        async with stream:
            await stream.send_all(
                b"CONNECT free.test:443 HTTP/1.1\r\nHost: free.test:443\r\nContent-Length: 10\r\n\r\n"
            )
            with trio.fail_after(5):
                data = b""
                while more := await stream.receive_some(65536):
                    data += more
    assert data.startswith(b"HTTP/1.1 408")
    assert b"body never came" in data
    assert proxy.decisions == []  # nothing was opened


async def test_the_terminated_side_refuses_renegotiation(world):
    broker = world.broker()
    context = broker.authority.leaf_for("api.test").server_context()
    assert context.options & ssl.OP_NO_RENEGOTIATION
    assert broker.upstream.options & ssl.OP_NO_RENEGOTIATION


@pytest.mark.parametrize(
    "gone",
    [
        ssl.SSLEOFError(8, "EOF occurred in violation of protocol"),
        ssl.SSLZeroReturnError(6, "TLS/SSL connection has been closed (EOF)"),
        ssl.SSLSyscallError(5, "Some I/O error occurred"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_client_gone_mid_handshake_is_named_so_whatever_openssl_raises(gone):
    """Which error a client closing mid-handshake raises depends on the OpenSSL build
    (Debian 12's Python raises SSLZeroReturnError): each is told the same way."""
    from stockade.network._terminate import _client_failure

    failure = trio.BrokenResourceError()
    failure.__cause__ = gone
    text = _client_failure("api.example", failure)
    assert text.startswith("the client closed the connection during the TLS handshake")

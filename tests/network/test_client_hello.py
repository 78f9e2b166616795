"""Reading a terminated connection's first bytes (issue 41): a real ClientHello, made
by Python's `ssl`, whole or in pieces; plain text; what cannot be read."""

from __future__ import annotations

import contextlib
import ssl

from stockade.network._client_hello import HELLO_LIMIT, Hello, HostLines, read_hello

from ._origins import client_hello


def test_the_alpn_a_client_offers_is_read():
    assert read_hello(client_hello(["h2", "http/1.1"])) == Hello(
        "tls", (b"h2", b"http/1.1"), "api.test"
    )
    assert read_hello(client_hello(None)) == Hello("tls", None, "api.test")
    h2 = read_hello(client_hello(["h2"]))
    assert h2 == Hello("tls", (b"h2",), "api.test") and h2.refuses_http1
    assert not read_hello(client_hello(["http/1.1"])).refuses_http1
    assert not read_hello(client_hello(None)).refuses_http1


def test_more_bytes_are_asked_for_until_the_hello_is_whole():
    hello = client_hello(["h2"])
    for cut in (0, 1, 4, 5, 40, len(hello) - 1):
        assert read_hello(hello[:cut]) is None
    # A ClientHello split over two records (as a large one is) is read across them.
    body = hello[5:]
    split = (
        hello[:3]
        + (20).to_bytes(2, "big")
        + body[:20]
        + hello[:3]
        + (len(body) - 20).to_bytes(2, "big")
        + body[20:]
    )
    assert read_hello(split[: len(split) - 1]) is None
    assert read_hello(split) == Hello("tls", (b"h2",), "api.test")


def test_plain_text_and_unreadable_tls():
    assert read_hello(b"GET / HTTP/1.1\r\n") == Hello("plain")
    assert read_hello(b"\x16\x03\x01\x00\x04\x02\x00\x00\x00") == Hello("unknown")  # not a hello
    # A whole ClientHello whose inner lengths disagree: the handshake decides.
    broken = bytearray(client_hello(None))
    broken[6:9] = (40).to_bytes(3, "big")  # the hello's length: it ends in its session id
    assert read_hello(bytes(broken)) == Hello("unknown")
    # A record that never ends is read up to the limit only.
    endless = b"\x16\x03\x01\xff\xff" + bytes(HELLO_LIMIT)
    assert read_hello(endless) == Hello("unknown")


def _hello_for(name: str | None) -> bytes:
    context = ssl.create_default_context()
    context.check_hostname = name is not None
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=name)
    with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the server's answer
        tls.do_handshake()
    return outgoing.read()


def test_the_server_name_a_client_sends_is_read():
    assert read_hello(_hello_for("API.Test.")).server_name == "API.Test."
    assert read_hello(_hello_for("other.test")).server_name == "other.test"
    assert read_hello(_hello_for(None)).server_name is None
    # An address is sent as no SNI at all (RFC 6066).
    assert read_hello(_hello_for("127.0.0.1")).server_name is None


def test_the_hosts_plain_requests_name_are_read_across_chunks():
    stream = (
        b"GET / HTTP/1.1\r\nHost: api.test:8080\r\nAccept: */*\r\n\r\n"
        b"GET http://other.test/x HTTP/1.1\r\nhOsT :  Third.Test.\r\n\r\n"
        b"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"
    )
    for size in (1, 3, 17, len(stream)):
        lines = HostLines()
        found = [
            host for i in range(0, len(stream), size) for host in lines.feed(stream[i : i + size])
        ]
        assert found == ["api.test", "other.test", "Third.Test.", "::1"], size
    lines = HostLines()
    assert lines.feed(b"X-Long: " + b"a" * 10_000 + b" Host: api.test\r\n") == []
    assert lines.feed(b"Host: b.test") == []  # the line has not ended yet
    assert lines.feed(b"\r\n") == ["b.test"]

"""Judging one request to a ruled host (issue 41), pure: what goes to the origin, what
is refused and why, and what the record keeps."""

from __future__ import annotations

import base64

import pytest

from stockade.network import make_broker, parse_credential_rules, parse_request_rules
from stockade.network._credentials import scan_headers
from stockade.network._request_rules import TargetError
from stockade.network._requests import (
    BadRequest,
    host_agrees,
    judge_request,
    origin_form,
    record_path,
    ruled_name,
)

BROKER = make_broker(
    parse_credential_rules(
        [
            {"host": "git.test", "value_from": "GIT", "placeholder_env": "GIT_TOKEN"},
            {"host": "key.test", "header": "X-Key", "value_from": "KEY", "scheme": "Key"},
        ]
    ),
    parse_request_rules([{"host": "git.test", "methods": ["GET", "POST"]}]),
    {"GIT": "real-git", "KEY": "real-key"},
)
assert BROKER is not None
PLACEHOLDER = BROKER.placeholders["GIT_TOKEN"]


def judge(method, target, headers, host="git.test", port=443, carried="https"):
    return judge_request("c", BROKER, method, target, headers, host, port, carried)


def basic(user: str, password: str) -> bytes:
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())


def test_a_basic_credential_gets_the_real_value_and_http10_gets_a_host():
    judged = judge(
        b"GET",
        b"/repo.git/info/refs?service=git-upload-pack",
        [
            (b"authorization", basic("x-access-token", PLACEHOLDER)),
        ],
    )
    assert judged.forward is not None and judged.refusal is None
    headers = dict(judged.forward.headers)
    assert headers[b"authorization"] == basic("x-access-token", "real-git")
    assert headers[b"host"] == b"git.test"  # none was sent: HTTP/1.0
    assert judged.forward.target == b"/repo.git/info/refs?service=git-upload-pack"
    record = judged.record
    assert (record.path, record.credentials, record.allowed, record.status) == (
        "/repo.git/info/refs",
        ("GIT",),
        True,
        None,
    )
    assert "real-git" not in repr(judged.record)


def test_the_header_form_is_set_with_its_scheme_on_any_port():
    judged = judge(
        b"GET", b"/", [(b"host", b"key.test:8443"), (b"x-key", b"mine")], "key.test", 8443
    )
    assert judged.forward is not None
    assert judged.forward.headers == [(b"host", b"key.test:8443"), (b"X-Key", b"Key real-key")]
    assert judged.record.reason == "no request rule names key.test"


@pytest.mark.parametrize(
    ("method", "target", "headers", "says"),
    [
        (b"CONNECT", b"other.test:443", [], "the proxy already terminates git.test"),
        (b"GET", b"/", [(b"host", b"git.test:444")], "disagrees with the target git.test:443"),
        (b"GET", b"/", [(b"host", b"a"), (b"host", b"b")], "more than one Host header"),
        (b"GET", b"https://other.test/", [], "the target names other.test, not git.test"),
        (b"GET", b"other.test:443", [], "neither a path nor an absolute URI"),
        (b"DELETE", b"/", [], "git.test allows GET, POST on any path"),
        (b"GET", b"/", [(PLACEHOLDER.encode(), b"x")], "in a header's name"),
        (b"GET", b"/" + PLACEHOLDER.upper().encode(), [], "in the request target"),
    ],
    # The placeholder is random per process, and xdist's workers must collect the
    # same ids: it is named, not spelled.
    ids=lambda value: (
        value.replace(PLACEHOLDER.upper().encode(), b"PLACEHOLDER").decode()
        if isinstance(value, bytes)
        else None
    ),
)
def test_refusals_name_their_reason_in_one_line(method, target, headers, says):
    judged = judge(method, target, headers)
    assert judged.forward is None
    assert says in judged.record.reason
    assert judged.refusal == f"stockade: {judged.record.reason}"
    assert "\n" not in judged.refusal
    assert not judged.record.allowed and judged.record.credentials == ()


def test_plain_http_replaces_nothing_and_refuses_a_placeholder():
    judged = judge(
        b"GET",
        b"http://git.test/x",
        [(b"authorization", basic("u", PLACEHOLDER))],
        carried="http",
        port=80,
    )
    assert judged.forward is None
    assert "a credential never goes over plain http" in judged.record.reason
    assert judged.record.protocol == "http"
    clean = judge(b"GET", b"http://git.test/x", [], carried="http", port=80)
    assert clean.forward is not None and clean.forward.target == b"/x"
    assert (b"host", b"git.test") in clean.forward.headers
    assert clean.record.reason.endswith("; no credential for git.test goes over plain http")


def test_the_small_pieces():
    assert ruled_name("API.Test.") == "api.test"
    assert ruled_name("::ffff:127.0.0.1") == "127.0.0.1"
    assert ruled_name("bad host") is None
    assert origin_form("https://git.test:8443?q", "git.test") == "/?q"
    assert origin_form("*", "git.test") == "*"
    with pytest.raises(TargetError):
        origin_form("ftp://git.test/", "git.test")
    assert record_path("/a/./b/../c?secret=1") == "/a/c"
    assert record_path("/a;b?secret=1") == "/a;b"
    assert host_agrees([(b"host", b"[::1]:8080")], "::1", 8080, 80)
    assert not host_agrees([], "git.test", 443, 443)
    with pytest.raises(BadRequest):
        host_agrees([(b"host", b"git.test")], "git.test", 8443, 443)
    found = scan_headers(
        "other.test",
        [(b"authorization", basic("u", PLACEHOLDER)), (b"x-again", PLACEHOLDER.encode())],
        BROKER.credentials,
        "why",
    )
    assert len(found) == 1  # each placeholder once
    assert found[0].reason.endswith("in the header 'authorization': why; not replaced, refused")

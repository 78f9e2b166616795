"""Issue 41: rules by method and path on a terminated host. `api.creds.test` allows GET
and HEAD on `/repos/org/*` and `/public/**`; each request is judged on its normalised
path (escapes of unreserved characters decoded, dot segments resolved, `//`
collapsed; path parameters and shape-changing escapes refused), the origin is sent
exactly the path judged, and a refusal is a 403 whose one-line reason the command
reads, and a `network/request` event. Unconfined, the origin takes every one of them
(the control).
"""

from __future__ import annotations

import re

from .support import API, API_RULE, API_SECRET_VAR, Rig, run_harness

# (method, path as the client sends it, allowed, path the origin reads when allowed)
CASES = [
    ("GET", "/repos/org/x", True, "/repos/org/x"),
    ("HEAD", "/repos/org/x", True, "/repos/org/x"),
    ("POST", "/repos/org/x", False, None),
    ("DELETE", "/repos/org/x", False, None),
    ("GET", "/repos/org/x/y", False, None),  # `*` is one segment
    ("GET", "/repos/other/x", False, None),
    ("GET", "/REPOS/org/x", False, None),  # paths are case-sensitive
    ("GET", "/repos/org/%2e%2e/other/x", False, None),  # is /repos/other/x
    ("GET", "/repos/org/%2E%2e/org/x", True, "/repos/org/x"),
    ("GET", "/repos/org/../../repos/org/y", True, "/repos/org/y"),
    ("GET", "/repos/org/x/%2e%2e/y", True, "/repos/org/y"),
    ("GET", "//repos//org//x", True, "/repos/org/x"),
    ("GET", "/public//deep/er/file", True, "/public/deep/er/file"),
    ("GET", "/public/../repos/other/x", False, None),
    ("GET", "/repos/org/%78", True, "/repos/org/x"),
    ("GET", "/repos/org/x;a=b", False, None),
    ("GET", "/repos/org/..;/other/x", False, None),
    ("GET", "/repos/org/a%3Bb", False, None),
    ("GET", "/repos/org/a%2Fb", False, None),
    ("GET", "/repos/org/a%252e", False, None),  # a double encoding
    ("GET", "/repos/org/x?q=1&t=2", True, "/repos/org/x?q=1&t=2"),
]


def _curl(rig: Rig, method: str, path: str) -> str:
    url = f"https://{API}:{rig.port(API)}{path}"
    verb = "-I" if method == "HEAD" else f"-X {method}"
    return (
        f"curl -sS --max-time 20 --path-as-is {verb} -o body -w 'code=%{{http_code}}\\n' "
        f"-H \"Authorization: Bearer $API_TOKEN\" '{url}'; "
        "echo \"newlines=$(tr -cd '\\n' < body | wc -c) body=$(head -c 300 body)\""
    )


def test_the_origin_takes_every_request_unconfined(origins: Rig):
    secret = origins.secrets[API_SECRET_VAR]
    for method, path, _, _ in CASES:
        assert (
            origins.direct(API, path, method=method, headers={"Authorization": f"Bearer {secret}"})
            == 200
        ), (method, path)
    # The origin reads the path as sent: nothing normalises it on the way (but
    # http.server itself, which folds a leading `//`, against open redirects).
    sent = ["/" + path.lstrip("/") if path.startswith("//") else path for _, path, _, _ in CASES]
    assert [seen.path for seen in origins.origins[API].seen] == sent


def test_methods_and_paths_are_judged_on_the_normalised_path(backend: str, origins: Rig):
    commands = [_curl(origins, method, path) for method, path, _, _ in CASES]
    outcome = run_harness(origins, backend, commands)
    reached = []
    for index, (method, path, allowed, sent) in enumerate(CASES):
        text = outcome.text(index)
        code = re.search(r"code=(\d+)", text)
        assert code is not None, (method, path, text)
        events = outcome.of(index, outcome.requests())
        assert len(events) == 1, (method, path, events)
        event = events[0]
        assert (event["method"], event["host"], event["allowed"]) == (method, API, allowed), event
        assert "?" not in event["path"], event  # the query is never logged
        if allowed:
            assert code.group(1) == "200", (method, path, text)
            assert event["rule"] == API_RULE and event["credentials"] == [API_SECRET_VAR], event
            assert event["path"] == sent.partition("?")[0], event
            reached.append((method, sent))
        else:
            assert code.group(1) == "403", (method, path, text)
            newlines, body = re.findall(r"^newlines=(\d+) body=(.*)$", text, re.M)[0]
            assert int(newlines) <= 1 and API in body and method in body, (method, path, text)
            assert event["reason"] and event["credentials"] == [], event
    seen = [(s.method, s.path) for s in origins.origins[API].seen]
    assert seen == reached, seen


def test_each_request_on_one_connection_is_judged(backend: str, origins: Rig):
    """curl reuses one TLS connection for several URLs: a refusal in the middle does
    not let the next request through unjudged, nor refuse it."""
    base = f"https://{API}:{origins.port(API)}"
    command = (
        f"curl -sS --max-time 20 -w 'code=%{{http_code}}\\n' -o /dev/null -o /dev/null -o /dev/null "
        f'-H "Authorization: Bearer $API_TOKEN" {base}/repos/org/a {base}/repos/other/b {base}/repos/org/c'
    )
    outcome = run_harness(origins, backend, [command])
    codes = re.findall(r"code=(\d+)", outcome.text(0))
    assert codes == ["200", "403", "200"], outcome.text(0)
    assert [s.path for s in origins.origins[API].seen] == ["/repos/org/a", "/repos/org/c"]
    events = outcome.of(0, outcome.requests())
    assert [(e["path"], e["allowed"]) for e in events] == [
        ("/repos/org/a", True),
        ("/repos/other/b", False),
        ("/repos/org/c", True),
    ], events


def test_the_ruled_origin_by_its_address_is_cut(backend: str, origins: Rig):
    """The ruled host reached by an address the allowlist names, its name in SNI and
    Host (curl's --connect-to: CONNECT by address) would be a blind tunnel no request
    rule judges: the proxy reads the ClientHello's SNI and cuts the tunnel, with a
    record saying to reach the host by its name; the origin reads nothing. By its name
    the same POST is judged (and refused by the rule). The control: unconfined, the
    same --connect-to route reaches the origin and its POST is read."""
    port = origins.port(API)
    route = (
        f"curl -sS --max-time 20 -X POST -o /dev/null -w 'code=%{{http_code}}\\n' "
        f"--cacert {origins.upstream_ca} --connect-to {API}:{port}:127.0.0.1:{port} "
        f'-H "Authorization: Bearer $API_TOKEN" https://{API}:{port}/repos/org/x; echo "exit=$?"'
    )
    by_name = (
        f"curl -sS --max-time 20 -X POST -o /dev/null -w 'code=%{{http_code}}\\n' "
        f'-H "Authorization: Bearer $API_TOKEN" https://{API}:{port}/repos/org/x'
    )
    outcome = run_harness(origins, backend, [route, by_name], unconfined=(route,))
    assert "code=000" in outcome.text(0) and "exit=0" not in outcome.text(0), outcome.text(0)
    assert "code=403" in outcome.text(1), outcome.text(1)
    # The control reached the origin by that route: its POST was read (the harness's
    # own API_TOKEN is the real value, so the origin took it).
    assert "code=200" in outcome.controls[0], outcome.controls[0]
    (seen,) = origins.origins[API].seen
    assert seen.method == "POST" and seen.header("authorization") == (
        f"Bearer {origins.secrets[API_SECRET_VAR]}"
    )
    (cut,) = outcome.of(0, outcome.requests())
    assert (cut["method"], cut["host"], cut["allowed"]) == ("CONNECT", "127.0.0.1", False)
    assert cut["reason"] == (
        f"the tunnel to 127.0.0.1:{port} was cut: SNI names {API}, a host with request "
        "rules; reach it by its name"
    )
    assert [c["host"] for c in outcome.of(0, outcome.connects())] == ["127.0.0.1"]
    (judged,) = outcome.of(1, outcome.requests())
    assert (judged["method"], judged["allowed"]) == ("POST", False)

"""Request rules (issue 41), pure: the rules' syntax, and the decision on the normalised
path, with every case and encoding trick the issue lists judged as the origin reads it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import stockade.network
from stockade.errors import ConfigError
from stockade.network import (
    RequestRule,
    Target,
    TargetError,
    decide_request,
    normalise_path,
    normalise_target,
    parse_request_rule,
    parse_request_rules,
)

GITHUB = parse_request_rules(
    [{"host": "api.github.com", "methods": ["GET", "HEAD"], "paths": ["/repos/org/**"]}]
)


def decide(method: str, target: str, host: str = "api.github.com"):
    return decide_request(method, target, host, GITHUB)


def test_a_rule_parses_from_a_mapping_with_its_host_normalised():
    rule = parse_request_rule(
        {"host": "API.GitHub.com.", "methods": ["get", "Head"], "paths": ["/repos/org/*"]}
    )
    assert rule.host == "api.github.com"
    assert rule.methods == frozenset({"GET", "HEAD"})
    assert rule.paths == ("/repos/org/*",)
    assert rule.name == "api.github.com GET,HEAD /repos/org/*"
    assert parse_request_rule({"host": "Bücher.de", "methods": ["GET"]}).host == "xn--bcher-kva.de"
    assert parse_request_rule({"host": "127.0.0.1", "paths": ["/"]}).host == "127.0.0.1"
    assert parse_request_rule({"host": "::ffff:127.0.0.1", "paths": ["/"]}).host == "127.0.0.1"
    named = parse_request_rule({"host": "a.example", "methods": ["GET"], "name": "read-only"})
    assert named.name == "read-only"
    # Built directly, the same checks and normalisation apply.
    assert RequestRule("A.example", ["get"]) == parse_request_rule(
        {"host": "a.example", "methods": ["GET"]}
    )


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("api.github.com", "a rule is a mapping"),
        ({"methods": ["GET"]}, "`host` is required"),
        ({"host": "a.example", "method": ["GET"]}, "unknown key 'method'"),
        ({"host": "a.example"}, "give `methods`, `paths` or both"),
        ({"host": "*.github.com", "methods": ["GET"]}, "without wildcard or port"),
        ({"host": "a.example:443", "methods": ["GET"]}, "without wildcard or port"),
        ({"host": "bad host", "methods": ["GET"]}, "control or space"),
        ({"host": "a.example", "methods": "GET"}, "a list of HTTP methods"),
        ({"host": "a.example", "methods": []}, "leave it out to allow every method"),
        ({"host": "a.example", "methods": ["GE T"]}, "is not an HTTP method"),
        ({"host": "a.example", "paths": "/x"}, "a list of path globs"),
        ({"host": "a.example", "paths": []}, "leave it out to allow every path"),
        ({"host": "a.example", "paths": ["repos"]}, "does not begin with '/'"),
        ({"host": "a.example", "paths": ["/a//b"]}, "write the path '/a//b' as '/a/b'"),
        ({"host": "a.example", "paths": ["/a/../b"]}, "as '/b'"),
        ({"host": "a.example", "paths": ["/%61"]}, "as '/a'"),
        ({"host": "a.example", "paths": ["/a;b"]}, "path parameters are refused"),
        ({"host": "a.example", "paths": ["/a?b=1"]}, "no query or fragment"),
        ({"host": "a.example", "paths": ["/a**"]}, "`**` is a whole segment"),
        ({"host": "a.example", "paths": [""]}, "a non-empty string"),
        ({"host": "a.example", "paths": ["/x"], "name": ""}, "`name` must be a non-empty"),
    ],
)
def test_a_wrong_rule_is_one_line_naming_what_is_wrong(value, words):
    with pytest.raises(ConfigError) as caught:
        parse_request_rule(value, "request_rules[3]")
    message = str(caught.value)
    assert words in message
    assert message.startswith("request_rules[3]") or "rule is a mapping" in message
    assert "\n" not in message


def test_the_list_is_a_list_and_names_are_unique():
    with pytest.raises(ConfigError, match="must be a list"):
        parse_request_rules({"host": "a.example", "methods": ["GET"]})
    with pytest.raises(ConfigError, match=r"request_rules\[1\]: the name 'r' is taken"):
        parse_request_rules(
            [
                {"host": "a.example", "methods": ["GET"], "name": "r"},
                {"host": "b.example", "methods": ["GET"], "name": "r"},
            ]
        )
    with pytest.raises(ConfigError, match=r"request_rules\[1\]: unknown key"):
        parse_request_rules([{"host": "a.example", "methods": ["GET"]}, {"host": "b", "x": 1}])


def test_get_is_allowed_and_post_refused_with_a_one_line_reason():
    allowed = decide("GET", "/repos/org/stockade/issues?state=open")
    assert allowed.allowed
    assert allowed.rule == GITHUB[0].name
    assert allowed.target == "/repos/org/stockade/issues?state=open"
    refused = decide("POST", "/repos/org/stockade/issues")
    assert not refused.allowed
    assert refused.rule is None
    assert refused.reason == (
        "POST '/repos/org/stockade/issues' to api.github.com is refused: "
        "api.github.com allows GET, HEAD on /repos/org/**"
    )
    assert not decide("DELETE", "/repos/org/x").allowed


def test_the_method_is_compared_upper_cased_and_sent_so():
    verdict = decide("get", "/repos/org/x")
    assert verdict.allowed
    assert verdict.method == "GET"
    assert not decide("post", "/repos/org/x").allowed
    refused = decide("GE T", "/repos/org/x")
    assert not refused.allowed
    assert "is not an HTTP method" in refused.reason


def test_path_globs():
    rules = parse_request_rules(
        [
            {"host": "a.example", "paths": ["/repos/org/*"]},
            {"host": "a.example", "paths": ["/v1/*/files/*.json", "/static/**"]},
        ]
    )

    def allowed(path: str) -> bool:
        return decide_request("GET", path, "a.example", rules).allowed

    # `*` is one segment, never a `/`.
    assert allowed("/repos/org/stockade")
    assert not allowed("/repos/org/stockade/issues")
    assert not allowed("/repos/org")
    assert not allowed("/repos/other/stockade")
    assert allowed("/v1/abc/files/data.json")
    assert not allowed("/v1/abc/files/data.txt")
    assert not allowed("/v1/a/b/files/data.json")
    # `**` is any number of segments, none too.
    assert allowed("/static")
    assert allowed("/static/")
    assert allowed("/static/a/b/c.css")
    assert not allowed("/staticx")
    # Paths are case-sensitive: a glob for `org` does not allow `ORG` (refused, the
    # safe direction when an origin folds case).
    assert not allowed("/repos/ORG/stockade")


@pytest.mark.parametrize(
    ("target", "judged"),
    [
        # `..` and `.` segments resolved, in every spelling.
        ("/repos/org/x/../../../admin", "/admin"),
        ("/repos/org/x/../../admin", "/repos/admin"),
        ("/repos/org/%2e%2e/%2E%2E/admin", "/admin"),
        ("/repos/org/.%2e/.%2E/admin", "/admin"),
        ("/repos/org/./x", "/repos/org/x"),
        ("/../../../admin", "/admin"),
        # `//` collapsed.
        ("//repos//org///x", "/repos/org/x"),
        # Unreserved characters decoded; other escapes kept, hex upper-cased.
        ("/repos/%6F%72%67/x", "/repos/org/x"),
        ("/repos/org/a%20b%c3%a9", "/repos/org/a%20b%C3%A9"),
        # A trailing slash is kept.
        ("/repos/org/x/", "/repos/org/x/"),
        ("/repos/org/x/.", "/repos/org/x/"),
        # The absolute form names the host; its path is judged the same.
        ("http://API.github.com:443/repos/org/x/../y", "/repos/org/y"),
        ("https://api.github.com?x=1", "/"),
    ],
)
def test_the_path_is_judged_normalised_and_sent_as_judged(target, judged):
    verdict = decide("GET", target)
    assert verdict.target.partition("?")[0] == judged
    assert verdict.allowed == judged.startswith("/repos/org")
    assert judged in verdict.reason


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("/repos/org/x/..;/..;/admin", "path parameters are refused"),
        ("/repos/org/x;jsessionid=1", "path parameters are refused"),
        ("/repos/org/x%3B/../../admin", "an encoded ';'"),
        ("/repos/org%2F..%2F..%2Fadmin", "an encoded '/'"),
        ("/repos/org%2f..%2fadmin", "an encoded '/'"),
        ("/repos/org/x%5C..%5Cadmin", "an encoded '\\'"),
        ("/repos/org/x%00", "an encoded NUL"),
        ("/repos/org/%252e%252e/admin", "double encoding"),
        ("/repos/org/%zz", "malformed escape"),
        ("/repos/org/%2", "malformed escape"),
        ("/repos/org/x\\..\\admin", "a character a URI may not hold"),
        ("/repos/org/x y", "space, control or non-ASCII"),
        ("/repos/org/x\r\nHost: evil", "space, control or non-ASCII"),
        ("/repos/org/é", "space, control or non-ASCII"),
        ("/repos/org/x#frag", "a fragment"),
        ("repos/org/x", "does not begin with '/'"),
        ("", "the target is empty"),
        ("http://evil.example/repos/org/x", "names evil.example, not api.github.com"),
        ("http://user@api.github.com/repos/org/x", "user information"),
    ],
)
def test_what_origins_read_differently_is_refused(target, words):
    verdict = decide("GET", target)
    assert not verdict.allowed
    assert words in verdict.reason, verdict.reason
    assert "\n" not in verdict.reason and "\r" not in verdict.reason


def test_a_host_no_rule_names_is_not_judged_here():
    verdict = decide_request("POST", "/x;y/%2F", "other.example", GITHUB)
    assert verdict.allowed
    assert verdict.rule is None
    assert verdict.target == "/x;y/%2F"
    assert verdict.reason == "no request rule names other.example"
    # The host is compared normalised.
    assert not decide_request("POST", "/repos/org/x", "API.GITHUB.COM.", GITHUB).allowed


def test_asterisk_form_is_allowed_only_by_a_rule_for_every_path():
    methods_only = parse_request_rules([{"host": "a.example", "methods": ["OPTIONS"]}])
    assert decide_request("OPTIONS", "*", "a.example", methods_only).allowed
    paths = parse_request_rules([{"host": "a.example", "paths": ["/**"]}])
    assert not decide_request("OPTIONS", "*", "a.example", paths).allowed
    assert decide_request("OPTIONS", "/", "a.example", paths).allowed


def test_several_rules_for_a_host_allow_what_any_one_allows():
    rules = parse_request_rules(
        [
            {"host": "a.example", "methods": ["GET"]},
            {"host": "a.example", "methods": ["POST"], "paths": ["/graphql"], "name": "gql"},
        ]
    )
    assert decide_request("GET", "/anything", "a.example", rules).allowed
    assert decide_request("POST", "/graphql", "a.example", rules).rule == "gql"
    refused = decide_request("POST", "/other", "a.example", rules)
    assert refused.reason.endswith("a.example allows GET on any path; or POST on /graphql")


def test_a_long_path_is_cut_in_the_reason():
    verdict = decide("POST", "/repos/org/" + "a" * 5000)
    assert not verdict.allowed
    assert len(verdict.reason) < 400


def test_normalise_target_and_path_directly():
    assert normalise_target("/a/./b/../c?x=%2F..") == Target("/a/c", "x=%2F..")
    assert str(normalise_target("/a?")) == "/a?"
    assert normalise_path("/") == "/"
    with pytest.raises(TargetError):
        normalise_target("http://a.example/x", "b.example")


_SEGMENT = st.sampled_from(["a", "b", ".", "..", "", "%2e", "%2E%2e", ".%2e", "%61"])


@given(st.lists(_SEGMENT, max_size=12))
def test_a_normalised_path_is_a_fixed_point_with_no_dot_segment(segments):
    normal = normalise_path("/" + "/".join(segments))
    assert normalise_path(normal) == normal
    assert normal.startswith("/")
    assert "//" not in normal
    assert not any(part in (".", "..") for part in normal.split("/"))


def test_the_surface_names_the_request_rules():
    for name in ("RequestRule", "RequestVerdict", "decide_request", "parse_request_rules"):
        assert name in stockade.network.__all__

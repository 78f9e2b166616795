"""Credential rules and placeholders (issue 41), pure: the rules' syntax, the swap in the
headers of the credential's own host only, and every misplaced placeholder reported,
with the real value in nothing returned for logging."""

from __future__ import annotations

import base64
import json
import re

import attrs
import msgspec
import pytest

from stockade.errors import ConfigError
from stockade.network import (
    PLACEHOLDER_PREFIX,
    CredentialRule,
    CredentialUsed,
    PlaceholderMisplaced,
    PlaceholderScanner,
    Secret,
    load_credentials,
    make_placeholder,
    parse_credential_rule,
    parse_credential_rules,
    parse_request_rules,
    placeholder_environment,
    scan_target,
    secret_variables,
    substitute_headers,
    terminated_hosts,
)

REAL = "ghp_realtoken0123456789"
NPM_REAL = "npm_secret_value"
ENVIRON = {"GITHUB_TOKEN": REAL, "NPM_TOKEN": NPM_REAL, "EMPTY": "", "HOME": "/root"}

RULES = parse_credential_rules(
    [
        {"host": "api.github.com", "value_from": "GITHUB_TOKEN", "placeholder_env": "GITHUB_TOKEN"},
        {
            "host": "github.com",
            "header": "Authorization",
            "value_from": "GITHUB_TOKEN",
            "placeholder_env": "GITHUB_TOKEN",
        },
        {
            "host": "registry.npmjs.org",
            "header": "Authorization",
            "value_from": "NPM_TOKEN",
            "scheme": "Bearer",
        },
    ]
)


@pytest.fixture
def credentials():
    return load_credentials(RULES, ENVIRON)


def placeholder_of(credentials) -> str:
    return placeholder_environment(credentials)["GITHUB_TOKEN"]


def no_secret_in(*things: object) -> None:
    for thing in things:
        text = repr(thing) + str(thing)
        assert REAL not in text and NPM_REAL not in text, text


def test_a_placeholder_is_fresh_and_long():
    made = {make_placeholder() for _ in range(1000)}
    assert len(made) == 1000
    for placeholder in made:
        assert re.fullmatch(PLACEHOLDER_PREFIX + "[0-9a-f]{40}", placeholder)


def test_rules_parse_from_mappings_with_the_host_normalised():
    rule = parse_credential_rule(
        {
            "host": "API.GitHub.com.",
            "header": "Authorization",
            "value_from": "T",
            "scheme": "Bearer",
        }
    )
    assert rule == CredentialRule("api.github.com", "Authorization", "T", "Bearer", None)
    assert rule.form == "header"
    assert rule.name == "T"
    held = parse_credential_rule({"host": "a.example", "value_from": "T", "placeholder_env": "P"})
    assert held.form == "placeholder"
    assert held.header is None


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ([], "a rule is a mapping"),
        ({"host": "a.example"}, "`value_from` is required"),
        ({"value_from": "T", "header": "X"}, "`host` is required"),
        ({"host": "a.example", "value_from": "T", "value": "x"}, "unknown key 'value'"),
        ({"host": "a.example", "value_from": "T"}, "give `header`"),
        ({"host": "a.example", "value_from": "1T", "header": "X"}, "environment variable's name"),
        ({"host": "a.example", "value_from": "T-X", "header": "X"}, "environment variable's name"),
        ({"host": "a.example", "value_from": "T", "placeholder_env": "A B"}, "variable's name"),
        ({"host": "a.example", "value_from": "T", "header": "Bad Header"}, "not an HTTP token"),
        ({"host": "a.example", "value_from": "T", "header": "X", "scheme": "a b"}, "HTTP token"),
        (
            {"host": "a.example", "value_from": "T", "placeholder_env": "T", "scheme": "Bearer"},
            "`scheme` is for the header form",
        ),
        ({"host": "*.a.example", "value_from": "T", "header": "X"}, "without wildcard"),
        ({"host": "a.example:443", "value_from": "T", "header": "X"}, "without wildcard"),
        ({"host": "a.example", "value_from": "T", "header": ""}, "non-empty string"),
    ],
)
def test_a_wrong_rule_is_one_line_naming_where(value, words):
    with pytest.raises(ConfigError) as caught:
        parse_credential_rule(value, "credentials[2]")
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("credentials[2]")


def test_rules_that_disagree_are_refused():
    with pytest.raises(ConfigError, match=r"credentials\[1\]: `placeholder_env` P already"):
        parse_credential_rules(
            [
                {"host": "a.example", "value_from": "A", "placeholder_env": "P"},
                {"host": "b.example", "value_from": "B", "placeholder_env": "P"},
            ]
        )
    with pytest.raises(ConfigError, match=r"credentials\[1\]: a.example's header"):
        parse_credential_rules(
            [
                {"host": "a.example", "value_from": "A", "header": "Authorization"},
                {"host": "A.example", "value_from": "B", "header": "authorization"},
            ]
        )
    # The header form drops the command's header: a placeholder there would be lost.
    with pytest.raises(ConfigError, match="one credential per header"):
        parse_credential_rules(
            [
                {"host": "a.example", "value_from": "A", "placeholder_env": "P"},
                {"host": "a.example", "value_from": "B", "header": "X-Key"},
            ]
        )
    # Two placeholders for one host, and one header form beside another header: fine.
    parse_credential_rules(
        [
            {"host": "a.example", "value_from": "A", "placeholder_env": "P"},
            {"host": "a.example", "value_from": "B", "placeholder_env": "Q"},
            {"host": "b.example", "value_from": "A", "header": "X-One"},
            {"host": "b.example", "value_from": "B", "header": "X-Two"},
        ]
    )
    with pytest.raises(ConfigError, match="must be a list"):
        parse_credential_rules("a.example")


def test_loading_reads_the_harness_environment_and_names_only_the_variable(credentials):
    assert [c.name for c in credentials] == ["GITHUB_TOKEN", "GITHUB_TOKEN", "NPM_TOKEN"]
    # One placeholder per command variable, shared by the rules that name it.
    assert credentials[0].placeholder == credentials[1].placeholder
    assert credentials[0].placeholder.startswith(PLACEHOLDER_PREFIX)
    assert credentials[2].placeholder is None
    assert placeholder_environment(credentials) == {"GITHUB_TOKEN": credentials[0].placeholder}
    assert secret_variables(credentials) == {"GITHUB_TOKEN", "NPM_TOKEN"}
    assert secret_variables(RULES) == {"GITHUB_TOKEN", "NPM_TOKEN"}
    no_secret_in(credentials, *credentials)
    for bad, words in [
        ({}, "GITHUB_TOKEN is not set"),
        ({"GITHUB_TOKEN": ""}, "GITHUB_TOKEN is empty"),
        ({"GITHUB_TOKEN": "abc\r\nX-Evil: 1"}, "a character a header value may not hold"),
        ({"GITHUB_TOKEN": " abc"}, "a character a header value may not hold"),
        ({"GITHUB_TOKEN": "abcé"}, "a character a header value may not hold"),
        ({"GITHUB_TOKEN": make_placeholder()}, "holds a placeholder"),
    ]:
        with pytest.raises(ConfigError) as caught:
            load_credentials(RULES[:1], bad)
        assert words in str(caught.value)
        assert "abc" not in str(caught.value)


def test_a_secret_shows_as_secret_and_no_encoder_takes_it():
    secret = Secret(REAL)
    assert repr(secret) == str(secret) == f"{secret}" == "<secret>"
    assert secret.reveal() == REAL
    assert secret == Secret(REAL) and secret != Secret("other") and secret != Secret("é")
    with pytest.raises(TypeError):
        json.dumps(secret)
    with pytest.raises(TypeError):
        msgspec.json.encode(secret)
    credential = load_credentials(RULES[:1], ENVIRON)[0]
    assert REAL not in repr(attrs.asdict(credential))


def test_the_placeholder_is_replaced_in_the_headers_of_its_own_host(credentials):
    placeholder = placeholder_of(credentials)
    headers, events = substitute_headers(
        "API.github.com",
        [(b"Authorization", f"token {placeholder}".encode()), (b"Accept", b"*/*")],
        credentials,
    )
    assert headers == [(b"Authorization", f"token {REAL}".encode()), (b"Accept", b"*/*")]
    assert events == (
        CredentialUsed("GITHUB_TOKEN", "api.github.com", "Authorization", "placeholder"),
    )
    no_secret_in(events, *events)


def test_inside_basic_credentials_too(credentials):
    # git sends the token as a Basic password (`x-access-token:TOKEN`).
    placeholder = placeholder_of(credentials)
    basic = base64.b64encode(f"x-access-token:{placeholder}".encode())
    headers, events = substitute_headers(
        "github.com", [(b"authorization", b"Basic " + basic)], credentials
    )
    scheme, encoded = headers[0][1].split(b" ")
    assert scheme == b"Basic"
    assert base64.b64decode(encoded) == f"x-access-token:{REAL}".encode()
    assert events == (CredentialUsed("GITHUB_TOKEN", "github.com", "authorization", "placeholder"),)


def test_a_named_header_takes_the_placeholder_only_there(credentials):
    placeholder = placeholder_of(credentials).encode()
    headers, events = substitute_headers(
        "github.com",
        [(b"X-Echo", placeholder), (b"Authorization", b"Bearer " + placeholder)],
        credentials,
    )
    assert headers == [(b"X-Echo", placeholder), (b"Authorization", f"Bearer {REAL}".encode())]
    misplaced = [e for e in events if isinstance(e, PlaceholderMisplaced)]
    assert len(misplaced) == 1
    assert "the rule names the header Authorization only" in misplaced[0].reason


def test_the_header_form_sets_the_header_over_the_commands(credentials):
    headers, events = substitute_headers(
        "registry.npmjs.org",
        [(b"authorization", b"Bearer forged"), (b"User-Agent", b"npm")],
        credentials,
    )
    assert headers == [(b"User-Agent", b"npm"), (b"Authorization", f"Bearer {NPM_REAL}".encode())]
    assert events == (CredentialUsed("NPM_TOKEN", "registry.npmjs.org", "Authorization", "header"),)
    no_secret_in(events)
    # Without a scheme, the value alone.
    rule = CredentialRule("a.example", "X-Api-Key", "NPM_TOKEN")
    headers, _ = substitute_headers("a.example", [], load_credentials([rule], ENVIRON))
    assert headers == [(b"X-Api-Key", NPM_REAL.encode())]


def test_another_host_gets_nothing_and_the_placeholder_there_is_reported(credentials):
    placeholder = placeholder_of(credentials)
    sent = [(b"Authorization", f"Bearer {placeholder}".encode())]
    headers, events = substitute_headers("evil.example", sent, credentials)
    assert headers == sent
    assert len(events) == 1
    event = events[0]
    assert isinstance(event, PlaceholderMisplaced)
    assert event.credential == "GITHUB_TOKEN"
    assert event.host == "evil.example"
    assert event.reason == (
        "the placeholder of GITHUB_TOKEN (for api.github.com) was sent to evil.example in "
        "the header 'Authorization': a credential for api.github.com, github.com only; "
        "not replaced, refused"
    )
    no_secret_in(headers, events)
    # A host with no credential and no placeholder: untouched, nothing said.
    assert substitute_headers("pypi.org", [(b"A", b"b")], credentials) == ([(b"A", b"b")], ())
    # A subdomain is another host.
    _, events = substitute_headers("x.api.github.com", sent, credentials)
    assert isinstance(events[0], PlaceholderMisplaced)


@pytest.mark.parametrize(
    "value",
    [
        "Bearer {P}",
        "Bearer {U}",
        "Bearer %73tockade-placeholder-{H}",
        "Basic {B}",
    ],
)
def test_every_spelling_is_reported_at_another_host(credentials, value):
    placeholder = placeholder_of(credentials)
    text = value.format(
        P=placeholder,
        U=placeholder.upper(),
        H=placeholder.removeprefix(PLACEHOLDER_PREFIX),
        B=base64.b64encode(f"u:{placeholder}".encode()).decode(),
    )
    headers, events = substitute_headers("evil.example", [(b"X", text.encode())], credentials)
    assert headers == [(b"X", text.encode())]
    assert [type(e) for e in events] == [PlaceholderMisplaced]


def test_an_altered_placeholder_at_its_own_host_is_not_replaced_but_reported(credentials):
    placeholder = placeholder_of(credentials)
    sent = [(b"Authorization", f"Bearer {placeholder.upper()}".encode())]
    headers, events = substitute_headers("api.github.com", sent, credentials)
    assert headers == sent
    assert "altered" in events[0].reason
    both = [(b"Authorization", f"Bearer {placeholder} {placeholder.upper()}".encode())]
    headers, events = substitute_headers("api.github.com", both, credentials)
    assert [type(e) for e in events] == [CredentialUsed, PlaceholderMisplaced]


def test_a_placeholder_in_a_header_name_is_reported(credentials):
    placeholder = placeholder_of(credentials)
    headers, events = substitute_headers(
        "api.github.com", [(f"X-{placeholder}".encode(), b"1")], credentials
    )
    assert headers == [(f"X-{placeholder}".encode(), b"1")]
    assert "a header's name" in events[0].where


def test_the_target_never_takes_a_placeholder(credentials):
    placeholder = placeholder_of(credentials)
    for target in (
        f"/repos?token={placeholder}",
        f"/x/{placeholder.upper()}",
        "/x?t=" + "".join(f"%{byte:02x}" for byte in placeholder.encode()),
        f"https://api.github.com/?t={placeholder}".encode(),
    ):
        found = scan_target("api.github.com", target, credentials)
        assert len(found) == 2  # the two rules sharing the placeholder
        assert found[0].where == "the request target"
        assert "a credential goes in headers only" in found[0].reason
    assert scan_target("api.github.com", "/repos/org/x", credentials) == ()


def test_a_body_or_tunnel_is_scanned_across_chunks(credentials):
    placeholder = placeholder_of(credentials).encode()
    scanner = PlaceholderScanner("api.github.com", "the request body", credentials)
    stream = b'{"token": "' + placeholder + b'"}' + b"x" * 100 + placeholder
    found = []
    for start in range(0, len(stream), 7):
        found.extend(scanner.feed(stream[start : start + 7]))
    assert len(found) == 1  # reported once per credential name
    assert found[0].where == "the request body"
    assert scanner.feed(b"") == ()
    quiet = PlaceholderScanner("api.github.com", "a tunnel", credentials)
    assert quiet.feed(b"nothing here" * 50) == ()
    assert PlaceholderScanner("a.example", "a tunnel", []).feed(placeholder) == ()


def test_terminated_hosts_are_those_a_rule_names():
    requests = parse_request_rules([{"host": "pypi.org", "methods": ["GET"]}])
    assert terminated_hosts([*RULES, *requests]) == {
        "api.github.com",
        "github.com",
        "registry.npmjs.org",
        "pypi.org",
    }

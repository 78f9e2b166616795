"""The destination rules (stockade.network.rules), pure: entry syntax, host names,
deny over allow, the empty allowlist, and the special addresses no name unlocks."""

from __future__ import annotations

import ipaddress
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import stockade.network
from stockade.network.rules import (
    Entry,
    HostError,
    RuleError,
    Rules,
    normalise_host,
    parse_address,
    parse_entry,
    special_range,
)


def test_entries_parse_to_what_they_match():
    assert parse_entry("Example.COM.") == Entry("example.com", "name", None, host="example.com")
    assert parse_entry("pypi.org:443") == Entry("pypi.org:443", "name", 443, host="pypi.org")
    assert parse_entry("*.github.com") == Entry("*.github.com", "wildcard", None, host="github.com")
    net = ipaddress.ip_network
    assert parse_entry("10.0.0.0/8").network == net("10.0.0.0/8")
    assert parse_entry("127.0.0.1:8080") == Entry(
        "127.0.0.1:8080", "network", 8080, network=net("127.0.0.1/32")
    )
    assert parse_entry("::1").network == net("::1/128")
    assert parse_entry("[::1]:8080").port == 8080
    assert parse_entry("[fd00::/8]:443").network == net("fd00::/8")
    assert parse_entry("2001:db8::/32").port is None
    # An IPv4-mapped entry is the IPv4 address it maps.
    assert parse_entry("::ffff:127.0.0.1").network == net("127.0.0.1/32")
    # IDNA: Unicode names become their xn-- form.
    assert parse_entry("Bücher.de").host == "xn--bcher-kva.de"


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("", "non-empty"),
        ("exa mple.com", "space or control"),
        ("example.com\x00", "space or control"),
        ("host:0", "from 1 to 65535"),
        ("host:65536", "from 1 to 65535"),
        ("host:+80", "not a number"),
        ("host:", "not a number"),
        ("::1:8080:x", "port after an IPv6 address needs brackets"),
        ("[::1", "bracketed"),
        ("[::1]8080", "bracketed"),
        ("[127.0.0.1]:80", "only an IPv6"),
        ("10.0.0.1/8", "not a valid CIDR"),
        ("10.0.0.0/33", "not a valid CIDR"),
        ("fe80::1%eth0", "zone"),
        ("a*.example.com", "wildcard"),
        ("*", "wildcard"),
        ("example..com", "empty label"),
        ("a" * 64 + ".com", "over 63"),
        (".".join(["a" * 60] * 5), "over 253"),
        ("-bad.com", "starting or ending"),
        ("xn--zz.com", "IDNA"),
        ("bad_under$.com", "outside a-z"),
        ("127.1", "ends in a number"),
        ("010.0.0.1", "ends in a number"),
    ],
)
def test_a_bad_entry_says_what_is_wrong_and_what_is_accepted(entry, words):
    with pytest.raises(RuleError) as raised:
        parse_entry(entry)
    assert words in str(raised.value)
    assert "accepted:" in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_rules_refuse_one_string_for_a_list():
    with pytest.raises(RuleError, match="a list"):
        Rules(allow="example.com")  # type: ignore[arg-type]


def test_host_names_are_normalised_or_refused():
    assert normalise_host("PyPI.org.") == "pypi.org"
    # Fullwidth letters fold to ASCII (IDNA's nameprep).
    assert normalise_host("\uff30\uff39\uff30\uff29.org") == "pypi.org"
    assert normalise_host("münchen.de") == "xn--mnchen-3ya.de"
    assert normalise_host("_dmarc.example.com") == "_dmarc.example.com"
    for bad in ("", ".", "a..b", "evil.com\x00.allowed.com", "a\tb", "a b", "a\u200bb", "a\x7fb"):
        with pytest.raises(HostError):
            normalise_host(bad)


def test_deny_wins_over_allow_and_empty_allows_nothing():
    rules = Rules(allow=["*.example.com", "example.com"], deny=["secret.example.com"])
    assert rules.check_name("a.example.com", 443).allowed
    denied = rules.check_name("SECRET.example.com.", 443)
    assert (denied.allowed, denied.rule) == (False, "secret.example.com")
    assert "denied" in denied.reason
    assert not rules.check_address("secret.example.com", 443, "93.184.216.34").allowed
    # An address entry in deny beats a name allow.
    rules = Rules(allow=["example.com"], deny=["93.184.216.0/24"])
    assert rules.check_name("example.com", 80).allowed
    verdict = rules.check_address("example.com", 80, "93.184.216.34")
    assert (verdict.allowed, verdict.rule) == (False, "93.184.216.0/24")

    empty = Rules()
    for verdict in (
        empty.check_name("example.com", 443),
        empty.check_name("93.184.216.34", 443),
        empty.check_address("example.com", 443, "93.184.216.34"),
    ):
        assert (verdict.allowed, verdict.rule) == (False, None)
        assert "allowlist is empty" in verdict.reason
    # Only deny entries: still nothing allowed.
    assert not Rules(deny=["evil.com"]).check_name("example.com", 443).allowed


def test_wildcards_match_subdomains_only_and_ports_narrow():
    rules = Rules(allow=["*.github.com", "pypi.org:443"])
    assert rules.check_name("api.github.com", 443).allowed
    assert rules.check_name("a.b.github.com", 22).allowed
    assert not rules.check_name("github.com", 443).allowed
    assert not rules.check_name("evilgithub.com", 443).allowed
    assert not rules.check_name("github.com.evil.com", 443).allowed
    assert rules.check_name("pypi.org", 443).allowed
    assert not rules.check_name("pypi.org", 80).allowed
    verdict = rules.check_address("api.github.com", 443, "140.82.112.5")
    assert (verdict.allowed, verdict.rule) == (True, "*.github.com")


def test_special_addresses_are_refused_unless_an_entry_names_them():
    rules = Rules(allow=["example.com", "0.0.0.0/0", "::/0"])
    for address in (
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "169.254.1.1",
        "100.100.100.200",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fd00:ec2::254",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::7f00:1",
        "2002:7f00:1::1",
    ):
        for host in ("example.com", address):
            verdict = rules.check_address(host, 443, address)
            assert not verdict.allowed, (host, address)
            assert "refused unless an allow entry names" in verdict.reason
        assert special_range(ipaddress.ip_address(address)) is not None
    # A public address is allowed by the catch-all, or by the name.
    assert rules.check_address("example.com", 443, "93.184.216.34").rule == "example.com"
    assert rules.check_address("1.1.1.1", 443, "1.1.1.1").rule == "0.0.0.0/0"

    explicit = Rules(allow=["127.0.0.1", "10.0.0.0/8", "[::1]:8080", "169.254.169.254:80"])
    assert explicit.check_name("127.0.0.1", 9).rule == "127.0.0.1"
    assert explicit.check_address("db.internal", 5432, "10.9.8.7").rule == "10.0.0.0/8"
    assert explicit.check_address("::ffff:127.0.0.1", 1, "::ffff:127.0.0.1").allowed
    assert explicit.check_name("::1", 8080).allowed
    assert not explicit.check_name("::1", 8081).allowed
    assert explicit.check_name("169.254.169.254", 80).allowed
    # A range holding the metadata address does not unlock it: only the address does.
    assert not Rules(allow=["169.254.0.0/16"]).check_name("169.254.169.254", 80).allowed
    assert Rules(allow=["169.254.0.0/16"]).check_name("169.254.1.1", 80).allowed


def test_a_name_never_unlocks_a_private_address_dns_rebinding():
    rules = Rules(allow=["public.example", "*.public.example"])
    assert rules.check_name("public.example", 443).allowed
    for address in ("127.0.0.1", "169.254.169.254", "::ffff:10.0.0.1", "::1"):
        verdict = rules.check_address("public.example", 443, address)
        assert (verdict.allowed, verdict.rule) == (False, None)
        assert "public.example" in verdict.reason


def test_names_asked_by_clients_are_checked_like_entries():
    rules = Rules(allow=["allowed.com"])
    for host in ("evil.com\x00allowed.com", "allowed.com\x00", "allowed.com ", "a\r\nb", "x" * 300):
        verdict = rules.check_name(host, 443)
        assert (verdict.allowed, verdict.rule) == (False, None)
        assert "not a valid host name" in verdict.reason
    assert not rules.check_name("allowed.com", 0).allowed
    assert not rules.check_name("allowed.com", 70000).allowed
    assert rules.check_name("ALLOWED.com.", 443).allowed
    # A name that only an address entry could allow goes on to the address check.
    pending = Rules(allow=["10.0.0.0/8:5432"]).check_name("db.internal", 5432)
    assert (pending.allowed, pending.rule) == (True, None)
    assert not Rules(allow=["10.0.0.0/8:5432"]).check_name("db.internal", 80).allowed
    assert not rules.check_address("allowed.com", 443, "not-an-ip").allowed


@given(host=st.text(max_size=80), port=st.integers(-1, 70000), address=st.text(max_size=40))
def test_any_host_asked_gets_a_verdict_and_only_clean_names_pass(host, port, address):
    rules = Rules(allow=["*.example.com", "10.0.0.0/8"], deny=["bad.example.com"])
    by_name = rules.check_name(host, port)  # never raises
    by_address = rules.check_address(host, port, address)
    if by_name.allowed:
        assert 1 <= port <= 65535
        if parse_address(host) is None:
            name = normalise_host(host)
            assert all(char.isascii() and (char.isalnum() or char in "-_.") for char in name)
            assert all(ord(char) > 0x20 and ord(char) != 0x7F for char in host)
    if by_address.allowed:
        assert 1 <= port <= 65535
        assert parse_address(address) is not None


def test_the_rules_load_without_an_event_loop_and_the_surface_resolves():
    probe = (
        "import sys, stockade.network as n\n"
        "n.Rules(allow=['a.example']).check_name('a.example', 443)\n"
        "print(sorted(m for m in ('trio', 'h11', 'socksio') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
    for name in stockade.network.__all__:
        assert getattr(stockade.network, name) is not None, name


@pytest.mark.parametrize(
    ("allow", "host", "port"),
    [
        (["example.com:443"], "example.com", 80),
        (["*.example.com:443"], "api.example.com", 80),
        (["127.0.0.1:18631"], "127.0.0.1", 18632),
    ],
)
def test_an_entry_for_another_port_is_named_with_the_refused_port(allow, host, port):
    verdict = Rules(allow=allow).check_name(host, port)
    assert not verdict.allowed
    assert f"port {port} is not allowed; the allow entry {allow[0]!r}" in verdict.reason
    assert "loopback" not in verdict.reason

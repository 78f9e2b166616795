"""The destination rules of `network: allowlist`: entry syntax, host-name normalisation,
and the two decisions the proxy asks (by name before resolving, by address after).

Pure: no event loop, no I/O. Deny wins over allow; an empty allowlist allows nothing;
loopback, private, link-local, metadata and other special addresses are refused unless
an allow entry names that address, or a range inside the special range, explicitly.
"""

from __future__ import annotations

import ipaddress
import unicodedata
from collections.abc import Iterable
from typing import Literal

import attrs
import msgspec

from ..reprs import fields_repr

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ACCEPTED = (
    "accepted: `host`, `*.domain` (its subdomains, not the domain itself), an IPv4 "
    "address, an IPv6 address, a CIDR (`10.0.0.0/8`, `fd00::/8`), each optionally "
    "followed by `:PORT` (an IPv6 address or CIDR in brackets when a port follows: "
    "`[::1]:8080`)"
)


class RuleError(ValueError):
    """An allow or deny entry that is not valid: the message says what is wrong and what
    is accepted."""


class HostError(ValueError):
    """A host name (asked by a client, or in an entry) that is not a valid DNS name."""


def _is_control(char: str) -> bool:
    # Cc (controls, NUL), Cf (format: soft hyphen, zero-width joiners, bidi marks),
    # Cs/Co/Cn (surrogates, private use, unassigned), Z* (spaces and separators).
    category = unicodedata.category(char)
    return category[0] in ("C", "Z")


def _check_label(label: str) -> None:
    if not label:
        raise HostError("the host name has an empty label")
    if len(label) > 63:
        raise HostError(f"the host name has a label over 63 characters ({label[:20]}...)")


def normalise_host(host: str) -> str:
    """`host` as the proxy compares and resolves it: lower-case, one trailing dot
    dropped, IDNA-encoded (ASCII, `xn--` labels); HostError when it is not a DNS name
    (control characters, NUL, spaces, empty labels, a label over 63 or a name over 253
    characters, characters outside letters, digits, `-` and `_`, a purely numeric last
    label, which a resolver could read as an IPv4 address)."""
    if not host:
        raise HostError("the host name is empty")
    bad = next((char for char in host if _is_control(char)), None)
    if bad is not None:
        raise HostError(f"the host name holds a control or space character ({bad!r})")
    name = host[:-1] if host.endswith(".") else host
    if not name:
        raise HostError("the host name is only a dot")
    for label in name.split("."):
        _check_label(label)
    try:
        encoded = name.lower().encode("idna").decode("ascii")
    except UnicodeError as error:
        raise HostError(f"the host name is not valid IDNA ({error})") from None
    labels = encoded.split(".")
    for label in labels:
        _check_label(label)
        if not all(char.isascii() and (char.isalnum() or char in "-_") for char in label):
            raise HostError(
                f"the host name has a label with characters outside a-z 0-9 - _ ({label!r})"
            )
        if label.startswith("-") or label.endswith("-"):
            raise HostError(f"the host name has a label starting or ending with '-' ({label!r})")
        if label.startswith("xn--"):
            try:
                label.encode("ascii").decode("idna")
            except UnicodeError:
                raise HostError(f"the host name has an invalid IDNA label ({label!r})") from None
    if len(encoded) > 253:
        raise HostError("the host name is over 253 characters")
    if labels[-1].isdigit():
        raise HostError(f"{host!r} ends in a number but is not a valid IP address")
    return encoded


def parse_address(text: str) -> IPAddress | None:
    """`text` as an IP address (no brackets, no zone), or None when it is not one."""
    if "%" in text:
        return None
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries to the same host: IPv4-mapped
    (`::ffff:a.b.c.d`), NAT64 well-known prefix (`64:ff9b::a.b.c.d`), 6to4."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def canonical(address: IPAddress) -> IPAddress:
    """The IPv4 address behind an IPv4-mapped IPv6 address, else the address itself."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")

# The special ranges, most specific first: (range, words). The metadata addresses come
# before the ranges holding them so that the reason names them, and so that only an
# entry naming the metadata address itself unlocks it.
_SPECIAL: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(net), words)
    for net, words in (
        ("169.254.169.254/32", "a cloud metadata address"),
        ("fd00:ec2::254/128", "a cloud metadata address"),
        ("100.100.100.200/32", "a cloud metadata address"),
        ("255.255.255.255/32", "the broadcast address"),
        ("0.0.0.0/8", "an unspecified ('this network') address"),
        ("10.0.0.0/8", "a private address"),
        ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address"),
        ("172.16.0.0/12", "a private address"),
        ("192.0.0.0/24", "an IETF protocol address"),
        ("192.0.2.0/24", "a documentation address"),
        ("192.168.0.0/16", "a private address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved address"),
        ("::/128", "the unspecified address"),
        ("::1/128", "a loopback address"),
        ("::/96", "a deprecated IPv4-compatible address"),
        ("100::/64", "a discard address"),
        ("2001:db8::/32", "a documentation address"),
        ("fc00::/7", "a private (unique local) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    )
)


def special_range(address: IPAddress) -> tuple[IPNetwork, str] | None:
    """The special range `address` falls in (loopback, private, link-local, metadata,
    unspecified, multicast, broadcast, reserved), judging an IPv6 form that carries an
    IPv4 address by that IPv4 address; None for an ordinary public address."""
    address = _embedded_ipv4(address) or address
    for network, words in _SPECIAL:
        if address.version == network.version and address in network:
            return network, words
    return None


def _port_words(port: int | None) -> str:
    return "" if port is None else f":{port}"


@attrs.frozen
class Entry:
    """One allow or deny entry, parsed. `kind` says what it matches: a host `name`
    exactly, a `wildcard`'s subdomains (`*.example.com` matches `a.example.com` and
    `a.b.example.com`, not `example.com`), or an address `network` (a single address is
    a /32 or /128). `port` None matches every port."""

    __repr__ = fields_repr

    text: str
    kind: Literal["name", "wildcard", "network"]
    port: int | None
    host: str | None = None
    network: IPNetwork | None = None

    def __str__(self) -> str:
        return self.text

    def ports(self, port: int) -> bool:
        return self.port is None or self.port == port

    def matches_name(self, host: str, port: int) -> bool:
        if not self.ports(port):
            return False
        if self.kind == "name":
            return host == self.host
        if self.kind == "wildcard":
            return host.endswith("." + str(self.host))
        return False

    def matches_address(self, address: IPAddress, port: int) -> bool:
        if self.network is None or not self.ports(port):
            return False
        for form in (address, _embedded_ipv4(address)):
            if form is not None and form.version == self.network.version and form in self.network:
                return True
        return False


def _parse_port(text: str, entry: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 5:
        raise RuleError(f"{entry!r}: the port {text!r} is not a number from 1 to 65535; {ACCEPTED}")
    port = int(text)
    if not 1 <= port <= 65535:
        raise RuleError(f"{entry!r}: the port {port} is not from 1 to 65535; {ACCEPTED}")
    return port


def _parse_network(text: str, entry: str) -> IPNetwork | None:
    """`text` as an address or CIDR, or None when it is neither (a host name)."""
    if "%" in text:
        raise RuleError(f"{entry!r}: an IPv6 zone (%...) is not accepted; {ACCEPTED}")
    if "/" in text:
        try:
            network: IPNetwork = ipaddress.ip_network(text, strict=True)
        except ValueError as error:
            raise RuleError(f"{entry!r}: not a valid CIDR ({error}); {ACCEPTED}") from None
    else:
        address = parse_address(text)
        if address is None:
            return None
        network = ipaddress.ip_network(address)
    if (
        isinstance(network, ipaddress.IPv6Network)
        and network.prefixlen >= 96
        and network.network_address.ipv4_mapped is not None
    ):
        mapped = network.network_address.ipv4_mapped
        network = ipaddress.IPv4Network(f"{mapped}/{network.prefixlen - 96}")
    return network


def parse_entry(text: str) -> Entry:
    """One entry of `network_allow`/`network_deny` or `--allow`; RuleError when invalid."""
    if not isinstance(text, str) or not text:
        raise RuleError(f"{text!r}: an entry must be a non-empty string; {ACCEPTED}")
    if any(_is_control(char) for char in text):
        raise RuleError(f"{text!r}: an entry may hold no space or control character; {ACCEPTED}")
    port: int | None = None
    if text.startswith("["):
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise RuleError(
                f"{text!r}: a bracketed IPv6 entry is `[ADDRESS]` or `[ADDRESS]:PORT`; {ACCEPTED}"
            )
        if rest:
            port = _parse_port(rest[1:], text)
        network = _parse_network(inside, text)
        if network is None or network.version != 6:
            raise RuleError(f"{text!r}: only an IPv6 address or CIDR goes in brackets; {ACCEPTED}")
        return Entry(text, "network", port, network=network)
    if text.count(":") > 1:
        network = _parse_network(text, text)
        if network is None:
            raise RuleError(
                f"{text!r}: not a valid IPv6 address or CIDR (a port after an IPv6 "
                f"address needs brackets); {ACCEPTED}"
            )
        return Entry(text, "network", None, network=network)
    host, colon, port_text = text.partition(":")
    if colon:
        port = _parse_port(port_text, text)
    network = _parse_network(host, text)
    if network is not None:
        return Entry(text, "network", port, network=network)
    kind: Literal["name", "wildcard"] = "name"
    if host.startswith("*."):
        kind, host = "wildcard", host[2:]
    if "*" in host:
        raise RuleError(f"{text!r}: a wildcard is only `*.` at the start of a domain; {ACCEPTED}")
    try:
        name = normalise_host(host)
    except HostError as error:
        raise RuleError(f"{text!r}: {error}; {ACCEPTED}") from None
    written = ("*." if kind == "wildcard" else "") + name + _port_words(port)
    return Entry(written, kind, port, host=name)


def _entries(values: Iterable[str | Entry]) -> tuple[Entry, ...]:
    if isinstance(values, str):
        raise RuleError(f"{values!r}: the entries must be a list, not one string; {ACCEPTED}")
    return tuple(value if isinstance(value, Entry) else parse_entry(value) for value in values)


@attrs.frozen
class Verdict:
    """One decision: `rule` is the entry that decided (None when no entry did: an
    empty allowlist, nothing matching, an invalid name); `reason` is plain words for
    the model and the log."""

    __repr__ = fields_repr

    allowed: bool
    rule: str | None
    reason: str


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """What the proxy decided for one connection attempt (a CONNECT, a forwarded
    request, a SOCKS5 CONNECT): the destination as asked, the address used (None when
    refused before one was chosen, or when no address could be reached)."""

    call_id: str
    host: str
    port: int
    address: str | None
    allowed: bool
    rule: str | None
    reason: str
    protocol: Literal["http", "connect", "socks5"]


@attrs.frozen
class Rules:
    """The allow and deny entries of one call. Entries are strings (parsed, RuleError
    when invalid) or parsed `Entry`s. `check_name` decides before resolving,
    `check_address` after; deny wins over allow, and an empty allowlist allows nothing."""

    __repr__ = fields_repr

    allow: tuple[Entry, ...] = attrs.field(default=(), converter=_entries)
    deny: tuple[Entry, ...] = attrs.field(default=(), converter=_entries)

    def check_name(self, host: str, port: int) -> Verdict:
        """Before resolution. An IP literal is decided by `check_address` at once. A name
        that is invalid, denied by name, or that no allow entry could allow is refused;
        otherwise it is allowed to be resolved (the address check is final)."""
        where = f"{host}:{port}"
        if not 1 <= port <= 65535:
            return Verdict(False, None, f"{where}: the port is not from 1 to 65535")
        if parse_address(host) is not None:
            return self.check_address(host, port, host)
        try:
            name = normalise_host(host)
        except HostError as error:
            return Verdict(False, None, f"{host!r} is not a valid host name: {error}")
        for entry in self.deny:
            if entry.matches_name(name, port):
                return Verdict(False, entry.text, f"{name}:{port} is denied by {entry.text!r}")
        for entry in self.allow:
            if entry.matches_name(name, port):
                return Verdict(True, entry.text, f"{name}:{port} is allowed by {entry.text!r}")
        if any(entry.kind == "network" and entry.ports(port) for entry in self.allow):
            return Verdict(True, None, f"{name}:{port} goes to the address check")
        other_port = [
            entry
            for entry in self.allow
            if entry.port not in (None, port) and entry.matches_name(name, entry.port or 0)
        ]
        if other_port:
            return _port_refused(f"{name}:{port}", port, other_port)
        return self._nothing(f"{name}:{port}")

    def check_address(self, host: str, port: int, address: str) -> Verdict:
        """After resolution: may the proxy connect to `address` for `host:port`? `host`
        is the name as asked (or the literal itself)."""
        parsed = parse_address(address)
        if parsed is None:
            return Verdict(False, None, f"{address!r} is not an IP address")
        ip = canonical(parsed)
        literal = parse_address(host) is not None
        name = None
        if not literal:
            try:
                name = normalise_host(host)
            except HostError as error:
                return Verdict(False, None, f"{host!r} is not a valid host name: {error}")
        where = f"{name or ip}:{port}" + ("" if literal else f" ({ip})")
        for entry in self.deny:
            if entry.matches_address(ip, port) or (
                name is not None and entry.matches_name(name, port)
            ):
                return Verdict(False, entry.text, f"{where} is denied by {entry.text!r}")
        special = special_range(ip)
        if special is None and name is not None:
            for entry in self.allow:
                if entry.matches_name(name, port):
                    return Verdict(True, entry.text, f"{where} is allowed by {entry.text!r}")
        for entry in self.allow:
            if not entry.matches_address(ip, port):
                continue
            assert entry.network is not None
            if special is None or _inside(entry.network, special[0]):
                return Verdict(True, entry.text, f"{where} is allowed by {entry.text!r}")
        # An entry that names this destination for other ports: the port is the refusal.
        other_port = [
            entry
            for entry in self.allow
            if entry.port not in (None, port) and _names(entry, name, ip, special)
        ]
        if other_port:
            return _port_refused(where, port, other_port)
        if special is not None:
            return Verdict(
                False,
                None,
                f"{where}: {ip} is {special[1]}, refused unless an allow entry names "
                f"that address (or a range inside {special[0]})",
            )
        return self._nothing(where)

    def _nothing(self, where: str) -> Verdict:
        if not self.allow:
            return Verdict(False, None, f"{where}: the allowlist is empty, so nothing is allowed")
        return Verdict(False, None, f"{where} matches no allow entry")


def _names(
    entry: Entry, name: str | None, ip: IPAddress, special: tuple[IPNetwork, str] | None
) -> bool:
    """Whether `entry` would allow this destination on its own port."""
    port = entry.port or 0
    if entry.network is not None and entry.matches_address(ip, port):
        return special is None or _inside(entry.network, special[0])
    return special is None and name is not None and entry.matches_name(name, port)


def _port_refused(where: str, port: int, entries: list[Entry]) -> Verdict:
    """The destination is allowed, but on other ports only: say that of the port."""
    named = ", ".join(repr(entry.text) for entry in entries)
    many = "entry" if len(entries) == 1 else "entries"
    return Verdict(
        False,
        None,
        f"{where}: port {port} is not allowed; the allow {many} {named} "
        f"name{'s' if len(entries) == 1 else ''} this destination for another port only "
        f"(an entry with port {port}, or none, would allow it)",
    )


def _inside(entry: IPNetwork, special: IPNetwork) -> bool:
    """An entry unlocks a special address only when the entry lies inside the special
    range: `10.0.0.0/8` unlocks 10.1.2.3, `0.0.0.0/0` does not, and only an entry
    naming 169.254.169.254 itself unlocks the metadata address."""
    if entry.version != special.version:
        return False
    return entry.subnet_of(special)  # type: ignore[arg-type]  # same version, checked

"""One HTTP request through the proxy as it is judged: its authority and Host header;
for a ruled host the request rules, placeholders and credentials (issue 41); and the
`RequestRecord`s the proxy reports. Pure: the protocol shells ask it.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Literal

import attrs

from ..errors import ConfigError, brief
from ..reprs import fields_repr
from ._broker import Broker, RequestRecord
from ._credentials import (
    Credential,
    CredentialUsed,
    PlaceholderMisplaced,
    scan_headers,
    scan_target,
    substitute_headers,
)
from ._request_rules import TargetError, _authority_host, decide_request, normalise_target
from ._ruled import ruled_host
from ._scrub import Secretive
from .rules import HostError, canonical, normalise_host, parse_address

Headers = list[tuple[bytes, bytes]]
Carried = Literal["https", "http"]

# Why a placeholder is never replaced over plain http, whatever the host.
PLAINTEXT = "a credential never goes over plain http"


class BadRequest(ValueError):
    """A request the proxy answers with 400: the message says why."""


def split_authority(text: str, default_port: int | None) -> tuple[str, int]:
    """`host:port` (an IPv6 address in brackets) as (host, port), the port defaulting
    to `default_port`; BadRequest for user info, a path, a bad port or a missing one,
    or any character outside printable ASCII. The host is checked by the rules."""
    if not text or not all(0x21 <= ord(char) <= 0x7E for char in text):
        raise BadRequest(f"the authority {text!r} is empty or holds a space or control character")
    try:
        parts = urllib.parse.urlsplit("//" + text)
        port = parts.port
    except ValueError as error:
        raise BadRequest(f"the authority {text!r} is not host[:port] ({error})") from None
    if "@" in parts.netloc or parts.path or parts.query or parts.fragment:
        raise BadRequest(f"the authority {text!r} is not host[:port]")
    if not parts.hostname:
        raise BadRequest(f"the authority {text!r} names no host")
    if port is None:
        if default_port is None:
            raise BadRequest(f"the authority {text!r} names no port")
        port = default_port
    return parts.hostname, port


def same_host(one: str, other: str) -> bool:
    """Whether two hosts name the same destination (as the rules compare them)."""
    first, second = parse_address(one), parse_address(other)
    if first is not None or second is not None:
        return first is not None and second is not None and canonical(first) == canonical(second)
    try:
        return normalise_host(one) == normalise_host(other)
    except HostError:
        return False


def host_agrees(
    headers: Iterable[tuple[bytes, bytes]], host: str, port: int, default_port: int
) -> bool:
    """Whether the request has a Host header: BadRequest when it has several, or one
    naming another destination than `host:port` (a Host without a port names
    `default_port`)."""
    values = [value for name, value in headers if name.lower() == b"host"]
    if not values:
        return False  # HTTP/1.0 (h11 requires Host from an HTTP/1.1 client)
    if len(values) > 1:
        raise BadRequest("more than one Host header")
    text = values[0].decode("ascii", errors="backslashreplace")
    named, named_port = split_authority(text, default_port)
    if not same_host(named, host) or named_port != port:
        raise BadRequest(f"the Host header {text!r} disagrees with the target {host}:{port}")
    return True


def ruled_name(host: str) -> str | None:
    """`host` as rules name a host (a normalised name, a canonical address), or None
    when it could be no rule's host."""
    try:
        return ruled_host(host, "host")
    except ConfigError:
        return None


def host_header(host: str, port: int, carried: Carried) -> bytes:
    """The Host header's value for `host:port` (the scheme's port left out)."""
    shown = f"[{host}]" if ":" in host else host
    default = 443 if carried == "https" else 80
    return (shown if port == default else f"{shown}:{port}").encode()


def record_path(target: str) -> str:
    """What a record keeps of a target: its path normalised when it can be, else as
    sent; never the query (it may hold what the log must not)."""
    try:
        return normalise_target(target).path
    except TargetError:
        path = target.partition("?")[0]
        if "://" in path:
            path = "/" + path.partition("://")[2].partition("/")[2]
        return path[:200]


def origin_form(target: str, host: str) -> str:
    """`target` in origin form (`/path?query`, or `*`): an absolute form must name
    `host`; TargetError otherwise, or for an authority form."""
    if target.startswith("/") or target == "*":
        return target
    scheme, sep, rest = target.partition("://")
    if not (sep and scheme.lower() in ("http", "https")):
        raise TargetError(f"the target {brief(target, 60)} is neither a path nor an absolute URI")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    asked = _authority_host(rest[:cut])
    if asked != host:
        raise TargetError(f"the target names {asked}, not {host}")
    origin = rest[cut:] or "/"
    return "/" + origin if origin.startswith("?") else origin


@attrs.frozen
class Forward:
    """What goes to the origin: method, target (origin form) and headers."""

    __repr__ = fields_repr

    method: bytes
    target: bytes
    headers: Headers


@attrs.frozen
class Judged:
    """One request judged: its `record` (reported before anything of it goes
    anywhere), and `forward` when it may go (else `refusal`, the 403's line)."""

    __repr__ = fields_repr

    record: RequestRecord
    forward: Forward | None
    refusal: str | None = None


def _refused(record: RequestRecord) -> Judged:
    return Judged(record, None, f"stockade: {record.reason}")


def judge_request(
    call_id: str,
    broker: Broker,
    method: bytes,
    target: bytes,
    headers: Headers,
    host: str,
    port: int,
    carried: Carried,
) -> Judged:
    """Judge one request to the ruled `host` (normalised) on `port`, its hop-by-hop
    headers already dropped: its Host header names that destination, the request
    rules allow it, no placeholder sits in its target or where its host's credentials
    do not go; over `https` the credentials for `host` go into its headers, over plain
    `http` none does (a placeholder there is refused)."""
    asked = method.decode("ascii", "backslashreplace")
    text = target.decode("ascii", "backslashreplace")

    def refused(reason: str, misplaced: Sequence[PlaceholderMisplaced] = ()) -> Judged:
        return _refused(
            RequestRecord(
                call_id=call_id,
                method=asked.upper(),
                host=host,
                port=port,
                path=record_path(text),
                allowed=False,
                reason=reason,
                misplaced=tuple(event.reason for event in misplaced),
                protocol=carried,
            )
        )

    if asked.upper() == "CONNECT":
        return refused(f"CONNECT to {host} is refused: the proxy already terminates {host}")
    try:
        has_host = host_agrees(headers, host, port, 443 if carried == "https" else 80)
        origin = origin_form(text, host)
    except (BadRequest, TargetError) as error:
        return refused(f"{asked} {brief(text, 200)} to {host} is refused: {error}")
    verdict = decide_request(asked, origin, host, broker.request_rules)
    if not verdict.allowed:
        return refused(verdict.reason)
    misplaced = list(scan_target(host, target, broker.credentials))
    if carried == "https":
        forwarded, events = substitute_headers(host, headers, broker.credentials)
        misplaced += [event for event in events if isinstance(event, PlaceholderMisplaced)]
        used = tuple(event.credential for event in events if isinstance(event, CredentialUsed))
    else:
        forwarded = list(headers)
        misplaced += scan_headers(host, headers, broker.credentials, PLAINTEXT)
        used = ()
    if misplaced:
        return refused(misplaced[0].reason, misplaced)
    if not has_host:
        forwarded.append((b"host", host_header(host, port, carried)))
    reason = verdict.reason
    if carried == "http" and broker.credentials_for(host):
        reason += f"; no credential for {host} goes over plain http"
    record = RequestRecord(
        call_id=call_id,
        method=verdict.method,
        host=host,
        port=port,
        path=record_path(verdict.target),
        allowed=True,
        reason=reason,
        rule=verdict.rule,
        credentials=tuple(dict.fromkeys(used)),
        protocol=carried,
    )
    forward = Forward(verdict.method.encode("ascii"), verdict.target.encode("ascii"), forwarded)
    return Judged(record, forward)


def scan_unruled(
    host: str, target: bytes, headers: Iterable[tuple[bytes, bytes]], broker: Broker
) -> tuple[PlaceholderMisplaced, ...]:
    """Placeholders in a plain-http request's head to a host no rule names: none is
    replaced there, each one found refuses the request."""
    return (
        *scan_target(host, target, broker.credentials),
        *scan_headers(host, headers, broker.credentials, PLAINTEXT),
    )


def placeholders_held(credentials: Iterable[Credential]) -> tuple[Credential, ...]:
    """The credentials whose placeholder a command holds: what a blind tunnel's bytes
    are scanned for (none: nothing to scan)."""
    return tuple(credential for credential in credentials if credential.placeholder is not None)


def misplaced_record(
    call_id: str,
    method: str,
    host: str,
    port: int,
    found: Sequence[PlaceholderMisplaced],
    *,
    path: str = "",
    carried: Carried = "https",
    cut: bool = False,
) -> RequestRecord:
    """The record of a request (or, with method CONNECT, a tunnel) refused, or `cut`
    once under way, because it carried a placeholder."""
    what = "the tunnel" if method == "CONNECT" else f"the {method} request"
    reason = found[0].reason
    if cut:
        reason = f"{what} to {host}:{port} was cut: {reason}"
    return RequestRecord(
        call_id=call_id,
        method=method,
        host=host,
        port=port,
        path=path,
        allowed=False,
        reason=reason,
        misplaced=tuple(event.reason for event in found),
        protocol=carried,
    )


def connection_record(call_id: str, host: str, port: int, reason: str) -> RequestRecord:
    """The record of a terminated connection that carried no request (its TLS failed
    or was refused): method CONNECT, no path."""
    return RequestRecord(
        call_id=call_id,
        method="CONNECT",
        host=host,
        port=port,
        path="",
        allowed=False,
        reason=reason,
        protocol="https",
    )


def certificate_refused(host: str, alert: bool) -> str:
    """Why a client's handshake failed: it refused stockade's certificate (`alert`:
    it said so), or it closed the connection in the middle (likely the same)."""
    trust = (
        "it pins its own or does not trust the harness CA (SSL_CERT_FILE and the "
        "other trust variables name it)"
    )
    if alert:
        return f"the client refused stockade's certificate for {host}: {trust}"
    return (
        f"the client closed the connection during the TLS handshake for {host}: it may "
        f"refuse stockade's certificate ({trust})"
    )


def insists_on_http2(host: str, offered: Iterable[bytes]) -> str:
    """Why a client whose ALPN offers no HTTP/1 was answered `no_application_protocol`."""
    names = [name.decode("ascii", "backslashreplace") for name in offered]
    if "h2" in names:
        return f"{host}: the client insists on HTTP/2, which the proxy does not terminate yet"
    shown = ", ".join(brief(name, 40) for name in names) or "nothing"
    return f"{host}: the client offers {shown} (ALPN), and the proxy serves HTTP/1.1 only"


def answer_secrets(broker: Broker, host: str) -> tuple[Secretive, ...]:
    """What an answer from the ruled `host` is scrubbed of: every credential's real
    value (an origin behind a shared front could echo another host's too), each
    replaced by its placeholder, or for the header form a marker naming it; none when
    no credential names `host` (no value went there). Nothing in it comes from the
    request (a `Basic` user named one made the pattern compiled again, per request, on
    the event loop): the same credentials, the same compiled pattern."""
    if not broker.credentials_for(host):
        return ()
    return tuple(
        Secretive(
            credential.value.reveal(),
            credential.placeholder or f"stockade-withheld-{credential.name}",
            credential.name,
        )
        for credential in broker.credentials
    )


def scrubbed_record(
    call_id: str,
    method: str,
    host: str,
    port: int,
    path: str,
    found: dict[str, int],
    carried: Carried,
) -> RequestRecord:
    """The record of an answer that held credentials' values, replaced before the
    command read it: how many times, of which credentials (by name)."""
    count = sum(found.values())
    names = ", ".join(sorted(found))
    times = "once" if count == 1 else f"{count} times"
    return RequestRecord(
        call_id=call_id,
        method=method,
        host=host,
        port=port,
        path=path,
        allowed=True,
        reason=(
            f"the answer of {host} to {method} held the value of {names} {times}; replaced "
            "by its placeholder before the command read it"
        ),
        protocol=carried,
        scrubbed=count,
    )

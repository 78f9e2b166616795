"""Credential rules (issue 41): a host's secret the command never holds, the placeholder
it holds instead, and the swap in the request headers the proxy forwards. Pure.

The real value goes only into header values of requests to its own host; a placeholder
seen anywhere else (another host, a target, a body, a tunnel) is a finding the caller
logs and refuses. Nothing returned for logging holds a real value.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal
from urllib.parse import unquote_to_bytes

import attrs

from ..errors import ConfigError, brief
from ..reprs import fields_repr
from ._request_rules import RequestRule
from ._ruled import is_token, optional_text, rule_fields, rule_list, ruled_host

PLACEHOLDER_PREFIX = "stockade-placeholder-"
# 160 bits: a placeholder is not a secret (the command holds it), but it must not be
# guessed or collide with text a request carries by chance.
PLACEHOLDER_BYTES = 20

_NAME_FIRST = frozenset(string.ascii_letters + "_")
_NAME_REST = _NAME_FIRST | frozenset(string.digits)


def make_placeholder() -> str:
    """A fresh placeholder: `stockade-placeholder-` and 40 lower-case hex digits."""
    return PLACEHOLDER_PREFIX + secrets.token_hex(PLACEHOLDER_BYTES)


def _variable(value: object, key: str, where: str) -> str:
    if (
        not isinstance(value, str)
        or not value
        or value[0] not in _NAME_FIRST
        or not all(char in _NAME_REST for char in value)
    ):
        raise ConfigError(
            f"{where}: `{key}` is an environment variable's name, letters, digits and _ "
            f"(got {brief(repr(value), 60)})"
        )
    return value


def _token(value: object, key: str, where: str) -> str:
    if not isinstance(value, str) or not is_token(value):
        raise ConfigError(f"{where}: `{key}` {brief(repr(value), 60)} is not an HTTP token")
    return value


@attrs.frozen
class CredentialRule:
    """One host's credential, taken from the harness's variable `value_from`.

    The header form (`placeholder_env` None): every request to `host` gets `header`
    set to `[scheme ]value`, whatever the command sent under that name. The
    placeholder form: the command's variable `placeholder_env` holds a placeholder,
    which the proxy replaces with the value in header values of requests to `host`
    (only in `header` when one is named; `Basic` credentials are looked inside); the
    client writes its own scheme there. `name` (the variable's name) is what the log
    says of it."""

    __repr__ = fields_repr

    host: str
    header: str | None
    value_from: str
    scheme: str | None = None
    placeholder_env: str | None = None

    def __attrs_post_init__(self) -> None:
        where = "credential rule"
        object.__setattr__(self, "host", ruled_host(self.host, where))
        _variable(self.value_from, "value_from", where)
        if self.header is not None:
            _token(self.header, "header", where)
        if self.scheme is not None:
            _token(self.scheme, "scheme", where)
        if self.placeholder_env is not None:
            _variable(self.placeholder_env, "placeholder_env", where)
            if self.scheme is not None:
                raise ConfigError(
                    f"{where} for {self.host}: `scheme` is for the header form; with "
                    "`placeholder_env` the client writes its own scheme"
                )
        elif self.header is None:
            raise ConfigError(
                f"{where} for {self.host}: give `header` (the proxy sets it) or "
                "`placeholder_env` (the command holds a placeholder), or both"
            )

    @property
    def form(self) -> Literal["header", "placeholder"]:
        return "header" if self.placeholder_env is None else "placeholder"

    @property
    def name(self) -> str:
        return self.value_from


def parse_credential_rule(value: object, where: str = "credential rule") -> CredentialRule:
    """One credential rule from a mapping `{host, header?, value_from, scheme?,
    placeholder_env?}`; ConfigError (one line, naming `where`) when it is not valid."""
    fields = rule_fields(
        value,
        where,
        required=("host", "value_from"),
        optional=("header", "scheme", "placeholder_env"),
    )
    host = ruled_host(fields["host"], where)
    value_from = _variable(fields["value_from"], "value_from", where)
    header = optional_text(fields, "header", where)
    scheme = optional_text(fields, "scheme", where)
    placeholder_env = optional_text(fields, "placeholder_env", where)
    try:
        return CredentialRule(host, header, value_from, scheme, placeholder_env)
    except ConfigError as error:
        raise ConfigError(str(error).replace("credential rule", where, 1)) from None


def _overlap(one: CredentialRule, other: CredentialRule) -> bool:
    """Whether two rules for one host would both act on one header while one of them
    sets it (the header form drops what the command sent under that name)."""
    if one.form == "placeholder" and other.form == "placeholder":
        return False
    if one.header is None or other.header is None:
        return True
    return one.header.lower() == other.header.lower()


def parse_credential_rules(values: object, what: str = "credentials") -> tuple[CredentialRule, ...]:
    """A list of credential rules; ConfigError naming the entry that is wrong, or that
    disagrees with an earlier one: a placeholder variable standing for two values, two
    rules for one header of one host."""
    rules = tuple(
        parse_credential_rule(value, f"{what}[{index}]")
        for index, value in enumerate(rule_list(values, what))
    )
    sources: dict[str, str] = {}
    for index, rule in enumerate(rules):
        where = f"{what}[{index}]"
        if rule.placeholder_env is not None:
            source = sources.setdefault(rule.placeholder_env, rule.value_from)
            if source != rule.value_from:
                raise ConfigError(
                    f"{where}: `placeholder_env` {rule.placeholder_env} already stands for "
                    f"{source}, not {rule.value_from}"
                )
        for earlier in rules[:index]:
            if earlier.host == rule.host and _overlap(earlier, rule):
                raise ConfigError(
                    f"{where}: {rule.host}'s header {rule.header or earlier.header} already "
                    f"takes {earlier.name}, which the proxy sets; one credential per header"
                )
    return rules


class Secret:
    """A real credential value: shown as `<secret>` by repr and str, refused by every
    encoder (no attrs, no msgspec), read only by `reveal()`."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and secrets.compare_digest(
            self._value.encode(), other._value.encode()
        )

    def __hash__(self) -> int:
        return hash(Secret)


@attrs.frozen
class Credential:
    """A credential rule with its real value (from the harness's environment) and, in
    the placeholder form, the placeholder the command holds."""

    __repr__ = fields_repr

    rule: CredentialRule
    value: Secret
    placeholder: str | None = None

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def host(self) -> str:
        return self.rule.host


def _checked_value(rule: CredentialRule, environ: Mapping[str, str]) -> Secret:
    where = f"the credential for {rule.host}"
    value = environ.get(rule.value_from)
    if value is None:
        raise ConfigError(f"{where}: the variable {rule.value_from} is not set for the harness")
    if not value:
        raise ConfigError(f"{where}: the variable {rule.value_from} is empty")
    # What goes into a header: visible ASCII and inner spaces, never CR, LF or NUL
    # (a header injection), and never echoed in the error.
    if value != value.strip() or not all(
        char.isascii() and (char.isprintable() or char == "\t") for char in value
    ):
        raise ConfigError(
            f"{where}: the variable {rule.value_from} holds a character a header value may "
            "not hold (control, non-ASCII, or surrounding space)"
        )
    if rule.placeholder_env is not None and value.startswith(PLACEHOLDER_PREFIX):
        raise ConfigError(
            f"{where}: the variable {rule.value_from} holds a placeholder, not the credential "
            "(is this harness running inside another's command?)"
        )
    return Secret(value)


def load_credentials(
    rules: Iterable[CredentialRule],
    environ: Mapping[str, str],
    placeholder: Callable[[], str] = make_placeholder,
) -> tuple[Credential, ...]:
    """Each rule with its real value read from `environ` (the harness's) and, in the
    placeholder form, a placeholder: one per `placeholder_env`, so the command's one
    variable stands for every host that variable's rules name. ConfigError (naming the
    variable, never its value) when a value is missing or could not be a header's."""
    made: dict[str, str] = {}
    loaded: list[Credential] = []
    for rule in rules:
        value = _checked_value(rule, environ)
        held = None
        if rule.placeholder_env is not None:
            held = made.setdefault(rule.placeholder_env, placeholder())
        loaded.append(Credential(rule, value, held))
    return tuple(loaded)


def placeholder_environment(credentials: Iterable[Credential]) -> dict[str, str]:
    """The variables a command gets: each `placeholder_env` and its placeholder."""
    return {
        credential.rule.placeholder_env: credential.placeholder
        for credential in credentials
        if credential.rule.placeholder_env is not None and credential.placeholder is not None
    }


def secret_variables(credentials: Iterable[Credential | CredentialRule]) -> frozenset[str]:
    """The harness's variables holding real values: never passed to a command (the
    command's environment is built without them, then `placeholder_environment` is
    laid over it)."""
    return frozenset(
        (item.rule if isinstance(item, Credential) else item).value_from for item in credentials
    )


def terminated_hosts(rules: Iterable[CredentialRule | RequestRule]) -> frozenset[str]:
    """The hosts whose TLS the proxy terminates: those a credential or request rule
    names (every other host keeps the blind tunnel)."""
    return frozenset(rule.host for rule in rules)


@attrs.frozen
class CredentialUsed:
    """A credential went into a request: its name, the host, the header, and how (the
    placeholder replaced, or the header set). Never the value."""

    __repr__ = fields_repr

    credential: str
    host: str
    header: str
    form: Literal["header", "placeholder"]


@attrs.frozen
class PlaceholderMisplaced:
    """A placeholder seen where it does not belong, not replaced: the caller logs it
    and refuses the request. `where` says where it was seen, `reason` is one line."""

    __repr__ = fields_repr

    credential: str
    host: str
    where: str
    reason: str


CredentialEvent = CredentialUsed | PlaceholderMisplaced


def _request_host(host: str) -> str:
    try:
        return ruled_host(host, "host")
    except ConfigError:
        # No rule names an invalid host, so nothing is replaced for it; what it
        # carries is still looked for.
        return host.lower()


def _shown(data: bytes) -> str:
    return brief(data.decode("ascii", "backslashreplace"), 60)


def _misplaced(credential: Credential, host: str, where: str, why: str) -> PlaceholderMisplaced:
    reason = (
        f"the placeholder of {credential.name} (for {credential.host}) was sent to {host} "
        f"in {where}: {why}; not replaced, refused"
    )
    return PlaceholderMisplaced(credential.name, host, where, reason)


def _basic_inside(value: bytes) -> bytes | None:
    """The decoded `user:password` of a `Basic` header value, or None."""
    scheme, _, encoded = value.strip().partition(b" ")
    if scheme.lower() != b"basic" or not encoded:
        return None
    try:
        return base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None


def _holds(data: bytes, placeholder: bytes) -> bool:
    """Whether `data` holds `placeholder` in any case, percent-encoded or not."""
    lowered = data.lower()
    if placeholder in lowered:
        return True
    return b"%" in data and placeholder in unquote_to_bytes(data).lower()


def _swap(value: bytes, placeholder: bytes, real: bytes) -> bytes | None:
    """`value` with the placeholder replaced (inside a `Basic` credential too), or None
    when it does not hold the placeholder exactly as made."""
    if placeholder in value:
        return value.replace(placeholder, real)
    inside = _basic_inside(value)
    if inside is not None and placeholder in inside:
        scheme = value.strip().partition(b" ")[0]
        return scheme + b" " + base64.b64encode(inside.replace(placeholder, real))
    return None


def _takes(rule: CredentialRule, key: bytes) -> bool:
    """Whether the rule's placeholder may be replaced in the header named `key`."""
    return rule.header is None or rule.header.lower().encode() == key.lower()


def substitute_headers(
    host: str, headers: Iterable[tuple[bytes, bytes]], credentials: Sequence[Credential]
) -> tuple[list[tuple[bytes, bytes]], tuple[CredentialEvent, ...]]:
    """The headers to forward to `host` (a name or address, no port), and what
    happened: each placeholder of a credential for `host` replaced by the real value in
    the header values its rule allows; each header-form credential for `host` set (the
    command's own header of that name dropped). A placeholder anywhere else (a header
    name, a header of another host, a header its rule does not name, altered) is left
    and reported as `PlaceholderMisplaced`: the caller refuses the request. The events
    hold names, hosts and header names, never a value."""
    name = _request_host(host)
    events: list[CredentialEvent] = []
    set_here = [c for c in credentials if c.host == name and c.rule.form == "header"]
    dropped = {str(c.rule.header).lower().encode() for c in set_here}
    # One placeholder per command variable: the rules sharing it name several hosts.
    held: dict[bytes, list[Credential]] = {}
    for credential in credentials:
        if credential.placeholder is not None:
            held.setdefault(credential.placeholder.encode(), []).append(credential)
    out: list[tuple[bytes, bytes]] = []
    for key, value in headers:
        header = key.decode("ascii", "backslashreplace")
        shown = f"the header {_shown(key)}"
        for placeholder, group in held.items():
            if _holds(key, placeholder):
                where = f"a header's name {_shown(key)}"
                events.append(_misplaced(group[0], name, where, "never used"))
            inside = _basic_inside(value)
            if not (_holds(value, placeholder) or (inside and _holds(inside, placeholder))):
                continue
            here = [c for c in group if c.host == name]
            if not here:
                hosts = ", ".join(sorted({c.host for c in group}))
                why = f"a credential for {hosts} only"
                events.append(_misplaced(group[0], name, shown, why))
                continue
            fits = [c for c in here if _takes(c.rule, key)]
            if not fits:
                why = f"the rule names the header {here[0].rule.header} only"
                events.append(_misplaced(here[0], name, shown, why))
                continue
            swapped = _swap(value, placeholder, fits[0].value.reveal().encode())
            if swapped is None:
                why = "altered (another case, or encoded)"
                events.append(_misplaced(fits[0], name, shown, why))
                continue
            value = swapped
            events.append(CredentialUsed(fits[0].name, name, header, "placeholder"))
            if _holds(value, placeholder):
                why = "also there altered (another case, or encoded)"
                events.append(_misplaced(fits[0], name, shown, why))
        if key.lower() not in dropped:
            out.append((key, value))
    for credential in set_here:
        header = str(credential.rule.header)
        scheme = credential.rule.scheme
        real = credential.value.reveal()
        out.append((header.encode(), (f"{scheme} {real}" if scheme else real).encode()))
        events.append(CredentialUsed(credential.name, name, header, "header"))
    return out, tuple(events)


def scan_target(
    host: str, target: str | bytes, credentials: Iterable[Credential]
) -> tuple[PlaceholderMisplaced, ...]:
    """Placeholders in a request target (never replaced there, whatever the host):
    each one found is reported, in any case, percent-encoded or not."""
    data = target.encode("utf-8", "surrogateescape") if isinstance(target, str) else target
    name = _request_host(host)
    return tuple(
        _misplaced(credential, name, "the request target", "a credential goes in headers only")
        for credential in credentials
        if credential.placeholder is not None and _holds(data, credential.placeholder.encode())
    )


def scan_headers(
    host: str, headers: Iterable[tuple[bytes, bytes]], credentials: Iterable[Credential], why: str
) -> tuple[PlaceholderMisplaced, ...]:
    """Placeholders in headers where none is replaced (a plain-http request, a host no
    credential names): each placeholder found in a header's name or value (inside a
    `Basic` credential too, in any case, encoded or not) is reported once, `why` saying
    why it is not replaced there."""
    name = _request_host(host)
    held = [c for c in credentials if c.placeholder is not None]
    found: dict[bytes, PlaceholderMisplaced] = {}
    for key, value in headers:
        inside = _basic_inside(value)
        for credential in held:
            placeholder = str(credential.placeholder).encode()
            if placeholder in found:
                continue
            if _holds(key, placeholder):
                where = f"a header's name {_shown(key)}"
            elif _holds(value, placeholder) or (inside and _holds(inside, placeholder)):
                where = f"the header {_shown(key)}"
            else:
                continue
            found[placeholder] = _misplaced(credential, name, where, why)
    return tuple(found.values())


class PlaceholderScanner:
    """Looks for placeholders in a stream (a request body, a blind tunnel's bytes) fed
    in chunks, across chunk boundaries; reports each credential once. Never replaces."""

    __slots__ = ("_credentials", "_host", "_reported", "_tail", "_where")

    def __init__(self, host: str, where: str, credentials: Iterable[Credential]) -> None:
        self._host = _request_host(host)
        self._where = where
        self._credentials = tuple(c for c in credentials if c.placeholder is not None)
        self._reported: set[str] = set()
        self._tail = b""

    def feed(self, chunk: bytes) -> tuple[PlaceholderMisplaced, ...]:
        if not self._credentials:
            return ()
        data = (self._tail + chunk).lower()
        found: list[PlaceholderMisplaced] = []
        for credential in self._credentials:
            placeholder = str(credential.placeholder).encode()
            if credential.name not in self._reported and placeholder in data:
                self._reported.add(credential.name)
                why = "a credential goes in headers only"
                found.append(_misplaced(credential, self._host, self._where, why))
        longest = max(len(str(c.placeholder)) for c in self._credentials)
        self._tail = data[-(longest - 1) :]
        return tuple(found)

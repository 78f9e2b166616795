"""What credential and request rules share: reading one rule from a mapping (as a
composition gives it), a ruled host, an HTTP token. Pure; every error is one line.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ConfigError, brief
from .rules import HostError, canonical, normalise_host, parse_address

# RFC 9110 `tchar`: what a method or a header name is made of.
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def is_token(text: str) -> bool:
    """Whether `text` is an HTTP token (a method, a header name)."""
    return bool(text) and all(char in _TCHAR for char in text)


def ruled_host(value: object, where: str) -> str:
    """`value` as a rule's host: a DNS name normalised as the allowlist does
    (`rules.normalise_host`), or an IP address in its canonical form. One host exactly:
    no wildcard, no port (a certificate is minted per host a rule names)."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: `host` must be a non-empty string (got {brief(repr(value))})")
    if value.startswith("*") or (":" in value and parse_address(value) is None):
        raise ConfigError(
            f"{where}: `host` is one host name or IP address, without wildcard or port "
            f"(got {brief(value)})"
        )
    address = parse_address(value)
    if address is not None:
        return str(canonical(address))
    try:
        return normalise_host(value)
    except HostError as error:
        raise ConfigError(f"{where}: `host` {brief(value)}: {error}") from None


def rule_fields(
    value: object, where: str, *, required: tuple[str, ...], optional: tuple[str, ...]
) -> dict[str, object]:
    """`value` as a mapping holding every `required` key and no key outside
    `required` and `optional`; ConfigError naming the key otherwise."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: a rule is a mapping (got {type(value).__name__})")
    known = (*required, *optional)
    for key in value:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {brief(str(key))} (known: {', '.join(known)})")
    for key in required:
        if key not in value:
            raise ConfigError(f"{where}: `{key}` is required")
    return {str(key): item for key, item in value.items()}


def optional_text(fields: Mapping[str, object], key: str, where: str) -> str | None:
    """`fields[key]` as a non-empty string, or None when absent or null."""
    value = fields.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: `{key}` must be a non-empty string (got {brief(repr(value))})")
    return value


def rule_list(value: object, what: str) -> list[object]:
    """`value` as the list of rules under `what`; a mapping or a string is refused."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise ConfigError(f"{what}: the rules must be a list (got {type(value).__name__})")
    return list(value)

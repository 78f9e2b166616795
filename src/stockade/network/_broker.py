"""The harness's broker for ruled hosts (issue 41): its loaded credentials, request
rules, CA and upstream trust, and the record of one judged request. Standard library
and `cryptography` only; the proxy (a Trio shell) asks it.

A host a credential or request rule names is a *ruled* host: the proxy terminates its
TLS and judges every request to it; every other host keeps the blind tunnel.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Literal

import attrs

from ..errors import ConfigError, brief
from ..reprs import fields_repr
from ._authority import CertificateAuthority
from ._credentials import (
    Credential,
    CredentialRule,
    load_credentials,
    placeholder_environment,
    secret_variables,
    terminated_hosts,
)
from ._request_rules import RequestRule

# What a record keeps of each text a command chooses, at most: a command must not swell
# the session's log with a megabyte path or method.
RECORD_LIMITS = {"method": 64, "host": 256, "path": 512, "reason": 1024, "rule": 256}


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    tail = f"... ({len(text)} characters)"
    return text[: limit - len(tail)] + tail


def _method(text: str) -> str:
    return _cut(text, RECORD_LIMITS["method"])


def _host(text: str) -> str:
    return _cut(text, RECORD_LIMITS["host"])


def _path(text: str) -> str:
    return _cut(text, RECORD_LIMITS["path"])


def _reason(text: str) -> str:
    return _cut(text, RECORD_LIMITS["reason"])


def _rule(text: str | None) -> str | None:
    return None if text is None else _cut(text, RECORD_LIMITS["rule"])


def _lines(lines: Iterable[str]) -> tuple[str, ...]:
    return tuple(_reason(line) for line in tuple(lines)[:16])


@attrs.frozen
class RequestRecord:
    """One request to a ruled host as the proxy judged it: what the session's log
    (`network/request`) and the call's result keep. `path` is the normalised path
    without its query (a query may hold what the log must not); `credentials` name
    the credentials put into it (never a value); `misplaced` is one line per
    placeholder seen where it does not belong (the request was then refused);
    `status` is the origin's answer (None: refused or no answer); `scrubbed` how many
    times the answer held a credential's value, replaced before the command read it
    (its own record, made as the answer ends). Texts a command chooses are cut to
    `RECORD_LIMITS`."""

    __repr__ = fields_repr

    call_id: str
    method: str = attrs.field(converter=_method)
    host: str = attrs.field(converter=_host)
    port: int
    path: str = attrs.field(converter=_path)
    allowed: bool
    reason: str = attrs.field(converter=_reason)
    rule: str | None = attrs.field(default=None, converter=_rule)
    credentials: tuple[str, ...] = ()
    misplaced: tuple[str, ...] = attrs.field(default=(), converter=_lines)
    status: int | None = None
    protocol: Literal["https", "http"] = "https"
    scrubbed: int = 0


# Receives every judged request before the request (or its refusal) goes anywhere; one
# that raises refuses the request (the log stays complete), as `OnDecision` does.
OnRequest = Callable[[RequestRecord], Awaitable[None] | None]


def upstream_context(ca_file: str | os.PathLike[str] | None = None) -> ssl.SSLContext:
    """How the proxy checks an origin's certificate: the system's store, or only the
    CA bundle at `ca_file` when given; host names checked, TLS 1.2 and up, HTTP/1.1."""
    if ca_file is None:
        context = ssl.create_default_context()
    else:
        try:
            context = ssl.create_default_context(cafile=os.fspath(ca_file))
        except (OSError, ssl.SSLError) as error:
            raise ConfigError(
                f"the upstream CA bundle {brief(os.fspath(ca_file))} cannot be read: {error}"
            ) from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= getattr(ssl, "OP_NO_RENEGOTIATION", 0)
    context.set_alpn_protocols(["http/1.1"])
    return context


@attrs.define(eq=False)
class Broker:
    """One harness's ruled hosts: the credentials with their real values (never
    printed), the request rules, the CA minting the leaves the proxy presents, and the
    context that checks each origin. `placeholders` are the variables laid over every
    command's environment; `withheld` the harness's variables never passed to one."""

    __repr__ = fields_repr

    credentials: tuple[Credential, ...]
    request_rules: tuple[RequestRule, ...]
    authority: CertificateAuthority
    upstream: ssl.SSLContext = attrs.field(repr=False)
    hosts: frozenset[str]

    def terminates(self, host: str) -> bool:
        """Whether the proxy terminates TLS for `host` (normalised as rules are)."""
        return host in self.hosts

    @property
    def placeholders(self) -> dict[str, str]:
        return placeholder_environment(self.credentials)

    @property
    def withheld(self) -> frozenset[str]:
        return secret_variables(self.credentials)

    def credentials_for(self, host: str) -> tuple[Credential, ...]:
        return tuple(credential for credential in self.credentials if credential.host == host)


def make_broker(
    credential_rules: Iterable[CredentialRule],
    request_rules: Iterable[RequestRule],
    environ: Mapping[str, str],
    *,
    upstream_ca: str | os.PathLike[str] | None = None,
) -> Broker | None:
    """The broker for these rules, each credential's value read from `environ` (the
    harness's); None when no rule names a host (nothing is terminated). ConfigError
    (one line, never a value) for a missing or unusable credential or CA bundle."""
    credential_rules = tuple(credential_rules)
    request_rules = tuple(request_rules)
    hosts = terminated_hosts((*credential_rules, *request_rules))
    if not hosts:
        return None
    credentials = load_credentials(credential_rules, environ)
    return Broker(
        credentials=credentials,
        request_rules=request_rules,
        authority=CertificateAuthority(hosts),
        upstream=upstream_context(upstream_ca),
        hosts=hosts,
    )

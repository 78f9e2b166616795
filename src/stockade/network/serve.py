"""`python -m stockade.network.serve`: one call's proxy, for `stockade exec`, which
becomes (or waits on) its command and so runs no event loop of its own.

It serves one endpoint with the rules given (`--allow`, `--deny`), prints the
endpoint's socket path on stdout once it listens, writes the marker of each refused
destination on stderr (escaped: the name is the command's), and ends when its stdin
closes (its caller is gone).

With `--ruled JSON` (issue 41: the composition's credential and request rules, the
upstream CA and the trust directory; names only, never a value) it is the harness's
broker too: each credential's value read from its own environment, the CA bundle
written in the trust directory (removed when it ends), and a second line on stdout,
`{"bundle": PATH, "environment": {NAME: VALUE}}`: what the command's environment gets
(the placeholders and the trust variables). Each refused request's marker goes to
stderr as a refused destination's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import trio

from ..errors import ConfigError
from ..modes import network_denial_marker, request_refusal_marker
from ..shown import one_line
from ._authority import trust_environment
from ._broker import Broker, RequestRecord, make_broker
from ._credentials import parse_credential_rules
from ._request_rules import parse_request_rules
from ._trust_directory import make_trust_directory, remove_trust_directory
from .proxy import open_proxy
from .rules import Decision, RuleError, Rules


def _refused(decision: Decision) -> None:
    if not decision.allowed:
        host = f"[{decision.host}]" if ":" in decision.host else decision.host
        # The name is the command's (a SOCKS5 domain is any bytes), and this stderr is
        # the person's terminal: escaped, it cannot rewrite the line (stockade.shown).
        shown = one_line(f"{host}:{decision.port}")
        sys.stderr.write(network_denial_marker(shown) + "\n")
        sys.stderr.flush()


def _request_refused(record: RequestRecord) -> None:
    if not record.allowed:
        # The reason quotes the command's path: escaped, as a destination is.
        sys.stderr.write(request_refusal_marker(one_line(record.reason)) + "\n")
        sys.stderr.flush()


async def serve(rules: Rules, broker: Broker | None = None, announce: str | None = None) -> None:
    async with (
        open_proxy(
            on_decision=_refused,
            broker=broker,
            on_request=_request_refused if broker is not None else None,
        ) as proxy,
        proxy.open_call("exec", rules) as endpoint,
    ):
        sys.stdout.write(endpoint.path + "\n")
        if announce is not None:
            sys.stdout.write(announce + "\n")
        sys.stdout.flush()
        stdin = trio.lowlevel.FdStream(0)
        while await stdin.receive_some(4096):
            pass


def _broker(ruled: str) -> tuple[Broker | None, str, str]:
    """The broker `--ruled` describes, its trust directory made; (broker, directory,
    the line announcing the bundle and the placeholders). ConfigError."""
    given = json.loads(ruled)
    broker = make_broker(
        parse_credential_rules(given["credentials"], "network_credentials"),
        parse_request_rules(given["requests"], "network_requests"),
        os.environ,
        upstream_ca=given["upstream_ca"],
    )
    directory = given["trust_directory"]
    if broker is None:
        return None, directory, json.dumps({"bundle": None, "environment": {}})
    bundle = make_trust_directory(directory, broker.authority)
    environment = {**trust_environment(bundle), **broker.placeholders}
    return broker, directory, json.dumps({"bundle": bundle, "environment": environment})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stockade.network.serve")
    parser.add_argument("--allow", action="append", default=[])
    parser.add_argument("--deny", action="append", default=[])
    parser.add_argument("--ruled", default=None)
    args = parser.parse_args(argv)
    try:
        rules = Rules(args.allow, args.deny)
    except RuleError as error:
        sys.stderr.write(f"stockade: network rule: {error}\n")
        return 2
    if args.ruled is None:
        return _served(rules)
    try:
        broker, directory, announce = _broker(args.ruled)
    except ConfigError as error:
        sys.stderr.write(f"stockade: {error}\n")
        return 2
    try:
        return _served(rules, broker, announce)
    finally:
        remove_trust_directory(directory)


def _served(rules: Rules, broker: Broker | None = None, announce: str | None = None) -> int:
    """`serve` until its caller closes stdin; a proxy that fails on the system (no temp
    directory to write, no socket to make, its caller gone) is one line on stderr,
    status 1."""
    failed: list[OSError] = []
    try:
        trio.run(serve, rules, broker, announce)
    except* OSError as group:
        failed += _leaves(group)
    if failed:
        sys.stderr.write(f"stockade: the network proxy failed: {failed[0]}\n")
        return 1
    return 0


def _leaves(group: BaseExceptionGroup[OSError]) -> list[OSError]:
    """The OSErrors a (nested) group holds."""
    found: list[OSError] = []
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            found += _leaves(error)
        else:
            found.append(error)
    return found


if __name__ == "__main__":
    sys.exit(main())

"""`python -m stockade.network.serve`: one call's proxy, for `stockade exec`, which
becomes (or waits on) its command and so runs no event loop of its own.

It serves one endpoint with the rules given (`--allow`, `--deny`), prints the
endpoint's socket path on stdout once it listens, writes the marker of each refused
destination on stderr (escaped: the name is the command's), and ends when its stdin
closes (its caller is gone).
"""

from __future__ import annotations

import argparse
import sys

import trio

from ..modes import network_denial_marker
from ..shown import one_line
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


async def serve(rules: Rules) -> None:
    async with (
        open_proxy(on_decision=_refused) as proxy,
        proxy.open_call("exec", rules) as endpoint,
    ):
        sys.stdout.write(endpoint.path + "\n")
        sys.stdout.flush()
        stdin = trio.lowlevel.FdStream(0)
        while await stdin.receive_some(4096):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stockade.network.serve")
    parser.add_argument("--allow", action="append", default=[])
    parser.add_argument("--deny", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        rules = Rules(args.allow, args.deny)
    except RuleError as error:
        sys.stderr.write(f"stockade: network rule: {error}\n")
        return 2
    trio.run(serve, rules)
    return 0


if __name__ == "__main__":
    sys.exit(main())

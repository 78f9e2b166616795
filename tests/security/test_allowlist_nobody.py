"""network allowlist as nobody (issue 25): the harness's proxy serves a command that
runs as uid 65534 on both backends (Landlock through its user namespace); only the
listed destination answers, and the proxy-unaware client reaches nothing."""

from __future__ import annotations

import os

import pytest
import trio

from stockade.network import Rules, open_proxy
from stockade.network.bridge import names_loopback, proxy_environment
from stockade.vocab import Network, SandboxMode, SandboxPolicy

from .support import NOBODY, SYSTEM_PYTHON
from .test_allowlist import servers  # noqa: F401
from .test_unprivileged import nobody_terrain, runner  # noqa: F401

pytestmark = pytest.mark.nobody


@pytest.mark.parametrize(
    "mode", [SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE], ids=lambda m: m.value
)
async def test_nobody_reaches_only_the_listed_destination(
    sandbox,
    runner,  # noqa: F811
    nobody_terrain,  # noqa: F811
    servers,  # noqa: F811
    mode,
):
    allowed, other = servers
    decided = []
    python = SYSTEM_PYTHON
    fetch = (
        "import sys, urllib.request as u\n"
        "for url in sys.argv[1:]:\n"
        "    try:\n"
        "        print(u.urlopen(url, timeout=5).read().decode(), end='')\n"
        "    except Exception as error:\n"
        "        print('refused', type(error).__name__)\n"
    )
    command = (
        f'{python} -I -S -c "$FETCH" http://127.0.0.1:{allowed}/ http://127.0.0.1:{other}/; '
        f"curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{allowed}/ || echo direct-failed"
    )
    rules_text = [f"127.0.0.1:{allowed}"]
    rules = Rules(allow=rules_text)
    async with (
        open_proxy(on_decision=decided.append) as proxy,
        proxy.open_call("nobody-call", rules) as endpoint,
    ):
        # The harness and its commands share a uid in production; here the command is
        # nobody, so its bridge must be let through the endpoint's 0700 directory.
        os.chmod(os.path.dirname(endpoint.path), 0o755)
        policy = SandboxPolicy(mode, str(nobody_terrain.root), network=Network.ALLOWLIST)
        wrapped = await sandbox.provider.confine(
            ("bash", "-c", command), policy, proxy=endpoint.path
        )
        done = await trio.run_process(
            (runner, *wrapped.argv[1:]),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            stdin=b"",
            cwd=str(nobody_terrain.root),
            # As the executor does: the allow list names a loopback destination, so
            # loopback requests go through the proxy (network.bridge.names_loopback).
            env={
                **os.environ,
                **proxy_environment(loopback_direct=not names_loopback(rules_text)),
                "FETCH": fetch,
            },
            user=NOBODY,
            group=NOBODY,
            extra_groups=[],
            start_new_session=True,
        )
    out = done.stdout.decode()
    assert out.startswith(f"hello from {allowed}\n"), (out, done.stderr.decode())
    assert "refused HTTPError" in out and "direct-failed" in out, out
    assert f"hello from {other}" not in out
    assert [(d.port, d.allowed) for d in decided] == [(allowed, True), (other, False)]

"""A loopback `stockade mcp --http` checks Host and Origin on every loopback address,
not only on the three the SDK knows (127.0.0.1, localhost, ::1): a page a person's
browser loads cannot reach it through a name rebound to 127.0.0.2 (an audit's finding:
there any Host and Origin were taken). The token is still required either way."""

from __future__ import annotations

import json

import httpx2
import pytest
import trio

from stockade.mcp._http import rebinding_guard

from .support import http_server

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def _post(url: str, token: str, headers: dict[str, str]) -> int:
    sent = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        **headers,
    }
    return httpx2.post(url, content=json.dumps(INITIALIZE), headers=sent, timeout=30).status_code


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1"])
async def test_a_hostile_host_or_origin_is_refused_on_every_loopback_address(host, root, state_dir):
    async with http_server(root, state_dir, "--http", f"{host}:0") as server:
        assert f"//{host}:" in server.url
        answers = await trio.to_thread.run_sync(
            lambda: [
                _post(server.url, server.token, headers)
                for headers in (
                    {},  # the control: the client's own request
                    {"Host": "evil.example"},
                    {"Origin": "http://evil.example"},
                )
            ]
        )
    assert answers[0] == 200
    assert answers[1] == 421 and answers[2] == 403, answers


def test_the_guard_names_the_address_and_the_usual_loopback_names():
    guard = rebinding_guard("127.0.0.2")
    assert guard is not None and guard.enable_dns_rebinding_protection
    assert "127.0.0.2:*" in guard.allowed_hosts and "localhost:*" in guard.allowed_hosts
    assert "http://127.0.0.2:*" in guard.allowed_origins
    v6 = rebinding_guard("::1")
    assert v6 is not None and "[::1]:*" in v6.allowed_hosts
    assert rebinding_guard("0.0.0.0") is None  # a remote server: the token guards it

"""network allowlist through the MCP face (issue 25): `stockade mcp --http` with a
composition on `network: allowlist` runs the proxy; a client from the MCP SDK, in a
separate process, sees the listed server answer, the other refused with the marker,
and both decisions in the call's facts."""

from __future__ import annotations

from pathlib import Path

from stockade.vocab import network_denial_marker

from ..security.test_allowlist import servers  # noqa: F401
from .support import http_server, text


async def test_an_mcp_call_reaches_only_the_listed_destination(
    root,
    state_dir,
    scratch,
    servers,  # noqa: F811
):
    allowed, other = servers
    config = Path(scratch) / "stockade.yml"
    config.write_text(
        "- {id: sandbox, name: stockade.sandbox.local}\n"
        "- id: bash\n"
        "  name: stockade.bash.sandbox\n"
        f"  config: {{network: allowlist, network_allow: ['127.0.0.1:{allowed}']}}\n"
        "- {id: approval, name: stockade.approval.user}\n"
        "- {id: log, name: stockade.session.log}\n"
    )
    command = (
        f"curl -sS --max-time 5 http://127.0.0.1:{allowed}/; "
        f"curl -sS --max-time 5 http://127.0.0.1:{other}/; true"
    )
    async with (
        http_server(root, state_dir, "--config", str(config)) as server,
        server.client() as client,
    ):
        ran = await client.call_tool("bash", {"command": command})
    seen = text(ran)
    assert f"hello from {allowed}" in seen and f"hello from {other}" not in seen, seen
    assert network_denial_marker(f"127.0.0.1:{other}") in seen
    facts = ran.structured_content
    assert facts["network"] == "allowlist"
    assert [(c["port"], c["allowed"]) for c in facts["connections"]] == [
        (allowed, True),
        (other, False),
    ]

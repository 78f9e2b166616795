"""Limits through the MCP face (issue 26): `stockade mcp --http` with a composition's
limits; a client from the MCP SDK, in a separate process, sees a memory hog stopped
with the note in the text and the limit, the cause and each limit's claim in the
call's facts."""

from __future__ import annotations

from pathlib import Path

from .support import http_server, text


async def test_an_mcp_call_is_stopped_at_the_compositions_memory_limit(root, state_dir, scratch):
    config = Path(scratch) / "stockade.yml"
    config.write_text(
        "- {id: sandbox, name: stockade.sandbox.local}\n"
        "- id: bash\n"
        "  name: stockade.bash.sandbox\n"
        "  config: {limits: {memory: 64M}}\n"
        "- {id: approval, name: stockade.approval.user}\n"
        "- {id: log, name: stockade.session.log}\n"
    )
    hog = "python3 -c 'b = bytearray(512 << 20)'"
    async with (
        http_server(root, state_dir, "--config", str(config)) as server,
        server.client() as client,
    ):
        ran = await client.call_tool("bash", {"command": hog})
        plain = await client.call_tool("bash", {"command": "echo fine"})
    seen = text(ran)
    assert "[exit code: 137]" in seen
    assert "[sandbox: stopped at the memory limit of 64 MiB]" in seen, seen
    facts = ran.structured_content
    assert facts["cause"] == "limit"
    limit = facts["limit"]
    assert (limit["name"], limit["value"]) == ("memory", 64 << 20) and limit["used"] <= 64 << 20
    claims = {claim["name"]: claim for claim in facts["limits"]}
    assert claims["memory"]["mechanism"] in ("cgroup-v1", "cgroup-v2")
    assert claims["memory"]["claim"] == "enforced"
    assert plain.structured_content["cause"] == "exited"
    assert "fine" in text(plain)

"""Many calls on one connection, and many servers at once, each keep their own facts."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from .support import ERAS, connect, read_status, text


@pytest.mark.parametrize("era", ERAS)
async def test_twenty_concurrent_calls_on_one_connection(era, root, outside, state_dir):
    results: dict[int, object] = {}
    commands: dict[int, str] = {}
    async with connect(root, state_dir, mode=era) as client:

        async def call(i: int) -> None:
            # Even calls write inside the root, odd ones outside it (denied).
            target = root / f"f{i}.txt" if i % 2 == 0 else outside / f"f{i}.txt"
            commands[i] = f"echo call-{i}; sleep 0.{i % 5}; echo {i} > {target}; echo done-{i}"
            results[i] = await client.call_tool("bash", {"command": commands[i]})

        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                for i in range(20):
                    nursery.start_soon(call, i)
    call_ids = set()
    for i, result in results.items():
        facts = result.structured_content
        assert not result.is_error, text(result)
        call_ids.add(facts["call_id"])
        assert facts["command"] == commands[i]
        assert text(result).startswith(f"call-{i}\n")
        assert f"done-{i}" in text(result)
        assert facts["denied"] is (i % 2 == 1)
        assert (root / f"f{i}.txt").exists() is (i % 2 == 0)
        assert not (outside / f"f{i}.txt").exists()
    assert len(call_ids) == 20


async def test_five_servers_on_five_roots(scratch, state_dir):
    roots = [Path(scratch) / f"root-{n}" for n in range(5)]
    seen: dict[int, tuple[dict, object, object]] = {}

    async def serve(n: int) -> None:
        root = roots[n]
        root.mkdir()
        mode = "read-only" if n % 2 else "workspace-write"
        async with connect(root, state_dir, "--mode", mode) as client:
            status = await read_status(client)
            wrote = await client.call_tool("bash", {"command": f"pwd; echo server-{n} > who.txt"})
            listed = await client.call_tool("bash", {"command": "cat who.txt; ls .."})
            seen[n] = (status, wrote, listed)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            for n in range(5):
                nursery.start_soon(serve, n)
    sessions = {status["session_id"] for status, _, _ in seen.values()}
    assert len(sessions) == 5
    for n, (status, wrote, listed) in seen.items():
        root = roots[n]
        mode = "read-only" if n % 2 else "workspace-write"
        assert status["workspace_root"] == str(root) and status["sandbox_mode"] == mode
        assert text(wrote).startswith(f"{root}\n")
        assert wrote.structured_content["mode"] == mode
        assert wrote.structured_content["denied"] is (mode == "read-only")
        if mode == "workspace-write":
            assert (root / "who.txt").read_text() == f"server-{n}\n"
            assert text(listed).startswith(f"server-{n}\n")
        else:
            assert not (root / "who.txt").exists()


@pytest.mark.parametrize("era", ERAS)
async def test_concurrent_escalations_each_get_their_own_answer(era, root, state_dir):
    """Ten questions open at once; the person approves the even ones. Each answer
    reaches the call it was asked for, and only approved commands write."""
    import re

    import mcp_types as types

    async def person(context, params) -> types.ElicitResult:
        n = int(re.search(r"echo (\d+) >", params.message).group(1))
        await trio.sleep(0.01 * (10 - n))  # answer out of order
        decision = "approve once" if n % 2 == 0 else "reject"
        return types.ElicitResult(action="accept", content={"decision": decision})

    results = {}
    async with connect(root, state_dir, "--mode", "read-only", mode=era, elicit=person) as client:

        async def call(n: int) -> None:
            results[n] = await client.call_tool(
                "bash",
                {
                    "command": f"echo {n} > e{n}.txt",
                    "sandbox_permissions": "workspace-write",
                    "justification": f"write e{n}.txt",
                },
            )

        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                for n in range(10):
                    nursery.start_soon(call, n)
    for n, result in results.items():
        approved = n % 2 == 0
        assert (root / f"e{n}.txt").exists() is approved
        if approved:
            assert (root / f"e{n}.txt").read_text() == f"{n}\n"
            assert result.structured_content["granted"] == "workspace-write"
        else:
            assert result.structured_content["outcome"] == "rejected"

"""What the model sees of the placeholders (issue 22, item 8): the empty read-only
mount points that keep protected paths from being created show up in a listing
inside the sandbox, so the tool description and the policy message say what they are."""

from __future__ import annotations

from stockade import open_harness

from ..support import require_backend
from .conftest import composition


async def test_a_listing_shows_placeholders_and_the_model_is_told_what_they_are(
    state_dir, tmp_path
):
    require_backend("bwrap")
    project = tmp_path / "project"
    project.mkdir()
    entries = composition(state_dir)
    entries[0] = {**entries[0], "config": {"backend": "bwrap"}}
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=str(project))
        await session.set_sandbox_mode("workspace-write")
        context = await session.pre_step()
        listing = await session.run_tool("bash", {"command": "ls -A"})
        bash = next(tool for tool in harness.tool_schemas() if tool["name"] == "bash")
        await session.close()
    # Inside the call the placeholders are there to see (none of them the model's).
    assert "stockade.yml" in listing.text.split() and ".vscode" in listing.text.split()
    assert ".git" not in listing.text.split()  # a new repository is held, not blocked
    assert sorted(p.name for p in project.iterdir()) == []  # and gone after it
    assert "placeholders" in bash["description"] and "leave them alone" in bash["description"]
    assert "Read-only placeholders you did not create" in context.text
    assert ".mcp.json naming no server" in context.text  # the one that is not empty

"""`stockade mcp` over stdio (the SDK's client, the server a subprocess): a question
shows where the command will really start, and the answer binds that directory.

The audit's attack: a confined command makes `root/build` a symlink to a directory
outside the root; the model then asks to run `rm -rf ./*` there, wider. Both forms
(the delete-workspace rule's prompt, the escalation) show the directory it leads to
and say it is not where "build" reads. A directory swapped for that symlink while the
person reads is refused at start. Real kernel (the default backend), effects on disk.
"""

from __future__ import annotations

import os

import mcp_types as types
import pytest

from .support import ERAS, connect, text

pytestmark = pytest.mark.kernel

CLEAN = {
    "command": "pwd -P; rm -rf ./*",
    "workdir": "build",
    "sandbox_permissions": "danger-full-access",
    "justification": "clean the build output",
}


@pytest.fixture
def victim(outside):
    path = outside / "victim"
    path.mkdir()
    (path / "precious.txt").write_text("keep\n")
    return path


def person(seen: list, *, escalation: str, on_escalation=None):
    """Approves the rule's prompt, answers the escalation with `escalation` (after
    `on_escalation`, what happens while the person reads it)."""

    async def callback(context, params) -> types.ElicitResult:
        seen.append(params.message)
        decision = "approve once"
        if "command rule" not in params.message:
            if on_escalation is not None:
                on_escalation()
            decision = escalation
        return types.ElicitResult(action="accept", content={"decision": decision})

    return callback


def cwd_rows(message: str) -> list[str]:
    return [row.strip() for row in message.splitlines() if row.startswith(("  cwd:", "  warning:"))]


@pytest.mark.parametrize("era", ERAS)
async def test_a_symlinked_workdir_is_shown_where_it_leads(era, root, victim, state_dir):
    seen: list[str] = []
    elicit = person(seen, escalation="reject")
    async with connect(root, state_dir, mode=era, elicit=elicit) as client:
        planted = await client.call_tool("bash", {"command": f"ln -s {victim} build"})
        assert not planted.is_error and (root / "build").is_symlink()
        result = await client.call_tool("bash", CLEAN)
    assert len(seen) == 2  # the rule's prompt, then the escalation
    for message in seen:
        assert cwd_rows(message) == [
            f"cwd:       {victim}",
            f'warning:   the workdir "build" leads through a symlink to {victim}, '
            f"outside the workspace root {root}",
        ]
        assert f"{root}/build" not in message
    assert result.is_error and "Nothing ran" in text(result)
    assert (victim / "precious.txt").read_text() == "keep\n"


@pytest.mark.parametrize("era", ERAS)
async def test_a_workdir_swapped_after_the_question_is_refused(era, root, victim, state_dir):
    def swap() -> None:
        # While the person reads a true question, the directory becomes the symlink.
        (root / "build").rename(root / "build.old")
        os.symlink(victim, root / "build")

    seen: list[str] = []
    elicit = person(seen, escalation="approve once", on_escalation=swap)
    async with connect(root, state_dir, mode=era, elicit=elicit) as client:
        await client.call_tool("bash", {"command": "mkdir build && touch build/obj.o"})
        result = await client.call_tool("bash", CLEAN)
    assert [cwd_rows(message) for message in seen] == [[f"cwd:       {root}/build"]] * 2
    assert result.is_error
    assert text(result) == (
        f"the command could not start: the working directory '{root}/build' changed after "
        f"the person was asked: it was {root}/build and now leads to {victim}; call again "
        "to be asked anew. Nothing ran."
    )
    assert (victim / "precious.txt").read_text() == "keep\n"
    assert (root / "build.old" / "obj.o").exists()


async def test_a_real_workdir_runs_there_once_approved(root, victim, state_dir):
    seen: list[str] = []
    elicit = person(seen, escalation="approve once")
    async with connect(root, state_dir, elicit=elicit) as client:
        await client.call_tool("bash", {"command": "mkdir build && touch build/obj.o"})
        result = await client.call_tool("bash", CLEAN)
    assert [cwd_rows(message) for message in seen] == [[f"cwd:       {root}/build"]] * 2
    assert not result.is_error and text(result).startswith(f"{root}/build\n")
    assert result.structured_content["granted"] == "danger-full-access"
    assert list((root / "build").iterdir()) == []
    assert (victim / "precious.txt").read_text() == "keep\n"

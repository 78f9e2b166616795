"""The ACP permission card shows where a command will really start, and the answer
binds that directory: the example agent as a subprocess, the SDK's client in the
editor's place. The audit's attack: a confined command makes `root/build` a symlink
to a directory outside the root, then the model asks to run `rm -rf ./*` there
under danger-full-access. Real kernel (the default backend), effects on disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("acp")

import acp

from .support import ScriptedClient, agent, run, write_script

pytestmark = pytest.mark.kernel

CLEAN = {
    "name": "bash",
    "arguments": {
        "command": "pwd -P; rm -rf ./*",
        "workdir": "build",
        "sandbox_permissions": "danger-full-access",
        "justification": "clean the build output",
    },
}


@pytest.fixture
def layout(scratch) -> tuple[Path, Path]:
    root = Path(scratch) / "root"
    root.mkdir()
    victim = Path(scratch) / "outside" / "victim"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep\n")
    return root, victim


class SwappingClient(ScriptedClient):
    """Answers like ScriptedClient; while the escalation's card is open (not the
    rule's), `root/build` is swapped for a symlink to the victim."""

    def __init__(self, answers: list[str], root: Path, victim: Path) -> None:
        super().__init__(answers)
        self.root, self.victim = root, victim

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kw):
        if "rule" not in (tool_call.raw_input or {}):
            (self.root / "build").rename(self.root / "build.old")
            os.symlink(self.victim, self.root / "build")
        return await super().request_permission(session_id, tool_call, options, **kw)


def _session(client, root: Path, scripts: Path, state: str, first: str) -> str:
    script = write_script(
        scripts, [[{"name": "bash", "arguments": {"command": first}}, CLEAN]], name="clean.json"
    )

    async def scenario() -> str:
        async with agent(client, state, "--script", script, stderr_path=scripts / "err") as (
            conn,
            _process,
        ):
            session = await conn.new_session(cwd=str(root))
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("clean")])
            return session.session_id

    sid: str = run(scenario())
    return sid


def test_the_card_shows_where_a_symlinked_workdir_leads(layout, state_dir_outside, tmp_path):
    root, victim = layout
    client = ScriptedClient(["allow-once", "reject"])
    sid = _session(client, root, tmp_path, state_dir_outside, f"ln -s {victim} build")
    assert (root / "build").is_symlink()
    assert len(client.asked) == 2  # the delete-workspace rule's card, then the escalation's
    warning = (
        f'the workdir "build" leads through a symlink to {victim}, '
        f"outside the workspace root {root}"
    )
    for question in client.asked:
        card = question.tool_call
        assert card.raw_input["cwd"] == str(victim)
        assert card.raw_input["workdir"] == "build"
        assert card.raw_input["cwdWarning"] == warning
        assert [location.path for location in card.locations] == [str(victim)]
        shown = card.content[0].content.text
        assert f"cwd:       {victim}\n  warning:   {warning}" in shown
        assert f"{root}/build" not in shown
    assert "Nothing ran" in client.tool_results(sid)[-1]
    assert (victim / "precious.txt").read_text() == "keep\n"


def test_a_workdir_swapped_while_the_card_is_open_is_refused(layout, state_dir_outside, tmp_path):
    root, victim = layout
    client = SwappingClient(["allow-once", "allow-once"], root, victim)
    sid = _session(client, root, tmp_path, state_dir_outside, "mkdir build && touch build/obj.o")
    assert [q.tool_call.raw_input["cwd"] for q in client.asked] == [str(root / "build")] * 2
    assert all("cwdWarning" not in q.tool_call.raw_input for q in client.asked)
    refused = client.tool_results(sid)[-1]
    assert f"it was {root}/build and now leads to {victim}" in refused
    assert refused.endswith("Nothing ran.")
    assert (victim / "precious.txt").read_text() == "keep\n"
    assert (root / "build.old" / "obj.o").exists()


def test_a_real_workdir_runs_there_once_allowed(layout, state_dir_outside, tmp_path):
    root, victim = layout
    client = ScriptedClient(["allow-once", "allow-once"])
    sid = _session(client, root, tmp_path, state_dir_outside, "mkdir build && touch build/obj.o")
    assert [q.tool_call.raw_input["cwd"] for q in client.asked] == [str(root / "build")] * 2
    assert client.tool_results(sid)[-1].startswith(f"{root}/build\n")
    assert list((root / "build").iterdir()) == []
    assert (victim / "precious.txt").read_text() == "keep\n"

"""`stockade.testing` as a host's test suite uses it: a fake runner, a scripted answerer,
sessions in memory. The first test is docs/embedding.md's "Testing a host", verbatim."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.events import SessionHeader
from stockade.harness import Session
from stockade.sessionlog import open_session_log
from stockade.testing import ScriptedAnswerer, composition, fake_runner, memory_store
from stockade.tools.events import ToolCalled

DOC = Path(__file__).resolve().parents[2] / "docs" / "embedding.md"


# --- the embedder's test, as docs/embedding.md shows it -------------------------------


@pytest.fixture
def runner():
    # Outside /tmp: the harness runs no runner a confined command could replace.
    directory = tempfile.mkdtemp(dir="/var/tmp")
    yield fake_runner(directory)
    shutil.rmtree(directory)


async def test_my_agent_gets_one_wider_retry_when_the_user_allows_it(runner, tmp_path):
    answerer = ScriptedAnswerer(["allowed-once"])
    entries = composition(runner, mode="read-only")
    async with open_harness(entries, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=tmp_path)
        result = await session.run_tool(
            "bash",
            {
                "command": "echo hi > out.txt",
                "sandbox_permissions": "workspace-write",
                "justification": "the user asked for out.txt",
            },
        )
        assert result.facts["granted"] == "workspace-write"
        assert result.facts["backend"] == "runner-command"
        assert [request.command for request in answerer.seen] == ["echo hi > out.txt"]
        assert (await session.sandbox_mode()).value == "read-only"  # once, not kept
        tags = [event.tag for event in await session.events()]
        assert "approval/answered" in tags
    assert (tmp_path / "out.txt").read_text() == "hi\n"


# --- the fakes' own rules -------------------------------------------------------------


def test_the_doc_shows_this_modules_embedder_test_as_it_runs():
    doc = DOC.read_text(encoding="utf-8")
    block = re.search(r"## Testing a host\n.*?```python\n(.*?)\n```", doc, re.DOTALL)
    assert block is not None, "docs/embedding.md has a Testing a host section"
    source = Path(__file__).read_text(encoding="utf-8")
    for chunk in block.group(1).split("\n\n\n"):
        if not chunk.startswith(("import", "from")):
            assert chunk.strip() in source, chunk


async def test_a_failing_fake_runner_is_sandbox_unavailable(tmp_path):
    directory = tempfile.mkdtemp(dir="/var/tmp")
    try:
        broken = fake_runner(directory, fail="FAKE: cannot set up the sandbox")
        entries = composition(broken, runner_failure_signatures=["FAKE:"])
        async with open_harness(entries) as harness:
            session = await harness.open_session(cwd=tmp_path)
            result = await session.run_tool("bash", {"command": "touch ran"})
    finally:
        shutil.rmtree(directory)
    assert result.is_error and result.text.startswith("SANDBOX_UNAVAILABLE"), result.text
    assert not (tmp_path / "ran").exists()


async def test_nobody_answering_is_unavailable_never_a_prompt(runner, tmp_path):
    async with open_harness(composition(runner, mode="read-only")) as harness:
        session = await harness.open_session(cwd=tmp_path)
        asked = {"command": "true", "sandbox_permissions": "workspace-write", "justification": "x"}
        result = await session.run_tool("bash", asked)
    assert "unavailable" in result.text and "granted" not in result.facts, result.text


def test_a_fake_runner_in_a_temp_root_is_refused_at_once(tmp_path):
    with pytest.raises(ValueError, match="inside the temp root"):
        fake_runner(tmp_path)
    assert not (tmp_path / "fake-runner").exists()


async def test_the_memory_store_reads_what_the_harness_writes():
    async with open_session_log(memory_store()) as log:
        session = await Session.open(log, cwd="/work/a")
        await session.append(ToolCalled(call_id="c1", name="bash", arguments={"command": "true"}))
        header, called = await session.events()
        assert isinstance(header, SessionHeader) and isinstance(called, ToolCalled)
        await session.close()

"""Agent sockets through the harness (issue 37): off by default (the host's
SSH_AUTH_SOCK is neither passed nor reachable), granted per composition or per
session (kept in its log: a resumed session has it), stated in the policy message and
the claim, the private key hidden while the public files are read. Real kernel, both
backends; the unconfined control reaches the agent and reads the key."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from stockade import open_harness

from ..launcher.test_launcher_fresh import Received, listening
from ..support import require_backend
from .conftest import on_backend as composition

BACKENDS = ("bwrap", "landlock")


@attrs.frozen
class Place:
    home: Path
    root: Path
    agent: Path
    heard: Received


@pytest.fixture
def place(monkeypatch) -> Iterator[Place]:
    """A home with ~/.ssh (a private key, its .pub, known_hosts) and a Unix server
    standing in for the agent (in /var/tmp: network off makes /tmp fresh)."""
    base = Path(tempfile.mkdtemp(prefix="stockade-agent-", dir="/var/tmp"))
    home, root = base / "home", base / "ws"
    root.mkdir()
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE\n")
    (home / ".ssh" / "id_ed25519.pub").write_text("ssh-ed25519 PUBLIC\n")
    (home / ".ssh" / "known_hosts").write_text("host KNOWN\n")
    agent = base / "agent.sock"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SSH_AUTH_SOCK", str(agent))
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "STOCKADE_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    try:
        with listening(agent) as heard:
            yield Place(home, root, agent, heard)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# What the command does with the agent: say hello on $SSH_AUTH_SOCK, then read the
# key directory's files.
SCRIPT = """
echo "sock=${SSH_AUTH_SOCK:-none}"
python3 -c 'import os, socket; s = socket.socket(socket.AF_UNIX); \
s.connect(os.environ["SSH_AUTH_SOCK"]); s.sendall(b"hello")' && echo REACHED
cat ~/.ssh/id_ed25519 2>/dev/null && echo KEY-READ
cat ~/.ssh/id_ed25519.pub ~/.ssh/known_hosts
"""


def test_the_control_reaches_the_agent_and_reads_the_key(place):
    done = subprocess.run(["bash", "-c", SCRIPT], capture_output=True, text=True, check=False)
    assert "REACHED" in done.stdout and "KEY-READ" in done.stdout
    assert b"hello" in place.heard.settled(1)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_without_the_opt_in_the_agent_is_out_of_reach(backend, place):
    require_backend(backend)
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(place.root))
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool("bash", {"command": SCRIPT})
        context = await session.pre_step()
    assert "sock=none" in result.text and "REACHED" not in result.text
    assert "PUBLIC" not in result.text and "KEY-READ" not in result.text
    assert place.heard == []
    assert context is not None and "SSH agent" not in context.text


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("given", ("composition", "session"))
async def test_the_opt_in_reaches_the_agent_and_hides_the_key(backend, place, given):
    require_backend(backend)
    sandbox = {"allow_ssh_agent": True} if given == "composition" else {}
    own = {"allow_ssh_agent": True} if given == "session" else {}
    async with open_harness(composition(backend, **sandbox)) as harness:
        session = await harness.open_session(cwd=str(place.root), **own)
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool("bash", {"command": SCRIPT})
        assert f"sock={place.agent}" in result.text, result.text
        assert "REACHED" in result.text and b"hello" in place.heard.settled(1)
        assert "KEY-READ" not in result.text and "PRIVATE" not in result.text
        assert "PUBLIC" in result.text and "KNOWN" in result.text
        assert result.facts["enforcement"] == "partial"
        assert any("ssh agent" in gap for gap in result.facts["gaps"]), result.facts["gaps"]
        context = await session.pre_step()
        assert context is not None and "SSH agent" in context.text
        session_id = session.id
        await session.close()
        place.heard.clear()
        resumed = await harness.resume_session(session_id)
        await resumed.set_sandbox_mode("workspace-write")
        again = await resumed.run_tool("bash", {"command": SCRIPT})
        assert "REACHED" in again.text and b"hello" in place.heard.settled(1), again.text

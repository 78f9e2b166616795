"""Per-destination escalation on the real kernel (issue 25): a destination the allowlist
refused is asked for by name (`with_network` + `network_destinations`); a grant lets
THAT call reach it, still under network allowlist, and the next call does not; a
rejection sends nothing; the person was shown the destination.

Traffic goes only to servers this test starts on the host's loopback, which record
every request they receive: what reached them is judged there, not in the result.
"""

from __future__ import annotations

import http.server
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.approval.answerers import ScriptedAnswerer
from stockade.approval.events import ApprovalAsked
from stockade.approval.render import render_prompt
from stockade.vocab import network_denial_marker

from ..support import require_backend
from .test_allowlist import serving

BACKENDS = ["bwrap", "landlock"]


@pytest.fixture
def servers() -> Iterator[list[http.server.ThreadingHTTPServer]]:
    """Two HTTP servers on the host's loopback: the operator's allowed one, and one only
    a grant names. Each keeps the paths it was asked for."""
    with serving(2) as made:
        yield made


@pytest.fixture(params=BACKENDS)
def backend(request):
    require_backend(request.param)
    return request.param


def curl(port: int, path: str) -> str:
    return f"curl -sS --max-time 5 http://127.0.0.1:{port}/{path}"


async def test_a_granted_destination_is_reached_by_that_call_only(backend, scratch, servers):
    operator, extra = servers
    allowed, other = (server.server_address[1] for server in servers)
    where = f"127.0.0.1:{other}"
    root = Path(scratch) / "project"
    root.mkdir()
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {
            "id": "bash",
            "name": "stockade.bash.sandbox",
            "config": {"network": "allowlist", "network_allow": [f"127.0.0.1:{allowed}"]},
        },
        {"id": "approval", "name": "stockade.approval.user"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": f"{scratch}/state"}},
    ]
    answerer = ScriptedAnswerer(["rejected", "allowed-once", "allowed-once"])

    def ask(path: str) -> dict[str, object]:
        return {
            "command": f"{curl(other, path)}; {curl(allowed, path)}; true",
            "sandbox_permissions": "with_network",
            "justification": "fetches from the second server",
            "network_destinations": [where],
        }

    async with open_harness(entries, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        refused = await session.run_tool("bash", {"command": f"{curl(other, 'first')}; true"})
        rejected = await session.run_tool("bash", ask("rejected"))
        await session.pre_step()  # a new turn: the rejection stands only in its own
        granted = await session.run_tool("bash", ask("granted"))
        after = await session.run_tool("bash", {"command": f"{curl(other, 'after')}; true"})
        # From network off, a grant is an allowlist of the named destinations alone.
        await session.set_network("off")
        alone = await session.run_tool("bash", ask("alone"))
        asked = [e for e in await session.events() if isinstance(e, ApprovalAsked)]

    # Refused by the allowlist: the marker, and the hint naming the retry.
    assert network_denial_marker(where) in refused.text
    assert f'network_destinations ["{where}"]' in refused.text
    # Rejected: nothing ran, nothing was sent.
    assert rejected.is_error and rejected.facts["outcome"] == "rejected"
    # Granted: this call reached it, still under allowlist (the operator's entry too).
    assert granted.facts["granted"] == "with_network", granted.text
    assert granted.facts["network"] == "allowlist"
    assert granted.facts["granted_destinations"] == [where]
    assert f"hello from {other}" in granted.text and f"hello from {allowed}" in granted.text
    # Not persisted: the next call is refused again.
    assert network_denial_marker(where) in after.text
    # From off: the named destination alone, not the operator's allowlist.
    assert f"hello from {other}" in alone.text, alone.text
    assert network_denial_marker(f"127.0.0.1:{allowed}") in alone.text
    # What each server saw.
    assert extra.paths == ["/granted", "/alone"]
    assert operator.paths == ["/granted"]
    # The person was shown the destination, and the log says what was asked.
    assert len(answerer.seen) == 3
    assert f"    - {where}" in render_prompt(answerer.seen[0]).splitlines()
    assert [e.network_destinations for e in asked] == [(where,)] * 3

"""Per-destination escalation without the kernel: what `network_destinations` accepts
(a bad entry is a tool error, nobody asked, nothing run), what every face shows the
person, what the log keeps, and the hint after a refused destination.

The grant reaching its destination for one call only is judged on the real kernel
(tests/security/test_allowlist_escalation.py).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from stockade import ApprovalPolicy, ApprovalRequest, SandboxMode, open_harness
from stockade.acp import permission
from stockade.approval.answerers import ScriptedAnswerer
from stockade.approval.events import ApprovalAsked
from stockade.approval.render import render_prompt
from stockade.mcp import _ask
from stockade.messages import NetworkConnection
from stockade.tools._bash_schema import bash_schema
from stockade.tools._escalation import parse_destinations
from stockade.tools.bash import _hints

from .test_network import NETWORKED, recording, with_network


def test_the_schema_offers_destinations_only_where_escalation_is():
    field = bash_schema(confines=True)["parameters"]["properties"]["network_destinations"]
    assert field["type"] == "array" and field["items"] == {"type": "string"}
    assert "`host:port` or `ip:port`" in field["description"]
    assert '"with_network"' in field["description"]
    assert "network_destinations" not in bash_schema(confines=False)["parameters"]["properties"]


def test_destinations_are_written_as_the_rules_write_them_once_each():
    assert parse_destinations(
        ["Example.COM:443", "[::1]:8080", "127.0.0.1:80", "example.com.:443", "bücher.de:443"]
    ) == (("example.com:443", "[::1]:8080", "127.0.0.1:80", "xn--bcher-kva.de:443"), None)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"sandbox_permissions": None}, "goes only with sandbox_permissions"),
        ({"sandbox_permissions": "read-only"}, "goes only with sandbox_permissions"),
        ({"network_destinations": []}, "is empty"),
        ({"network_destinations": ["example.com"]}, "'example.com' is not one host and port"),
        ({"network_destinations": ["*.example.com:443"]}, "not one host and port"),
        ({"network_destinations": ["10.0.0.0/8:443"]}, "not one host and port"),
        ({"network_destinations": ["[::1]"]}, "not one host and port"),
        ({"network_destinations": ["a.com:1", "host:99999"]}, "not from 1 to 65535"),
        ({"network_destinations": ["evil\x00.com:80"]}, "no space or control character"),
        ({"network_destinations": "example.com:443"}, "invalid arguments for bash"),
    ],
)
async def test_a_bad_destination_asks_nobody_and_runs_nothing(state_dir, projects, extra, expected):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-once"])
    config, provider = recording(state_dir)
    arguments: dict[str, Any] = with_network(network_destinations=["example.com:443"])
    arguments.update(extra)
    arguments = {name: value for name, value in arguments.items() if value is not None}
    async with open_harness(config, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", arguments)
    assert result.is_error and expected in result.text, result.text
    if "invalid arguments" not in expected:
        assert "Nobody was asked and nothing ran" in result.text
        # The model is told the forms it may give, not the operator's wider syntax.
        assert "CIDR (`10.0.0.0/8`" not in result.text
    assert answerer.seen == [] and provider.seen == []
    assert not (root / "ran.txt").exists()


async def test_a_call_that_has_the_network_asks_nobody_for_destinations(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-once"])
    config, provider = recording(state_dir)
    async with open_harness(config, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_network("on")
        result = await session.run_tool(
            "bash", with_network(network_destinations=["example.com:443"])
        )
    assert result.is_error and "already has network access" in result.text
    assert answerer.seen == [] and provider.seen == []


def asked(*destinations: str) -> ApprovalRequest:
    return ApprovalRequest(
        session_id="s",
        command=NETWORKED,
        justification="fetch",
        current_mode=SandboxMode.WORKSPACE_WRITE,
        requested_mode=SandboxMode.WORKSPACE_WRITE,
        policy=ApprovalPolicy.ASK,
        reason="network access",
        with_network=True,
        network_destinations=destinations,
    )


def test_every_face_names_each_destination():
    request = asked("pypi.org:443", "127.0.0.1:8080")
    terminal = render_prompt(request).splitlines()
    mcp = _ask.ask_message(request, _ask.Shown(cwd="/w")).splitlines()
    acp = permission.prompt_text(request, "/w").splitlines()
    for rows in (terminal, mcp, acp):
        assert "    - pypi.org:443" in rows and "    - 127.0.0.1:8080" in rows, rows
        assert any("network access to 2 destinations, for this call only" in r for r in rows)
        assert any(r.endswith("workspace-write (unchanged)") for r in rows)
    heads = (terminal[1], mcp[0], acp[0])
    assert all("with network access to pypi.org:443, 127.0.0.1:8080" in h for h in heads)
    assert "Run once with network access to pypi.org:443, 127.0.0.1:8080" in (
        permission.title(request)
    )
    raw = permission.tool_call(request, tool_call_id="t", cwd="/w")["rawInput"]
    assert raw["networkDestinations"] == ["pypi.org:443", "127.0.0.1:8080"]
    # A grant of named destinations is for one call: no session switch is offered.
    offered = permission.options(request, allow_always=True)
    assert [o["optionId"] for o in offered] == [permission.ALLOW_ONCE, permission.REJECT]
    assert "pypi.org:443" in offered[0]["name"]
    # Without destinations the faces read as before.
    assert "  requests:  network access" in render_prompt(asked()).splitlines()
    assert permission.SWITCH_SESSION in {
        o["optionId"] for o in permission.options(asked(), allow_always=True)
    }


def test_a_destination_from_a_direct_caller_is_shown_escaped():
    rows = render_prompt(asked("a.com:1\r\x1b[2Kb.com:2")).splitlines()
    assert "    - a.com:1\\r\\x1b[2Kb.com:2" in rows


async def test_the_log_keeps_the_destinations_asked_for(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["rejected"])
    config, provider = recording(state_dir)
    async with open_harness(config, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", with_network(network_destinations=["Pypi.org:443"]))
        events = [e for e in await session.events() if isinstance(e, ApprovalAsked)]
    assert result.is_error and result.facts["outcome"] == "rejected"
    assert result.text.startswith("the user rejected running this command with network access")
    assert provider.seen == []
    assert [e.network_destinations for e in events] == [("pypi.org:443",)]
    assert "network access to pypi.org:443" in events[0].reason
    assert answerer.seen[0].network_destinations == ("pypi.org:443",)
    # A log written before the field reads with none.
    old = msgspec.json.encode(events[0]).replace(b',"network_destinations":["pypi.org:443"]', b"")
    assert b"network_destinations" not in old
    assert msgspec.json.decode(old, type=ApprovalAsked).network_destinations == ()


def connection(port: int, *, rule: str | None = None) -> NetworkConnection:
    return NetworkConnection(
        host="127.0.0.1",
        port=port,
        address="127.0.0.1",
        allowed=False,
        rule=rule,
        reason="refused",
        protocol="http",
    )


def test_the_hint_names_the_refused_destinations_a_grant_could_open():
    hint = _hints(False, (connection(80), connection(81), connection(80)))
    assert 'sandbox_permissions "with_network"' in hint
    assert 'network_destinations ["127.0.0.1:80", "127.0.0.1:81"]' in hint
    assert "wider file access" not in hint
    # A deny entry's refusal is never offered: no grant lifts it.
    denied = _hints(False, (connection(80), connection(82, rule="127.0.0.1:82")))
    assert 'network_destinations ["127.0.0.1:80"]' in denied and "network_deny" in denied
    only_denied = _hints(False, (connection(82, rule="127.0.0.1:82"),))
    assert "network_destinations" not in only_denied and "network_deny" in only_denied
    # A file denial keeps its own hint beside it.
    both = _hints(True, (connection(80),))
    assert "wider file access" in both and "network_destinations" in both
    assert _hints(False, ()) == ""


def test_the_policy_message_under_allowlist_offers_the_retry_by_destination():
    from stockade import Network
    from stockade.policy.context import render_policy_context

    text = render_policy_context(
        SandboxMode.WORKSPACE_WRITE, "/w", ApprovalPolicy.ASK, network=Network.ALLOWLIST
    )
    assert 'sandbox_permissions "with_network", network_destinations' in text
    never = render_policy_context(
        SandboxMode.WORKSPACE_WRITE, "/w", ApprovalPolicy.NEVER, network=Network.ALLOWLIST
    )
    assert "network_destinations" not in never

"""The network knob through the harness: what each call is stamped with, what reaches the
provider, what the result says, and the one approved `with_network` run.

The provider here is a recording stand-in (a third-party sandbox plugin): it keeps the
policy of every `Confine` and runs the command as it is. Enforcing `network: off` is
the backends' business (tests of bwrap and the launcher); this module checks that the
value is resolved, carried, asked for and reported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import attrs
import pytest
import trio

from stockade import ApprovalPolicy, ApprovalRequest, Network, SandboxMode, open_harness
from stockade.approval.answerers import ScriptedAnswerer
from stockade.approval.events import ApprovalAnswered, ApprovalAsked
from stockade.approval.render import render_prompt
from stockade.config import BUILTIN_PLUGINS, Plugin, load_composition
from stockade.config.builtins import SandboxLocalConfig
from stockade.messages import Wrapped
from stockade.policy import SandboxNotMounted
from stockade.tools.bash import Permission
from stockade.vocab import Enforcement, SandboxPolicy, allowed_modes

from .conftest import composition

RECORDING = "test.sandbox.recording"
NETWORKED = "echo ran > ran.txt"


@attrs.define(eq=False)
class RecordingProvider:
    """A provider actor that records every policy it is asked to confine under."""

    seen: list[SandboxPolicy] = attrs.field(factory=list)

    @property
    def client(self) -> RecordingProvider:
        return self

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await trio.sleep_forever()

    async def confine(
        self, argv: Any, policy: SandboxPolicy, *, workdir: str | None = None
    ) -> Wrapped:
        self.seen.append(policy)
        return Wrapped(
            argv=tuple(argv),
            backend="recording",
            enforcement=Enforcement.FULL,
            denial_signatures=(),
            runner_failure_rules=(),
        )


def recording(state_dir: str, *, approval: bool = True, **bash: Any):
    """A composition over the recording provider, and the provider its harness starts."""
    provider = RecordingProvider()
    plugin = Plugin(
        name=RECORDING,
        kind="sandbox",
        config_type=SandboxLocalConfig,
        factory=lambda _config: provider,
    )
    entries = composition(state_dir, approval=approval, **bash)
    entries[0] = {"id": "sandbox", "name": RECORDING}
    loaded = load_composition(entries, plugins={**BUILTIN_PLUGINS, RECORDING: plugin})
    return loaded, provider


def with_network(command: str = NETWORKED, **extra: Any) -> dict[str, Any]:
    return {
        "command": command,
        "sandbox_permissions": "with_network",
        "justification": "needs to fetch the package index",
        **extra,
    }


def audit(events: Any) -> list[tuple[str, Any, Any]]:
    return [
        (type(e).__name__, getattr(e, "decision", None), getattr(e, "with_network", None))
        for e in events
        if isinstance(e, ApprovalAsked | ApprovalAnswered)
    ]


# --- the knob, stamped and carried ----------------------------------------------------------


async def test_each_call_carries_the_sessions_network_to_the_provider_and_the_result(
    state_dir, projects
):
    root, _ = projects
    config, provider = recording(state_dir)
    async with open_harness(config) as harness:
        session = await harness.open_session(cwd=root)
        off = await session.run_tool("bash", {"command": "true"})
        await session.set_network("on")
        on = await session.run_tool("bash", {"command": "true"})
        job = await session.run_tool("bash", {"command": "true", "background": True})
        report = await session.shell.wait(job.facts["job_id"])
        await session.set_sandbox_mode("danger-full-access")
        await session.set_network("off")
        full = await session.run_tool("bash", {"command": "true"})
        programmatic = await session.shell.run("true")
        events = await session.events()
    assert [policy.network for policy in provider.seen] == [Network.OFF, Network.ON, Network.ON]
    assert (off.facts["network"], on.facts["network"]) == ("off", "on")
    assert job.facts["network"] == "on" and report.network is Network.ON
    assert report.policy.network is Network.ON
    # danger-full-access never reaches the provider, and has the network.
    assert full.facts["network"] == "on" and full.facts["backend"] == "none"
    assert programmatic.network is Network.ON
    # The log holds each switch as its own event.
    assert [e.tag for e in events if e.tag.startswith("sandbox/")] == [
        "sandbox/network",
        "sandbox/mode",
        "sandbox/network",
    ]


async def test_the_composition_default_comes_from_the_bash_entry(state_dir, projects):
    root, _ = projects
    config, provider = recording(state_dir, network="on")
    async with open_harness(config) as harness:
        assert harness.defaults.network is Network.ON
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": "true"})
        assert await session.network() is Network.ON
        await session.set_network("off")
        narrowed = await session.run_tool("bash", {"command": "true"})
    assert (result.facts["network"], narrowed.facts["network"]) == ("on", "off")
    assert [policy.network for policy in provider.seen] == [Network.ON, Network.OFF]


async def test_a_resumed_session_keeps_its_network(state_dir, projects):
    root, _ = projects
    config, provider = recording(state_dir)
    async with open_harness(config) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_network("on")
        session_id = session.id
        await session.close()
    config, provider = recording(state_dir)
    async with open_harness(config) as harness:
        resumed = await harness.resume_session(session_id)
        told = await resumed.pre_step()
        result = await resumed.run_tool("bash", {"command": "true"})
    assert told is not None and "- Network: on." in told.text
    assert result.facts["network"] == "on" and provider.seen[-1].network is Network.ON


async def test_an_unconfined_composition_has_only_network_on(state_dir, scratch):
    async with open_harness(composition(state_dir, executor="local")) as harness:
        assert harness.defaults.network is Network.ON
        session = await harness.open_session(cwd=scratch)
        before = (Path(state_dir) / f"{session.id}.jsonl").read_text()
        with pytest.raises(SandboxNotMounted, match="network 'off' cannot be honoured"):
            await session.set_network("off")
        assert (Path(state_dir) / f"{session.id}.jsonl").read_text() == before
        result = await session.run_tool("bash", {"command": "true"})
        told = await session.pre_step()
    assert result.facts["network"] == "on"
    assert "Nothing restricts network access" in told.text


# --- the schema ---------------------------------------------------------------------------------


async def test_with_network_is_offered_exactly_where_escalation_is(state_dir):
    assert get_args(Permission) == (*allowed_modes(), "with_network")
    async with open_harness(composition(state_dir)) as confined:
        bash = confined.tool_schemas()[0]
        field = bash["parameters"]["properties"]["sandbox_permissions"]
        assert field["enum"] == [*allowed_modes(), "with_network"]
        assert "with_network" in bash["description"]
    async with open_harness(composition(state_dir, executor="local", approval=False)) as local:
        assert "sandbox_permissions" not in local.tool_schemas()[0]["parameters"]["properties"]


# --- the one approved run with network ----------------------------------------------------------


async def test_allowed_once_runs_this_call_with_network_and_nothing_else(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-once"])
    config, provider = recording(state_dir)
    async with open_harness(config, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_sandbox_mode("read-only")
        granted = await session.run_tool("bash", with_network())
        again = await session.run_tool("bash", {"command": NETWORKED})
        events = await session.events()
    assert not granted.is_error
    assert granted.facts["granted"] == "with_network"
    assert (granted.facts["network"], granted.facts["mode"]) == ("on", "read-only")
    assert "[network access granted once: this call ran with network on]" in granted.text
    assert again.facts["network"] == "off" and "granted" not in again.facts
    assert [(p.mode.value, p.network) for p in provider.seen] == [
        ("read-only", Network.ON),
        ("read-only", Network.OFF),
    ]
    assert audit(events) == [
        ("ApprovalAsked", None, True),
        ("ApprovalAnswered", "allowed-once", None),
    ]
    asked = answerer.seen[0]
    assert asked.with_network and asked.current_mode == asked.requested_mode
    assert "network access requested under read-only" in asked.reason
    # Never persisted: the session's knob is untouched.
    assert not any(e.tag == "sandbox/network" for e in events)


async def test_a_background_job_can_be_granted_network(state_dir, projects):
    root, _ = projects
    config, provider = recording(state_dir)
    answerer = ScriptedAnswerer(["allowed-once"])
    async with open_harness(config, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        started = await session.run_tool("bash", with_network(background=True))
        report = await session.shell.wait(started.facts["job_id"])
    assert started.facts["granted"] == "with_network" and started.facts["network"] == "on"
    assert "granted once" in started.text
    assert report.network is Network.ON and provider.seen[-1].network is Network.ON


async def test_rejected_runs_nothing_and_forbids_a_re_ask_this_turn(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["rejected", "allowed-once"])
    config, provider = recording(state_dir)
    async with open_harness(config, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        rejected = await session.run_tool("bash", with_network())
        re_ask = await session.run_tool("bash", with_network())
        # Full access would bring the refused network back: it may not be asked either.
        wider = await session.run_tool(
            "bash",
            {
                "command": NETWORKED,
                "sandbox_permissions": "danger-full-access",
                "justification": "x",
            },
        )
        assert len(answerer.seen) == 1
        await session.pre_step()  # a new turn
        later = await session.run_tool("bash", with_network())
        events = await session.events()
    assert rejected.is_error and rejected.facts["outcome"] == "rejected"
    assert rejected.text.startswith("the user rejected running this command with network access")
    assert re_ask.is_error and "may not be asked again" in re_ask.text
    assert wider.is_error and "may not be asked again" in wider.text
    assert later.facts["granted"] == "with_network"
    assert [d for _, d, _ in audit(events) if d] == ["rejected", "allowed-once"]
    assert len(provider.seen) == 1  # only the granted run reached the provider


@pytest.mark.parametrize(
    ("decisions", "policy", "expected", "asked"),
    [
        (["cancelled"], "ask", "the network access request was cancelled before the user", 1),
        ([], "ask", "running this command with network access is unavailable", 1),
        (["allowed-once"], "never", "running this command with network access is unavailable", 0),
    ],
)
async def test_cancelled_and_unavailable_run_nothing(
    state_dir, projects, decisions, policy, expected, asked
):
    root, _ = projects
    answerer = ScriptedAnswerer(list(decisions))
    config, provider = recording(state_dir)
    async with open_harness(config, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_approval_policy(policy)
        result = await session.run_tool("bash", with_network())
        events = await session.events()
    assert result.is_error and expected in result.text
    assert len(answerer.seen) == asked
    assert not (root / "ran.txt").exists() and provider.seen == []
    assert audit(events)[-1][0] == "ApprovalAnswered"
    assert audit(events)[0] == ("ApprovalAsked", None, True)


async def test_a_call_that_has_the_network_asks_nobody(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["allowed-once", "allowed-once"])
    config, provider = recording(state_dir)
    async with open_harness(config, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_network("on")
        on = await session.run_tool("bash", with_network())
        await session.set_sandbox_mode("danger-full-access")
        full = await session.run_tool("bash", with_network())
    for result in (on, full):
        assert result.is_error and "already has network access" in result.text
        assert "Nobody was asked and nothing ran" in result.text
    assert answerer.seen == [] and provider.seen == []


async def test_no_approval_service_and_no_justification_refuse(state_dir, projects):
    root, _ = projects
    config, provider = recording(state_dir, approval=False)
    async with open_harness(config) as harness:
        session = await harness.open_session(cwd=root)
        no_service = await session.run_tool("bash", with_network())
        unpaired = await session.run_tool(
            "bash", {"command": NETWORKED, "sandbox_permissions": "with_network"}
        )
    assert no_service.is_error and "no approval service" in no_service.text
    assert unpaired.is_error and "go together" in unpaired.text
    assert provider.seen == []


async def test_the_person_is_shown_that_network_access_is_requested(state_dir, projects):
    root, _ = projects
    answerer = ScriptedAnswerer(["rejected"])
    config, _ = recording(state_dir)
    async with open_harness(config, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", with_network())
    rows = render_prompt(answerer.seen[0]).splitlines()
    assert "stockade: the agent asks to run a command with network access, once." in rows
    assert "  requests:  network access" in rows
    assert "  mode:      workspace-write (unchanged)" in rows
    assert f"  command:   {NETWORKED}" in rows


def test_a_full_access_request_shows_that_the_network_comes_with_it():
    def request(requested: SandboxMode) -> ApprovalRequest:
        return ApprovalRequest(
            session_id="s",
            command="make install",
            justification="install",
            current_mode=SandboxMode.READ_ONLY,
            requested_mode=requested,
            policy=ApprovalPolicy.ASK,
            reason="denied",
        )

    full = render_prompt(request(SandboxMode.DANGER_FULL_ACCESS)).splitlines()
    assert "  network:   on (danger-full-access allows everything)" in full
    narrower = render_prompt(request(SandboxMode.WORKSPACE_WRITE)).splitlines()
    assert not any(row.startswith("  network:") or "requests:" in row for row in narrower)

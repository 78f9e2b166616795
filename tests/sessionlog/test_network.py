"""The network knob: its event, fold, resolution, presets, restart, fork and the message.

Judged by the session log (what was appended, what a resumed session resolves to) and
by the policy a call is stamped with.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stockade.errors import ConfigError
from stockade.events import SessionEvent, SessionHeader
from stockade.harness.session import Session
from stockade.policy import (
    CUSTOM,
    DEFAULT_PRESETS,
    ApprovalPolicySet,
    NetworkSet,
    PolicyContext,
    PolicyDefaults,
    Preset,
    PresetSelected,
    PresetTable,
    SandboxModeSet,
    SandboxNotMounted,
    current_preset,
    effective_network,
    knob_state,
    policy_context_update,
    preset_selection,
    render_policy_context,
    resolve_execution_policy,
)
from stockade.sessionlog import JsonlStore, MemoryStore, SessionLogClient, open_session_log
from stockade.vocab import ApprovalPolicy, ExecutionPolicy, Network, SandboxMode, SandboxPolicy

from ._helpers import DEFAULTS, Note

RO, WW, DFA = SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE, SandboxMode.DANGER_FULL_ACCESS
ASK, NEVER = ApprovalPolicy.ASK, ApprovalPolicy.NEVER
OFF, ON = Network.OFF, Network.ON
UNCONFINED = PolicyDefaults(
    sandbox_mode="danger-full-access",
    fallback_root="/srv/fallback",
    unconfined="its executor 'stockade.bash.local' does not confine the commands it runs",
)


async def open_session(log: SessionLogClient, **kwargs: object) -> Session:
    kwargs.setdefault("defaults", DEFAULTS)
    return await Session.open(log, **kwargs)  # type: ignore[arg-type]


def tags(events: object) -> list[str]:
    return [event.tag for event in events]  # type: ignore[attr-defined]


# --- the vocabulary ---------------------------------------------------------------------


def test_network_is_a_closed_enum_that_names_its_values() -> None:
    assert [n.value for n in Network] == ["off", "allowlist", "on"]
    assert Network.parse("on") is ON and Network.parse(OFF) is OFF
    with pytest.raises(
        ConfigError, match=r"unknown network setting 'yes' \(allowed: off, allowlist, on\)"
    ):
        Network.parse("yes")


def test_a_policy_without_network_decodes_as_before_and_full_access_is_always_on() -> None:
    old = msgspec.json.decode(b'{"mode":"read-only","workspace_root":"/w"}', type=ExecutionPolicy)
    assert old == ExecutionPolicy(mode=RO, workspace_root="/w") and old.network is OFF
    wide = msgspec.json.decode(
        b'{"mode":"danger-full-access","workspace_root":"/w","network":"off"}',
        type=ExecutionPolicy,
    )
    assert wide.network is ON
    assert ExecutionPolicy(mode=DFA, workspace_root="/w", network=OFF).network is ON
    # What a backend receives carries the network.
    assert ExecutionPolicy(mode=RO, workspace_root="/w", network=ON).sandbox_policy() == (
        SandboxPolicy(mode=RO, workspace_root="/w", network=ON)
    )
    assert ExecutionPolicy(mode=WW, workspace_root="/w").sandbox_policy().network is OFF


# --- fold and resolution ----------------------------------------------------------------

any_event = st.one_of(
    st.sampled_from(Network).map(lambda n: NetworkSet(network=n)),
    st.sampled_from(SandboxMode).map(lambda m: SandboxModeSet(mode=m)),
    st.integers(0, 9).map(lambda n: Note(n=n)),
    st.just(SessionHeader(cwd="/w")),
)


@given(st.lists(any_event, max_size=40))
def test_the_fold_is_the_last_network_event_over_the_default(events: list[SessionEvent]) -> None:
    networks = [e.network for e in events if isinstance(e, NetworkSet)]
    modes = [e.mode for e in events if isinstance(e, SandboxModeSet)]
    assert effective_network(events) == (networks[-1] if networks else None)
    state = knob_state(events, DEFAULTS)
    assert state.network == (networks[-1] if networks else OFF)
    assert state.network_overridden == bool(networks)
    mode = modes[-1] if modes else WW
    assert state.effective_network is (ON if mode is DFA else state.network)


def test_defaults_are_off_where_the_composition_confines_and_on_where_it_cannot() -> None:
    assert DEFAULTS.network is OFF
    assert PolicyDefaults(fallback_root="/", network="on").network is ON
    assert UNCONFINED.network is ON
    with pytest.raises(SandboxNotMounted, match="the default network 'off' cannot be honoured"):
        PolicyDefaults(
            sandbox_mode="danger-full-access", fallback_root="/", unconfined="x", network="off"
        )


@pytest.mark.parametrize(
    ("events", "explicit_mode", "explicit_network", "expected"),
    [
        ([], None, None, OFF),
        ([NetworkSet(network=ON)], None, None, ON),
        ([NetworkSet(network=ON), NetworkSet(network=OFF)], None, None, OFF),
        ([], None, ON, ON),  # a granted network escalation
        ([NetworkSet(network=ON)], None, OFF, OFF),  # explicit beats the override
        ([SandboxModeSet(mode=DFA)], None, None, ON),  # full access allows everything
        ([NetworkSet(network=OFF)], DFA, None, ON),  # ... also when granted for one call
        ([SandboxModeSet(mode=DFA), NetworkSet(network=OFF)], RO, None, OFF),
    ],
)
def test_resolution_explicit_then_override_then_default(
    events: list[SessionEvent],
    explicit_mode: SandboxMode | None,
    explicit_network: Network | None,
    expected: Network,
) -> None:
    policy = resolve_execution_policy(
        events,
        DEFAULTS,
        session_root="/w",
        explicit_mode=explicit_mode,
        explicit_network=explicit_network,
    )
    assert policy.network is expected


# --- the session: events, restart, fork -----------------------------------------------------


async def test_set_network_appends_one_event_and_skips_a_repeat() -> None:
    async with open_session_log(MemoryStore()) as log:
        session = await open_session(log, cwd="/w")
        assert await session.network() is OFF
        pinned = await session.set_network("off")  # equals the default: still recorded
        assert pinned == NetworkSet(network=OFF, seq=2, ts=pinned.ts)
        assert await session.set_network(OFF) is None
        on = await session.set_network("on")
        assert on is not None and on.tag == "sandbox/network" and on.network is ON
        assert tags(await session.events()) == [
            "session/header",
            "sandbox/network",
            "sandbox/network",
        ]
        assert (await session.execution_policy()).network is ON
        with pytest.raises(ConfigError, match="allowed: off, allowlist, on"):
            await session.set_network("maybe")
        assert len(await session.events()) == 3


async def test_a_resumed_session_keeps_its_network(tmp_path: Path) -> None:
    async with open_session_log(JsonlStore(tmp_path)) as log:
        session = await open_session(log, session_id="net", cwd="/work/a")
        await session.set_network("on")
        await session.close()
    line = (tmp_path / "net.jsonl").read_text().splitlines()[1]
    assert msgspec.json.decode(line) == {
        "type": "sandbox/network",
        "seq": 2,
        "ts": msgspec.json.decode(line)["ts"],
        "network": "on",
    }
    # The operator's default is off (and stays so); the session's own choice survives.
    async with open_session_log(JsonlStore(tmp_path)) as log:
        async with await open_session(log, session_id="net") as session:
            assert await session.network() is ON
            assert await session.execution_policy() == ExecutionPolicy(
                mode=WW, workspace_root="/work/a", network=ON
            )
            # A default changed while down shows for a session that never set one.
            fresh = await open_session(log, session_id="fresh", cwd="/work/b")
            await fresh.close()
        changed = PolicyDefaults(fallback_root="/srv/fallback", network="on")
        async with await open_session(log, session_id="fresh", defaults=changed) as session:
            assert await session.network() is ON


async def test_fork_child_snapshots_the_network_override() -> None:
    async with open_session_log(MemoryStore()) as log:
        parent = await open_session(log, cwd="/w")
        await parent.set_network("on")
        await parent.set_sandbox_mode("read-only")
        child = await parent.fork_child()
        _, *seeded = await child.events()
        source = f"inherited:{parent.id}"
        assert [(e.tag, e.source) for e in seeded] == [
            ("sandbox/mode", source),
            ("sandbox/network", source),
        ]
        assert await child.network() is ON
        # Later switches touch only their own log.
        await child.set_network("off")
        assert await parent.network() is ON and await child.network() is OFF
        assert len(await parent.events()) == 3


async def test_a_composition_that_cannot_confine_refuses_network_off() -> None:
    async with open_session_log(MemoryStore()) as log:
        session = await open_session(log, cwd="/w", defaults=UNCONFINED)
        before = await session.events()
        with pytest.raises(SandboxNotMounted) as refused:
            await session.set_network("off")
        message = str(refused.value)
        assert message.startswith("SANDBOX_UNAVAILABLE: network 'off' cannot be honoured")
        assert "nothing would cut off its network access" in message
        assert await session.events() == before
        assert await session.network() is ON
        assert await session.set_network("on") is not None  # the one true value


# --- presets ------------------------------------------------------------------------------

TABLE = DEFAULT_PRESETS.with_presets(
    Preset(name="read-only", sandbox_mode=RO, approval_policy=ASK),
    Preset(name="online", sandbox_mode=WW, approval_policy=ASK, network=ON),
)


def test_each_preset_names_its_network() -> None:
    assert [(p.name, p.network) for p in DEFAULT_PRESETS.presets] == [
        ("workspace-write", OFF),
        ("danger-full-access", ON),
    ]
    assert Preset(name="x", sandbox_mode=RO, approval_policy=ASK).network is OFF
    assert Preset(name="x", sandbox_mode=DFA, approval_policy=NEVER).network is ON
    with pytest.raises(ConfigError, match="allows everything, network included"):
        Preset(name="x", sandbox_mode=DFA, approval_policy=NEVER, network=OFF)


@given(st.lists(any_event, max_size=20), st.sampled_from(TABLE.names))
def test_selecting_a_preset_sets_all_three_knobs(events: list[SessionEvent], name: str) -> None:
    preset = TABLE.get(name)
    after = events + preset_selection(events, TABLE, DEFAULTS, name)
    state = knob_state(after, DEFAULTS)
    assert (state.sandbox_mode, state.approval_policy, state.effective_network) == (
        preset.sandbox_mode,
        preset.approval_policy,
        preset.network,
    )
    assert current_preset(after, TABLE, DEFAULTS) == name
    assert preset_selection(after, TABLE, DEFAULTS, name) == []


def test_only_the_knobs_that_change_are_written() -> None:
    assert preset_selection([], TABLE, DEFAULTS, "online") == [
        PresetSelected(name="online"),
        NetworkSet(network=ON),
    ]
    online = [NetworkSet(network=ON)]
    assert preset_selection(online, TABLE, DEFAULTS, "workspace-write") == [
        PresetSelected(name="workspace-write"),
        NetworkSet(network=OFF),
    ]
    # Full access brings the network with it: no network event is needed.
    assert preset_selection([], TABLE, DEFAULTS, "danger-full-access") == [
        PresetSelected(name="danger-full-access"),
        SandboxModeSet(mode=DFA),
        ApprovalPolicySet(policy=NEVER),
    ]


def test_custom_when_the_three_knobs_match_no_preset() -> None:
    assert current_preset([], TABLE, DEFAULTS) == "workspace-write"
    assert current_preset([NetworkSet(network=ON)], TABLE, DEFAULTS) == "online"
    assert current_preset([NetworkSet(network=ON)], DEFAULT_PRESETS, DEFAULTS) == CUSTOM
    read_only_online = [SandboxModeSet(mode=RO), NetworkSet(network=ON)]
    assert current_preset(read_only_online, TABLE, DEFAULTS) == CUSTOM
    # Under full access the network knob does not matter: what a call gets is on.
    full = [SandboxModeSet(mode=DFA), ApprovalPolicySet(policy=NEVER), NetworkSet(network=OFF)]
    assert current_preset(full, TABLE, DEFAULTS) == "danger-full-access"


def test_preset_config_accepts_network_and_old_tables_stay_valid() -> None:
    old = PresetTable.from_config({"ro": {"sandbox_mode": "read-only", "approval_policy": "ask"}})
    assert old.get("ro").network is OFF
    new = PresetTable.from_config(
        {
            "online": {
                "sandbox_mode": "workspace-write",
                "approval_policy": "ask",
                "network": "on",
            },
            "yolo": {"sandbox_mode": "danger-full-access", "approval_policy": "never"},
        }
    )
    assert (new.get("online").network, new.get("yolo").network) == (ON, ON)
    with pytest.raises(ConfigError, match="unknown: colour"):
        PresetTable.from_config(
            {"x": {"sandbox_mode": "read-only", "approval_policy": "ask", "colour": 1}}
        )
    with pytest.raises(ConfigError, match="allowed: off, allowlist, on"):
        PresetTable.from_config(
            {"x": {"sandbox_mode": "read-only", "approval_policy": "ask", "network": "up"}}
        )


async def test_presets_through_a_session_write_only_what_changes() -> None:
    async with open_session_log(MemoryStore()) as log:
        session = await open_session(log, cwd="/w", presets=TABLE)
        written = await session.select_preset("online")
        assert [type(e) for e in written] == [PresetSelected, NetworkSet]
        assert await session.current_preset() == "online"
        assert await session.select_preset("online") == ()
        written = await session.select_preset("read-only")
        assert [type(e) for e in written] == [PresetSelected, SandboxModeSet, NetworkSet]
        assert await session.network() is OFF and await session.sandbox_mode() is RO


def test_a_full_access_preset_is_true_where_nothing_confines() -> None:
    # Its network is on, as the composition's: selecting it writes no network event.
    table = PresetTable((Preset(name="dfa", sandbox_mode=DFA, approval_policy=NEVER),))
    assert preset_selection([], table, UNCONFINED, "dfa") == [
        PresetSelected(name="dfa"),
        ApprovalPolicySet(policy=NEVER),
    ]


# --- the policy-context message -------------------------------------------------------------


def test_the_message_states_the_network() -> None:
    off = render_policy_context(WW, "/w", ASK)
    assert "- Network: off. Shell commands run without network access" in off
    assert 'sandbox_permissions "with_network"' in off
    assert "not network access" not in off
    never = render_policy_context(RO, "/w", NEVER, network=OFF)
    assert "Network access cannot be requested" in never and "with_network" not in never
    on = render_policy_context(WW, "/w", ASK, network=ON)
    assert "- Network: on. Shell commands may use the network." in on
    assert "with_network" not in on
    full = render_policy_context(DFA, "/w", ASK, network=OFF)
    assert "- Network: on. danger-full-access allows everything, network included" in full
    unconfined = render_policy_context(DFA, "/w", NEVER, sandboxed=False, network=ON)
    assert "- Network: on. Nothing restricts network access." in unconfined


async def test_pre_step_tells_the_network_and_tells_again_when_it_changes() -> None:
    async with open_session_log(MemoryStore()) as log:
        session = await open_session(log, cwd="/w")
        told = await session.pre_step()
        assert isinstance(told, PolicyContext) and told.network is OFF
        assert "- Network: off." in told.text
        assert await session.pre_step() is None
        # Two switches between steps: one message, the final state.
        await session.set_network("on")
        await session.set_network("off")
        assert await session.pre_step() is None
        await session.set_network("on")
        update = await session.pre_step()
        assert update is not None and update.network is ON
        assert update.text == render_policy_context(WW, "/w", ASK, network=ON)
        await session.set_sandbox_mode("danger-full-access")
        await session.set_network("off")
        full = await session.pre_step()
        assert full is not None and full.network is ON  # what a call gets, not the knob
        assert "network included" in full.text


def test_a_message_written_before_the_knob_decodes_and_is_replaced() -> None:
    line = (
        b'{"type":"context/policy","seq":2,"ts":1.0,"source":"sandbox:policy","text":"old",'
        b'"sandbox_mode":"workspace-write","workspace_root":"/w","approval_policy":"ask"}'
    )
    old = msgspec.json.decode(line, type=PolicyContext)
    assert old.network is None
    update = policy_context_update([SessionHeader(cwd="/w"), old], DEFAULTS, session_root="/w")
    assert update is not None and update.network is OFF

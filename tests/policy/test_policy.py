"""Folds, resolution, presets and the policy-context message as pure functions."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stockade.errors import ConfigError
from stockade.events import SessionEvent, SessionHeader
from stockade.policy import (
    CUSTOM,
    DEFAULT_PRESETS,
    POLICY_SOURCE,
    ApprovalPolicySet,
    PolicyContext,
    PolicyDefaults,
    Preset,
    PresetSelected,
    PresetTable,
    SandboxModeSet,
    UnknownPreset,
    check_preset_requirements,
    current_preset,
    effective_approval_policy,
    effective_sandbox_mode,
    inherited_overrides,
    knob_state,
    policy_context_update,
    preset_selection,
    render_policy_context,
    resolve_execution_policy,
)
from stockade.vocab import ApprovalPolicy, ExecutionPolicy, SandboxMode, denial_marker

from ..sessionlog._helpers import DEFAULTS, Note

RO, WW, DFA = SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE, SandboxMode.DANGER_FULL_ACCESS
ASK, NEVER = ApprovalPolicy.ASK, ApprovalPolicy.NEVER


def stamp(events: list[SessionEvent]) -> list[SessionEvent]:
    return [msgspec.structs.replace(e, seq=i) for i, e in enumerate(events, 1)]


any_event = st.one_of(
    st.sampled_from(SandboxMode).map(lambda m: SandboxModeSet(mode=m)),
    st.sampled_from(ApprovalPolicy).map(lambda p: ApprovalPolicySet(policy=p)),
    st.integers(0, 9).map(lambda n: Note(n=n)),
    st.sampled_from(["workspace-write", "danger-full-access"]).map(
        lambda n: PresetSelected(name=n)
    ),
    st.just(SessionHeader(cwd="/w")),
)


# --- folds ----------------------------------------------------------------------------


@given(st.lists(any_event, max_size=40))
def test_each_fold_is_the_last_value_of_its_knob(events: list[SessionEvent]) -> None:
    modes = [e.mode for e in events if isinstance(e, SandboxModeSet)]
    policies = [e.policy for e in events if isinstance(e, ApprovalPolicySet)]
    assert effective_sandbox_mode(events) == (modes[-1] if modes else None)
    assert effective_approval_policy(events) == (policies[-1] if policies else None)
    state = knob_state(events, DEFAULTS)
    assert state.sandbox_mode == (modes[-1] if modes else DEFAULTS.sandbox_mode)
    assert state.approval_policy == (policies[-1] if policies else DEFAULTS.approval_policy)
    assert state.sandbox_mode_overridden == bool(modes)


def test_no_events_fold_to_none_and_resolve_to_the_default() -> None:
    assert effective_sandbox_mode([]) is None
    assert effective_approval_policy([]) is None
    state = knob_state([], PolicyDefaults(sandbox_mode="read-only", fallback_root="/"))
    assert (state.sandbox_mode, state.approval_policy) == (RO, ASK)


def test_defaults_validate() -> None:
    assert PolicyDefaults(fallback_root="/x").sandbox_mode is WW
    with pytest.raises(ConfigError, match="absolute"):
        PolicyDefaults(fallback_root="rel")
    with pytest.raises(ConfigError, match="allowed"):
        PolicyDefaults(sandbox_mode="wide-open", fallback_root="/")


# --- resolution -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "explicit", "root", "expected"),
    [
        ([], None, "/s", ExecutionPolicy(mode=WW, workspace_root="/s")),
        ([SandboxModeSet(mode=RO)], None, "/s", ExecutionPolicy(mode=RO, workspace_root="/s")),
        ([SandboxModeSet(mode=RO)], DFA, "/s", ExecutionPolicy(mode=DFA, workspace_root="/s")),
        ([], None, None, ExecutionPolicy(mode=WW, workspace_root="/srv/fallback")),
    ],
)
def test_resolution_precedence(
    events: list[SessionEvent],
    explicit: SandboxMode | None,
    root: str | None,
    expected: ExecutionPolicy,
) -> None:
    policy = resolve_execution_policy(events, DEFAULTS, session_root=root, explicit_mode=explicit)
    assert policy == expected


def test_inherited_overrides_copy_only_what_exists() -> None:
    assert inherited_overrides([Note(n=1)], "p") == []
    seeds = inherited_overrides([SandboxModeSet(mode=WW), SandboxModeSet(mode=RO), Note(n=1)], "p")
    assert seeds == [SandboxModeSet(mode=RO, source="inherited:p")]
    both = inherited_overrides([ApprovalPolicySet(policy=NEVER), SandboxModeSet(mode=DFA)], "p")
    assert both == [
        SandboxModeSet(mode=DFA, source="inherited:p"),
        ApprovalPolicySet(policy=NEVER, source="inherited:p"),
    ]


# --- presets ----------------------------------------------------------------------------

TABLE = DEFAULT_PRESETS.with_presets(Preset(name="read-only", sandbox_mode=RO, approval_policy=ASK))


def test_selection_writes_the_preset_and_only_changed_knobs() -> None:
    defaults = PolicyDefaults(approval_policy="never", fallback_root="/")
    # Mode already workspace-write (default); only approval changes.
    assert preset_selection([], TABLE, defaults, "workspace-write") == [
        PresetSelected(name="workspace-write"),
        ApprovalPolicySet(policy=ASK),
    ]
    assert preset_selection([], TABLE, DEFAULTS, "danger-full-access") == [
        PresetSelected(name="danger-full-access"),
        SandboxModeSet(mode=DFA),
        ApprovalPolicySet(policy=NEVER),
    ]


def test_selecting_the_current_state_writes_nothing() -> None:
    assert preset_selection([], TABLE, DEFAULTS, "workspace-write") == []
    events = [SandboxModeSet(mode=DFA), ApprovalPolicySet(policy=NEVER)]
    assert preset_selection(events, TABLE, DEFAULTS, "danger-full-access") == []


def test_unknown_preset_lists_the_known_names() -> None:
    with pytest.raises(
        UnknownPreset, match=r"'nope'.*known: workspace-write, danger-full-access, read-only"
    ):
        preset_selection([], TABLE, DEFAULTS, "nope")


@given(st.lists(any_event, max_size=20), st.sampled_from(TABLE.names))
def test_after_selecting_a_preset_it_is_current_and_reselecting_is_a_no_op(
    events: list[SessionEvent], name: str
) -> None:
    after = events + preset_selection(events, TABLE, DEFAULTS, name)
    assert current_preset(after, TABLE, DEFAULTS) == name
    assert preset_selection(after, TABLE, DEFAULTS, name) == []


def test_current_preset_folds_to_name_or_custom() -> None:
    assert current_preset([], TABLE, DEFAULTS) == "workspace-write"
    assert current_preset([SandboxModeSet(mode=RO)], TABLE, DEFAULTS) == "read-only"
    assert current_preset([ApprovalPolicySet(policy=NEVER)], TABLE, DEFAULTS) == CUSTOM
    assert current_preset([SandboxModeSet(mode=RO)], DEFAULT_PRESETS, DEFAULTS) == CUSTOM


def test_current_preset_prefers_the_last_selected_among_equal_presets() -> None:
    twin = TABLE.with_presets(Preset(name="safe", sandbox_mode=RO, approval_policy=ASK))
    events = [PresetSelected(name="safe"), SandboxModeSet(mode=RO)]
    assert current_preset(events, twin, DEFAULTS) == "safe"
    assert current_preset([SandboxModeSet(mode=RO)], twin, DEFAULTS) == "read-only"


def test_preset_table_from_config() -> None:
    table = PresetTable.from_config(
        {"read-only": {"sandbox_mode": "read-only", "approval_policy": "ask"}}
    )
    assert table.names == ("workspace-write", "danger-full-access", "read-only")
    assert table.get("read-only").sandbox_mode is RO
    with pytest.raises(ConfigError, match="missing: approval_policy"):
        PresetTable.from_config({"x": {"sandbox_mode": "read-only"}})
    with pytest.raises(ConfigError, match="allowed"):
        PresetTable.from_config({"x": {"sandbox_mode": "rw", "approval_policy": "ask"}})
    with pytest.raises(ConfigError, match="reserved"):
        PresetTable.from_config({"custom": {"sandbox_mode": "read-only", "approval_policy": "ask"}})


def test_preset_requirements() -> None:
    assert check_preset_requirements(True, True) == []
    problems = check_preset_requirements(False, False)
    assert len(problems) == 2
    assert "confining executor" in problems[0] and "approval" in problems[1]
    assert check_preset_requirements(True, False) == [problems[1]]


# --- the policy-context message -------------------------------------------------------------


def test_message_states_both_values_explicitly() -> None:
    text = render_policy_context(WW, "/w", ASK)
    assert "Sandbox mode: workspace-write" in text and "Workspace root: /w" in text
    assert "Approval policy: ask" in text
    assert denial_marker(WW) in text
    assert "The user is asked to approve" in text

    never = render_policy_context(RO, "/w", NEVER)
    assert denial_marker(RO) in never
    assert "fails closed" in never and "cannot create, change or delete" in never

    full = render_policy_context(DFA, "/w", ASK)
    assert "[sandbox:" not in full and "without file confinement" in full
    assert "nothing to escalate to" in full


def test_update_appears_once_and_only_on_change() -> None:
    events: list[SessionEvent] = [SessionHeader(cwd="/w")]
    first = policy_context_update(events, DEFAULTS, session_root="/w")
    assert first is not None and first.source == POLICY_SOURCE
    assert (first.sandbox_mode, first.approval_policy, first.workspace_root) == (WW, ASK, "/w")
    events.append(first)
    assert policy_context_update(events, DEFAULTS, session_root="/w") is None

    # Three switches between steps: one message, the final state only.
    events += [SandboxModeSet(mode=RO), SandboxModeSet(mode=DFA), ApprovalPolicySet(policy=NEVER)]
    events.append(SandboxModeSet(mode=RO))
    update = policy_context_update(events, DEFAULTS, session_root="/w")
    assert update is not None
    assert update.text == render_policy_context(RO, "/w", NEVER)

    # Switching back to what the model was told needs no new message.
    back = [*events[:2], SandboxModeSet(mode=RO), SandboxModeSet(mode=WW)]
    assert policy_context_update(back, DEFAULTS, session_root="/w") is None


def test_a_changed_default_changes_the_message() -> None:
    told = policy_context_update([], DEFAULTS, session_root="/w")
    assert told is not None
    wider = PolicyDefaults(sandbox_mode="danger-full-access", fallback_root="/srv/fallback")
    update = policy_context_update(stamp([told]), wider, session_root="/w")
    assert update is not None and update.sandbox_mode is DFA


def test_messages_from_another_source_do_not_count() -> None:
    other = PolicyContext(
        text=render_policy_context(WW, "/w", ASK),
        sandbox_mode=WW,
        workspace_root="/w",
        approval_policy=ASK,
        source="somewhere:else",
    )
    assert policy_context_update([other], DEFAULTS, session_root="/w") is not None


def test_the_message_names_the_rules_that_forbid_or_ask() -> None:
    from stockade.rules import DEFAULT_RULES, Decision, Rule, WordPattern

    deploy = Rule("no-deploy", (WordPattern.of("make"), WordPattern.of("deploy")), Decision.FORBID,
                  "deploys go through CI")  # fmt: skip
    text = render_policy_context(WW, "/w", ASK, rules=(deploy,))
    assert "- Command rules, judged on every command before it runs, in every mode:" in text
    assert "  - `make deploy` (no-deploy): deploys go through CI" in text
    assert "Command rules" not in render_policy_context(WW, "/w", ASK, rules=())
    # Unconfined, the rules are still judged, and said.
    assert "(no-deploy)" in render_policy_context(DFA, "/w", ASK, sandboxed=False, rules=(deploy,))
    # The defaults' rules unless told otherwise, as the embedded composition has them.
    assert render_policy_context(WW, "/w", ASK) == render_policy_context(
        WW, "/w", ASK, rules=DEFAULT_RULES
    )
    defaults = PolicyDefaults(fallback_root="/w", command_rules=(deploy,))
    update = policy_context_update([], defaults, session_root="/w")
    assert update is not None and "(no-deploy)" in update.text
    assert "(force-push)" not in update.text

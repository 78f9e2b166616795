"""Pure policy: the three knob kits, presets and the policy-context message (no trio here)."""

from ..events import SessionEvent
from .context import POLICY_SOURCE as POLICY_SOURCE
from .context import PolicyContext as PolicyContext
from .context import desired_policy_context as desired_policy_context
from .context import last_policy_context as last_policy_context
from .context import policy_context_update as policy_context_update
from .context import render_policy_context as render_policy_context
from .knobs import ApprovalPolicySet as ApprovalPolicySet
from .knobs import KnobState as KnobState
from .knobs import NetworkSet as NetworkSet
from .knobs import PolicyDefaults as PolicyDefaults
from .knobs import SandboxModeSet as SandboxModeSet
from .knobs import SandboxNotMounted as SandboxNotMounted
from .knobs import effective_approval_policy as effective_approval_policy
from .knobs import effective_network as effective_network
from .knobs import effective_sandbox_mode as effective_sandbox_mode
from .knobs import inherited_overrides as inherited_overrides
from .knobs import knob_state as knob_state
from .knobs import resolve_execution_policy as resolve_execution_policy
from .knobs import resolve_workspace_root as resolve_workspace_root
from .knobs import set_approval_policy as set_approval_policy
from .knobs import set_network as set_network
from .knobs import set_sandbox_mode as set_sandbox_mode
from .presets import CUSTOM as CUSTOM
from .presets import DEFAULT_PRESETS as DEFAULT_PRESETS
from .presets import Preset as Preset
from .presets import PresetSelected as PresetSelected
from .presets import PresetTable as PresetTable
from .presets import UnknownPreset as UnknownPreset
from .presets import check_preset_requirements as check_preset_requirements
from .presets import current_preset as current_preset
from .presets import preset_selection as preset_selection
from .presets import select_preset as select_preset

#: Every event type the policy domain declares, for the harness's EventRegistry.
POLICY_EVENTS: tuple[type[SessionEvent], ...] = (
    SandboxModeSet,
    ApprovalPolicySet,
    NetworkSet,
    PresetSelected,
    PolicyContext,
)

__all__ = [
    "CUSTOM",
    "DEFAULT_PRESETS",
    "POLICY_EVENTS",
    "POLICY_SOURCE",
    "ApprovalPolicySet",
    "KnobState",
    "NetworkSet",
    "PolicyContext",
    "PolicyDefaults",
    "Preset",
    "PresetSelected",
    "PresetTable",
    "SandboxModeSet",
    "SandboxNotMounted",
    "UnknownPreset",
    "check_preset_requirements",
    "current_preset",
    "desired_policy_context",
    "effective_approval_policy",
    "effective_network",
    "effective_sandbox_mode",
    "inherited_overrides",
    "knob_state",
    "last_policy_context",
    "policy_context_update",
    "preset_selection",
    "render_policy_context",
    "resolve_execution_policy",
    "resolve_workspace_root",
    "select_preset",
    "set_approval_policy",
    "set_network",
    "set_sandbox_mode",
]

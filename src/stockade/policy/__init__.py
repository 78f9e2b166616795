"""Pure policy: the three knob kits, presets and the policy-context message (no trio here)."""

from ..events import SessionEvent
from ..lazy import surface
from . import knobs as knobs
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
from .knobs import SessionRuleAllowed as SessionRuleAllowed
from .knobs import check_events_available as check_events_available
from .knobs import effective_approval_policy as effective_approval_policy
from .knobs import effective_network as effective_network
from .knobs import effective_sandbox_mode as effective_sandbox_mode
from .knobs import inherited_overrides as inherited_overrides
from .knobs import knob_state as knob_state
from .knobs import resolve_execution_policy as resolve_execution_policy
from .knobs import resolve_workspace_root as resolve_workspace_root
from .knobs import session_allowances as session_allowances
from .knobs import set_approval_policy as set_approval_policy
from .knobs import set_network as set_network
from .knobs import set_sandbox_mode as set_sandbox_mode
from .knobs import unconfined_reason as unconfined_reason
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
    SessionRuleAllowed,
)

TYPE_CHECKING = False

if not TYPE_CHECKING:  # `__all__` is read from the imports above (stockade.lazy)
    __getattr__ = surface(__name__, globals())

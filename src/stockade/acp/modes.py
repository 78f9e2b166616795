"""The preset table as ACP session modes, and what a session switch writes.

Pure: no trio, no SDK. A mode id IS a preset name; `custom` is the one extra mode,
reported when the knobs match no preset and never selectable (selecting a preset
writes all of its knobs; there is nothing to write for `custom`).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from ..policy import CUSTOM, KnobState, PresetTable
from ..reprs import fields_repr
from ..vocab import Network, SandboxMode

CUSTOM_DESCRIPTION: Final = (
    "The session's sandbox mode, approval policy and network match no preset "
    "(reported, not selectable: pick a preset to leave it)."
)


def describe(table: PresetTable, name: str) -> str:
    preset = table.get(name)
    return (
        f"sandbox {preset.sandbox_mode.value}, approval {preset.approval_policy.value}, "
        f"network {preset.network.value}"
    )


def mode_state(table: PresetTable, current: str) -> dict[str, Any]:
    """The `modes` of a `session/new` or `session/load` response (a SessionModeState)."""
    available = [
        {"id": name, "name": name, "description": describe(table, name)} for name in table.names
    ]
    available.append({"id": CUSTOM, "name": CUSTOM, "description": CUSTOM_DESCRIPTION})
    return {"currentModeId": current, "availableModes": available}


class NotSelectable(ValueError):
    """A mode id `session/set_mode` cannot select (the message says why and what can)."""


def check_selectable(table: PresetTable, mode_id: str) -> str:
    """`mode_id` when it names a preset; NotSelectable (with the choices) otherwise."""
    if mode_id in table.names:
        return mode_id
    known = ", ".join(table.names)
    if mode_id == CUSTOM:
        raise NotSelectable(
            f"{CUSTOM!r} is reported when the knobs match no preset and cannot be selected "
            f"(select one of: {known})"
        )
    raise NotSelectable(f"unknown session mode {mode_id!r} (select one of: {known})")


@attrs.frozen
class SwitchPlan:
    """What a person's `allow_always` writes: a preset to select (only its changed
    knobs are written), or else the one knob the request was about."""

    __repr__ = fields_repr

    preset: str | None = None
    sandbox_mode: SandboxMode | None = None
    network: Network | None = None

    def describe(self) -> str:
        if self.preset is not None:
            return f"selected preset {self.preset!r}"
        if self.network is not None:
            return f"set the session's network to {self.network.value!r}"
        assert self.sandbox_mode is not None
        return f"set the session's sandbox mode to {self.sandbox_mode.value!r}"


def switch_plan(
    table: PresetTable | None,
    state: KnobState,
    requested: SandboxMode,
    *,
    with_network: bool,
) -> SwitchPlan:
    """The session switch that grants what the request asked for, from here on.

    The target keeps the session's approval policy (the person approved a mode,
    not a policy); when a preset has exactly the target's values it is selected,
    so the session reports that preset; otherwise only the asked-for knob is set
    and the session reports `custom`.
    """
    mode = state.sandbox_mode if with_network else requested
    network = Network.ON if with_network else state.effective_network
    if table is not None:
        for preset in table.matching(mode, state.approval_policy, network):
            return SwitchPlan(preset=preset.name)
    if with_network:
        return SwitchPlan(network=Network.ON)
    return SwitchPlan(sandbox_mode=requested)

"""Permission presets: deployment-defined bundles of a value for each of the three knobs
(sandbox mode, approval policy, network).

A preset is a UI convenience over the knobs, not another store: selecting one
appends a `permission/preset` event plus ONLY the knob events whose effective value
changes, and selecting what is already in effect appends nothing. Which preset a
session is "in" is folded from the knobs (`current_preset`); a combination outside
the table is `custom`.

The network compares by what a call gets: under danger-full-access that is `on`
whatever the knob says, so a danger-full-access preset is always `on` (a table
saying otherwise is refused) and selecting it never needs to write the network.

Everything here is pure except `select_preset`, which only awaits its session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from ..errors import ConfigError
from ..events import EventLog, SessionEvent, append_decided, find_last
from ..reprs import fields_repr
from ..vocab import ApprovalPolicy, Network, SandboxMode, network_under
from .knobs import (
    ApprovalPolicySet,
    NetworkSet,
    PolicyDefaults,
    SandboxModeSet,
    check_mode_available,
    check_network_available,
    knob_state,
)

CUSTOM = "custom"


class PresetSelected(SessionEvent, kw_only=True, frozen=True, tag="permission/preset"):
    """A preset was selected; the knob events that follow it in the same batch apply it."""

    name: str


class UnknownPreset(ConfigError):
    """A preset name that is not in the deployment's table."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(f"unknown permission preset {name!r} (known: {', '.join(known)})")
        self.name = name
        self.known = tuple(known)


def _default_network(preset: Preset) -> Network:
    return network_under(preset.sandbox_mode, Network.OFF)


def _check_network(preset: Preset, _attribute: object, network: Network) -> None:
    if network_under(preset.sandbox_mode, network) is not network:
        raise ConfigError(
            f"preset {preset.name!r} cannot have network {network.value!r}: its sandbox mode "
            f"{preset.sandbox_mode.value!r} allows everything, network included"
        )


@attrs.frozen(kw_only=True)
class Preset:
    """One value per knob. `network` defaults to `off`, or `on` for danger-full-access."""

    __repr__ = fields_repr

    name: str
    # mypy's attrs plugin reads no classmethod as a converter (`converter=X.parse`):
    # ignored, it takes that argument as Any.
    sandbox_mode: SandboxMode = attrs.field(converter=SandboxMode.parse)  # type: ignore[misc]
    approval_policy: ApprovalPolicy = attrs.field(converter=ApprovalPolicy.parse)  # type: ignore[misc]
    network: Network = attrs.field(
        default=attrs.Factory(_default_network, takes_self=True),
        converter=Network.parse,  # type: ignore[misc]
        validator=_check_network,
    )


def _check_presets(_instance: object, _attribute: object, presets: tuple[Preset, ...]) -> None:
    seen: set[str] = set()
    for preset in presets:
        if not preset.name or preset.name != preset.name.strip():
            raise ConfigError(f"preset names must be non-empty words, got {preset.name!r}")
        if preset.name == CUSTOM:
            raise ConfigError(f"{CUSTOM!r} is reserved for combinations outside the table")
        if preset.name in seen:
            raise ConfigError(f"preset {preset.name!r} is defined twice")
        seen.add(preset.name)


def _presets(value: Iterable[Preset]) -> tuple[Preset, ...]:
    # `converter=tuple`, in a form mypy's attrs plugin can type (it leaves tuple's
    # element type unsolved, and then refuses every argument).
    return tuple(value)


@attrs.frozen
class PresetTable:
    """The deployment's presets, in display order."""

    __repr__ = fields_repr

    presets: tuple[Preset, ...] = attrs.field(converter=_presets, validator=_check_presets)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(preset.name for preset in self.presets)

    def get(self, name: str) -> Preset:
        for preset in self.presets:
            if preset.name == name:
                return preset
        raise UnknownPreset(name, self.names)

    def matching(
        self, mode: SandboxMode, policy: ApprovalPolicy, network: Network | None = None
    ) -> tuple[Preset, ...]:
        """The presets with these values (`network`: what a call gets; None: any)."""
        return tuple(
            preset
            for preset in self.presets
            if preset.sandbox_mode is mode
            and preset.approval_policy is policy
            and (network is None or preset.network is network_under(mode, network))
        )

    def with_presets(self, *presets: Preset) -> PresetTable:
        """This table with `presets` added (a same-named entry is replaced in place)."""
        replaced = {preset.name: preset for preset in presets}
        kept = [replaced.pop(preset.name, preset) for preset in self.presets]
        return PresetTable((*kept, *replaced.values()))

    @classmethod
    def from_config(
        cls, entries: Mapping[str, Mapping[str, Any]], *, base: PresetTable | None = None
    ) -> PresetTable:
        """A table from config: `{name: {sandbox_mode: ..., approval_policy: ...,
        network: ...}}` (`network` optional: `off`, or `on` for danger-full-access;
        None counts as absent).

        The entries extend (or replace by name) `base`, which defaults to the shipped
        presets; pass `base=PresetTable(())` for a table holding only `entries`.
        """
        presets = []
        for name, entry in entries.items():
            unknown = set(entry) - {"sandbox_mode", "approval_policy", "network"}
            missing = {"sandbox_mode", "approval_policy"} - set(entry)
            if unknown or missing:
                raise ConfigError(
                    f"preset {name!r} needs sandbox_mode and approval_policy (and may "
                    "name network)"
                    + (f"; unknown: {', '.join(sorted(unknown))}" if unknown else "")
                    + (f"; missing: {', '.join(sorted(missing))}" if missing else "")
                )
            network = entry.get("network")
            presets.append(
                Preset(
                    name=name,
                    sandbox_mode=entry["sandbox_mode"],
                    approval_policy=entry["approval_policy"],
                    **({} if network is None else {"network": network}),
                )
            )
        return (DEFAULT_PRESETS if base is None else base).with_presets(*presets)


DEFAULT_PRESETS = PresetTable(
    (
        Preset(
            name="workspace-write",
            sandbox_mode=SandboxMode.WORKSPACE_WRITE,
            approval_policy=ApprovalPolicy.ASK,
            network=Network.OFF,
        ),
        Preset(
            name="danger-full-access",
            sandbox_mode=SandboxMode.DANGER_FULL_ACCESS,
            approval_policy=ApprovalPolicy.NEVER,
            network=Network.ON,
        ),
    )
)


# --- pure folding and selection ----------------------------------------------------------


def current_preset(
    events: Sequence[SessionEvent], table: PresetTable, defaults: PolicyDefaults
) -> str:
    """The preset whose values are in effect, or `custom`.

    When several presets share those values, the one selected last wins if it is
    among them; otherwise the first in table order.
    """
    state = knob_state(events, defaults)
    candidates = table.matching(state.sandbox_mode, state.approval_policy, state.network)
    if not candidates:
        return CUSTOM
    selected: PresetSelected | None = find_last(events, PresetSelected)
    if selected is not None and any(preset.name == selected.name for preset in candidates):
        return selected.name
    return candidates[0].name


def preset_selection(
    events: Sequence[SessionEvent], table: PresetTable, defaults: PolicyDefaults, name: str
) -> list[SessionEvent]:
    """What selecting `name` appends: the preset event plus only the knobs that change.

    Empty when every effective value already equals the preset's. The network is
    written only when what a call gets under the preset's mode would differ (never
    for danger-full-access, where it is `on` anyway). Raises UnknownPreset for a
    name outside `table`, and SandboxNotMounted for a preset whose mode confines, or
    whose network is `off`, when the composition cannot confine.
    """
    preset = _available(table, defaults, name)
    state = knob_state(events, defaults)
    changes: list[SessionEvent] = []
    if state.sandbox_mode is not preset.sandbox_mode:
        changes.append(SandboxModeSet(mode=preset.sandbox_mode))
    if state.approval_policy is not preset.approval_policy:
        changes.append(ApprovalPolicySet(policy=preset.approval_policy))
    if network_under(preset.sandbox_mode, state.network) is not preset.network:
        changes.append(NetworkSet(network=preset.network))
    if not changes:
        return []
    return [PresetSelected(name=preset.name), *changes]


def _available(table: PresetTable, defaults: PolicyDefaults, name: str) -> Preset:
    preset = table.get(name)
    check_mode_available(
        preset.sandbox_mode,
        defaults,
        f"preset {name!r} (sandbox mode {preset.sandbox_mode.value!r})",
    )
    check_network_available(
        preset.network, defaults, f"preset {name!r} (network {preset.network.value!r})"
    )
    return preset


class PresetSession(EventLog, Protocol):
    """A session that knows its composition defaults and preset table."""

    @property
    def defaults(self) -> PolicyDefaults: ...

    @property
    def presets(self) -> PresetTable: ...


async def select_preset(session: PresetSession, name: str) -> tuple[SessionEvent, ...]:
    """THE write path for presets: append `preset_selection(...)` atomically.

    Returns the committed events (empty for a no-op selection).
    """
    # An unknown name, or a mode this composition cannot honour, fails before reading the log.
    _available(session.presets, session.defaults, name)
    return await append_decided(
        session, lambda events: preset_selection(events, session.presets, session.defaults, name)
    )


def check_preset_requirements(has_confining_executor: bool, has_approval: bool) -> list[str]:
    """Problems that forbid mounting presets in a composition (empty when fine)."""
    problems = []
    if not has_confining_executor:
        problems.append(
            "permission presets need a confining executor: without one every preset's "
            "sandbox mode is a dead lever; mount the sandboxed bash executor or drop presets"
        )
    if not has_approval:
        problems.append(
            "permission presets need the approval seam: a preset's 'ask' policy has no "
            "one to ask; mount an approval service or drop presets"
        )
    return problems

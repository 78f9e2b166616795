"""Permission presets: deployment-defined bundles of one sandbox mode and one approval policy.

A preset is a UI convenience over the two knobs, not a third store: selecting one
appends a `permission/preset` event plus ONLY the knob events whose effective value
changes, and selecting what is already in effect appends nothing. Which preset a
session is "in" is folded from the knobs (`current_preset`); a combination outside
the table is `custom`.

Everything here is pure except `select_preset`, which only awaits its session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from ..errors import ConfigError
from ..events import EventLog, SessionEvent, append_decided, find_last
from ..vocab import ApprovalPolicy, SandboxMode
from .knobs import (
    ApprovalPolicySet,
    PolicyDefaults,
    SandboxModeSet,
    check_mode_available,
    knob_state,
)

CUSTOM = "custom"


class PresetSelected(SessionEvent, kw_only=True, tag="permission/preset"):
    """A preset was selected; the knob events that follow it in the same batch apply it."""

    name: str


class UnknownPreset(ConfigError):
    """A preset name that is not in the deployment's table."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(f"unknown permission preset {name!r} (known: {', '.join(known)})")
        self.name = name
        self.known = tuple(known)


@attrs.frozen(kw_only=True)
class Preset:
    name: str
    sandbox_mode: SandboxMode = attrs.field(converter=SandboxMode.parse)
    approval_policy: ApprovalPolicy = attrs.field(converter=ApprovalPolicy.parse)


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


@attrs.frozen
class PresetTable:
    """The deployment's presets, in display order."""

    presets: tuple[Preset, ...] = attrs.field(converter=tuple, validator=_check_presets)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(preset.name for preset in self.presets)

    def get(self, name: str) -> Preset:
        for preset in self.presets:
            if preset.name == name:
                return preset
        raise UnknownPreset(name, self.names)

    def matching(self, mode: SandboxMode, policy: ApprovalPolicy) -> tuple[Preset, ...]:
        return tuple(
            preset
            for preset in self.presets
            if preset.sandbox_mode is mode and preset.approval_policy is policy
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
        """A table from config: `{name: {sandbox_mode: ..., approval_policy: ...}}`.

        The entries extend (or replace by name) `base`, which defaults to the shipped
        presets; pass `base=PresetTable(())` for a table holding only `entries`.
        """
        presets = []
        for name, entry in entries.items():
            unknown = set(entry) - {"sandbox_mode", "approval_policy"}
            missing = {"sandbox_mode", "approval_policy"} - set(entry)
            if unknown or missing:
                raise ConfigError(
                    f"preset {name!r} needs exactly sandbox_mode and approval_policy"
                    + (f"; unknown: {', '.join(sorted(unknown))}" if unknown else "")
                    + (f"; missing: {', '.join(sorted(missing))}" if missing else "")
                )
            presets.append(
                Preset(
                    name=name,
                    sandbox_mode=entry["sandbox_mode"],
                    approval_policy=entry["approval_policy"],
                )
            )
        return (DEFAULT_PRESETS if base is None else base).with_presets(*presets)


DEFAULT_PRESETS = PresetTable(
    (
        Preset(
            name="workspace-write",
            sandbox_mode=SandboxMode.WORKSPACE_WRITE,
            approval_policy=ApprovalPolicy.ASK,
        ),
        Preset(
            name="danger-full-access",
            sandbox_mode=SandboxMode.DANGER_FULL_ACCESS,
            approval_policy=ApprovalPolicy.NEVER,
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
    candidates = table.matching(state.sandbox_mode, state.approval_policy)
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

    Empty when both effective values already equal the preset's. Raises
    UnknownPreset for a name outside `table`, and SandboxNotMounted for a preset
    whose mode confines when the composition cannot.
    """
    preset = _available(table, defaults, name)
    state = knob_state(events, defaults)
    changes: list[SessionEvent] = []
    if state.sandbox_mode is not preset.sandbox_mode:
        changes.append(SandboxModeSet(mode=preset.sandbox_mode))
    if state.approval_policy is not preset.approval_policy:
        changes.append(ApprovalPolicySet(policy=preset.approval_policy))
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

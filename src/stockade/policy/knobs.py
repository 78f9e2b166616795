"""The three policy knobs, each a three-piece kit: its event, a pure fold, THE write path.

    effective(session) = fold(the session's events) ?? the composition default

A switch IS its event: `set_sandbox_mode` appends `sandbox/mode`, and nothing else
holds a mode. A resumed session therefore keeps its overrides, and a composition
default changed while the process was down shows up at the next resolution.

The folds and the resolution below are pure (no trio); the write paths only await
the session they are given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

from ..errors import ConfigError, InvalidPolicy, SandboxUnavailable
from ..events import EventLog, SessionEvent, append_decided, find_last
from ..reprs import fields_repr
from ..vocab import ApprovalPolicy, ExecutionPolicy, Network, SandboxMode, network_under

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..rules import Rule

# --- sandbox/mode ----------------------------------------------------------------------


class SandboxModeSet(SessionEvent, kw_only=True, frozen=True, tag="sandbox/mode"):
    """The session's sandbox mode override from here on."""

    mode: SandboxMode


def effective_sandbox_mode(events: Sequence[SessionEvent]) -> SandboxMode | None:
    """The last `sandbox/mode` value in `events`, or None when the session never set one."""
    event: SandboxModeSet | None = find_last(events, SandboxModeSet)
    return None if event is None else event.mode


async def set_sandbox_mode(
    session: EventLog,
    mode: SandboxMode | str,
    *,
    source: str | None = None,
    defaults: PolicyDefaults | None = None,
) -> SandboxModeSet | None:
    """Switch the session's sandbox mode: append `sandbox/mode` unless already overridden so.

    Returns the committed event, or None when the override already had that value.
    Setting the value the default already gives still appends: it pins the
    session against a later change of the default. A confining mode under a
    composition that cannot confine (`defaults`, else the session's own) raises
    SandboxNotMounted and appends nothing.
    """
    wanted = SandboxMode.parse(mode)
    if defaults is None:
        defaults = getattr(session, "defaults", None)
    if isinstance(defaults, PolicyDefaults):
        check_mode_available(wanted, defaults, f"sandbox mode {wanted.value!r}")

    def decide(events: Sequence[SessionEvent]) -> list[SessionEvent]:
        if effective_sandbox_mode(events) is wanted:
            return []
        return [SandboxModeSet(mode=wanted, source=source)]

    for event in await append_decided(session, decide):
        assert isinstance(event, SandboxModeSet)
        return event
    return None


# --- approval/policy -------------------------------------------------------------------


class ApprovalPolicySet(SessionEvent, kw_only=True, frozen=True, tag="approval/policy"):
    """The session's approval policy override from here on."""

    policy: ApprovalPolicy


def effective_approval_policy(events: Sequence[SessionEvent]) -> ApprovalPolicy | None:
    """The last `approval/policy` value in `events`, or None when the session never set one."""
    event: ApprovalPolicySet | None = find_last(events, ApprovalPolicySet)
    return None if event is None else event.policy


async def set_approval_policy(
    session: EventLog, policy: ApprovalPolicy | str, *, source: str | None = None
) -> ApprovalPolicySet | None:
    """Switch the session's approval policy (same contract as `set_sandbox_mode`)."""
    wanted = ApprovalPolicy.parse(policy)

    def decide(events: Sequence[SessionEvent]) -> list[SessionEvent]:
        if effective_approval_policy(events) is wanted:
            return []
        return [ApprovalPolicySet(policy=wanted, source=source)]

    for event in await append_decided(session, decide):
        assert isinstance(event, ApprovalPolicySet)
        return event
    return None


# --- sandbox/network ---------------------------------------------------------------------


class NetworkSet(SessionEvent, kw_only=True, frozen=True, tag="sandbox/network"):
    """The session's network override from here on (`off` | `on`).

    Under danger-full-access a call has network `on` whatever this says.
    """

    network: Network


def effective_network(events: Sequence[SessionEvent]) -> Network | None:
    """The last `sandbox/network` value in `events`, or None when the session never set one."""
    event: NetworkSet | None = find_last(events, NetworkSet)
    return None if event is None else event.network


async def set_network(
    session: EventLog,
    network: Network | str,
    *,
    source: str | None = None,
    defaults: PolicyDefaults | None = None,
) -> NetworkSet | None:
    """Switch the session's network knob (same contract as `set_sandbox_mode`).

    `off` under a composition that cannot confine (`defaults`, else the session's
    own) raises SandboxNotMounted and appends nothing: nothing would cut it off.
    """
    wanted = Network.parse(network)
    if defaults is None:
        defaults = getattr(session, "defaults", None)
    if isinstance(defaults, PolicyDefaults):
        check_network_available(wanted, defaults, f"network {wanted.value!r}")

    def decide(events: Sequence[SessionEvent]) -> list[SessionEvent]:
        if effective_network(events) is wanted:
            return []
        return [NetworkSet(network=wanted, source=source)]

    for event in await append_decided(session, decide):
        assert isinstance(event, NetworkSet)
        return event
    return None


KNOB_EVENTS: tuple[type[SessionEvent], ...] = (SandboxModeSet, ApprovalPolicySet, NetworkSet)


# --- compositions that cannot confine ----------------------------------------------------

CONFINING_EXECUTOR = "stockade.bash.sandbox"
SANDBOX_PROVIDER = "stockade.sandbox.local"


class SandboxNotMounted(SandboxUnavailable, InvalidPolicy):
    """A confining sandbox mode was asked of a composition that runs commands without a
    sandbox. Nothing was switched, seeded or run.

    A SandboxUnavailable (code SANDBOX_UNAVAILABLE): the CLI exits 125 with it, and a
    tool call that meets it reports that nothing ran.
    """


def unconfined_reason(executor_name: str | None) -> str:
    """Why a composition whose executor entry is `executor_name` (None: none) cannot confine."""
    if executor_name is None:
        return "it mounts no executor entry, so commands run on the unconfined local executor"
    return f"its executor {executor_name!r} does not confine the commands it runs"


def unconfined_refusal(what: str, unconfined: str, *, network: bool = False) -> SandboxNotMounted:
    """The error for `what` (e.g. "sandbox mode 'read-only'", or with `network`
    "network 'off'") under a composition that cannot confine, `unconfined` saying why."""
    truth = (
        "nothing would cut off its network access; only network 'on' is true here"
        if network
        else "no file effect would be refused; only danger-full-access is true here"
    )
    return SandboxNotMounted(
        f"{what} cannot be honoured: this composition runs commands without a sandbox "
        f"({unconfined}), so {truth}. To confine commands, mount {CONFINING_EXECUTOR!r} "
        f"as the executor beside a {SANDBOX_PROVIDER!r} provider entry (docs/configuration.md)"
    )


def check_mode_available(mode: SandboxMode, defaults: PolicyDefaults, what: str) -> None:
    """Raise SandboxNotMounted when `mode` confines but the composition cannot."""
    if mode.confines and defaults.unconfined is not None:
        raise unconfined_refusal(what, defaults.unconfined)


def check_network_available(network: Network, defaults: PolicyDefaults, what: str) -> None:
    """Raise SandboxNotMounted when `network` is `off` or `allowlist` but the
    composition cannot confine."""
    if network.confined and defaults.unconfined is not None:
        raise unconfined_refusal(what, defaults.unconfined, network=True)


def check_events_available(
    events: Sequence[SessionEvent], defaults: PolicyDefaults, what: str
) -> None:
    """Raise SandboxNotMounted when `events` resolve to a mode the composition cannot honour."""
    check_mode_available(knob_state(events, defaults).sandbox_mode, defaults, what)


# --- composition defaults and resolution ------------------------------------------------


def _default_rules() -> tuple[Rule, ...]:
    from ..rules import DEFAULT_RULES

    return DEFAULT_RULES


def _absolute_root(_instance: object, _attribute: object, value: str) -> None:
    if not os.path.isabs(value):
        raise ConfigError(f"fallback_root must be an absolute path, got {value!r}")


@attrs.frozen(kw_only=True)
class PolicyDefaults:
    """The composition's (operator-owned, process-wide) defaults under every session.

    The embedded default is the sandboxed product path: workspace-write, ask, and
    the process's working directory as the fallback workspace root.
    """

    __repr__ = fields_repr

    # mypy's attrs plugin reads no classmethod as a converter (`converter=X.parse`):
    # ignored, it takes that argument as Any.
    sandbox_mode: SandboxMode = attrs.field(
        default=SandboxMode.WORKSPACE_WRITE,
        converter=SandboxMode.parse,  # type: ignore[misc]
    )
    approval_policy: ApprovalPolicy = attrs.field(
        default=ApprovalPolicy.ASK,
        converter=ApprovalPolicy.parse,  # type: ignore[misc]
    )
    fallback_root: str = attrs.field(factory=os.getcwd, validator=_absolute_root)
    # None: the composition confines commands as their mode says. Otherwise why it
    # cannot (its executor does not confine): then only danger-full-access is true, and
    # every path that would make a session resolve to a confining mode refuses.
    unconfined: str | None = None
    # The network knob's default: `off` where the composition confines, `on` where it
    # cannot (there `off` is refused like a confining mode).
    network: Network = attrs.field(
        default=attrs.Factory(
            lambda self: Network.OFF if self.unconfined is None else Network.ON, takes_self=True
        ),
        converter=Network.parse,  # type: ignore[misc]
    )

    # The command rules judged on every command (docs/rules.md): the model's policy
    # message names those that forbid and those that ask. The embedded default's are
    # the default rules.
    command_rules: tuple[Rule, ...] = attrs.field(factory=_default_rules)

    def __attrs_post_init__(self) -> None:
        check_mode_available(
            self.sandbox_mode, self, f"the default sandbox mode {self.sandbox_mode.value!r}"
        )
        check_network_available(self.network, self, f"the default network {self.network.value!r}")

    @property
    def confines(self) -> bool:
        """Whether a confining mode is enforced (False: commands run without a sandbox)."""
        return self.unconfined is None


@attrs.frozen
class KnobState:
    """The knobs' values (fold ?? default), and whether each is a session override.

    `network` is the knob as set; `effective_network` is what a call gets (`on`
    under danger-full-access, whatever the knob says).
    """

    __repr__ = fields_repr

    sandbox_mode: SandboxMode
    approval_policy: ApprovalPolicy
    sandbox_mode_overridden: bool
    approval_policy_overridden: bool
    network: Network = Network.OFF
    network_overridden: bool = False

    @property
    def effective_network(self) -> Network:
        return network_under(self.sandbox_mode, self.network)


def knob_state(events: Sequence[SessionEvent], defaults: PolicyDefaults) -> KnobState:
    """effective = fold(events) ?? default, for every knob."""
    mode = effective_sandbox_mode(events)
    policy = effective_approval_policy(events)
    network = effective_network(events)
    return KnobState(
        sandbox_mode=defaults.sandbox_mode if mode is None else mode,
        approval_policy=defaults.approval_policy if policy is None else policy,
        sandbox_mode_overridden=mode is not None,
        approval_policy_overridden=policy is not None,
        network=defaults.network if network is None else network,
        network_overridden=network is not None,
    )


def resolve_workspace_root(session_root: str | None, defaults: PolicyDefaults) -> str:
    """The session's own root when it has one, else the configured fallback root."""
    return session_root if session_root is not None else defaults.fallback_root


def resolve_execution_policy(
    events: Sequence[SessionEvent],
    defaults: PolicyDefaults,
    *,
    session_root: str | None,
    explicit_mode: SandboxMode | None = None,
    explicit_network: Network | None = None,
) -> ExecutionPolicy:
    """The complete policy for one call.

    Mode and network, each: explicit (a granted escalation) > session override >
    composition default; the network is `on` under danger-full-access whatever the
    knob says. Root: the session's cwd > the configured fallback root. Whether an
    explicit value is strictly wider than the effective one is the caller's check,
    not this one's. A confining mode under a composition that cannot confine raises
    SandboxNotMounted (the write paths refuse it first; this keeps a log edited by
    hand from lying).
    """
    state = knob_state(events, defaults)
    mode = explicit_mode if explicit_mode is not None else state.sandbox_mode
    check_mode_available(mode, defaults, f"sandbox mode {mode.value!r}")
    network = explicit_network if explicit_network is not None else state.network
    return ExecutionPolicy(
        mode=mode,
        workspace_root=resolve_workspace_root(session_root, defaults),
        network=network_under(mode, network),
    )


# --- rules/session-allow ------------------------------------------------------------------


class SessionRuleAllowed(SessionEvent, kw_only=True, frozen=True, tag="rules/session-allow"):
    """A person answered a command rule's prompt with "allow for this session": a
    command whose words begin with `prefix` is allowed without asking for the rest of
    this session (its forks too); `rule` is the rule that asked, `command` what it
    asked about. Never written anywhere but this session's log."""

    prefix: tuple[str, ...]
    rule: str
    command: str


def session_allowances(events: Sequence[SessionEvent]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every (rule, prefix) a person allowed for this session, in the order allowed,
    once each: a later prompt of that rule for a command beginning with the prefix."""
    seen: dict[tuple[str, tuple[str, ...]], None] = {}
    for event in events:
        if isinstance(event, SessionRuleAllowed):
            seen.setdefault((event.rule, tuple(event.prefix)), None)
    return tuple(seen)


def inherited_overrides(events: Sequence[SessionEvent], parent_id: str) -> list[SessionEvent]:
    """The parent's explicit overrides as source-tagged events to seed a child's log.

    Only overrides that exist are copied, so a child resolves exactly as its parent
    does and can never fall back to a wider default than the parent.
    """
    source = f"inherited:{parent_id}"
    seeds: list[SessionEvent] = []
    mode = effective_sandbox_mode(events)
    if mode is not None:
        seeds.append(SandboxModeSet(mode=mode, source=source))
    policy = effective_approval_policy(events)
    if policy is not None:
        seeds.append(ApprovalPolicySet(policy=policy, source=source))
    network = effective_network(events)
    if network is not None:
        seeds.append(NetworkSet(network=network, source=source))
    for event in events:
        if isinstance(event, SessionRuleAllowed):
            seeds.append(
                SessionRuleAllowed(
                    prefix=event.prefix, rule=event.rule, command=event.command, source=source
                )
            )
    return seeds

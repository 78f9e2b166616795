"""The one approved wider retry, shared by every tool that advertises it (bash, fs).

Checks in order: paired fields, a confining deployment, strictly wider than THIS
call's mode (for a network request: this call does not already have the network), a
session, an approval service, no rejection of this command earlier this turn; then asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import attrs

from ..approval import ApprovalClient, ApprovalRequest, Decision
from ..events import SessionEvent
from ..policy import SessionRuleAllowed
from ..reprs import fields_repr
from ..vocab import ApprovalPolicy, ExecutionPolicy, Network, SandboxMode
from . import _escalation as texts
from .events import ToolResulted
from .result import ToolResult


class ToolSession(Protocol):
    """What the tools need of a session (AgentSession provides it)."""

    rejected_this_turn: set[str]

    @property
    def id(self) -> str: ...

    @property
    def cwd(self) -> str | None: ...

    async def execution_policy(
        self, explicit_mode: SandboxMode | None = None, explicit_network: Network | None = None
    ) -> ExecutionPolicy: ...

    async def approval_policy(self) -> ApprovalPolicy: ...

    async def events(self) -> Sequence[SessionEvent]: ...

    async def allow_for_session(self, event: SessionRuleAllowed) -> None: ...


@attrs.frozen(kw_only=True)
class Escalation:
    """One tool call's request: `command` is what the user is shown and asked about.

    `with_network`: the request is for network access for this one call, under its
    current mode (`requested` is None then); `current_network` is what the call has.
    `network_destinations` (checked `host:port`s, with `with_network` only): the
    request is for those destinations alone, added to the call's allowlist.
    """

    __repr__ = fields_repr

    call_id: str
    tool: str
    command: str
    requested: SandboxMode | None
    justification: str | None
    current: SandboxMode
    with_network: bool = False
    current_network: Network = Network.OFF
    network_destinations: tuple[str, ...] = ()
    # A command rule allows this command's escalation: approved without asking a person.
    allowed_by_rule: str | None = None


def tool_error(call_id: str, name: str, text: str, **facts: Any) -> ToolResult:
    return ToolResult(call_id=call_id, name=name, text=text, is_error=True, facts=facts)


async def request_escalation(
    ask: Escalation,
    *,
    session: ToolSession | None,
    approval: ApprovalClient | None,
    confines: bool,
) -> tuple[ToolResult | None, SandboxMode | None]:
    """(refusal, None), each refusal with its own text and nothing run; or (None, granted).

    For a network request the granted mode is the call's current one: the grant is
    network `on` for this one call, and the mode stays as it was.
    """

    def refuse(text: str, **facts: Any) -> tuple[ToolResult, None]:
        return tool_error(ask.call_id, ask.tool, text, **facts), None

    network = ask.with_network
    requested = ask.current if network else ask.requested
    if requested is None or not ask.justification:
        return refuse(texts.PAIRED)
    if not confines:
        return refuse(texts.NOT_ADVERTISED)
    if network:
        if ask.current_network is Network.ON:
            return refuse(texts.network_not_needed(ask.current))
    else:
        too_narrow = texts.not_wider(requested, ask.current)
        if too_narrow is not None:
            return refuse(too_narrow)
    if session is None:
        return refuse(texts.NO_SESSION)
    if approval is None:
        return refuse(texts.NO_APPROVAL_SERVICE)
    # Any rejection of this command this turn stands against every later ask for it:
    # a wider mode could otherwise bring back the network the user refused, and back.
    if ask.command in session.rejected_this_turn:
        return refuse(
            texts.network_already_rejected() if network else texts.already_rejected(requested)
        )
    events = await session.events()
    answer = await approval.ask(
        ApprovalRequest(
            session_id=session.id,
            command=ask.command,
            justification=ask.justification,
            current_mode=ask.current,
            requested_mode=requested,
            policy=await session.approval_policy(),
            reason=network_grounding(ask.current, ask.current_network, ask.network_destinations)
            if network
            else grounding(events, ask.command, ask.current),
            call_id=ask.call_id,
            with_network=network,
            network_destinations=ask.network_destinations if network else (),
            allowed_by_rule=ask.allowed_by_rule,
        )
    )
    match answer.decision:
        case Decision.ALLOWED_ONCE | Decision.ALLOWED_FOR_SESSION:
            # An escalation is never granted beyond this call: "for the session" is a
            # command rule prompt's answer, and means once here.
            return None, requested
        case Decision.REJECTED:
            session.rejected_this_turn.add(ask.command)
            text = texts.network_rejected() if network else texts.rejected(requested)
            return refuse(text, outcome="rejected")
        case Decision.CANCELLED:
            return refuse(
                texts.NETWORK_CANCELLED if network else texts.CANCELLED, outcome="cancelled"
            )
        case Decision.UNAVAILABLE:
            text = (
                texts.network_unavailable(answer.detail)
                if network
                else texts.unavailable(requested, answer.detail)
            )
            return refuse(text, outcome="unavailable")


def network_grounding(
    mode: SandboxMode, network: Network = Network.OFF, destinations: Sequence[str] = ()
) -> str:
    """Why the user is asked for network access: asked up front, since a refused
    connection leaves no sandbox marker to observe (or, under network allowlist, the
    marker named the destinations now asked for)."""
    if destinations:
        return (
            f"network access to {', '.join(destinations)} requested under {mode.value} "
            f"with network {network.value}, for this call only"
        )
    return (
        f"network access requested under {mode.value} with network {network.value} (a "
        "refused connection leaves no sandbox marker, so it is asked before running)"
    )


def grounding(events: Sequence[SessionEvent], command: str, mode: SandboxMode) -> str:
    """Why the user is asked: a denial this session observed for the command, or none."""
    for event in reversed(events):
        if (
            isinstance(event, ToolResulted)
            and event.facts.get("command") == command
            and event.facts.get("denied")
        ):
            return f"the sandbox denied this command under {event.facts.get('mode')}"
    return f"requested under {mode.value} without an observed denial of this command"

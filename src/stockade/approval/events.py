"""The approval domain's session events: the audit pair of every ask."""

from __future__ import annotations

from ..events import SessionEvent


class ApprovalAsked(SessionEvent, kw_only=True, frozen=True, tag="approval/asked"):
    """An escalation was put to the answerer chain."""

    ask_id: str
    command: str
    justification: str
    current_mode: str
    requested_mode: str
    reason: str
    call_id: str | None = None
    # The ask was for network access for the one run (the mode unchanged).
    with_network: bool = False
    # With `with_network`: the `host:port` destinations asked for, this call only
    # (empty: network on; the default keeps older logs readable).
    network_destinations: tuple[str, ...] = ()
    # A command rule's prompt (the rule asked; nothing widens), what "allow for this
    # session" would allow, and a rule that allows this escalation without asking.
    rule: str | None = None
    session_prefix: tuple[str, ...] = ()
    allowed_by_rule: str | None = None


class ApprovalAnswered(SessionEvent, kw_only=True, frozen=True, tag="approval/answered"):
    """What the chain decided for `ask_id`, and which answerer decided it.

    `error`: the answerer raised, or gave back no valid decision (the outcome is then
    `unavailable`); what went wrong, for the person reading the log.
    """

    ask_id: str
    decision: str
    answerer: str
    detail: str | None = None
    error: str | None = None


APPROVAL_EVENTS = (ApprovalAsked, ApprovalAnswered)

"""Command rules at a tool call, before anything runs: `forbid` refuses with the rule and
its reason, `prompt` asks a person (once, or for the session), `allow` names the rule
that approves this call's escalation without asking.

A session's "allow for this session" answers are events of its log
(`SessionRuleAllowed`): they answer a later prompt for a command whose words begin with
one, and never a forbid or a script the judge could not read exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..approval import ApprovalRequest, Decision
from ..policy import SessionRuleAllowed, session_allowances
from ..reprs import fields_repr
from ..rules import Decision as RuleDecision
from ..vocab import ApprovalPolicy, SandboxMode
from .result import ToolResult

if TYPE_CHECKING:
    # The client is awaited, never imported at run time: the gate decides, pure, and
    # the caller (the bash tool, a shell) hands it the approval actor's client.
    from ..approval import ApprovalClient
    from ..events import SessionEvent
    from ..rules import JudgedCommand, Judgement, RuleSet


class RuleSession(Protocol):
    """What the gate needs of a session (AgentSession provides it)."""

    rejected_this_turn: set[str]

    @property
    def id(self) -> str: ...

    async def approval_policy(self) -> ApprovalPolicy: ...

    async def events(self) -> Sequence[SessionEvent]: ...

    async def allow_for_session(self, event: SessionRuleAllowed) -> None: ...


@attrs.frozen
class Gate:
    """What the rules said of one call: `refusal` (nothing runs), or go on, with
    `allowed_by` (an allow rule's name: it approves this call's escalation) and `facts`
    (what the result records: the rule and how a prompt was answered)."""

    __repr__ = fields_repr

    refusal: ToolResult | None = None
    allowed_by: str | None = None
    facts: dict[str, Any] = attrs.field(factory=dict)


async def judge_call(
    rules: RuleSet,
    command: str,
    *,
    call_id: str,
    tool: str,
    mode: SandboxMode,
    session: RuleSession | None,
    approval: ApprovalClient | None,
) -> Gate:
    """The rules' verdict on `command` (a `bash -c` script) for this call."""
    judgement = rules.judge(command)
    if judgement.forbidden:
        assert judgement.rule is not None
        text = (
            f"FORBIDDEN by the command rule {judgement.rule.name!r}: {judgement.rule.reason}. "
            "Nothing ran. Do not run this command another way; do what it was for "
            "differently, or ask the user."
        )
        return Gate(refusal=_refusal(call_id, tool, text, judgement, "forbidden"))
    if judgement.allowed:
        assert judgement.rule is not None
        return Gate(allowed_by=judgement.rule.name, facts={"rule": judgement.rule.name})
    if not judgement.must_ask:
        return Gate()
    return await _prompt(judgement, command, call_id, tool, mode, session, approval)


async def _prompt(
    judgement: Judgement,
    command: str,
    call_id: str,
    tool: str,
    mode: SandboxMode,
    session: RuleSession | None,
    approval: ApprovalClient | None,
) -> Gate:
    name = judgement.rule.name if judgement.rule is not None else "uncertain"
    why = _why(judgement)
    asking = [c for c in judgement.commands if c.decision is RuleDecision.PROMPT]
    if session is not None and _answered(asking, judgement, await session.events()):
        return Gate(facts={"rule": name, "answered_by": "session"})
    if session is None or approval is None:
        text = (
            f"the command rule {name!r} asks the user before this command runs ({why}), "
            "and nobody can be asked here. Nothing ran."
        )
        return Gate(refusal=_refusal(call_id, tool, text, judgement, "unavailable"))
    if command in session.rejected_this_turn:
        text = "the user rejected this command earlier in this turn. Nothing ran."
        return Gate(refusal=_refusal(call_id, tool, text, judgement, "rejected"))
    # Offered only where one exactly known command asked: its words are what a
    # later command must begin with to be answered without asking.
    # Its own words, and only where nothing was unwrapped (the allowance is compared
    # with a later command's words as written).
    offer = asking[0].words if len(asking) == 1 and not judgement.uncertain else ()
    if (asking and not _as_written(asking[0])) or not all(_plain(word) for word in offer):
        offer = ()
    asked_by = asking[0].rule if len(asking) == 1 and asking[0].rule else name
    answer = await approval.ask(
        ApprovalRequest(
            session_id=session.id,
            command=command,
            justification=f"the command rule {name!r} asks a person before it runs",
            current_mode=mode,
            requested_mode=mode,
            policy=await session.approval_policy(),
            reason=why,
            call_id=call_id,
            rule=name,
            rule_reason=why,
            session_prefix=tuple(offer),
        )
    )
    match answer.decision:
        case Decision.ALLOWED_ONCE:
            return Gate(facts={"rule": name, "answered_by": answer.answerer})
        case Decision.ALLOWED_FOR_SESSION if offer:
            await session.allow_for_session(
                SessionRuleAllowed(prefix=tuple(offer), rule=asked_by, command=command)
            )
            return Gate(facts={"rule": name, "answered_by": answer.answerer, "for": "session"})
        case Decision.ALLOWED_FOR_SESSION:
            # Not offered (several commands, or doubt): this run only.
            return Gate(facts={"rule": name, "answered_by": answer.answerer})
        case Decision.REJECTED:
            session.rejected_this_turn.add(command)
            text = (
                f"the user rejected running this command (the command rule {name!r} asked). "
                "Nothing ran. Do not ask again for this command in this turn."
            )
            return Gate(refusal=_refusal(call_id, tool, text, judgement, "rejected"))
        case Decision.CANCELLED:
            text = "the question was cancelled before the user decided. Nothing ran."
            return Gate(refusal=_refusal(call_id, tool, text, judgement, "cancelled"))
        case Decision.UNAVAILABLE:
            detail = f" ({answer.detail})" if answer.detail else ""
            text = (
                f"the command rule {name!r} asks the user before this command runs, and the "
                f"user could not be asked{detail}. Nothing ran."
            )
            return Gate(refusal=_refusal(call_id, tool, text, judgement, "unavailable"))


def _answered(
    asking: Sequence[JudgedCommand], judgement: Judgement, events: Sequence[SessionEvent]
) -> bool:
    """Every command that asks is asked only by rules the person answered for this
    session (every rule that matched it), and begins, as written (nothing unwrapped:
    `sudo`, `env`, git's options would change what runs), with the words they
    allowed; nothing of the script was uncertain (doubt is never answered in advance)."""
    if judgement.uncertain or not asking:
        return False
    allowed = session_allowances(events)
    return all(
        _as_written(c)
        and all(
            any(name == rule and c.words[: len(prefix)] == prefix for rule, prefix in allowed)
            for name in (c.matched or (c.rule,))
        )
        for c in asking
    )


def _as_written(command: JudgedCommand) -> bool:
    """The command runs exactly its words: nothing unwrapped (`sudo`, `env`, git's
    options), no assignment before it (`LD_PRELOAD=...`), no quoting that resolved
    to other text."""
    return command.words == command.runs and " ".join(command.words) == command.text


# What a word of an offered prefix may hold: the judge resolves quoting, so `'~'` and
# `~` (or `'$HOME'` and `$HOME`) read the same once resolved; a prefix holding such a
# character would answer a later command it was not asked about.
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/:=@+,%-")


def _plain(word: str) -> bool:
    return bool(word) and all(c in _PLAIN for c in word)


def _why(judgement: Judgement) -> str:
    if judgement.rule is not None:
        return judgement.rule.reason
    reasons = dict.fromkeys(u.reason for u in judgement.uncertain)
    return "the command cannot be judged exactly: " + "; ".join(reasons)


def _refusal(call_id: str, tool: str, text: str, judgement: Judgement, outcome: str) -> ToolResult:
    facts: dict[str, Any] = {"rule_outcome": outcome}
    if judgement.rule is not None:
        facts["rule"] = judgement.rule.name
        facts["rule_decision"] = str(judgement.rule.decision)
    return ToolResult(call_id=call_id, name=tool, text=text, is_error=True, facts=facts)

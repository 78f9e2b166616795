"""`stockade run --ask`: the one question after a denial, or before a command a rule asks
about, put through the composition's ApprovalActor in a session of its own log, like
any face's: `stockade session show` then shows what was asked and what the person
allowed (`approval/asked`, `/answered`).
"""

from __future__ import annotations

import msgspec

from ..approval import NOBODY, Answer, Answerer, ApprovalRequest, Decision
from ..errors import StockadeError
from ..vocab import ApprovalPolicy, ExecutionPolicy, SandboxMode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..config import Composition
    from ..events import SessionEvent


def wider(mode: SandboxMode) -> SandboxMode | None:
    """The next wider mode, or None above the widest."""
    candidates = [candidate for candidate in SandboxMode if candidate.is_wider_than(mode)]
    return min(candidates) if candidates else None


class Asked(msgspec.Struct, frozen=True):
    """What came of offering a retry: the mode granted once (None: not granted), why
    not, and the session whose log holds the ask (None: nothing was asked)."""

    granted: SandboxMode | None
    why_not: str = ""
    session_id: str | None = None


async def ask_to_widen(
    composition: Composition | None,
    answerer: Answerer,
    command: str,
    policy: ExecutionPolicy,
    *,
    allowed_by: str | None = None,
) -> Asked:
    """After a denial under `policy`, offer the next wider mode once.

    The composition's harness (None: the embedded default) opens a session at the
    run's root, records the mode and network the run had, and its ApprovalActor asks
    the composition's reject rules, then `answerer`. An ask its log cannot record is
    not put to anybody (as in the harness, where a failed audit fails the ask).
    `allowed_by`: a command rule that allows the command, which approves the retry
    without asking anybody (after the reject rules), named in the log.
    """
    current = policy.mode
    requested = wider(current)
    if requested is None:
        return Asked(None, f"no mode is wider than {current.value}")

    def request(session_id: str) -> ApprovalRequest:
        return ApprovalRequest(
            session_id=session_id,
            command=command,
            justification="the sandbox denied a file effect (stockade run --ask)",
            current_mode=current,
            requested_mode=requested,
            # Asked for on the command line: the composition's `never` is not the
            # person's answer here.
            policy=ApprovalPolicy.ASK,
            reason=f"denied under {current.value}",
            allowed_by_rule=allowed_by,
        )

    answer, session_id, failed = await _ask(composition, answerer, policy, request)
    if answer is None:
        return Asked(None, failed)
    if answer.decision is Decision.ALLOWED_ONCE:
        return Asked(requested, "", session_id)
    return Asked(None, why_not(answer), session_id)


async def ask_to_run(
    composition: Composition | None,
    answerer: Answerer,
    command: str,
    policy: ExecutionPolicy,
    *,
    rule: str,
    reason: str,
) -> Asked:
    """A command rule asks a person before `command` runs: ask once, through the same
    actor and log as `ask_to_widen`, with the rule and its reason. A one-shot run has no
    session to remember an answer in: "allow for this session" is not offered. Granted:
    the run's own mode (the rule widens nothing)."""

    def request(session_id: str) -> ApprovalRequest:
        return ApprovalRequest(
            session_id=session_id,
            command=command,
            justification=f"the command rule {rule!r} asks a person before it runs",
            current_mode=policy.mode,
            requested_mode=policy.mode,
            policy=ApprovalPolicy.ASK,
            reason=reason,
            rule=rule,
            rule_reason=reason,
            session_prefix=(),
        )

    answer, session_id, failed = await _ask(composition, answerer, policy, request)
    if answer is None:
        return Asked(None, failed)
    if answer.decision in (Decision.ALLOWED_ONCE, Decision.ALLOWED_FOR_SESSION):
        return Asked(policy.mode, "", session_id)
    return Asked(None, why_not(answer, "running it"), session_id)


async def _ask(
    composition: Composition | None,
    answerer: Answerer,
    policy: ExecutionPolicy,
    request: Callable[[str], ApprovalRequest],
) -> tuple[Answer | None, str | None, str]:
    """(the answer, the session whose log holds the ask, why nothing was asked): the
    composition's harness opens a session at the run's root with the run's mode and
    network, and its ApprovalActor (or one of the run's own, auditing into the same
    log) asks `request(session id)`."""
    # Only now, when there is something to ask: the harness costs more than the run.
    from ..approval import open_approval
    from ..harness import open_harness

    root = policy.workspace_root
    session_id = None
    try:
        async with open_harness(composition, answerers=[answerer], cwd=root) as harness:
            agent = await harness.open_session(cwd=root)
            try:
                # The run's own mode and network, where they are not the composition's.
                if policy.mode is not harness.defaults.sandbox_mode:
                    await agent.set_sandbox_mode(policy.mode)
                if policy.network is not harness.defaults.network:
                    await agent.set_network(policy.network)
                if harness.approval is not None:
                    session_id = agent.id
                    answer = await harness.approval.ask(request(agent.id))
                else:
                    # A composition without an approval entry: an actor of the run's own,
                    # auditing into the same log.
                    log = harness.log

                    async def audit(session: str, event: SessionEvent) -> None:
                        await log.append(session, event)

                    async with open_approval([answerer], audit=audit) as approval:
                        session_id = agent.id
                        answer = await approval.ask(request(agent.id))
            finally:
                await agent.close()
    except (StockadeError, OSError) as error:
        if session_id is None:
            return None, None, f"it could not be asked: its session log cannot be used: {error}"
        return None, None, f"it could not be asked: its session log failed: {error}"
    return answer, session_id, ""


def why_not(answer: Answer, what: str = "the retry") -> str:
    """The reason, for the person, an --ask retry (or `what`) did not happen."""
    if answer.decision is Decision.UNAVAILABLE and answer.answerer == NOBODY:
        return "nobody answered the question"
    said = f": {answer.detail}" if answer.detail else ""
    match answer.decision:
        case Decision.REJECTED:
            return f"{what} was rejected{said}"
        case Decision.CANCELLED:
            return f"the question was cancelled{said}"
        case _:
            return f"it could not be asked{said}"

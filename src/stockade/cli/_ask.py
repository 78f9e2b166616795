"""`stockade run --ask`: the one question after a denial, put through the composition's
ApprovalActor in a session of its own log, like any face's: `stockade session show`
then shows what was asked and what the person allowed (`approval/asked`, `/answered`).
"""

from __future__ import annotations

import attrs

from ..approval import NOBODY, Answer, Answerer, ApprovalRequest, Decision
from ..errors import StockadeError
from ..vocab import ApprovalPolicy, ExecutionPolicy, SandboxMode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..config import Composition
    from ..events import SessionEvent


def wider(mode: SandboxMode) -> SandboxMode | None:
    """The next wider mode, or None above the widest."""
    candidates = [candidate for candidate in SandboxMode if candidate.is_wider_than(mode)]
    return min(candidates) if candidates else None


@attrs.frozen
class Asked:
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
) -> Asked:
    """After a denial under `policy`, offer the next wider mode once.

    The composition's harness (None: the embedded default) opens a session at the
    run's root, records the mode and network the run had, and its ApprovalActor asks
    the composition's reject rules, then `answerer`. An ask its log cannot record is
    not put to anybody (as in the harness, where a failed audit fails the ask).
    """
    # Only now, after a denial: the harness costs more than the run itself.
    from ..approval import open_approval
    from ..harness import open_harness

    current = policy.mode
    requested = wider(current)
    if requested is None:
        return Asked(None, f"no mode is wider than {current.value}")
    root = policy.workspace_root
    session_id = None
    try:
        async with open_harness(composition, answerers=[answerer], cwd=root) as harness:
            agent = await harness.open_session(cwd=root)
            try:
                # The run's own mode and network, where they are not the composition's.
                if current is not harness.defaults.sandbox_mode:
                    await agent.set_sandbox_mode(current)
                if policy.network is not harness.defaults.network:
                    await agent.set_network(policy.network)
                request = ApprovalRequest(
                    session_id=agent.id,
                    command=command,
                    justification="the sandbox denied a file effect (stockade run --ask)",
                    current_mode=current,
                    requested_mode=requested,
                    # Asked for on the command line: the composition's `never` is not the
                    # person's answer here.
                    policy=ApprovalPolicy.ASK,
                    reason=f"denied under {current.value}",
                )
                if harness.approval is not None:
                    session_id = agent.id
                    answer = await harness.approval.ask(request)
                else:
                    # A composition without an approval entry: an actor of the run's own,
                    # auditing into the same log.
                    log = harness.log

                    async def audit(session: str, event: SessionEvent) -> None:
                        await log.append(session, event)

                    async with open_approval([answerer], audit=audit) as approval:
                        session_id = agent.id
                        answer = await approval.ask(request)
            finally:
                await agent.close()
    except (StockadeError, OSError) as error:
        if session_id is None:
            why = f"it could not be asked: its session log cannot be used: {error}"
        else:
            why = f"it could not be asked: its session log failed: {error}"
        return Asked(None, why)
    if answer.decision is Decision.ALLOWED_ONCE:
        return Asked(requested, "", session_id)
    return Asked(None, why_not(answer), session_id)


def why_not(answer: Answer) -> str:
    """The reason, for the person, an --ask retry did not happen."""
    if answer.decision is Decision.UNAVAILABLE and answer.answerer == NOBODY:
        return "nobody answered the question"
    said = f": {answer.detail}" if answer.detail else ""
    match answer.decision:
        case Decision.REJECTED:
            return f"the retry was rejected{said}"
        case Decision.CANCELLED:
            return f"the question was cancelled{said}"
        case _:
            return f"it could not be asked{said}"

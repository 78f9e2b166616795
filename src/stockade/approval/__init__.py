"""The ApprovalActor's room: decisions, the answerer chain, built-in answerers, audit events.

Re-exports the values every face and tool asks with (from the pure `_chain`: no trio),
so no other room reaches into it; the actor, answerers and render are public modules.
"""

from ._chain import NOBODY as NOBODY
from ._chain import Answer as Answer
from ._chain import Answerer as Answerer
from ._chain import ApprovalRequest as ApprovalRequest
from ._chain import Decision as Decision

__all__ = ["NOBODY", "Answer", "Answerer", "ApprovalRequest", "Decision"]

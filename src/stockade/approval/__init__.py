"""The ApprovalActor's room: decisions, the answerer chain, built-in answerers, audit events.

This is the room's public surface: the values every face and tool asks with (from the
pure `_chain`), the actor, the answerers, the audit events and `render` (the texts a
face shows). Every name is loaded on first use, so asking for a value loads no trio.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from . import render as render
    from ._chain import NOBODY as NOBODY
    from ._chain import Answer as Answer
    from ._chain import Answerer as Answerer
    from ._chain import ApprovalRequest as ApprovalRequest
    from ._chain import Decision as Decision
    from .actor import ApprovalActor as ApprovalActor
    from .actor import ApprovalClient as ApprovalClient
    from .actor import open_approval as open_approval
    from .answerers import AsyncioAnswerer as AsyncioAnswerer
    from .answerers import CallbackAnswerer as CallbackAnswerer
    from .answerers import RejectRule as RejectRule
    from .answerers import RejectRules as RejectRules
    from .answerers import ScriptedAnswerer as ScriptedAnswerer
    from .answerers import TerminalAnswerer as TerminalAnswerer
    from .answerers import scripted as scripted
    from .events import APPROVAL_EVENTS as APPROVAL_EVENTS
    from .render import JUSTIFICATION_LIMIT as JUSTIFICATION_LIMIT
    from .render import LABEL_WIDTH as LABEL_WIDTH
    from .render import escape_warning as escape_warning
    from .render import network_phrase as network_phrase
    from .render import network_rows as network_rows
    from .render import render_field as render_field
    from .render import rule_heading as rule_heading
    from .render import rule_rows as rule_rows
    from .render import session_choice as session_choice

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

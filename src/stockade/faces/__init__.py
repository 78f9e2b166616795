"""What the faces (cli/, mcp/, acp/) share, so that none imports another: composition
loading (`load_face_composition`), session rendering (`show_session`, `summarize`,
`render_text`), the events a face writes (`FACE_EVENTS`), credential-bound
sessions (`credentials`: bearer tokens, and the principal a session is bound to), and
undo as every face tells it (`calls_table`, `outcome_line`, `refusal_line`, ...).

This is the folder's public surface. Every name is loaded on first use: `stockade
exec` imports this package only when a composition is named, and a face pays only for
what it asks for.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from . import credentials as credentials
    from .composition import load_face_composition as load_face_composition
    from .events import ACP_EVENTS as ACP_EVENTS
    from .events import FACE_EVENTS as FACE_EVENTS
    from .events import CommandAnswered as CommandAnswered
    from .events import PromptReceived as PromptReceived
    from .events import ReplyGiven as ReplyGiven
    from .sessions import Unshowable as Unshowable
    from .sessions import read_log as read_log
    from .sessions import render_text as render_text
    from .sessions import show_session as show_session
    from .sessions import summarize as summarize
    from .sessions import unique_prefix as unique_prefix
    from .undo import call_facts as call_facts
    from .undo import calls_lines as calls_lines
    from .undo import calls_table as calls_table
    from .undo import counts as counts
    from .undo import done_on_disk as done_on_disk
    from .undo import outcome_facts as outcome_facts
    from .undo import outcome_line as outcome_line
    from .undo import refusal_facts as refusal_facts
    from .undo import refusal_line as refusal_line


if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

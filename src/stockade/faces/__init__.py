"""What the faces (cli/, mcp/, acp/) share, so that none imports another: composition
loading (`load_face_composition`), session rendering (`show_session`, `summarize`,
`render_text`), the events a face writes (`FACE_EVENTS`), and credential-bound
sessions (`credentials`: bearer tokens, and the principal a session is bound to).

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
    from .events import PromptReceived as PromptReceived
    from .events import ReplyGiven as ReplyGiven
    from .sessions import Unshowable as Unshowable
    from .sessions import read_log as read_log
    from .sessions import render_text as render_text
    from .sessions import show_session as show_session
    from .sessions import summarize as summarize
    from .sessions import unique_prefix as unique_prefix


if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

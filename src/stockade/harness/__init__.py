"""The composition root: `open_harness()` builds a composition's actors in one nursery;
`Harness`, `AgentSession` and `Session` are what a host holds.

`assembly` builds and starts the actors, `harness` opens sessions, `agent` is what an
agent loop holds, `session` reads one session's policy from its log.
"""

from ..history import UndoOutcome as UndoOutcome
from ..lazy import surface
from ._history import UndoableCall as UndoableCall
from ._history import UndoRefused as UndoRefused
from .agent import AgentSession as AgentSession
from .agent import SessionShell as SessionShell
from .assembly import assemble as assemble
from .assembly import harness_registry as harness_registry
from .assembly import open_harness as open_harness
from .harness import Harness as Harness
from .session import Session as Session
from .session import SessionMismatch as SessionMismatch

TYPE_CHECKING = False

if not TYPE_CHECKING:  # `__all__` is read from the imports above (stockade.lazy)
    __getattr__ = surface(__name__, globals())

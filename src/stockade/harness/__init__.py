"""The composition root: `open_harness()` builds a composition's actors in one nursery;
`Harness`, `AgentSession` and `Session` are what a host holds.

`assembly` builds and starts the actors, `harness` opens sessions, `agent` is what an
agent loop holds, `session` reads one session's policy from its log.
"""

from .agent import AgentSession as AgentSession
from .agent import SessionShell as SessionShell
from .assembly import assemble as assemble
from .assembly import harness_registry as harness_registry
from .assembly import open_harness as open_harness
from .harness import Harness as Harness
from .session import Session as Session
from .session import SessionMismatch as SessionMismatch

__all__ = [
    "AgentSession",
    "Harness",
    "Session",
    "SessionMismatch",
    "SessionShell",
    "assemble",
    "harness_registry",
    "open_harness",
]

"""The composition root: `open_harness()` builds a composition's actors in one nursery;
`Harness`, `AgentSession` and `Session` are what a host holds.
"""

from ._harness import AgentSession as AgentSession
from ._harness import Harness as Harness
from ._harness import assemble as assemble
from ._harness import harness_registry as harness_registry
from ._harness import open_harness as open_harness
from .session import Session as Session
from .session import SessionMismatch as SessionMismatch

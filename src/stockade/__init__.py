"""stockade: run an AI agent's shell commands under a kernel-enforced file sandbox.

Re-exports only. The errors and mode enums are imported eagerly; everything else
(msgspec values, the Trio side) on first use, so `stockade exec` stays on the
standard library.
"""

from __future__ import annotations

from .errors import CommandStartError as CommandStartError
from .errors import ConfigError as ConfigError
from .errors import InvalidPolicy as InvalidPolicy
from .errors import SandboxUnavailable as SandboxUnavailable
from .errors import SessionExists as SessionExists
from .errors import SessionNotFound as SessionNotFound
from .errors import StockadeError as StockadeError
from .lazy import surface
from .modes import ApprovalPolicy as ApprovalPolicy
from .modes import Enforcement as Enforcement
from .modes import Network as Network
from .modes import SandboxMode as SandboxMode

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from .approval import Answer as Answer
    from .approval import ApprovalRequest as ApprovalRequest
    from .approval import AsyncioAnswerer as AsyncioAnswerer
    from .approval import CallbackAnswerer as CallbackAnswerer
    from .approval import Decision as Decision
    from .approval import ScriptedAnswerer as ScriptedAnswerer
    from .approval import TerminalAnswerer as TerminalAnswerer
    from .harness import AgentSession as AgentSession
    from .harness import Harness as Harness
    from .harness import SessionMismatch as SessionMismatch
    from .harness import UndoRefused as UndoRefused
    from .harness import open_harness as open_harness
    from .messages import JobHandle as JobHandle
    from .messages import JobReport as JobReport
    from .messages import RunnerFailureRule as RunnerFailureRule
    from .messages import ShellResult as ShellResult
    from .messages import ShellSpec as ShellSpec
    from .messages import Wrapped as Wrapped
    from .sandbox import ProviderConfig as ProviderConfig
    from .sessionlog import SessionHeldElsewhere as SessionHeldElsewhere
    from .sessionlog import SessionLocked as SessionLocked
    from .tools import ToolResult as ToolResult
    from .vocab import ExecutionPolicy as ExecutionPolicy
    from .vocab import SandboxPolicy as SandboxPolicy


if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

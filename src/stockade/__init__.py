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
from .lazy import lazy_exports
from .modes import ApprovalPolicy as ApprovalPolicy
from .modes import Enforcement as Enforcement
from .modes import Network as Network
from .modes import SandboxMode as SandboxMode

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from .approval import Answer as Answer
    from .approval import ApprovalRequest as ApprovalRequest
    from .approval import Decision as Decision
    from .approval.answerers import AsyncioAnswerer as AsyncioAnswerer
    from .approval.answerers import CallbackAnswerer as CallbackAnswerer
    from .approval.answerers import ScriptedAnswerer as ScriptedAnswerer
    from .approval.answerers import TerminalAnswerer as TerminalAnswerer
    from .harness import AgentSession as AgentSession
    from .harness import Harness as Harness
    from .harness import SessionMismatch as SessionMismatch
    from .harness import open_harness as open_harness
    from .messages import JobHandle as JobHandle
    from .messages import JobReport as JobReport
    from .messages import RunnerFailureRule as RunnerFailureRule
    from .messages import ShellResult as ShellResult
    from .messages import ShellSpec as ShellSpec
    from .messages import Wrapped as Wrapped
    from .sandbox.config import ProviderConfig as ProviderConfig
    from .sessionlog.stores.interface import SessionLocked as SessionLocked
    from .sessionlog.stores.postgres.locks import SessionHeldElsewhere as SessionHeldElsewhere
    from .tools.result import ToolResult as ToolResult
    from .vocab import ExecutionPolicy as ExecutionPolicy
    from .vocab import SandboxPolicy as SandboxPolicy

_LAZY = {
    "JobHandle": "messages",
    "JobReport": "messages",
    "RunnerFailureRule": "messages",
    "ShellResult": "messages",
    "ShellSpec": "messages",
    "Wrapped": "messages",
    "ProviderConfig": "sandbox.config",
    "ExecutionPolicy": "vocab",
    "SandboxPolicy": "vocab",
    "Answer": "approval",
    "ApprovalRequest": "approval",
    "Decision": "approval",
    "AsyncioAnswerer": "approval.answerers",
    "CallbackAnswerer": "approval.answerers",
    "ScriptedAnswerer": "approval.answerers",
    "TerminalAnswerer": "approval.answerers",
    "AgentSession": "harness",
    "Harness": "harness",
    "SessionMismatch": "harness",
    "SessionLocked": "sessionlog.stores.interface",
    "SessionHeldElsewhere": "sessionlog.stores.postgres.locks",
    "open_harness": "harness",
    "ToolResult": "tools.result",
}


__getattr__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "AgentSession",
    "Answer",
    "ApprovalPolicy",
    "ApprovalRequest",
    "AsyncioAnswerer",
    "CallbackAnswerer",
    "CommandStartError",
    "ConfigError",
    "Decision",
    "Enforcement",
    "ExecutionPolicy",
    "Harness",
    "InvalidPolicy",
    "JobHandle",
    "JobReport",
    "Network",
    "ProviderConfig",
    "RunnerFailureRule",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxUnavailable",
    "ScriptedAnswerer",
    "SessionExists",
    "SessionHeldElsewhere",
    "SessionLocked",
    "SessionMismatch",
    "SessionNotFound",
    "ShellResult",
    "ShellSpec",
    "StockadeError",
    "TerminalAnswerer",
    "ToolResult",
    "Wrapped",
    "open_harness",
]

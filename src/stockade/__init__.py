"""stockade: run an AI agent's shell commands under a kernel-enforced file sandbox."""

from .errors import ConfigError as ConfigError
from .errors import InvalidPolicy as InvalidPolicy
from .errors import SandboxUnavailable as SandboxUnavailable
from .errors import StockadeError as StockadeError
from .messages import RunnerFailureRule as RunnerFailureRule
from .messages import Wrapped as Wrapped
from .sandbox.config import ProviderConfig as ProviderConfig
from .vocab import ApprovalPolicy as ApprovalPolicy
from .vocab import Enforcement as Enforcement
from .vocab import ExecutionPolicy as ExecutionPolicy
from .vocab import SandboxMode as SandboxMode
from .vocab import SandboxPolicy as SandboxPolicy

__all__ = [
    "ApprovalPolicy",
    "ConfigError",
    "Enforcement",
    "ExecutionPolicy",
    "InvalidPolicy",
    "ProviderConfig",
    "RunnerFailureRule",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxUnavailable",
    "StockadeError",
    "Wrapped",
]

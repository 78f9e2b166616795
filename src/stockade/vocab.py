"""The closed vocabulary shared by every actor: modes, enforcement, policies, texts.

The enums and texts live in `_modes` (standard library only); the policies are
msgspec Structs because they ride in messages and session events.
"""

from __future__ import annotations

import os

import msgspec

from ._modes import DENIAL_INSTRUCTION as DENIAL_INSTRUCTION
from ._modes import ApprovalPolicy as ApprovalPolicy
from ._modes import Enforcement as Enforcement
from ._modes import SandboxMode as SandboxMode
from ._modes import allowed_modes as allowed_modes
from ._modes import denial_marker as denial_marker
from ._modes import rejection_text as rejection_text
from .errors import InvalidPolicy


class ExecutionPolicy(msgspec.Struct, frozen=True):
    """The complete policy stamped on one call: a mode and an absolute workspace root."""

    mode: SandboxMode
    workspace_root: str

    def __post_init__(self) -> None:
        if not os.path.isabs(self.workspace_root):
            raise InvalidPolicy(
                f"workspace root must be an absolute path, got {self.workspace_root!r}"
            )

    def sandbox_policy(self) -> SandboxPolicy:
        """The subset a backend receives; only for modes that confine."""
        return SandboxPolicy(mode=self.mode, workspace_root=self.workspace_root)


class SandboxPolicy(msgspec.Struct, frozen=True):
    """What a sandbox backend receives: a confining mode and the workspace root."""

    mode: SandboxMode
    workspace_root: str

    def __post_init__(self) -> None:
        if not self.mode.confines:
            raise InvalidPolicy(
                "danger-full-access never reaches a sandbox backend; run the command unconfined"
            )
        if not os.path.isabs(self.workspace_root):
            raise InvalidPolicy(
                f"workspace root must be an absolute path, got {self.workspace_root!r}"
            )

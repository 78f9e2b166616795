"""The closed vocabulary shared by every actor: modes, network, enforcement, policies, texts.

The enums and texts live in `_modes` (standard library only); the policies are
msgspec Structs because they ride in messages and session events.
"""

from __future__ import annotations

import os

import msgspec

from ._modes import DENIAL_INSTRUCTION as DENIAL_INSTRUCTION
from ._modes import NETWORK_REJECTION_TEXT as NETWORK_REJECTION_TEXT
from ._modes import WITH_NETWORK as WITH_NETWORK
from ._modes import ApprovalPolicy as ApprovalPolicy
from ._modes import Enforcement as Enforcement
from ._modes import Network as Network
from ._modes import SandboxMode as SandboxMode
from ._modes import allowed_modes as allowed_modes
from ._modes import allowed_networks as allowed_networks
from ._modes import denial_marker as denial_marker
from ._modes import network_under as network_under
from ._modes import rejection_text as rejection_text
from .errors import InvalidPolicy


class ExecutionPolicy(msgspec.Struct, frozen=True):
    """The complete policy stamped on one call: a mode, an absolute workspace root, and
    whether the call may use the network.

    `network` is the call's effective value: under danger-full-access it is always
    `on` (everything is allowed; a given `off` is replaced), so a policy never claims
    a network confinement nothing applies. The default keeps older messages decoding.
    """

    mode: SandboxMode
    workspace_root: str
    network: Network = Network.OFF

    def __post_init__(self) -> None:
        if not os.path.isabs(self.workspace_root):
            raise InvalidPolicy(
                f"workspace root must be an absolute path, got {self.workspace_root!r}"
            )
        effective = network_under(self.mode, self.network)
        if effective is not self.network:
            msgspec.structs.force_setattr(self, "network", effective)

    def sandbox_policy(self) -> SandboxPolicy:
        """The subset a backend receives; only for modes that confine."""
        return SandboxPolicy(
            mode=self.mode, workspace_root=self.workspace_root, network=self.network
        )


class SandboxPolicy(msgspec.Struct, frozen=True):
    """What a sandbox backend receives: a confining mode, the workspace root, and
    whether the command may use the network (`off`: the backend cuts it off, or
    refuses to run the command)."""

    mode: SandboxMode
    workspace_root: str
    network: Network = Network.OFF

    def __post_init__(self) -> None:
        if not self.mode.confines:
            raise InvalidPolicy(
                "danger-full-access never reaches a sandbox backend; run the command unconfined"
            )
        if not os.path.isabs(self.workspace_root):
            raise InvalidPolicy(
                f"workspace root must be an absolute path, got {self.workspace_root!r}"
            )

"""The closed vocabulary shared by every actor: modes, network, enforcement, policies, texts.

The enums and texts live in `_modes` (standard library only); the policies are
msgspec Structs because they ride in messages and session events.
"""

from __future__ import annotations

import os

import msgspec

from .errors import InvalidPolicy
from .modes import DENIAL_INSTRUCTION as DENIAL_INSTRUCTION
from .modes import NETWORK_REJECTION_TEXT as NETWORK_REJECTION_TEXT
from .modes import READ_DENIED_HINT as READ_DENIED_HINT
from .modes import WITH_NETWORK as WITH_NETWORK
from .modes import ApprovalPolicy as ApprovalPolicy
from .modes import Enforcement as Enforcement
from .modes import Network as Network
from .modes import SandboxMode as SandboxMode
from .modes import SpawnTrait as SpawnTrait
from .modes import allowed_modes as allowed_modes
from .modes import allowed_networks as allowed_networks
from .modes import denial_marker as denial_marker
from .modes import network_denial_marker as network_denial_marker
from .modes import network_under as network_under
from .modes import rejection_text as rejection_text
from .modes import request_refusal_marker as request_refusal_marker


def _temp_roots(temp_dir: str | None, host_temp: tuple[str, ...]) -> tuple[str, ...]:
    roots = (temp_dir, *host_temp) if temp_dir is not None else host_temp
    return tuple(dict.fromkeys(roots))


def _check_temp(temp_dir: str | None, host_temp: tuple[str, ...]) -> None:
    for path in (temp_dir, *host_temp):
        if path is not None and not os.path.isabs(path):
            raise InvalidPolicy(f"a temp directory must be an absolute path, got {path!r}")


def _check_extra(extra_roots: tuple[str, ...]) -> None:
    for path in extra_roots:
        if not os.path.isabs(path):
            raise InvalidPolicy(f"a writable root must be an absolute path, got {path!r}")


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
    # The call's private temp directory (a session's, made when it opened): the
    # command's TMPDIR, writable beside the root under workspace-write. None: no
    # temp directory is writable (a call made outside any session).
    temp_dir: str | None = None
    # The host's shared temp roots (/tmp, $TMPDIR) granted as well: only where the
    # composition restores them (`allow_host_temp`); the claim names them as a gap.
    host_temp: tuple[str, ...] = ()
    # Directories writable beside the root under workspace-write (read-only otherwise):
    # the operator's writable_roots, then the sandbox's tool caches. Real paths, each
    # trust-checked when the harness or the session took it.
    extra_roots: tuple[str, ...] = ()
    # The sandbox-private tool caches' directory (sandbox/tool_caches.py): the tools'
    # cache variables point into it; writable like the extra roots. None: off.
    tool_cache: str | None = None
    # The agents whose sockets a confined call reaches ("ssh", "gpg": the
    # composition's or the session's allow_ssh_agent and allow_gpg_agent).
    agents: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not os.path.isabs(self.workspace_root):
            raise InvalidPolicy(
                f"workspace root must be an absolute path, got {self.workspace_root!r}"
            )
        _check_temp(self.temp_dir, self.host_temp)
        _check_extra((*self.extra_roots, *filter(None, (self.tool_cache,))))
        effective = network_under(self.mode, self.network)
        if effective is not self.network:
            msgspec.structs.force_setattr(self, "network", effective)

    @property
    def temp_roots(self) -> tuple[str, ...]:
        """The temp directories workspace-write may write: the private one, then the host's."""
        return _temp_roots(self.temp_dir, self.host_temp)

    @property
    def granted_roots(self) -> tuple[str, ...]:
        """Every directory beside the root workspace-write may write: temp, then extra."""
        extra = (*self.extra_roots, *filter(None, (self.tool_cache,)))
        return tuple(dict.fromkeys((*self.temp_roots, *extra)))

    def sandbox_policy(self) -> SandboxPolicy:
        """The subset a backend receives; only for modes that confine."""
        return SandboxPolicy(
            mode=self.mode,
            workspace_root=self.workspace_root,
            network=self.network,
            temp_dir=self.temp_dir,
            host_temp=self.host_temp,
            extra_roots=self.extra_roots,
            tool_cache=self.tool_cache,
            agents=self.agents,
        )


class SandboxPolicy(msgspec.Struct, frozen=True):
    """What a sandbox backend receives: a confining mode, the workspace root, and
    whether the command may use the network (`off`: the backend cuts it off, or
    refuses to run the command)."""

    mode: SandboxMode
    workspace_root: str
    network: Network = Network.OFF
    # As ExecutionPolicy's: the private temp directory, the host temp roots granted,
    # the extra writable roots (writable_roots, tool caches).
    temp_dir: str | None = None
    host_temp: tuple[str, ...] = ()
    extra_roots: tuple[str, ...] = ()
    tool_cache: str | None = None
    agents: tuple[str, ...] = ()

    @property
    def temp_roots(self) -> tuple[str, ...]:
        return _temp_roots(self.temp_dir, self.host_temp)

    @property
    def granted_roots(self) -> tuple[str, ...]:
        """Every directory beside the root workspace-write may write: temp, then extra."""
        extra = (*self.extra_roots, *filter(None, (self.tool_cache,)))
        return tuple(dict.fromkeys((*self.temp_roots, *extra)))

    def __post_init__(self) -> None:
        if not self.mode.confines:
            raise InvalidPolicy(
                "danger-full-access never reaches a sandbox backend; run the command unconfined"
            )
        if not os.path.isabs(self.workspace_root):
            raise InvalidPolicy(
                f"workspace root must be an absolute path, got {self.workspace_root!r}"
            )
        _check_temp(self.temp_dir, self.host_temp)
        _check_extra((*self.extra_roots, *filter(None, (self.tool_cache,))))

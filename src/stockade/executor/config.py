"""The executor's configuration: the deployment default policy and process limits."""

from __future__ import annotations

import resource

import attrs

from ..vocab import SandboxMode

MIB = 1024 * 1024


@attrs.frozen(kw_only=True)
class ExecutorConfig:
    """`default_mode`/`fallback_root` serve a direct caller that brings no policy.

    `fallback_root` None means the process's current directory at resolution time.
    """

    default_mode: SandboxMode = attrs.field(
        default=SandboxMode.WORKSPACE_WRITE, converter=SandboxMode.parse
    )
    fallback_root: str | None = None
    output_cap: int = MIB
    kill_grace: float = 2.0
    default_timeout: float | None = None
    # Processes running at once; further background jobs wait in a queue. None: sized
    # from RLIMIT_NOFILE (each process holds about three descriptors here).
    max_running: int | None = None

    def running_bound(self) -> int:
        if self.max_running is not None:
            return max(1, self.max_running)
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return 1024
        return max(8, min(1024, (soft - 64) // 4))

"""The executor's configuration: the deployment default policy and process limits."""

from __future__ import annotations

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

"""Model-facing tools: schemas, argument validation, escalation texts, result text.

This is the room's public surface: the bash tool's names and schemas (pure, from
`_bash_schema`), which the harness mounts and dispatches on, the tools themselves
(`BashTool`, `FsTool`), their result and their events. Every name is loaded on first use.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from ._bash_schema import BASH as BASH
    from ._bash_schema import JOB_OUTPUT as JOB_OUTPUT
    from ._bash_schema import KILL_JOB as KILL_JOB
    from ._bash_schema import bash_schema as bash_schema
    from ._bash_schema import job_output_schema as job_output_schema
    from ._bash_schema import kill_job_schema as kill_job_schema
    from ._record import CallRecorder as CallRecorder
    from ._record import JobStart as JobStart
    from ._record import Recorded as Recorded
    from ._roots import PinnedRoots as PinnedRoots
    from .bash import BashTool as BashTool
    from .events import TOOL_EVENTS as TOOL_EVENTS
    from .events import NetworkConnected as NetworkConnected
    from .events import NetworkRequested as NetworkRequested
    from .events import ToolCalled as ToolCalled
    from .events import ToolResulted as ToolResulted
    from .fs_tool import FS_TOOLS as FS_TOOLS
    from .fs_tool import FsTool as FsTool
    from .fs_tool import fs_schemas as fs_schemas
    from .result import ToolResult as ToolResult

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

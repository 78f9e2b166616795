"""Model-facing tools: schemas, argument validation, escalation texts, result text.

Re-exports the bash tool's names and schemas (pure, from `_bash_schema`), which the
harness mounts and dispatches on; the tools themselves are `bash`, `fs_tool`, `result`.
"""

from ._bash_schema import BASH as BASH
from ._bash_schema import JOB_OUTPUT as JOB_OUTPUT
from ._bash_schema import KILL_JOB as KILL_JOB
from ._bash_schema import bash_schema as bash_schema
from ._bash_schema import job_output_schema as job_output_schema
from ._bash_schema import kill_job_schema as kill_job_schema

__all__ = [
    "BASH",
    "JOB_OUTPUT",
    "KILL_JOB",
    "bash_schema",
    "job_output_schema",
    "kill_job_schema",
]

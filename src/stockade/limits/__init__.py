"""Resource limits, pure: what a command and a session may use (`Limits`,
`SessionLimits`), how each is held on a host (`plan`), why a command ended
(`classify_end`) and whose limit refused it (`whose`). Standard library and attrs only;
no I/O but /proc/meminfo's MemTotal.
"""

from __future__ import annotations

from ..lazy import lazy_exports

TYPE_CHECKING = False  # `stockade exec` reads the values' syntax only: nothing else loads
if TYPE_CHECKING:
    from ._outcome import HOST_OOM_NOTE as HOST_OOM_NOTE
    from ._outcome import Cause as Cause
    from ._outcome import LimitHit as LimitHit
    from ._outcome import Outcome as Outcome
    from ._outcome import Usage as Usage
    from ._outcome import classify_end as classify_end
    from ._outcome import stopped_note as stopped_note
    from ._plan import CPU_CHECK_INTERVAL as CPU_CHECK_INTERVAL
    from ._plan import Claim as Claim
    from ._plan import Enforcement as Enforcement
    from ._plan import HostLimits as HostLimits
    from ._plan import Mechanism as Mechanism
    from ._plan import plan as plan
    from ._plan import rlimits as rlimits
    from ._scope import AtLimit as AtLimit
    from ._scope import Evidence as Evidence
    from ._scope import Scope as Scope
    from ._scope import reached_at as reached_at
    from ._scope import whose as whose
    from ._spec import LIMIT_NAMES as LIMIT_NAMES
    from ._spec import SESSION_LIMIT_NAMES as SESSION_LIMIT_NAMES
    from ._spec import Limits as Limits
    from ._spec import SessionLimits as SessionLimits
    from ._values import format_value as format_value
    from ._values import memtotal as memtotal
    from ._values import parse_assignment as parse_assignment
    from ._values import parse_value as parse_value

# name -> the module of this room that defines it.
_LAZY = {
    "HOST_OOM_NOTE": "_outcome",
    "Cause": "_outcome",
    "LimitHit": "_outcome",
    "Outcome": "_outcome",
    "Usage": "_outcome",
    "classify_end": "_outcome",
    "stopped_note": "_outcome",
    "CPU_CHECK_INTERVAL": "_plan",
    "Claim": "_plan",
    "Enforcement": "_plan",
    "HostLimits": "_plan",
    "Mechanism": "_plan",
    "plan": "_plan",
    "rlimits": "_plan",
    "AtLimit": "_scope",
    "Evidence": "_scope",
    "Scope": "_scope",
    "reached_at": "_scope",
    "whose": "_scope",
    "LIMIT_NAMES": "_spec",
    "SESSION_LIMIT_NAMES": "_spec",
    "Limits": "_spec",
    "SessionLimits": "_spec",
    "format_value": "_values",
    "memtotal": "_values",
    "parse_assignment": "_values",
    "parse_value": "_values",
    "cgroups": "",
    "exec_rlimits": "",
}

__getattr__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "CPU_CHECK_INTERVAL",
    "HOST_OOM_NOTE",
    "LIMIT_NAMES",
    "SESSION_LIMIT_NAMES",
    "AtLimit",
    "Cause",
    "Claim",
    "Enforcement",
    "Evidence",
    "HostLimits",
    "LimitHit",
    "Limits",
    "Mechanism",
    "Outcome",
    "Scope",
    "SessionLimits",
    "Usage",
    "cgroups",
    "classify_end",
    "exec_rlimits",
    "format_value",
    "memtotal",
    "parse_assignment",
    "parse_value",
    "plan",
    "reached_at",
    "rlimits",
    "stopped_note",
    "whose",
]

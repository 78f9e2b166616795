"""Resource limits, pure: what a command and a session may use (`Limits`,
`SessionLimits`), how each is held on a host (`plan`), why a command ended
(`classify_end`) and whose limit refused it (`whose`). Standard library and attrs only;
no I/O but /proc/meminfo's MemTotal.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False  # `stockade exec` reads the values' syntax only: nothing else loads
if TYPE_CHECKING:
    from . import cgroups as cgroups
    from ._exec_rlimits import exec_rlimits as exec_rlimits
    from ._exec_rlimits import with_rlimits as with_rlimits
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


if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

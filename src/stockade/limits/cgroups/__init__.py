"""The host's cgroups for stockade's limits (synchronous, standard library and attrs):
which mechanism this process can use, and the session and command groups made below it.

Every group is made below this process's OWN cgroup of each hierarchy, in a subtree
`stockade-p<pid namespace>-<pid>-<random>`; nothing of ours is moved, no cgroup we did
not make is written.
v2's "no internal processes" rule: a non-root cgroup holding processes cannot enable
controllers for its children, and ours holds us. So v2 is used only when our cgroup
ALREADY delegates pids and memory (its cgroup.subtree_control lists them: systemd
`Delegate=yes` with the process in a leaf, a container runtime); we enable them again in
our subtree and each session group (both hold no process), so processes join command
groups only. Moving ourselves into a leaf would change a cgroup someone else manages:
that is for whoever starts stockade. v1 has no such rule.
"""

from __future__ import annotations

from ...lazy import surface
from ._files import GroupUsage as GroupUsage
from ._files import OwnLimits as OwnLimits
from ._group import Group as Group
from ._group import safe_name as safe_name
from ._host import CONTROLLERS as CONTROLLERS
from ._host import CPU as CPU
from ._host import KILL_TIMEOUT as KILL_TIMEOUT
from ._host import MEMORY as MEMORY
from ._host import PIDS as PIDS
from ._host import REMOVE_TIMEOUT as REMOVE_TIMEOUT
from ._host import CgroupError as CgroupError
from ._host import CgroupHost as CgroupHost
from ._host import Hierarchy as Hierarchy
from ._host import detect as detect
from ._tree import CgroupTree as CgroupTree
from ._tree import pid_namespace as pid_namespace
from ._tree import sweep as sweep

TYPE_CHECKING = False

if not TYPE_CHECKING:  # `__all__` is read from the imports above (stockade.lazy)
    __getattr__ = surface(__name__, globals())

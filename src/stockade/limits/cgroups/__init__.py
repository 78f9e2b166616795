"""The host's cgroups for stockade's limits (synchronous, standard library and attrs):
which mechanism this process can use, and the session and command groups made below it.

Every group is made below this process's OWN cgroup of each hierarchy, in a subtree
`stockade-<pid>-<random>`; nothing of ours is moved, no cgroup we did not make is written.
v2's "no internal processes" rule: a non-root cgroup holding processes cannot enable
controllers for its children, and ours holds us. So v2 is used only when our cgroup
ALREADY delegates pids and memory (its cgroup.subtree_control lists them: systemd
`Delegate=yes` with the process in a leaf, a container runtime); we enable them again in
our subtree and each session group (both hold no process), so processes join command
groups only. Moving ourselves into a leaf would change a cgroup someone else manages:
that is for whoever starts stockade. v1 has no such rule.
"""

from ._files import GroupUsage, OwnLimits
from ._group import Group, safe_name
from ._host import (
    CONTROLLERS,
    CPU,
    KILL_TIMEOUT,
    MEMORY,
    PIDS,
    REMOVE_TIMEOUT,
    CgroupError,
    CgroupHost,
    Hierarchy,
    detect,
)
from ._tree import CgroupTree, sweep

__all__ = [
    "CONTROLLERS",
    "CPU",
    "KILL_TIMEOUT",
    "MEMORY",
    "PIDS",
    "REMOVE_TIMEOUT",
    "CgroupError",
    "CgroupHost",
    "CgroupTree",
    "Group",
    "GroupUsage",
    "Hierarchy",
    "OwnLimits",
    "detect",
    "safe_name",
    "sweep",
]

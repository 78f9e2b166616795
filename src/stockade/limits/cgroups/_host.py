"""Which cgroups this process can use for stockade's limits (detect()): delegated v2, v1
per controller, or none and why; the host's facts a plan and the groups are made from.
"""

from __future__ import annotations

import os
import re
import secrets

import msgspec

from ...errors import StockadeError

# The controllers stockade uses, by its own names ("cpu" is accounting only), and the
# v1 controller serving each (v1 accounts CPU time in cpuacct).
PIDS = "pids"
MEMORY = "memory"
CPU = "cpu"
CONTROLLERS = (PIDS, MEMORY, CPU)
_V1_CONTROLLER = {PIDS: "pids", MEMORY: "memory", CPU: "cpuacct"}

KILL_TIMEOUT = 5.0
# A v1 memory cgroup can stay busy for a moment after its last process exited.
REMOVE_TIMEOUT = 2.0


class CgroupError(StockadeError):
    """Making, limiting or removing a cgroup failed; the message says what and where.

    The caller decides what follows (fall back to rlimits, or refuse the limit)."""


class Hierarchy(msgspec.Struct, frozen=True):
    """One mounted hierarchy stockade uses, and where our own cgroup sits in it."""

    controllers: frozenset[str]  # ours ("pids", "memory", "cpu") this hierarchy serves
    # The hierarchy's field in /proc/<pid>/cgroup: "" for cgroup2, else v1's controller
    # list as the kernel prints it ("memory", "cpu,cpuacct").
    key: str
    path: str  # our cgroup, as /proc/self/cgroup names it ("/process_api/x")
    directory: str  # that cgroup's directory ("/sys/fs/cgroup/memory/process_api/x")


class CgroupHost(msgspec.Struct, frozen=True):
    """What this process can use: `version` "v2", "v1" or None (then `reason` says why).

    `reason` also says, when usable, where each controller is and what was passed over."""

    version: str | None
    controllers: frozenset[str]
    hierarchies: tuple[Hierarchy, ...]
    swap: bool  # /proc/swaps lists a swap area
    memsw: bool  # v1 memory.memsw.limit_in_bytes exists (memory+swap can be capped)
    reason: str
    proc_root: str = "/proc"
    # cgroup2 mounted with pids_localevents: pids.events and pids.events.local count
    # a group's own forks refused by any limit, as v1 does (not its own limit's).
    pids_local_events: bool = False

    @property
    def bases(self) -> dict[str, str]:
        """Each usable controller's base directory: our own cgroup in its hierarchy."""
        return {c: h.directory for h in self.hierarchies for c in sorted(h.controllers)}


class _Mount(msgspec.Struct, frozen=True):
    root: str
    point: str
    fstype: str
    options: frozenset[str]


def _unescape(field: str) -> str:  # mountinfo writes space, tab, newline, \ as \ooo
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def _mounts(proc_root: str, cgroup_root: str) -> list[_Mount]:
    found = []
    top = os.path.normpath(cgroup_root)
    with open(os.path.join(proc_root, "self/mountinfo"), encoding="utf-8") as lines:
        for line in lines:
            before, _, after = line.partition(" - ")
            fields, tail = before.split(), after.split()
            if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
                continue
            point = _unescape(fields[4])
            if point != top and not point.startswith(top.rstrip("/") + "/"):
                continue
            options = frozenset(tail[2].split(","))
            found.append(_Mount(_unescape(fields[3]), point, tail[0], options))
    return found


def _cgroups_of(process: str) -> dict[str, str]:
    """/proc/<process>/cgroup as {controller field: path}; "" is cgroup2's."""
    lines = _read(os.path.join(process, "cgroup")).splitlines()
    return {p[1]: p[2] for p in (line.split(":", 2) for line in lines) if len(p) == 3}


def _reach(mounts: list[_Mount], fstype: str, option: str, path: str) -> str | None:
    """Our cgroup `path`'s directory through the first such mount that reaches it (its
    root is `path` or above; `option` "" for cgroup2, else a v1 controller)."""
    for mount in mounts:
        root = mount.root.rstrip("/")
        if mount.fstype != fstype or (option and option not in mount.options):
            continue
        if not root or path == root or path.startswith(root + "/"):
            relative = path[len(root) :].lstrip("/")
            return os.path.join(mount.point, relative) if relative else mount.point
    return None


def _probe_mkdir(directory: str) -> str | None:
    """None when we can make and remove a group in `directory`, else why not (named
    like a subtree: sweep() removes one a crash left)."""
    probe = os.path.join(directory, f"stockade-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
    except OSError as error:
        return f"cannot make and remove a group in {directory}: {error.strerror}"
    return None


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as file:
        return file.read()


def _detect_v2(mounts: list[_Mount], own: dict[str, str]) -> tuple[Hierarchy | None, str]:
    """Our cgroup2 cgroup and the controllers it delegates, or None and why not."""
    path = own.get("")
    if path is None:
        return None, "this process has no cgroup2 cgroup"
    directory = _reach(mounts, "cgroup2", "", path)
    if directory is None:
        return None, f"no cgroup2 mount reaches our cgroup {path}"
    try:
        offered = set(_read(os.path.join(directory, "cgroup.controllers")).split())
        delegated = set(_read(os.path.join(directory, "cgroup.subtree_control")).split())
    except OSError as error:
        return None, f"cannot read the cgroup2 {directory}: {error.strerror}"
    # cpu.stat is there in every v2 cgroup, controller or not: CPU time is always read.
    controllers = frozenset({PIDS, MEMORY} & delegated)
    if not {PIDS, MEMORY} & offered:
        return None, f"cgroup2 {directory} has neither the pids nor the memory controller"
    if not controllers:
        # The no-internal-process rule: we may not enable them while we are in it.
        return None, f"cgroup2 {directory} delegates neither pids nor memory to children"
    failure = _probe_mkdir(directory)
    if failure:
        return None, f"cgroup2: {failure}"
    return Hierarchy(controllers | {CPU}, "", path, directory), ""


def _detect_v1(mounts: list[_Mount], own: dict[str, str]) -> tuple[list[Hierarchy], list[str]]:
    by_key: dict[str, Hierarchy] = {}
    missing = []
    for ours, kernel in _V1_CONTROLLER.items():
        key = next((k for k in own if k and kernel in k.split(",")), None)
        if key is None:
            missing.append(f"{ours}: no v1 {kernel} hierarchy for this process")
            continue
        if key in by_key:
            known = by_key[key]
            by_key[key] = msgspec.structs.replace(known, controllers=known.controllers | {ours})
            continue
        directory = _reach(mounts, "cgroup", kernel, own[key])
        if directory is None:
            missing.append(f"{ours}: no v1 {kernel} mount reaches {own[key]}")
            continue
        failure = _probe_mkdir(directory)
        if failure:
            missing.append(f"{ours}: {failure}")
            continue
        by_key[key] = Hierarchy(frozenset({ours}), key, own[key], directory)
    return list(by_key.values()), missing


def detect(proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> CgroupHost:
    """Which cgroups this process can use: delegated v2 (pids and memory) first, then v1
    per controller, then a v2 that delegates one of them; else version None and why.
    Only hierarchies mounted at or below `cgroup_root` count. Leaves nothing behind."""
    try:
        swap = len(_read(os.path.join(proc_root, "swaps")).splitlines()) > 1
    except OSError:
        swap = False
    try:
        mounts = _mounts(proc_root, cgroup_root)
        own = _cgroups_of(os.path.join(proc_root, "self"))
    except OSError as error:
        reason = f"cannot read this process's cgroups: {error}"
        return CgroupHost(None, frozenset(), (), swap, False, reason, proc_root)
    v2, v2_reason = _detect_v2(mounts, own)
    full_v2 = v2 is not None and {PIDS, MEMORY} <= v2.controllers
    v1, v1_missing = ([], []) if full_v2 else _detect_v1(mounts, own)
    passed = ([f"not v2: {v2_reason}"] if v2_reason else []) + v1_missing
    chosen, version = (v1, "v1") if {PIDS, MEMORY} & _served(v1) else ([], None)
    if v2 is not None and (full_v2 or version is None):
        chosen, version = [v2], "v2"
    if version is None:
        return CgroupHost(None, frozenset(), (), swap, False, "; ".join(passed), proc_root)
    bases = {c: h.directory for h in chosen for c in h.controllers}
    memory = bases.get(MEMORY)
    memsw_file = memory is not None and os.path.exists(f"{memory}/memory.memsw.limit_in_bytes")
    memsw = version == "v1" and memsw_file
    placed = ", ".join(f"{c} at {d}" for c, d in sorted(bases.items()))
    reason = f"cgroup {version}: {placed}" + (f" ({'; '.join(passed)})" if passed else "")
    local_events = version == "v2" and any(
        m.fstype == "cgroup2" and "pids_localevents" in m.options for m in mounts
    )
    return CgroupHost(
        version, _served(chosen), tuple(chosen), swap, memsw, reason, proc_root, local_events
    )


def _served(hierarchies: list[Hierarchy]) -> frozenset[str]:
    return frozenset(c for h in hierarchies for c in h.controllers)

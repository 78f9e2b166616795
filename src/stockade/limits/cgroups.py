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

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import signal
import time
from collections.abc import Iterator

import attrs

from ..errors import StockadeError

# The controllers stockade uses, by its own names ("cpu" is accounting only), and the
# v1 controller serving each (v1 accounts CPU time in cpuacct).
PIDS = "pids"
MEMORY = "memory"
CPU = "cpu"
CONTROLLERS = (PIDS, MEMORY, CPU)
_V1_CONTROLLER = {PIDS: "pids", MEMORY: "memory", CPU: "cpuacct"}

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_NAME_LIMIT = 64
KILL_TIMEOUT = 5.0
# A v1 memory cgroup can stay busy for a moment after its last process exited.
REMOVE_TIMEOUT = 2.0


class CgroupError(StockadeError):
    """Making, limiting or removing a cgroup failed; the message says what and where.

    The caller decides what follows (fall back to rlimits, or refuse the limit)."""


@attrs.frozen
class Hierarchy:
    """One mounted hierarchy stockade uses, and where our own cgroup sits in it."""

    controllers: frozenset[str]  # ours ("pids", "memory", "cpu") this hierarchy serves
    # The hierarchy's field in /proc/<pid>/cgroup: "" for cgroup2, else v1's controller
    # list as the kernel prints it ("memory", "cpu,cpuacct").
    key: str
    path: str  # our cgroup, as /proc/self/cgroup names it ("/process_api/x")
    directory: str  # that cgroup's directory ("/sys/fs/cgroup/memory/process_api/x")


@attrs.frozen
class CgroupHost:
    """What this process can use: `version` "v2", "v1" or None (then `reason` says why).

    `reason` also says, when usable, where each controller is and what was passed over."""

    version: str | None
    controllers: frozenset[str]
    hierarchies: tuple[Hierarchy, ...]
    swap: bool  # /proc/swaps lists a swap area
    memsw: bool  # v1 memory.memsw.limit_in_bytes exists (memory+swap can be capped)
    reason: str
    proc_root: str = "/proc"

    @property
    def bases(self) -> dict[str, str]:
        """Each usable controller's base directory: our own cgroup in its hierarchy."""
        return {c: h.directory for h in self.hierarchies for c in sorted(h.controllers)}


@attrs.frozen
class GroupUsage:
    """What a group used; None where the host cannot tell.

    The event counts follow the kernel's own semantics: v1 counts a refused fork in the
    group it was refused in and an OOM kill in the victim's group; v2's `pids.events` and
    `memory.events` count hits of this group's limits and its descendants'."""

    cpu_seconds: float | None
    memory_peak: int | None
    processes_now: int | None
    processes_peak: int | None  # pids.peak, where the kernel has it
    processes_refused: int  # pids.events "max"
    oom_kills: int  # v2 memory.events oom_kill; v1 memory.oom_control oom_kill
    memory_limit_hits: int  # v2 memory.events max; v1 memory.failcnt


@attrs.frozen
class _Mount:
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
            by_key[key] = attrs.evolve(known, controllers=known.controllers | {ours})
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
    return CgroupHost(version, _served(chosen), tuple(chosen), swap, memsw, reason, proc_root)


def _served(hierarchies: list[Hierarchy]) -> frozenset[str]:
    return frozenset(c for h in hierarchies for c in h.controllers)


def safe_name(identifier: str) -> str:
    """`identifier` as a cgroup name part: [A-Za-z0-9_-] only, at most 73 characters; an
    id that had to change gets a hash of the original, so two ids never share a name."""
    cleaned = _UNSAFE.sub("_", identifier)[:_NAME_LIMIT]
    if cleaned != identifier or not cleaned:
        cleaned += "-" + hashlib.sha256(identifier.encode()).hexdigest()[:8]
    return cleaned


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read_bytes(path: str) -> bytes:
    # A cgroup file is one small read; os.open/os.read cost a fifth of open() here,
    # and a call reads seven of them (issue 26's per-job cost).
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _number(path: str, key: str | None = None) -> int | None:
    """A file's number, or the one after `key` in a flat-keyed file ("max 3"), 0 when
    the key is not there; None when the file cannot be read (no such file, group gone)."""
    try:
        return _parse(_read_bytes(path), key)
    except OSError:
        return None


def _parse(text: bytes, key: str | None) -> int:
    if key is None:
        return int(text)
    prefix = key.encode() + b" "
    for line in text.splitlines():
        if line.startswith(prefix):
            return int(line[len(prefix) :])
    return 0


# The files a group's usage is read from, per version and controller: (field, file,
# key in a flat-keyed file or None).
_USAGE_FILES: dict[str, dict[str, tuple[tuple[str, str, str | None], ...]]] = {
    "v2": {
        CPU: (("cpu_usec", "cpu.stat", "usage_usec"),),
        MEMORY: (
            ("memory_peak", "memory.peak", None),
            ("oom_kills", "memory.events", "oom_kill"),
            ("memory_limit_hits", "memory.events", "max"),
        ),
        PIDS: (
            ("processes_now", "pids.current", None),
            ("processes_peak", "pids.peak", None),
            ("processes_refused", "pids.events", "max"),
        ),
    },
    "v1": {
        CPU: (("cpu_nsec", "cpuacct.usage", None),),
        MEMORY: (
            ("memory_peak", "memory.max_usage_in_bytes", None),
            ("oom_kills", "memory.oom_control", "oom_kill"),
            ("memory_limit_hits", "memory.failcnt", None),
        ),
        PIDS: (
            ("processes_now", "pids.current", None),
            ("processes_peak", "pids.peak", None),
            ("processes_refused", "pids.events", "max"),
        ),
    },
}


@attrs.define(eq=False)
class Group:
    """One group of ours, the same named directory in every hierarchy the host uses.

    `kind` is "tree" (a harness's subtree), "session" or "command"; processes join
    command groups (on v2 only those can hold them)."""

    host: CgroupHost
    kind: str
    relative: str  # below our own cgroup: "stockade-12-ab12cd34/s-x/c-y"
    directories: tuple[str, ...]  # one per host.hierarchies, in order
    # (field, path, key) of each usage file, worked out once per group.
    _usage_files: tuple[tuple[str, str, str | None], ...] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        files = _USAGE_FILES.get(self.host.version or "", {})
        self._usage_files = tuple(
            (field, f"{directory}/{name}", key)
            for hierarchy, directory in zip(self.host.hierarchies, self.directories, strict=True)
            for controller in sorted(hierarchy.controllers)
            for field, name, key in files.get(controller, ())
        )

    def _fresh_limits(
        self, processes: int | None, memory: int | None
    ) -> list[tuple[str, str, bool]]:
        """(path, value, only if the file exists) to write in order to limit this group
        as just made (every limit still at "max": v1's memsw may follow the limit)."""
        for name, value in (("processes", processes), ("memory", memory)):
            if value is not None and (type(value) is not int or value < 1):
                raise ValueError(f"{name} must be a positive whole number, not {value!r}")
        writes: list[tuple[str, str, bool]] = []
        v2 = self.host.version == "v2"
        for hierarchy, directory in zip(self.host.hierarchies, self.directories, strict=True):
            if processes is not None and PIDS in hierarchy.controllers:
                writes.append((f"{directory}/pids.max", str(processes), False))
            if memory is None or MEMORY not in hierarchy.controllers:
                continue
            if v2:
                writes.append((f"{directory}/memory.max", str(memory), False))
                # No memory.swap.max: no swap accounting in this kernel, nothing to turn off.
                writes.append((f"{directory}/memory.swap.max", "0", True))
                continue
            writes.append((f"{directory}/memory.limit_in_bytes", str(memory), False))
            if self.host.swap and self.host.memsw:
                writes.append((f"{directory}/memory.memsw.limit_in_bytes", str(memory), False))
        return writes

    def _child(
        self, name: str, kind: str, processes: int | None = None, memory: int | None = None
    ) -> Group:
        relative = f"{self.relative}/{name}" if self.relative else name
        made: list[str] = []
        handed = sorted(self.host.controllers - {CPU}) if self.host.version == "v2" else []
        enable = " ".join(f"+{c}" for c in handed)
        try:
            for directory in self.directories:
                child = os.path.join(directory, name)
                os.mkdir(child)
                made.append(child)
                if enable and kind != "command":
                    # Sessions and the tree hold no process: they hand the controllers on.
                    _write(os.path.join(child, "cgroup.subtree_control"), enable)
        except OSError as error:
            for child in reversed(made):
                with contextlib.suppress(OSError):  # best effort; sweep() finds the rest
                    os.rmdir(child)
            where = error.filename or relative
            raise CgroupError(f"cannot make the {kind} cgroup {where}: {error.strerror}") from None
        group = Group(self.host, kind, relative, tuple(made))
        try:
            for path, value, if_present in group._fresh_limits(processes, memory):
                try:
                    _write(path, value)
                except FileNotFoundError:
                    if not if_present:
                        raise
        except OSError as error:
            group.remove()
            raise CgroupError(
                f"cannot limit the {kind} cgroup {error.filename or relative}: {error.strerror}"
            ) from None
        except BaseException:
            group.remove()
            raise
        return group

    def command(
        self, call_id: str, *, processes: int | None = None, memory: int | None = None
    ) -> Group:
        """A command group below this session group, limited as asked."""
        if self.kind != "session":
            raise CgroupError(f"command groups go below a session group, not a {self.kind}")
        return self._child("c-" + safe_name(call_id), "command", processes, memory)

    def command_for_launcher(
        self, call_id: str, *, processes: int | None = None, memory: int | None = None
    ) -> tuple[Group, tuple[str, ...]]:
        """A command group below this session group, NOT made here: the launcher's
        options that make it, limit it and join it (`--cgroup-make`, `--cgroup-set`,
        `--cgroup-procs`), so the harness spends no time on it per command. The caller
        removes the group (remove() or try_remove()) once the command has ended; a
        launcher that failed before making it leaves nothing to remove."""
        if self.kind != "session":
            raise CgroupError(f"command groups go below a session group, not a {self.kind}")
        name = "c-" + safe_name(call_id)
        group = Group(
            self.host,
            "command",
            f"{self.relative}/{name}",
            tuple(f"{directory}/{name}" for directory in self.directories),
        )
        options: list[str] = []
        for directory in group.directories:
            options += ["--cgroup-make", directory]
        for path, value, if_present in group._fresh_limits(processes, memory):
            setting = "--cgroup-set-if-present" if if_present else "--cgroup-set"
            options += [setting, f"{path}={value}"]
        for path in group.procs_files():
            options += ["--cgroup-procs", path]
        return group, tuple(options)

    def procs_files(self) -> list[str]:
        """The cgroup.procs files a process must join, one per hierarchy (write "0", or
        its pid, to each; on v1 a process joins each hierarchy separately)."""
        return [os.path.join(d, "cgroup.procs") for d in self.directories]

    def open_procs(self) -> list[int]:
        """procs_files() opened O_WRONLY|O_CLOEXEC, for a launcher; the caller closes them."""
        fds: list[int] = []
        try:
            for path in self.procs_files():
                fds.append(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
        except OSError as error:
            for fd in fds:
                os.close(fd)
            raise CgroupError(f"cannot open {error.filename}: {error.strerror}") from None
        return fds

    def usage(self) -> GroupUsage:
        """What the group and everything below it used so far (read before remove())."""
        found: dict[str, int | None] = {}
        texts: dict[str, bytes | None] = {}  # v2's memory.events serves two fields
        for field, path, key in self._usage_files:
            if path not in texts:
                try:
                    texts[path] = _read_bytes(path)
                except OSError:  # no such file here, or the group is gone
                    texts[path] = None
            text = texts[path]
            found[field] = None if text is None else _parse(text, key)
        usec, nsec = found.get("cpu_usec"), found.get("cpu_nsec")
        cpu_seconds = usec / 1e6 if usec is not None else None if nsec is None else nsec / 1e9
        return GroupUsage(
            cpu_seconds=cpu_seconds,
            memory_peak=found.get("memory_peak"),
            processes_now=found.get("processes_now"),
            processes_peak=found.get("processes_peak"),
            processes_refused=found.get("processes_refused") or 0,
            oom_kills=found.get("oom_kills") or 0,
            memory_limit_hits=found.get("memory_limit_hits") or 0,
        )

    def _members(self) -> list[tuple[int, Hierarchy, str]]:
        """(pid, hierarchy, group path) of every process in the group or below."""
        found = []
        for hierarchy, top in zip(self.host.hierarchies, self.directories, strict=True):
            base = hierarchy.path.rstrip("/") + "/" + self.relative
            for directory in _cgroup_dirs(top):
                found += [(pid, hierarchy, base) for pid in _procs(directory)]
        return found

    def kill(self, timeout: float = KILL_TIMEOUT) -> bool:
        """SIGKILL every process in the group and below; True once none is left, False
        if some still are after `timeout` seconds (stuck in the kernel).

        v2's cgroup.kill where there is one; then (v1, older v2) rounds of: list every
        cgroup.procs, pin each pid with a pidfd, re-check the pinned process is still in
        the group (a pid read from a file may be reused), SIGKILL it through the pidfd.
        No freezer (a fourth hierarchy to make and join per spawn): a killed process
        forks no more, each round kills all it saw, and pids.max bounds the rest."""
        for directory in self.directories if self.host.version == "v2" else ():
            # No cgroup.kill before Linux 5.14 (or the group is gone): the loop does it.
            with contextlib.suppress(FileNotFoundError):
                _write(os.path.join(directory, "cgroup.kill"), "1")
        deadline = time.monotonic() + timeout
        pause = 0.0005
        while True:
            members = self._members()
            if not members:
                return True
            for pid, hierarchy, path in members:
                _kill_if_member(self.host.proc_root, pid, hierarchy.key, path)
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def remove(self, timeout: float = REMOVE_TIMEOUT) -> None:
        """Kill what is left, then remove the group and everything below it, leaves first.
        Idempotent; an already-gone group is fine. CgroupError if one stays busy."""
        if self.try_remove():
            return
        self.kill()
        deadline = time.monotonic() + timeout
        for directory in self.directories:
            for each in reversed(list(_cgroup_dirs(directory))):
                _rmdir_until(each, deadline)

    def try_remove(self) -> bool:
        """The usual case, cheaply: an empty leaf, one rmdir per hierarchy."""
        for directory in self.directories:
            try:
                os.rmdir(directory)
            except FileNotFoundError:
                continue
            except OSError:
                return False
        return True


def _cgroup_dirs(top: str) -> Iterator[str]:
    """`top` and every cgroup below it, parents before children."""
    todo = [top]
    while todo:
        directory = todo.pop()
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            continue
        yield directory
        todo += [e.path for e in entries if e.is_dir(follow_symlinks=False)]


def _kill_if_member(proc_root: str, pid: int, key: str, path: str) -> None:
    """SIGKILL `pid` if it is (still) in the group at `path`, race-free: the pidfd pins
    the process first, so a pid reused after the check cannot be the one signalled."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        now = _cgroups_of(os.path.join(proc_root, str(pid))).get(key, "")
        if now == path or now.startswith(path + "/"):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass  # exited meanwhile (its /proc entry gone, or ESRCH)
    finally:
        os.close(pidfd)


def _rmdir_until(directory: str, deadline: float) -> None:
    while True:
        try:
            os.rmdir(directory)
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno not in (errno.EBUSY, errno.ENOTEMPTY) or time.monotonic() > deadline:
                raise CgroupError(
                    f"cannot remove the cgroup {directory}: {error.strerror}"
                ) from None
        time.sleep(0.005)


@attrs.define(eq=False)
class CgroupTree:
    """A harness's own subtree, `<prefix>-<pid>-<random>` below our cgroup in every
    hierarchy the host uses; close() removes everything in it."""

    host: CgroupHost
    root: Group

    @classmethod
    def open(cls, host: CgroupHost, name_prefix: str = "stockade") -> CgroupTree:
        if host.version is None:
            raise CgroupError(f"no usable cgroups: {host.reason}")
        name = f"{safe_name(name_prefix)}-{os.getpid()}-{secrets.token_hex(4)}"
        above = Group(host, "above", "", tuple(h.directory for h in host.hierarchies))
        return cls(host, above._child(name, "tree"))

    def session(
        self, session_id: str, *, processes: int | None = None, memory: int | None = None
    ) -> Group:
        """A session group in this subtree, limited as asked (commands go below it)."""
        return self.root._child("s-" + safe_name(session_id), "session", processes, memory)

    def close(self) -> None:
        """Kill whatever is left and remove the whole subtree."""
        self.root.remove()

    def __enter__(self) -> CgroupTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sweep(host: CgroupHost, name_prefix: str = "stockade") -> list[str]:
    """Remove the empty `<prefix>-<pid>-<hex>` subtrees whose harness pid no longer runs
    (a crash's leftovers; a running pid, even reused, or a process inside keeps one);
    returns the directories removed. Pids are this pid namespace's."""
    pattern = re.compile(rf"{re.escape(safe_name(name_prefix))}-([0-9]+)-[0-9a-f]+")
    removed = []
    for hierarchy in host.hierarchies:
        try:
            entries = list(os.scandir(hierarchy.directory))
        except OSError:
            continue
        for entry in entries:
            found = pattern.fullmatch(entry.name)
            if not found or not entry.is_dir(follow_symlinks=False):
                continue
            if os.path.exists(os.path.join(host.proc_root, found[1])):
                continue
            directories = list(_cgroup_dirs(entry.path))
            if any(_procs(d) for d in directories):
                continue
            try:
                for directory in reversed(directories):
                    _rmdir_until(directory, deadline=0.0)
            except CgroupError:
                continue  # a process joined meanwhile: not a leftover after all
            removed.append(entry.path)
    return removed


def _procs(directory: str) -> list[int]:
    """The processes a cgroup lists (0 is one in a pid namespace we cannot see)."""
    try:
        text = _read(os.path.join(directory, "cgroup.procs"))
    except FileNotFoundError:
        return []  # removed meanwhile
    except OSError as error:
        raise CgroupError(f"cannot read {directory}/cgroup.procs: {error.strerror}") from None
    return [int(pid) for pid in text.split() if pid != "0"]

"""A harness's own subtree below its cgroups (CgroupTree), and the sweep of the empty
subtrees a crashed harness left.
"""

from __future__ import annotations

import os
import re
import secrets

import attrs

from ._group import Group, _cgroup_dirs, _procs, _rmdir_until, safe_name
from ._host import CgroupError, CgroupHost


def pid_namespace(proc_root: str = "/proc") -> int:
    """This process's PID namespace, by its inode (0: unknown)."""
    try:
        return os.stat(os.path.join(proc_root, "self/ns/pid")).st_ino
    except OSError:
        return 0


@attrs.define(eq=False, repr=False)
class CgroupTree:
    """A harness's own subtree, `<prefix>-p<pid namespace>-<pid>-<random>` below our
    cgroup in every hierarchy the host uses; close() removes everything in it. The pid
    is its namespace's: a harness in another (a container's, a test's `unshare
    --pid`) may share this cgroup and reuse the number."""

    host: CgroupHost
    root: Group

    @classmethod
    def open(cls, host: CgroupHost, name_prefix: str = "stockade") -> CgroupTree:
        if host.version is None:
            raise CgroupError(f"no usable cgroups: {host.reason}")
        namespace = pid_namespace(host.proc_root)
        name = f"{safe_name(name_prefix)}-p{namespace}-{os.getpid()}-{secrets.token_hex(4)}"
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
    """Remove the empty `<prefix>-p<namespace>-<pid>-<hex>` subtrees of this PID
    namespace whose harness pid no longer runs (a crash's leftovers; a running pid,
    even reused, or a process inside keeps one); returns the directories removed.

    Only this namespace's: a pid that runs nowhere here may be a live harness's in
    another namespace sharing the cgroup (a harness run as a container's or a test's
    pid 1 had removed such a harness's tree between its calls). A subtree named before
    the namespace was (`<prefix>-<pid>-<hex>`) says none, and is left."""
    namespace = pid_namespace(host.proc_root)
    if not namespace:
        return []
    pattern = re.compile(rf"{re.escape(safe_name(name_prefix))}-p([0-9]+)-([0-9]+)-[0-9a-f]+")
    removed = []
    for hierarchy in host.hierarchies:
        try:
            entries = list(os.scandir(hierarchy.directory))
        except OSError:
            continue
        for entry in entries:
            found = pattern.fullmatch(entry.name)
            if not found or int(found[1]) != namespace:
                continue
            if not entry.is_dir(follow_symlinks=False):
                continue
            if os.path.exists(os.path.join(host.proc_root, found[2])):
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

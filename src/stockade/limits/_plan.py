"""How each limit is enforced on a given host, and what stockade may claim for it: the
plan the launcher (its `--rlimit` pairs), the cgroup setup and the report all follow.
"""

from __future__ import annotations

import enum
import math

import attrs
import msgspec

from ..reprs import fields_repr
from ._spec import Limits

# How often the harness reads a command cgroup's CPU time against cpu_seconds.
CPU_CHECK_INTERVAL = 0.25


class Mechanism(enum.StrEnum):
    """What holds a limit."""

    CGROUP_V2 = "cgroup-v2"
    CGROUP_V1 = "cgroup-v1"
    RLIMIT = "rlimit"
    HARNESS = "harness"  # stockade itself watches and stops the command
    NONE = "none"


class Claim(enum.StrEnum):
    """What stockade may say of a limit: `enforced` (the command as a whole cannot
    exceed it), `partial` (something is bounded, but not exactly that), `none`
    (nothing bounds it), `unlimited` (no limit was asked)."""

    ENFORCED = "enforced"
    PARTIAL = "partial"
    NONE = "none"
    UNLIMITED = "unlimited"


@attrs.frozen(kw_only=True)
class HostLimits:
    """What this host lets stockade use: the cgroup version it can create command
    cgroups in ("v2", "v1" or None, and then `reason` says why not), the controllers
    writable there ("pids", "memory", "cpu": v2 cpu.stat or v1 cpuacct), the uid the
    commands run as, whether any swap is configured, and whether v1's memory.memsw.*
    files exist (swap counted with memory)."""

    __repr__ = fields_repr

    cgroup: str | None = attrs.field(
        default=None, validator=attrs.validators.in_((None, "v1", "v2"))
    )
    controllers: frozenset[str] = frozenset()
    uid: int
    swap: bool = False
    memsw: bool = False
    reason: str = ""

    def has(self, controller: str) -> bool:
        return self.cgroup is not None and controller in self.controllers

    @property
    def cgroup_mechanism(self) -> Mechanism:
        return Mechanism.CGROUP_V2 if self.cgroup == "v2" else Mechanism.CGROUP_V1


class Enforcement(msgspec.Struct, frozen=True):
    """How one limit is held (`mechanism`), what may be claimed for it, and why."""

    name: str
    value: int | float | None
    mechanism: Mechanism
    claim: Claim
    detail: str


def plan(limits: Limits, host: HostLimits) -> dict[str, Enforcement]:
    """Each limit of `limits` (in declared order) with its mechanism on `host` and the
    honest claim for it."""
    return {name: _enforce(name, value, host) for name, value in limits.items()}


def _enforce(name: str, value: int | float | None, host: HostLimits) -> Enforcement:
    if value is None:
        return Enforcement(name, None, Mechanism.NONE, Claim.UNLIMITED, "no limit")

    def held(mechanism: Mechanism, claim: Claim, detail: str) -> Enforcement:
        return Enforcement(name, value, mechanism, claim, detail)

    enforced, partial = Claim.ENFORCED, Claim.PARTIAL
    if name == "processes":
        if host.has("pids"):
            return held(host.cgroup_mechanism, enforced, "pids.max of the command's cgroup")
        if host.uid == 0:
            # The kernel skips the check for a privileged caller: the rlimit is not set.
            return held(Mechanism.NONE, Claim.NONE, "RLIMIT_NPROC is never enforced for root")
        # RLIMIT_NPROC counts every process of the uid, the user's desktop and other
        # sessions included: set to the command's limit, it would refuse a normal
        # user's forks before the command made any. It is not set.
        return held(
            Mechanism.NONE,
            Claim.NONE,
            f"no pids cgroup here, and RLIMIT_NPROC counts every process of uid "
            f"{host.uid}, not the command's: not used",
        )
    if name == "memory":
        if host.has("memory") and host.cgroup == "v2":
            return held(Mechanism.CGROUP_V2, enforced, "memory.max with memory.swap.max 0")
        if host.has("memory"):
            if host.memsw and host.swap:
                return held(
                    Mechanism.CGROUP_V1,
                    enforced,
                    "memory.limit_in_bytes and memory.memsw.limit_in_bytes (swap counted)",
                )
            if not host.swap:
                return held(
                    Mechanism.CGROUP_V1, enforced, "memory.limit_in_bytes (no swap configured)"
                )
            return held(Mechanism.CGROUP_V1, partial, "memory.limit_in_bytes; swap is not counted")
        # RLIMIT_DATA, not RLIMIT_AS: runtimes reserve address space they never use
        # (V8's cage, wasm memories, ASan's shadow), which AS counts and DATA does not.
        return held(
            Mechanism.RLIMIT,
            partial,
            "RLIMIT_DATA: each process's private writable memory, not the command's "
            "resident memory as a whole",
        )
    if name == "cpu_seconds":
        if host.has("cpu"):
            return held(
                Mechanism.HARNESS,
                enforced,
                f"the cgroup's CPU time, checked by the harness every {CPU_CHECK_INTERVAL:g} s"
                " (and RLIMIT_CPU for each process)",
            )
        return held(Mechanism.RLIMIT, partial, "RLIMIT_CPU counts each process alone")
    if name == "wall_seconds":
        return held(Mechanism.HARNESS, enforced, "the harness stops the command at its timeout")
    if name == "output_bytes":
        return held(Mechanism.HARNESS, enforced, "the harness drops the output beyond it")
    if name == "file_size":
        return held(Mechanism.RLIMIT, enforced, "RLIMIT_FSIZE: no file written larger")
    if name == "open_files":
        return held(Mechanism.RLIMIT, enforced, "per process (RLIMIT_NOFILE)")
    raise AssertionError(f"no plan for limit {name!r}")


def rlimits(limits: Limits, planned: dict[str, Enforcement]) -> tuple[tuple[str, int], ...]:
    """The launcher's `--rlimit NAME=VALUE` pairs (data, cpu, fsize, nofile): data
    only where the plan falls back to it for memory, cpu (rounded up to whole
    seconds) whenever cpu_seconds is set, as each process's own bound."""
    pairs: list[tuple[str, int]] = []
    if limits.memory is not None and planned["memory"].mechanism is Mechanism.RLIMIT:
        pairs.append(("data", limits.memory))
    if limits.cpu_seconds is not None:
        pairs.append(("cpu", math.ceil(limits.cpu_seconds)))
    if limits.file_size is not None:
        pairs.append(("fsize", limits.file_size))
    if limits.open_files is not None:
        pairs.append(("nofile", limits.open_files))
    return tuple(pairs)

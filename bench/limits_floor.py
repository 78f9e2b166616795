"""The limits phase's floor: what the kernel alone charges for a call's cgroups, with
stockade's harness taken out (K bare Landlock launchers, limits on vs off).

Part of the `stress` limits phase (`stress_limits.measure`). Each run starts K launchers
with `os.posix_spawn`, confined as a workspace-write Landlock call is, each blocked on a
FIFO until all K are started (`read -r _ < GATE; echo x`), then waits for them all; twice,
like the harness: burst `first` with every group made by its launcher (`--cgroup-make`,
`--cgroup-set`, `--cgroup-procs`), `again` with those groups, emptied and their peaks
reset, joined (`--cgroup-procs`) as a steady-state harness reuses them. Limits on: the
default limits' groups (pids, memory, cpuacct or cpu) and rlimits; off: neither. What on
adds here is the kernel's cost of limits; the harness's own share is the rest of what it
adds in the main table.
"""

from __future__ import annotations

import os
import random
import resource
import time
from dataclasses import asdict, dataclass

from ._common import Check, Context, Table, fmt, on_off_medians, ratio, spread, summarize

ROUNDS = 5
QUICK_ROUNDS = 2
BURSTS = ("first", "again")


@dataclass
class FloorRun:
    setting: str  # "on" or "off"
    jobs: int
    round: int
    burst: str
    seconds: float
    cpu: float
    failed: int

    @property
    def wall_per_job(self) -> float:
        return self.seconds / self.jobs

    @property
    def cpu_per_job(self) -> float:
        return self.cpu / self.jobs


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _burst(
    launcher: str, confinement: list[str], options: list[list[str]], gate_fd: int
) -> tuple[float, float, int]:
    """Start one launcher per entry of `options` at once, open the gate, wait for all:
    (seconds, CPU seconds of this process and its children, how many did not exit 0)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        argvs = [[launcher, *extra, *confinement] for extra in options]
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
        cpu_before, begun = _cpu(), time.perf_counter()
        pids = [os.posix_spawn(launcher, argv, os.environ, file_actions=actions) for argv in argvs]
        os.write(gate_fd, b"go\n" * len(pids))
        failed = sum(1 for pid in pids if os.waitpid(pid, 0)[1] != 0)
        return time.perf_counter() - begun, _cpu() - cpu_before, failed
    finally:
        os.close(devnull)


def _run(ctx: Context, launcher: str, setting: str, jobs: int, round_: int) -> list[FloorRun]:
    from stockade.executor._limits import LAUNCHER_PROCESSES, LimitsHost
    from stockade.limits import HostLimits, Limits, SessionLimits, rlimits
    from stockade.limits.cgroups import CgroupTree, detect

    base = ctx.scratch.dir(f"limits-floor-{setting}-k{jobs}-r{round_}")
    root = os.path.join(base, "root")
    os.makedirs(root)
    gate = os.path.join(base, "gate")
    os.mkfifo(gate)
    # What a workspace-write Landlock call's launcher gets (stockade adds its temp
    # directory and a few denied paths; the same for on and off).
    confinement = ["--die-with-parent", "--ro", "/", "--rw", os.devnull, "--rw", root]
    confinement += ["--private-ipc", "--no-network", "--", "bash", "-c"]
    confinement.append(f"read -r _ < {gate}; echo x")
    gate_fd = os.open(gate, os.O_RDWR | os.O_NONBLOCK)
    host = detect()
    tree = CgroupTree.open(host, "stockade-bench") if setting == "on" else None
    runs = []
    try:
        limits, session_limits = Limits(), SessionLimits()
        processes = (limits.processes or 0) + LAUNCHER_PROCESSES
        pairs: list[str] = []
        if tree is not None:
            # As the harness plans them: values above this process's hard limits lowered.
            held = HostLimits(cgroup=host.version, controllers=host.controllers, uid=os.geteuid())
            effective, planned = LimitsHost(held, host, None, session_limits).plan_for(limits)
            for name, value in rlimits(effective, planned):
                pairs += ["--rlimit", f"{name}={value}"]
        session = (
            tree.session("bench", processes=session_limits.processes, memory=session_limits.memory)
            if tree is not None
            else None
        )
        groups = []
        for burst in BURSTS:
            options: list[list[str]] = []
            for job in range(jobs):
                if session is None:
                    options.append([])
                elif burst == "first":
                    group, made = session.command_for_launcher(
                        f"{round_}-{job}", processes=processes, memory=limits.memory
                    )
                    groups.append(group)
                    options.append([*made, *pairs])
                else:
                    options.append([*groups[job].join_options(), *pairs])
            seconds, cpu, failed = _burst(launcher, confinement, options, gate_fd)
            runs.append(FloorRun(setting, jobs, round_, burst, seconds, cpu, failed))
            for group in groups:
                group.reset_peaks()
    finally:
        os.close(gate_fd)
        if tree is not None:
            tree.close()
    return runs


def measure(ctx: Context, launcher: str, sizes: list[int]) -> list[FloorRun]:
    """The floor's runs at each of `sizes`; none where this host offers no cgroups."""
    from stockade.limits.cgroups import detect

    if detect().version is None:
        return []
    rng = random.Random(ctx.seed)
    runs: list[FloorRun] = []
    for jobs in sizes:
        for round_ in range(QUICK_ROUNDS if ctx.quick else ROUNDS):
            settings = ["on", "off"]
            rng.shuffle(settings)
            for setting in settings:
                runs += _run(ctx, launcher, setting, jobs, round_)
    return runs


def report(
    runs: list[FloorRun], harness_added: dict[tuple[int, str], tuple[float, float, float, float]]
) -> tuple[Table, list[Check], dict[str, object]]:
    """The floor's table (with the harness's figures beside it, from `harness_added`:
    (K, burst) -> Landlock on and off wall, on and off CPU, seconds per job), its checks
    and its figures."""
    rows = []
    cells = sorted({(r.jobs, r.burst) for r in runs}, key=lambda c: (c[0], BURSTS.index(c[1])))
    for jobs, burst in cells:
        on = [r for r in runs if (r.jobs, r.burst, r.setting) == (jobs, burst, "on")]
        off = [r for r in runs if (r.jobs, r.burst, r.setting) == (jobs, burst, "off")]
        if not on or not off:
            continue
        on_wall, off_wall, on_cpu, off_cpu = on_off_medians(on, off)
        off_by_round = {r.round: r for r in off}
        paired = summarize([r.wall_per_job - off_by_round[r.round].wall_per_job for r in on], 1e3)
        kernel_wall, kernel_cpu = on_wall - off_wall, on_cpu - off_cpu
        row = [
            jobs,
            burst,
            len(on),
            on_wall * 1e3,
            off_wall * 1e3,
            kernel_wall * 1e3,
            spread(paired),
            on_cpu * 1e3,
            off_cpu * 1e3,
            kernel_cpu * 1e3,
        ]
        harness = harness_added.get((jobs, burst))
        if harness is None:
            row += ["-"] * 4
        else:
            h_on_wall, h_off_wall, h_on_cpu, h_off_cpu = harness
            row += [
                fmt(ratio(kernel_wall, h_off_wall) * 100),
                fmt((ratio(h_on_wall, h_off_wall) - 1) * 100),
                fmt(ratio(kernel_cpu, h_off_cpu) * 100),
                fmt((ratio(h_on_cpu, h_off_cpu) - 1) * 100),
            ]
        rows.append(row)
    table = Table(
        "Limits: the kernel's share (bare Landlock launchers, no harness)",
        [
            "K",
            "burst",
            "rounds",
            "on wall ms/job",
            "off",
            "added ms",
            "paired p10-p90",
            "on CPU ms/job",
            "off",
            "added ms",
            "kernel % of harness job (wall)",
            "harness adds % (wall)",
            "kernel % of harness job (CPU)",
            "harness adds % (CPU)",
        ],
        rows,
        "K launchers started with os.posix_spawn, confined as a workspace-write Landlock "
        "call, gated as in the main table, no harness: `first` makes each call's groups "
        "(as the launcher does for a new harness), `again` joins them emptied (a steady "
        "harness's reuse). added: what limits on add per job here, which is the kernel's "
        "cost of the groups and rlimits alone. The last four columns set that beside the "
        "Landlock harness's own per-job cost at the same K and burst (limits off) and what "
        "limits add there: the difference is stockade's own share.",
    )
    failed = sum(r.failed for r in runs)
    checks = [Check("limits floor: every bare launcher exited 0", failed == 0, f"{failed} did not")]
    figures = {
        "limits_floor_runs": [
            {
                **asdict(r),
                "wall_ms_per_job": r.wall_per_job * 1e3,
                "cpu_ms_per_job": r.cpu_per_job * 1e3,
            }
            for r in runs
        ]
    }
    return table, checks, figures

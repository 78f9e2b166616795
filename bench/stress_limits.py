"""The `stress` family's limits phase (issue 26): K gated background jobs per harness with
each command's limits on (the default composition) and off (those limits null).

Part of `python -m bench stress`; `STOCKADE_BENCH_LIMITS_ONLY=1000` (a comma list of K)
runs this phase alone at those sizes, e.g. to re-measure the 1,000-job comparison.

One `open_harness()`, one workspace-write session and one warm-up job per run, then K
jobs started at once (`start`, then `wait`). Each job is `read -r _ < GATE; echo x`:
it blocks on a FIFO the bench holds until every one of the K `start` calls returned,
so the jobs overlap (up to the executor's running bound; the rest queue and run as
slots free). Per run: wall per job over the phase, harness CPU per job (getrusage
SELF + CHILDREN deltas), peak RSS, fds before/peak/after, and every job's end judged
(`unexplained`). Runs alternate: each round shuffles every (backend, on/off) pair at
one K, so drift lands on all of them; the target compares ON with OFF at K = 1,000.
"""

from __future__ import annotations

import gc
import os
import random
import resource
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from . import limits_floor
from ._common import (
    Check,
    Context,
    FamilyResult,
    Progress,
    Table,
    Target,
    fmt,
    on_off_medians,
    open_fds,
    peak_rss_mib,
    ratio,
    reset_peak_rss,
    rss_mib,
    spread,
    summarize,
)

# The per-command limits a composition can turn off; off means no cgroup and no rlimit.
LIMITS_OFF: dict[str, Any] = {
    "processes": None,
    "memory": None,
    "file_size": None,
    "open_files": None,
}
ONLY_ENV = "STOCKADE_BENCH_LIMITS_ONLY"
TARGET_K = 1000
TARGET_OVERHEAD = 0.05
# Rounds per K (each round runs every backend with limits on and off): enough at the
# target's K to see the spread; five at 3,000 for bwrap (the 137 mystery's size).
FULL_ROUNDS = {1: 10, 10: 10, 100: 5, 1000: 5, 3000: 5}
FULL_ROUNDS_3000 = {"bwrap": 5, "landlock": 3}
QUICK_ROUNDS = {1: 2, 10: 2}
PHASE_TIMEOUT = 600.0
# fds and children are sampled this often (and at the release): a listdir of thousands
# of fds costs the harness ~1 ms, which must not weigh on the slower configuration.
SAMPLE_EVERY = 0.25
# How a job ends when nothing went wrong; any other end must say why (`_unexplained`).
EXPLAINED_CAUSES = {"limit", "timeout", "killed", "session-closed", "host-oom"}
KERNEL_MECHANISMS = {"cgroup-v1", "cgroup-v2", "rlimit"}
# Each harness runs its K jobs twice: "first" in a harness that has run nothing yet (on
# v1, every job's cgroup is made for it), then "again", in steady state (what an
# orchestrator's long-lived harness sees: the empty groups of earlier jobs reused).
BURSTS = ("first", "again")
TARGET_BURST = "again"
# The settings compared: the default composition ("on"), LIMITS_OFF ("off"), and, at
# TARGET_K, the default with no memory limit for the command or its session ("on,
# memory null": no memory cgroup per call), which shows what accounting each command's
# memory apart costs the kernel.
ON, OFF, ON_NO_MEMORY = "on", "off", "on, memory null"


@dataclass
class Run:
    backend: str
    setting: str
    jobs: int
    round: int
    burst: str = "first"
    bound: int | None = None
    seconds: float = 0.0
    cpu_self: float = 0.0
    cpu_children: float = 0.0
    # Of those, the kernel's (system time): where the kernel's accounting shows.
    sys_self: float = 0.0
    sys_children: float = 0.0
    fds_before: int = 0
    fds_peak: int = 0
    fds_after: int = 0
    rss_before: float = 0.0
    rss_peak: float = 0.0
    alive_peak: int = 0
    not_ok: int = 0  # did not exit 0 (explained or not)
    unexplained: list[str] = field(default_factory=list)
    unexplained_count: int = 0
    lost_output: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    held_by: set[str] = field(default_factory=set)  # processes/memory claims' mechanisms
    wrong_limits: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.backend} limits {self.setting} K={self.jobs} {self.burst}"

    @property
    def on(self) -> bool:
        return self.setting != OFF

    @property
    def wall_per_job(self) -> float:
        return self.seconds / self.jobs

    @property
    def cpu_per_job(self) -> float:
        return (self.cpu_self + self.cpu_children) / self.jobs


def _composition(backend: str, state_dir: str, setting: str) -> list[dict[str, Any]]:
    bash: dict[str, Any] = {"mode": "workspace-write"}
    if setting == OFF:
        bash["limits"] = dict(LIMITS_OFF)
    elif setting == ON_NO_MEMORY:
        bash["limits"] = {"memory": None}
        bash["session_limits"] = {"memory": None}
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {"id": "bash", "name": "stockade.bash.sandbox", "config": bash},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]


def _cpu() -> tuple[float, float, float, float]:
    """CPU seconds of this process and of its reaped children, then their system parts."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (
        own.ru_utime + own.ru_stime,
        children.ru_utime + children.ru_stime,
        own.ru_stime,
        children.ru_stime,
    )


def _children() -> int:
    """This process's live children (each running job's runner), all threads'."""
    count = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children", encoding="ascii") as listed:
                count += len(listed.read().split())
        except OSError:
            continue
    return count


def _unexplained(report: Any) -> str | None:
    """Why this end is not accounted for, or None. The workload never fails by itself,
    so a non-zero or signalled end is explained only by a cause that names what ended
    it (a limit it reached, a timeout, a kill, a host OOM, the runner's failure)."""
    from stockade.limits import Cause

    cause = report.cause
    if cause is None:
        return f"no cause (state {report.state}, exit {report.exit_code})"
    if cause not in {str(c) for c in Cause}:
        return f"cause {cause!r} is none of stockade.limits.Cause"
    if cause == "exited" and report.exit_code == 0 and report.state == "exited":
        return None
    if cause == "limit" and report.limit is not None:
        return None
    if cause == "runner-failed" and report.runner_failure:
        return None
    if cause in EXPLAINED_CAUSES - {"limit"}:
        return None
    return (
        f"exit {report.exit_code}, state {report.state}, cause {cause}, limit {report.limit}, "
        f"note {report.note!r}, stderr {report.stderr[-120:]!r}"
    )


def _limits_errors(report: Any, setting: str) -> tuple[set[str], str | None]:
    """The mechanisms holding processes and memory, and what is wrong with the claims
    for this setting (off: every one of LIMITS_OFF unlimited, nothing measured; on,
    memory null: memory unlimited and unmeasured, the rest held)."""
    claims = {claim.name: claim for claim in report.limits}
    held = {claims[name].mechanism for name in ("processes", "memory") if name in claims}
    if setting != OFF:
        missing = [name for name in LIMITS_OFF if name not in claims]
        if missing:
            return held, f"limits on, but no claim for {missing}"
        if not held & KERNEL_MECHANISMS:
            return held, f"limits on, but processes/memory held by {sorted(held)}"
        if held & {"cgroup-v1", "cgroup-v2"} and report.usage is None:
            return held, "limits on in a cgroup, but no usage measured"
        memory_held = claims["memory"].claim != "unlimited"
        if setting == ON_NO_MEMORY and (memory_held or report.usage.memory_peak is not None):
            return held, "memory null, but memory still held or measured"
        return held, None
    loose = [
        name
        for name in LIMITS_OFF
        if name in claims and (claims[name].claim != "unlimited" or claims[name].value is not None)
    ]
    if loose:
        return held, f"limits off, but {loose} still held"
    if report.usage is not None:
        return held, "limits off, but usage measured (a cgroup was made)"
    return held, None


async def _run(
    ctx: Context, backend: str, setting: str, jobs: int, round_: int, progress: Progress
) -> list[Run]:
    """One harness: a warm-up job, then the K gated jobs once per BURSTS, one Run each
    (fds and RSS are the harness's: before it opened, at the peak, after it closed)."""

    from stockade.executor.config import ExecutorConfig
    from stockade.harness import open_harness
    from stockade.sessionlog import STATE_DIR_ENV

    runs = [Run(backend, setting, jobs, round_, burst) for burst in BURSTS]
    bound = ExecutorConfig().running_bound()
    name = setting.replace(", ", "-").replace(" ", "-")
    base = ctx.scratch.dir(f"limits-{backend}-{name}-k{jobs}-r{round_}")
    root = os.path.join(base, "root")
    os.makedirs(root)
    gate_path = os.path.join(base, "gate")
    os.mkfifo(gate_path)
    state_dir = os.path.join(base, "state")
    command = f"read -r _ < {gate_path}; echo x"
    saved_env = os.environ.pop(STATE_DIR_ENV, None)
    reports: list[dict[int, Any]] = [{} for _ in runs]
    gc.collect()
    fds_before, rss_before = open_fds(), rss_mib()
    reset_peak_rss()
    # Held read-write by us: a job's open never blocks, and unread lines wait for it.
    gate_fd = os.open(gate_path, os.O_RDWR | os.O_NONBLOCK)
    try:
        async with open_harness(_composition(backend, state_dir, setting)) as harness:
            session = await harness.open_session(cwd=os.path.realpath(root))  # noqa: ASYNC240
            await session.set_sandbox_mode("workspace-write")
            shell = session.shell
            # The session's first command makes its cgroup (once per session): not per job.
            warm = await shell.start("true")
            await shell.wait(warm.id)
            for run, burst_reports in zip(runs, reports, strict=True):
                run.bound, run.fds_before, run.rss_before = bound, fds_before, rss_before
                await _burst(run, shell, command, gate_fd, burst_reports, progress)
                left = len(await harness.executor.list())
                if left:
                    run.errors.append(f"{left} jobs still held after every one was read")
            await session.close()
        rss_peak = peak_rss_mib()
    finally:
        if saved_env is not None:
            os.environ[STATE_DIR_ENV] = saved_env
        os.close(gate_fd)
    gc.collect()
    fds_after = open_fds()
    for run, burst_reports in zip(runs, reports, strict=True):
        run.rss_peak, run.fds_after = rss_peak, fds_after
        _judge(run, burst_reports, backend)
    return runs


async def _burst(
    run: Run,
    shell: Any,
    command: str,
    gate_fd: int,
    reports: dict[int, Any],
    progress: Progress,
) -> None:
    """K jobs started at once, the gate opened once every `start` returned."""
    import trio

    jobs = run.jobs
    all_started = trio.Event()
    started = [0]
    sampler = trio.CancelScope()

    async def sample() -> None:
        with sampler:
            while True:
                run.fds_peak = max(run.fds_peak, open_fds())
                run.alive_peak = max(run.alive_peak, _children())
                await trio.sleep(SAMPLE_EVERY)

    async def one(job: int) -> None:
        handle = await shell.start(command)
        started[0] += 1
        if started[0] == jobs:
            all_started.set()
        reports[job] = await shell.wait(handle.id)
        progress.advance()

    async def release() -> None:
        await all_started.wait()
        run.alive_peak = max(run.alive_peak, _children())
        run.fds_peak = max(run.fds_peak, open_fds())
        os.write(gate_fd, b"go\n" * jobs)

    before = _cpu()
    began = time.perf_counter()
    with trio.move_on_after(PHASE_TIMEOUT) as deadline:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sample)
            nursery.start_soon(release)
            async with trio.open_nursery() as jobs_nursery:
                for job in range(jobs):
                    jobs_nursery.start_soon(one, job)
            sampler.cancel()
    run.seconds = time.perf_counter() - began
    after = _cpu()
    run.cpu_self, run.cpu_children, run.sys_self, run.sys_children = (
        now - then for now, then in zip(after, before, strict=True)
    )
    if deadline.cancelled_caught:
        run.errors.append(f"the phase did not finish within {PHASE_TIMEOUT:g} s")


def _judge(run: Run, reports: dict[int, Any], backend: str) -> None:
    for job in range(run.jobs):
        report = reports.get(job)
        if report is None:
            run.unexplained_count += 1
            if len(run.unexplained) < 10:
                run.unexplained.append(f"job {job}: no report")
            continue
        cause = report.cause if report.cause is not None else "(none)"
        run.causes[cause] = run.causes.get(cause, 0) + 1
        if report.exit_code != 0 or report.state != "exited":
            run.not_ok += 1
        why = _unexplained(report)
        if why is not None:
            run.unexplained_count += 1
            if len(run.unexplained) < 10:
                run.unexplained.append(f"job {job}: {why}")
        elif report.exit_code == 0 and report.stdout != "x\n":
            run.lost_output += 1
        if report.backend != backend and len(run.errors) < 10:
            run.errors.append(f"job {job}: backend {report.backend}, expected {backend}")
        held, wrong = _limits_errors(report, run.setting)
        run.held_by |= held
        if wrong is not None and len(run.wrong_limits) < 5:
            run.wrong_limits.append(f"job {job}: {wrong}")


def _sizes(ctx: Context) -> list[int]:
    only = os.environ.get(ONLY_ENV, "").strip()
    if only:
        return sorted({int(part) for part in only.split(",") if part.strip()})
    return sorted(QUICK_ROUNDS if ctx.quick else FULL_ROUNDS)


def _rounds(ctx: Context, jobs: int, backend: str) -> int:
    if ctx.quick:
        return QUICK_ROUNDS.get(jobs, 1)
    if jobs == 3000:
        return FULL_ROUNDS_3000.get(backend, 3)
    return FULL_ROUNDS.get(jobs, 3)


def measure(ctx: Context, backends: list[str], result: FamilyResult) -> None:
    """Run the phase on `backends` and add its figures, tables, checks and target."""
    import trio

    sizes = _sizes(ctx)
    rng = random.Random(ctx.seed)
    plan: list[tuple[int, int, str, bool]] = []
    for jobs in sizes:
        most = max(_rounds(ctx, jobs, backend) for backend in backends)
        for round_ in range(most):
            pairs = [
                (jobs, round_, backend, setting)
                for backend in backends
                if round_ < _rounds(ctx, jobs, backend)
                for setting in _settings(ctx, jobs)
            ]
            rng.shuffle(pairs)
            plan += pairs
    runs: list[Run] = []
    load_before = os.getloadavg()
    total = sum(jobs for jobs, *_ in plan) * len(BURSTS)
    with Progress("stress", "limits", total) as progress:
        for jobs, round_, backend, setting in plan:
            progress.label = f"limits {backend} {setting} K={jobs} round {round_ + 1}"
            runs += trio.run(_run, ctx, backend, setting, jobs, round_, progress)
    load_after = os.getloadavg()
    floor: list[limits_floor.FloorRun] = []
    launcher = ctx.runner("landlock") if "landlock" in backends else None
    floor_sizes = [TARGET_K] if TARGET_K in sizes else [max(sizes)] if ctx.quick else []
    if launcher is not None and floor_sizes:
        sys.stderr.write(f"[stress] limits floor, bare launchers, K={floor_sizes[0]}\n")
        floor = limits_floor.measure(ctx, launcher, floor_sizes)
    _report(ctx, runs, backends, sizes, result, load_before, load_after)
    if floor:
        _report_floor(runs, floor, result)


def _report(
    ctx: Context,
    runs: list[Run],
    backends: list[str],
    sizes: list[int],
    result: FamilyResult,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> None:
    result.figures["limits_runs"] = [
        {
            "backend": r.backend,
            "limits": r.setting,
            "jobs": r.jobs,
            "round": r.round,
            "burst": r.burst,
            "running_bound": r.bound,
            "seconds": r.seconds,
            "wall_ms_per_job": r.wall_per_job * 1e3,
            "cpu_ms_per_job": r.cpu_per_job * 1e3,
            "cpu_self_s": r.cpu_self,
            "cpu_children_s": r.cpu_children,
            "sys_self_s": r.sys_self,
            "sys_children_s": r.sys_children,
            "fds": {"before": r.fds_before, "peak": r.fds_peak, "after": r.fds_after},
            "rss_mib": {"before": r.rss_before, "peak": r.rss_peak},
            "alive_peak": r.alive_peak,
            "not_exit_0": r.not_ok,
            "unexplained": r.unexplained_count,
            "unexplained_examples": r.unexplained,
            "lost_output": r.lost_output,
            "causes": r.causes,
            "held_by": sorted(r.held_by),
            "errors": r.errors + r.wrong_limits,
        }
        for r in runs
    ]
    result.figures["limits_loadavg"] = {"before": load_before, "after": load_after}
    groups: dict[tuple[str, int, str, bool], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.backend, r.jobs, r.burst, r.setting), []).append(r)
    rows = []
    for backend, jobs, burst in _cells(backends, sizes):
        for setting in (ON, ON_NO_MEMORY, OFF):
            group = groups.get((backend, jobs, burst, setting), [])
            if not group:
                continue
            wall = summarize([r.wall_per_job for r in group], 1e3)
            cpu = summarize([r.cpu_per_job for r in group], 1e3)
            bound = group[0].bound
            rows.append(
                [
                    backend,
                    setting,
                    jobs,
                    burst,
                    len(group),
                    max(r.alive_peak for r in group),
                    "queued" if bound is not None and jobs > bound else "all",
                    wall["median"],
                    spread(wall),
                    cpu["median"],
                    spread(cpu),
                    max(r.rss_peak for r in group),
                    f"{min(r.fds_before for r in group)}/{max(r.fds_peak for r in group)}"
                    f"/{max(r.fds_after for r in group)}",
                    ", ".join(sorted(set().union(*(r.held_by for r in group)))),
                    sum(r.not_ok for r in group),
                    sum(r.unexplained_count for r in group),
                ]
            )
    bound = runs[0].bound if runs else None
    result.tables.append(
        Table(
            "Limits: on vs off, K gated background jobs in one harness (issue 26)",
            [
                "backend",
                "limits",
                "K",
                "burst",
                "runs",
                "alive together",
                "K running",
                "wall ms/job",
                "p10-p90",
                "CPU ms/job",
                "p10-p90",
                "peak RSS MiB",
                "fds before/peak/after",
                "processes/memory held by",
                "not exit 0",
                "unexplained",
            ],
            rows,
            "Each run: one harness, one workspace-write session, K jobs started at once "
            "(`read -r _ < GATE; echo x`, the gate opened once every `start` returned), "
            "twice: burst `first` in a harness that has run nothing yet, then `again` in "
            "the same harness (steady state: the empty cgroups of earlier jobs reused). "
            f"The executor runs at most {bound} at once here (ExecutorConfig.running_bound(), "
            "from RLIMIT_NOFILE, at most 1024; the composition cannot raise it): at K above "
            "it the rest queue (`K running: queued`) and 'alive together' is the most runner "
            "processes seen at once. wall = phase / K; CPU = harness getrusage SELF + "
            "CHILDREN over the phase / K; medians over runs with p10-p90. off: the bash "
            "entry's limits processes, memory, file_size, open_files null (no cgroup, no "
            "rlimit); on, memory null: the default but no memory limit for the command or "
            "its session (no memory cgroup per call). unexplained: no cause, or a non-zero "
            "end whose cause names nothing "
            f"that ended it. Load average {load_before[0]:.2f} before, {load_after[0]:.2f} "
            "after.",
        )
    )
    comparison = []
    for (backend, jobs, burst), setting in (
        (cell, setting) for cell in _cells(backends, sizes) for setting in (ON, ON_NO_MEMORY)
    ):
        on_runs = groups.get((backend, jobs, burst, setting), [])
        off_runs = groups.get((backend, jobs, burst, OFF), [])
        if not on_runs or not off_runs:
            continue
        on_wall, off_wall, on_cpu, off_cpu = on_off_medians(on_runs, off_runs)
        off_by_round = {r.round: r for r in off_runs}
        paired = summarize(
            [
                ratio(r.wall_per_job, off_by_round[r.round].wall_per_job) - 1
                for r in on_runs
                if r.round in off_by_round
            ],
            100,
        )
        paired_cpu = summarize(
            [
                ratio(r.cpu_per_job, off_by_round[r.round].cpu_per_job) - 1
                for r in on_runs
                if r.round in off_by_round
            ],
            100,
        )
        added = (ratio(on_wall, off_wall) - 1) * 100
        added_cpu = (ratio(on_cpu, off_cpu) - 1) * 100
        comparison.append(
            [
                backend,
                setting,
                jobs,
                burst,
                len(on_runs),
                on_wall * 1e3,
                off_wall * 1e3,
                added,
                paired.get("median"),
                spread(paired),
                on_cpu * 1e3,
                off_cpu * 1e3,
                added_cpu,
                paired_cpu.get("median"),
                spread(paired_cpu),
            ]
        )
        if jobs == TARGET_K and setting == ON:
            state = "steady state" if burst == TARGET_BURST else "first burst in a new harness"
            result.targets.append(
                Target(
                    "limits add less than 5% to the per-job cost at 1,000 jobs "
                    f"({backend}, {state})",
                    f"wall per job, limits on vs off, < +{TARGET_OVERHEAD:.0%}",
                    f"{fmt(on_wall * 1e3)} vs {fmt(off_wall * 1e3)} ms/job: {added:+.1f}% "
                    f"(paired per round {paired.get('median', float('nan')):+.1f}%, "
                    f"p10-p90 {spread(paired)}; CPU {added_cpu:+.1f}%; "
                    f"{len(on_runs)} rounds)",
                    added < TARGET_OVERHEAD * 100,
                )
            )
    if comparison:
        result.tables.append(
            Table(
                "Limits: what they add per job (on vs off, same rounds)",
                [
                    "backend",
                    "limits",
                    "K",
                    "burst",
                    "rounds",
                    "on wall ms/job",
                    "off",
                    "added %",
                    "paired %",
                    "p10-p90",
                    "on CPU ms/job",
                    "off",
                    "added %",
                    "paired %",
                    "p10-p90",
                ],
                comparison,
                "added: ratio of the medians; paired: on/off within each round (run back "
                "to back in shuffled order), median and p10-p90 over rounds.",
            )
        )
    for (backend, jobs, burst, setting), group in sorted(groups.items()):
        label = f"stress limits: {backend} {setting} K={jobs} {burst}"
        unexplained = sum(r.unexplained_count for r in group)
        examples = [line for r in group for line in r.unexplained][:3]
        result.checks.append(
            Check(
                f"{label}: every job's end has a cause, none unexplained",
                unexplained == 0,
                f"{unexplained} of {sum(r.jobs for r in group)} unexplained: "
                + "; ".join(examples),
            )
        )
        lost = sum(r.lost_output for r in group)
        result.checks.append(
            Check(
                f"{label}: no job's output lost",
                lost == 0,
                f"{lost} jobs exited 0 without their `x`",
            )
        )
        wrong = [line for r in group for line in r.wrong_limits + r.errors][:3]
        result.checks.append(
            Check(
                f"{label}: limits held as configured, every job read and forgotten",
                not wrong,
                "; ".join(wrong),
            )
        )
        leaks = [r for r in group if r.fds_after != r.fds_before]
        result.checks.append(
            Check(
                f"{label}: fds back to baseline",
                not leaks,
                "; ".join(f"round {r.round}: {r.fds_before} -> {r.fds_after}" for r in leaks[:3]),
            )
        )
    big = [r for r in runs if r.jobs == 3000 and r.backend == "bwrap"]
    if big:
        result.notes.append(
            f"3,000 bwrap jobs: {len(big)} runs ({sum(1 for r in big if r.on)} limits on), "
            f"{sum(r.not_ok for r in big)} not exit 0, "
            f"{sum(r.unexplained_count for r in big)} unexplained; causes "
            + ", ".join(f"{cause} {count}" for cause, count in sorted(_total_causes(big).items()))
        )


def _report_floor(
    runs: list[Run], floor: list[limits_floor.FloorRun], result: FamilyResult
) -> None:
    harness: dict[tuple[int, str], tuple[float, float, float, float]] = {}
    for jobs, burst in {(r.jobs, r.burst) for r in floor}:
        on = [
            r
            for r in runs
            if (r.backend, r.jobs, r.burst, r.setting) == ("landlock", jobs, burst, ON)
        ]
        off = [
            r
            for r in runs
            if (r.backend, r.jobs, r.burst, r.setting) == ("landlock", jobs, burst, OFF)
        ]
        if on and off:
            harness[(jobs, burst)] = on_off_medians(on, off)
    table, checks, figures = limits_floor.report(floor, harness)
    result.tables.append(table)
    result.checks += checks
    result.figures.update(figures)


def _settings(ctx: Context, jobs: int) -> tuple[str, ...]:
    return (ON, OFF, ON_NO_MEMORY) if jobs == TARGET_K and not ctx.quick else (ON, OFF)


def _cells(backends: list[str], sizes: list[int]) -> list[tuple[str, int, str]]:
    return [(b, k, burst) for b in backends for k in sizes for burst in BURSTS]


def _total_causes(runs: list[Run]) -> dict[str, int]:
    total: dict[str, int] = {}
    for r in runs:
        for cause, count in r.causes.items():
            total[cause] = total.get(cause, 0) + count
    return total


def plot_panel(axis: Any, runs: list[dict[str, Any]]) -> None:
    """Wall per job against K, limits on and off, per backend (medians over runs; the
    steady-state burst)."""
    series: dict[tuple[str, str], dict[int, list[float]]] = {}
    for entry in runs:
        if entry["limits"] not in (ON, OFF) or entry.get("burst", TARGET_BURST) != TARGET_BURST:
            continue
        by_k = series.setdefault((entry["backend"], entry["limits"]), {})
        by_k.setdefault(entry["jobs"], []).append(entry["wall_ms_per_job"])
    for (backend, limits), by_k in sorted(series.items()):
        ks = sorted(by_k)
        axis.plot(
            ks,
            [summarize(by_k[k])["median"] for k in ks],
            "-" if limits == "on" else "--",
            marker="o" if backend == "bwrap" else "s",
            label=f"{backend} limits {limits}",
        )
    axis.set_xscale("log")
    axis.set_xlabel("K gated background jobs (one harness)")
    axis.set_ylabel("wall ms per job (phase / K)")
    axis.set_title("Limits on vs off (issue 26)")
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=7)

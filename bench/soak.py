"""Family `soak`: a long-lived orchestrator's harness, N background jobs, flat memory.

One `open_harness()` and one session start N short jobs (`echo <n>`), W at a time,
the way an orchestrator that lives for days would. How each job's output is taken
varies, so every path by which the job table forgets a finished job is exercised:

- most jobs: `start`, then `wait` (the final read: the job is forgotten at once);
- every 10th: `start`, never read (the table keeps the last 100 finished unread jobs
  per session and forgets older ones);
- every 100th: `wait(read=False)` then `job_output` (forgotten at that final read).

Phases: N jobs under `danger-full-access` (the executor and its job table, no
sandbox: 100,000 in the full run), then a shorter run under `workspace-write`
through the selected backend (the confined path's per-job state: wrap facts,
blocker mount points). At intervals the run prints and records the job table's
size, RSS and the Python heap (tracemalloc, on for the whole family).

Checks (a failure fails the run): no job's report holds another's output, and none
lost its own (`echo n` gave n); the table never holds more than W running + 100
unread finished jobs; a job past the bound answers "finished and forgotten"; the
Python heap after the warm-up (10 %) grows by less than 4 MiB to the end. The
session log is not part of this (it holds every event by design): jobs are started
through `session.shell`, which logs nothing.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from typing import Any

from ._common import Check, Context, FamilyResult, Progress, Table, Target, open_fds, rss_mib

WORKERS = 32
NEVER_READ_EVERY = 10
READ_LATER_EVERY = 100
SAMPLES = 20
WARM_UP = 0.10  # the share of jobs after which the heap is the baseline
HEAP_GROWTH_LIMIT_MIB = 4.0


@dataclass
class Sample:
    jobs: int
    seconds: float
    table: int
    rss_mib: float
    heap_mib: float
    fds: int


@dataclass
class Soak:
    mode: str
    jobs: int
    backend: str = "none"
    seconds: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    max_table: int = 0
    errors: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    lost_count: int = 0
    table_after: int = 0
    # Whether an unread job far past the bound was asked for, and what went wrong.
    past_bound_checked: bool = False
    past_bound: str = ""

    @property
    def bound(self) -> int:
        from stockade.executor._jobs import FINISHED_JOBS_KEPT

        return WORKERS + FINISHED_JOBS_KEPT

    def heap_growth(self) -> float:
        baseline = next(s for s in self.samples if s.jobs >= self.jobs * WARM_UP)
        return self.samples[-1].heap_mib - baseline.heap_mib

    def rss_growth(self) -> float:
        baseline = next(s for s in self.samples if s.jobs >= self.jobs * WARM_UP)
        return self.samples[-1].rss_mib - baseline.rss_mib


def _composition(backend: str | None) -> list[dict[str, Any]]:
    sandbox: dict[str, Any] = {"id": "sandbox", "name": "stockade.sandbox.local"}
    if backend is not None:
        sandbox["config"] = {"backend": backend}
    # No log entry: the session's log is in memory (and stays one header long).
    return [sandbox, {"id": "bash", "name": "stockade.bash.sandbox"}]


def _say(text: str) -> None:
    sys.stderr.write(f"[soak] {text}\n")
    sys.stderr.flush()


async def _soak(
    ctx: Context, mode: str, jobs: int, backend: str | None, progress: Progress
) -> Soak:
    import trio

    from stockade import open_harness
    from stockade.errors import UnknownJob
    from stockade.executor._jobs import FINISHED_JOBS_KEPT

    outcome = Soak(mode, jobs, backend or "none")
    root = os.path.realpath(ctx.scratch.dir(f"soak-{mode}"))  # noqa: ASYNC240
    every = max(1, jobs // SAMPLES)
    done = 0
    never_read: list[str] = []
    started = time.perf_counter()

    async with open_harness(_composition(backend), cwd=root) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_sandbox_mode(mode)
        shell = session.shell

        async def sample() -> None:
            gc.collect()
            table = len(await harness.executor.list())
            outcome.max_table = max(outcome.max_table, table)
            point = Sample(
                jobs=done,
                seconds=time.perf_counter() - started,
                table=table,
                rss_mib=rss_mib(),
                heap_mib=tracemalloc.get_traced_memory()[0] / 2**20,
                fds=open_fds(),
            )
            outcome.samples.append(point)
            _say(
                f"{mode}: {point.jobs:>7}/{jobs} jobs, {point.seconds:6.1f} s: table "
                f"{point.table:>3}, RSS {point.rss_mib:6.1f} MiB, Python heap "
                f"{point.heap_mib:6.2f} MiB, fds {point.fds}"
            )

        async def one(index: int) -> None:
            handle = await shell.start(f"echo {index}")
            if index % NEVER_READ_EVERY == NEVER_READ_EVERY - 1:
                never_read.append(handle.id)
                return
            if index % READ_LATER_EVERY == 0:
                await shell.wait(handle.id, read=False)
                report = await shell.job_output(handle.id)
            else:
                report = await shell.wait(handle.id)
            if report.stdout == f"{index}\n":
                return
            said = (
                f"job {handle.id} (n={index}) said {report.stdout!r} ({report.state}, "
                f"exit {report.exit_code}, stderr {report.stderr[-200:]!r})"
            )
            # Nothing at all from a job that exited 0 is output the executor did not
            # drain (it stops reading DRAIN_GRACE after the leader exits, in loop time:
            # a starved loop loses it); anything else would be another job's output.
            lost = (report.stdout, report.stderr, report.exit_code) == ("", "", 0)
            found = outcome.lost if lost else outcome.errors
            if len(found) < 10:
                found.append(said)
            if lost:
                outcome.lost_count += 1

        async def worker(first: int, sampling: trio.Lock) -> None:
            nonlocal done
            for index in range(first, jobs, WORKERS):
                await one(index)
                done += 1
                progress.advance()
                if done % every == 0:
                    async with sampling:
                        await sample()

        await sample()
        sampling = trio.Lock()
        async with trio.open_nursery() as nursery:
            for first in range(WORKERS):
                nursery.start_soon(worker, first, sampling)
        # The never-read jobs settle on their own: let the last of them finish (a
        # wait that does not read keeps them; older ones are already forgotten).
        for job_id in never_read[-FINISHED_JOBS_KEPT:]:
            with contextlib.suppress(UnknownJob):
                await shell.wait(job_id, read=False)
        await sample()
        outcome.seconds = time.perf_counter() - started
        outcome.table_after = len(await harness.executor.list())
        if len(never_read) > FINISHED_JOBS_KEPT:
            outcome.past_bound_checked = True
            try:
                await shell.job_output(never_read[0])
            except UnknownJob as error:
                if "finished and forgotten" not in str(error):
                    outcome.past_bound = f"the first unread job: {error}"
            else:
                outcome.past_bound = f"{never_read[0]} (unread, long past the bound) was kept"
        await session.close()
    return outcome


def run(ctx: Context) -> FamilyResult:
    import trio

    result = FamilyResult("soak")
    confined_backend = next((b for b in ("bwrap", "landlock") if ctx.usable(b)), None)
    plans: list[tuple[str, int, str | None]] = [
        ("danger-full-access", 2_000 if ctx.quick else 100_000, None)
    ]
    if confined_backend is None:
        result.skip("no usable backend: the confined soak is left out")
    else:
        plans.append(("workspace-write", 300 if ctx.quick else 5_000, confined_backend))
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    outcomes: list[Soak] = []
    try:
        with Progress("soak", "jobs", sum(n for _, n, _ in plans)) as progress:
            for mode, jobs, backend in plans:
                progress.label = f"{mode} N={jobs}"
                outcomes.append(trio.run(_soak, ctx, mode, jobs, backend, progress))
    finally:
        if not tracing:
            tracemalloc.stop()

    rows = []
    result.figures["runs"] = []
    for o in outcomes:
        label = f"soak: {o.mode} N={o.jobs}"
        heap, rss = o.heap_growth(), o.rss_growth()
        result.figures["runs"].append(
            {
                "mode": o.mode,
                "backend": o.backend,
                "jobs": o.jobs,
                "workers": WORKERS,
                "seconds": o.seconds,
                "jobs_per_s": o.jobs / o.seconds if o.seconds else 0.0,
                "max_table": o.max_table,
                "table_after": o.table_after,
                "heap_growth_mib": heap,
                "rss_growth_mib": rss,
                "samples": [vars(s) for s in o.samples],
                "errors": o.errors,
                "lost_output": o.lost_count,
            }
        )
        first, last = o.samples[0], o.samples[-1]
        rows.append(
            [
                o.mode,
                o.backend,
                o.jobs,
                o.jobs / o.seconds if o.seconds else 0.0,
                f"{o.max_table} (bound {o.bound})",
                o.table_after,
                f"{first.heap_mib:.2f} -> {last.heap_mib:.2f}",
                heap,
                f"{first.rss_mib:.1f} -> {last.rss_mib:.1f}",
                rss,
                f"{first.fds}/{last.fds}",
            ]
        )
        result.checks.append(
            Check(f"{label}: every report is its job's", not o.errors, "; ".join(o.errors[:5]))
        )
        result.checks.append(
            Check(
                f"{label}: no job's output lost (executor: draining after the leader exits)",
                not o.lost_count,
                f"{o.lost_count} jobs exited 0 with no output: " + "; ".join(o.lost[:3]),
            )
        )
        result.checks.append(
            Check(
                f"{label}: the job table stays bounded",
                o.max_table <= o.bound and o.table_after <= o.bound,
                f"at most {o.max_table} held (bound {o.bound}), {o.table_after} at the end",
            )
        )
        if o.past_bound_checked:
            result.checks.append(
                Check(
                    f"{label}: an unread job past the bound is finished and forgotten",
                    not o.past_bound,
                    o.past_bound,
                )
            )
        result.checks.append(
            Check(
                f"{label}: flat Python heap",
                heap < HEAP_GROWTH_LIMIT_MIB,
                f"{heap:+.2f} MiB from {WARM_UP:.0%} of the jobs to the end "
                f"(limit {HEAP_GROWTH_LIMIT_MIB} MiB)",
            )
        )
    result.tables.append(
        Table(
            "Soak: N background jobs in one long-lived harness",
            [
                "mode",
                "backend",
                "N",
                "jobs/s",
                "max table",
                "table at end",
                "heap MiB start -> end",
                "heap growth after warm-up",
                "RSS MiB start -> end",
                "RSS growth after warm-up",
                "fds start/end",
            ],
            rows,
            f"{WORKERS} jobs in flight; every {NEVER_READ_EVERY}th never read, every "
            f"{READ_LATER_EVERY}th read after settling, the rest waited for. Heap: "
            "tracemalloc's current size (on for the whole family, which slows it); growth "
            f"is from {WARM_UP:.0%} of the jobs to the end.",
        )
    )
    big = [o for o in outcomes if o.mode == "danger-full-access"]
    if big and not ctx.quick:
        o = big[0]
        result.targets.append(
            Target(
                f"{o.jobs} jobs in one harness with flat memory",
                f"table bounded; heap growth < {HEAP_GROWTH_LIMIT_MIB} MiB after warm-up",
                f"max table {o.max_table}; heap {o.heap_growth():+.2f} MiB; RSS "
                f"{o.rss_growth():+.1f} MiB",
                o.max_table <= o.bound and o.heap_growth() < HEAP_GROWTH_LIMIT_MIB,
            )
        )
    return result


def plot(result: FamilyResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result.figures["runs"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for entry in runs:
        xs = [s["jobs"] for s in entry["samples"]]
        label = f"{entry['mode']} ({entry['backend']})"
        left.plot(xs, [s["heap_mib"] for s in entry["samples"]], "-o", label=f"{label} heap")
        left.plot(xs, [s["rss_mib"] for s in entry["samples"]], "--", label=f"{label} RSS")
        right.plot(xs, [s["table"] for s in entry["samples"]], "-o", label=label)
    left.set_xlabel("jobs started")
    left.set_ylabel("MiB")
    left.set_title("Memory over the soak")
    left.grid(alpha=0.3)
    left.legend(fontsize=7)
    right.set_xlabel("jobs started")
    right.set_ylabel("jobs held by the executor")
    right.set_title("Job table size")
    right.grid(alpha=0.3)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

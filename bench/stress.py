"""Family `stress`: K overlapping background jobs across S sessions in one harness.

One `open_harness()` per configuration, with its session log in a scratch state
directory. Session i runs in its own root under `workspace-write` (even i) or
`read-only` (odd i). Every job writes one file in its own root and tries one in a
sibling root (another session's, or a dedicated outside directory when S = 1),
then exits. Two phases per configuration:

- **burst**: all K jobs started at once, each `start` then `wait`; latency is from
  the `start` call to `wait` returning (settled), throughput is K over the phase.
- **hold**: each job, after its writes, blocks on a gate FIFO until every one of the
  K jobs reported ready (via `job_output`), so all K are alive together; peak fds
  and RSS are taken then. The gate releases one line per job.

Isolation (a wrong fact fails the run): every job's report states its own
session's mode and root, the selected backend, exit 0, `denied` (the outside write
is refused in both modes); its stdout says the inside write succeeded exactly under
workspace-write and the outside one never; the filesystem agrees (inside files exist
exactly for workspace-write jobs, no outside file exists anywhere); a session sees
only its own jobs; every job read to its end is forgotten (the table is empty after
the phase); fds return to their baseline when the harness closes.

Then the limits phase (bench/stress_limits.py, issue 26): K gated jobs per harness with
each command's limits on and off, alternated; every job's end must have a cause.
"""

from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass, field
from typing import Any

from . import stress_limits
from ._common import (
    Check,
    Context,
    FamilyResult,
    Progress,
    Table,
    Target,
    open_fds,
    peak_rss_mib,
    reset_peak_rss,
    rss_mib,
    summarize,
)

MODES = ("workspace-write", "read-only")
HOLD_READY_TIMEOUT = 120.0  # all K jobs must be ready by then (the check then fails)
PHASE_TIMEOUT = 300.0


@dataclass
class Outcome:
    backend: str
    sessions: int
    jobs: int
    phase: str
    seconds: float = 0.0
    start_latency: list[float] = field(default_factory=list)
    settle_latency: list[float] = field(default_factory=list)
    release_latency: list[float] = field(default_factory=list)
    ready_seconds: float | None = None
    fds_before: int = 0
    fds_peak: int = 0
    fds_after: int = 0
    rss_before: float = 0.0
    rss_peak: float = 0.0
    rss_after: float = 0.0
    errors: list[str] = field(default_factory=list)
    alive_at_peak: int | None = None

    @property
    def jobs_per_second(self) -> float:
        return self.jobs / self.seconds if self.seconds else 0.0


def _composition(backend: str, state_dir: str) -> list[dict[str, Any]]:
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {"id": "bash", "name": "stockade.bash.sandbox", "config": {"mode": "workspace-write"}},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]


def _command(inside: str, outside: str, gate: str | None) -> str:
    # Markers on stdout say which write the kernel let through.
    parts = [
        f"echo in > {inside} && echo IN_OK",
        f"echo out > {outside} && echo OUT_OK",
    ]
    if gate is not None:
        parts += ["echo READY", f"read -r _ < {gate}"]
    parts.append("exit 0")
    return "; ".join(parts)


async def _phase(
    ctx: Context, backend: str, sessions_count: int, jobs: int, hold: bool, progress: Progress
) -> Outcome:
    import trio

    from stockade.errors import UnknownJob
    from stockade.harness import open_harness
    from stockade.sessionlog import STATE_DIR_ENV

    phase = "hold" if hold else "burst"
    outcome = Outcome(backend, sessions_count, jobs, phase)
    base = ctx.scratch.dir(f"stress-{backend}-s{sessions_count}-k{jobs}-{phase}")
    state_dir = os.path.join(base, "state")
    # Setup before the clock starts; blocking calls are fine here.
    roots = [
        os.path.realpath(os.path.join(base, f"root-{index}"))  # noqa: ASYNC240
        for index in range(sessions_count)
    ]
    for root in roots:
        os.makedirs(root)
    outside_dir = os.path.join(base, "outside")
    os.makedirs(outside_dir)
    gate_path = os.path.join(base, "gate")
    # The composition names the state dir, but $STOCKADE_STATE_DIR would win over it.
    saved_env = os.environ.pop(STATE_DIR_ENV, None)
    gc.collect()
    outcome.fds_before = open_fds()
    outcome.rss_before = rss_mib()
    reset_peak_rss()
    gate_fd = None
    if hold:
        os.mkfifo(gate_path)
        # Held read-write by us, so a job's open never blocks and unread lines wait for it.
        gate_fd = os.open(gate_path, os.O_RDWR | os.O_NONBLOCK)
    plans: list[dict[str, Any]] = []
    reports: dict[int, Any] = {}
    outputs: dict[int, str] = {}
    try:
        async with open_harness(_composition(backend, state_dir)) as harness:
            sessions = []
            for index, root in enumerate(roots):
                session = await harness.open_session(cwd=root)
                await session.set_sandbox_mode(MODES[index % 2])
                sessions.append(session)
            for job in range(jobs):
                index = job % sessions_count
                sibling = roots[(index + 1) % sessions_count] if sessions_count > 1 else outside_dir
                plans.append(
                    {
                        "job": job,
                        "session": index,
                        "mode": MODES[index % 2],
                        "root": roots[index],
                        "inside": os.path.join(roots[index], f"in-{job}"),
                        "outside": os.path.join(sibling, f"out-{job}-from-{index}"),
                    }
                )
            handles: dict[int, Any] = {}
            ready: set[int] = set()
            all_started = trio.Event()
            all_settled = trio.Event()
            release_at = [0.0]
            sampler = trio.CancelScope()

            async def poll(plan: dict[str, Any]) -> str:
                """The job's state now; "settled" when `one` read it to its end already
                (it was forgotten then): a job that ended before the gate opened."""
                # job_output returns output since the last read: keep all of it.
                job = plan["job"]
                try:
                    report = await sessions[plan["session"]].shell.job_output(handles[job].id)
                except UnknownJob:
                    if job in reports:
                        return "settled"
                    raise
                outputs[job] = outputs.get(job, "") + report.stdout
                return str(report.state)

            async def sample_fds() -> None:
                with sampler:
                    while True:
                        outcome.fds_peak = max(outcome.fds_peak, open_fds())
                        await trio.sleep(0.02)

            phase_start = time.perf_counter()

            async def one(plan: dict[str, Any]) -> None:
                job = plan["job"]
                shell = sessions[plan["session"]].shell
                command = _command(plan["inside"], plan["outside"], gate_path if hold else None)
                began = time.perf_counter()
                handle = await shell.start(command)
                handles[job] = handle
                outcome.start_latency.append(time.perf_counter() - began)
                if len(handles) == jobs:
                    all_started.set()
                report = await shell.wait(handle.id)
                settled = time.perf_counter()
                outcome.settle_latency.append(settled - began)
                if hold:
                    outcome.release_latency.append(settled - release_at[0])
                reports[job] = report
                outputs[job] = outputs.get(job, "") + report.stdout
                progress.advance()
                if len(reports) == jobs:
                    all_settled.set()

            async def drive() -> None:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(sample_fds)
                    for plan in plans:
                        nursery.start_soon(one, plan)
                    if not hold:
                        await all_settled.wait()
                        sampler.cancel()
                        return
                    await all_started.wait()
                    # Poll job_output (the API an agent uses) until every job is READY.
                    with trio.move_on_after(HOLD_READY_TIMEOUT):
                        while len(ready) < jobs:
                            for plan in plans:
                                job = plan["job"]
                                if job in ready:
                                    continue
                                state = await poll(plan)
                                if "READY" in outputs.get(job, "") or state != "running":
                                    ready.add(job)  # settled early: the checks will say why
                            if len(ready) < jobs:
                                await trio.sleep(0.05)
                    outcome.ready_seconds = time.perf_counter() - phase_start
                    alive = [await poll(plan) == "running" for plan in plans]
                    outcome.alive_at_peak = sum(alive)
                    outcome.fds_peak = max(outcome.fds_peak, open_fds())
                    release_at[0] = time.perf_counter()
                    assert gate_fd is not None
                    os.write(gate_fd, b"go\n" * jobs)
                    sampler.cancel()

            # A phase that cannot finish fails the run; it never hangs it.
            with trio.move_on_after(PHASE_TIMEOUT) as phase_deadline:
                await drive()
            if phase_deadline.cancelled_caught:
                outcome.errors.append(f"the phase did not finish within {PHASE_TIMEOUT:g} s")
            outcome.seconds = time.perf_counter() - phase_start

            # Retention: every job was read to its end, so the table holds none of them.
            left = len(await harness.executor.list())
            if left:
                outcome.errors.append(f"{left} jobs still held after every one was read")
            # Ownership: a session lists only its own jobs and cannot read another's
            # (one live job per session, as finished jobs read to the end are forgotten).
            own = {
                index: (await session.shell.start("sleep 60")).id
                for index, session in enumerate(sessions)
            }
            for index, session in enumerate(sessions):
                listed = [handle.id for handle in await session.shell.list()]
                if listed != [own[index]]:
                    outcome.errors.append(f"session {index} lists {listed}, owns {own[index]}")
            if sessions_count > 1:
                try:
                    await sessions[0].shell.job_output(own[1])
                except Exception:
                    pass
                else:
                    outcome.errors.append("session 0 could read session 1's job")
            for session in sessions:
                await session.close()  # kills its live job
        outcome.rss_peak = peak_rss_mib()
    finally:
        if saved_env is not None:
            os.environ[STATE_DIR_ENV] = saved_env
        if gate_fd is not None:
            os.close(gate_fd)
    gc.collect()
    outcome.fds_after = open_fds()
    outcome.rss_after = rss_mib()
    if hold and outcome.alive_at_peak != jobs:
        outcome.errors.append(f"only {outcome.alive_at_peak} of {jobs} jobs were alive together")
    outcome.errors += _isolation_errors(plans, reports, outputs, backend, roots, outside_dir)
    return outcome


def _isolation_errors(
    plans: list[dict[str, Any]],
    reports: dict[int, Any],
    outputs: dict[int, str],
    backend: str,
    roots: list[str],
    outside_dir: str,
) -> list[str]:
    errors: list[str] = []

    def wrong(job: int, what: str) -> None:
        if len(errors) < 20:
            errors.append(f"job {job}: {what}")
        elif len(errors) == 20:
            errors.append("... (more)")

    expected_files: dict[str, set[str]] = {root: set() for root in roots}
    for plan in plans:
        job = plan["job"]
        report = reports.get(job)
        if report is None:
            wrong(job, "no report")
            continue
        writes = plan["mode"] == "workspace-write"
        stdout = outputs.get(job, "")
        facts = {
            "state": (report.state, "exited"),
            "exit_code": (report.exit_code, 0),
            "mode": (report.mode.value, plan["mode"]),
            "policy.mode": (report.policy.mode.value, plan["mode"]),
            "policy.workspace_root": (report.policy.workspace_root, plan["root"]),
            "backend": (report.backend, backend),
            "denied": (report.denied, True),
            "runner_failed": (report.runner_failed, False),
            "timed_out": (report.timed_out, False),
            "inside write succeeded": ("IN_OK" in stdout, writes),
            "outside write succeeded": ("OUT_OK" in stdout, False),
            "inside file exists": (os.path.exists(plan["inside"]), writes),
            "outside file exists": (os.path.lexists(plan["outside"]), False),
        }
        for name, (seen, want) in facts.items():
            if seen != want:
                wrong(
                    job,
                    f"{name} is {seen!r}, expected {want!r} (session {plan['session']}, "
                    f"{plan['mode']}; stderr {report.stderr[-160:]!r})",
                )
        if writes:
            expected_files[plan["root"]].add(os.path.basename(plan["inside"]))
    # Nothing else appeared anywhere: no stray or outside files.
    for root, wanted in expected_files.items():
        present = set(os.listdir(root))
        if present != wanted:
            extra = sorted(present - wanted)[:5]
            missing = sorted(wanted - present)[:5]
            errors.append(f"{root}: unexpected files {extra}, missing {missing}")
    stray = os.listdir(outside_dir)
    if stray:
        errors.append(f"{outside_dir}: files written outside every root: {stray[:5]}")
    return errors


def running_bound() -> int | None:
    """How many processes one executor runs at once (newer stockade queues the rest)."""
    from stockade.executor.config import ExecutorConfig

    bound = getattr(ExecutorConfig(), "running_bound", None)
    return bound() if callable(bound) else None


def run(ctx: Context) -> FamilyResult:
    import trio

    result = FamilyResult("stress")
    bound = running_bound()
    result.figures["executor_running_bound"] = bound
    backends = [name for name in ("bwrap", "landlock") if ctx.usable(name)]
    if not backends:
        result.skip("no usable backend: nothing to stress")
        return result
    if os.environ.get(stress_limits.ONLY_ENV, "").strip():
        # Only the limits phase, at the sizes named (e.g. to re-measure K = 1,000).
        stress_limits.measure(ctx, backends, result)
        return result
    ks = (10, 50) if ctx.quick else (10, 100, 1000)
    ss = (1, 10)
    configs = [(b, s, k, hold) for b in backends for s in ss for k in ks for hold in (False, True)]
    if bound is not None and any(k > bound for k in ks):
        # Held jobs beyond the bound would wait queued behind the gate forever.
        result.skip(
            f"the executor runs at most {bound} processes at once here (RLIMIT_NOFILE); "
            f"hold phases with K > {bound} are left out, bursts queue the rest"
        )
        configs = [c for c in configs if not (c[3] and c[2] > bound)]
    outcomes: list[Outcome] = []
    total = sum(k for _, _, k, _ in configs)
    with Progress("stress", "jobs", total) as progress:
        for backend, sessions, jobs, hold in configs:
            progress.label = f"{backend} S={sessions} K={jobs} {'hold' if hold else 'burst'}"
            outcomes.append(trio.run(_phase, ctx, backend, sessions, jobs, hold, progress))

    rows = []
    result.figures["runs"] = []
    for o in outcomes:
        start = summarize(o.start_latency, 1e3)
        settle = summarize(o.settle_latency, 1e3)
        release = summarize(o.release_latency, 1e3)
        entry = {
            "backend": o.backend,
            "sessions": o.sessions,
            "jobs": o.jobs,
            "phase": o.phase,
            "seconds": o.seconds,
            "jobs_per_s": o.jobs_per_second,
            "start_ms": start,
            "settle_ms": settle,
            "release_to_settled_ms": release,
            "ready_seconds": o.ready_seconds,
            "alive_at_peak": o.alive_at_peak,
            "fds": {"before": o.fds_before, "peak": o.fds_peak, "after": o.fds_after},
            "rss_mib": {
                "before": o.rss_before,
                "peak": o.rss_peak,
                "after": o.rss_after,
                "growth": o.rss_peak - o.rss_before,
            },
            "errors": o.errors,
        }
        result.figures["runs"].append(entry)
        rows.append(
            [
                o.backend,
                o.sessions,
                o.jobs,
                o.phase,
                o.jobs_per_second,
                settle.get("median"),
                settle.get("p99"),
                release.get("median") if o.release_latency else None,
                release.get("p99") if o.release_latency else None,
                f"{o.fds_before}/{o.fds_peak}/{o.fds_after}",
                o.rss_peak - o.rss_before,
                "ok" if not o.errors else f"{len(o.errors)} ERR",
            ]
        )
        label = f"stress: {o.backend} S={o.sessions} K={o.jobs} {o.phase}"
        result.checks.append(Check(f"{label}: isolation", not o.errors, "; ".join(o.errors[:5])))
        result.checks.append(
            Check(
                f"{label}: fds back to baseline",
                o.fds_after == o.fds_before,
                f"{o.fds_before} before, {o.fds_after} after",
            )
        )
    result.tables.append(
        Table(
            "Stress: K background jobs across S sessions in one harness",
            [
                "backend",
                "S",
                "K",
                "phase",
                "jobs/s",
                "start->settled p50 ms",
                "p99",
                "release->settled p50 ms",
                "p99",
                "fds before/peak/after",
                "RSS growth MiB",
                "isolation",
            ],
            rows,
            "burst: all K started at once, latency from `start` to `wait` returning. hold: "
            "all K alive together behind a gate (start->settled then includes the wait for "
            "the last job to be ready); release->settled is from opening the gate.",
        )
    )
    big = [o for o in outcomes if o.jobs == max(ks) and o.phase == "hold"]
    if big and not ctx.quick:
        errors = sum(len(o.errors) for o in big)
        leaks = [o for o in big if o.fds_after != o.fds_before]
        growth = max(o.rss_peak - o.rss_before for o in big)
        result.targets.append(
            Target(
                "1000 overlapping jobs in one harness",
                "0 isolation errors, fds back, RSS growth < 100 MB",
                f"{errors} isolation errors; fds back: {'yes' if not leaks else 'NO'}; "
                f"max RSS growth {growth:.1f} MiB "
                f"({', '.join(f'{o.backend} S={o.sessions}' for o in big)})",
                errors == 0 and not leaks and growth * 1.048576 < 100,
            )
        )
    stress_limits.measure(ctx, backends, result)
    return result


def plot(result: FamilyResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result.figures.get("runs", [])
    limits_runs = result.figures.get("limits_runs", [])
    panels = (2 if runs else 0) + (1 if limits_runs else 0)
    if not panels:
        return
    fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.2), squeeze=False)
    if limits_runs:
        stress_limits.plot_panel(axes[0][-1], limits_runs)
    if not runs:
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return
    left, right = axes[0][0], axes[0][1]
    series: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for entry in runs:
        series.setdefault((entry["backend"], entry["sessions"], entry["phase"]), []).append(entry)
    for (backend, sessions, phase), entries in sorted(series.items()):
        entries.sort(key=lambda e: e["jobs"])
        ks = [e["jobs"] for e in entries]
        style = "-" if phase == "burst" else "--"
        marker = "o" if backend == "bwrap" else "s"
        label = f"{backend} S={sessions} {phase}"
        left.plot(ks, [e["jobs_per_s"] for e in entries], style, marker=marker, label=label)
        if phase == "burst":
            right.plot(
                ks,
                [e["settle_ms"]["median"] for e in entries],
                "-",
                marker=marker,
                label=f"{backend} S={sessions} p50",
            )
            right.plot(
                ks,
                [e["settle_ms"]["p99"] for e in entries],
                ":",
                marker=marker,
                label=f"{backend} S={sessions} p99",
            )
    left.set_xscale("log")
    left.set_xlabel("K overlapping background jobs")
    left.set_ylabel("jobs/s (whole phase)")
    left.set_title("Throughput vs K")
    left.grid(alpha=0.3, which="both")
    left.legend(fontsize=7)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("K jobs started at once (burst)")
    right.set_ylabel("ms from start to settled")
    right.set_title("Latency vs K (burst)")
    right.grid(alpha=0.3, which="both")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

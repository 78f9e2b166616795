"""Family `undo`: what keeping a root's history costs (issue 42), on a generated tree.

A tree of N files (50,000; 5,000 with --quick) in nested directories: opening its
history the first time (every content stored) and again (the store knows it); the
per-call overhead when nothing changed (before + after, watched; and a full scan for
comparison); the cost of a call's after() as the number of changed files grows, and of
undoing it; a moved directory. In process, no Trio, no sandbox. Never a failure on
speed; the checks: every change is counted exactly, every undo puts the tree back, and
the watched index equals a full look at the end.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import threading
import time
from collections.abc import Iterator
from typing import Any

from ._common import (
    Check,
    Context,
    FamilyResult,
    Progress,
    Table,
    Target,
    fmt,
    rss_mib,
    summarize,
)

WORDS = [
    "def",
    "return",
    "import",
    "class",
    "self",
    "value",
    "index",
    "config",
    "result",
    "error",
    "trio",
    "path",
]


def _content(rng: random.Random, size: int) -> bytes:
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        out.append(word)
        length += len(word) + 1
    return " ".join(out).encode()


def generate(root: str, files: int, seed: int = 1) -> list[str]:
    """`files` text files of 200 B..4 KiB, 100 to a directory, ten directories to a
    parent: a source tree's shape. The relative paths, in creation order."""
    rng = random.Random(seed)
    paths = []
    for i in range(files):
        directory = f"pkg{i // 1000:03}/mod{(i // 100) % 10}"
        if i % 100 == 0:
            os.makedirs(os.path.join(root, directory), exist_ok=True)
        path = f"{directory}/file{i:06}.py"
        with open(os.path.join(root, path), "wb") as handle:
            handle.write(_content(rng, rng.randrange(200, 4096)))
        paths.append(path)
    return paths


@contextlib.contextmanager
def _draining(tracker: Any, drained: bool) -> Iterator[None]:
    """While the call runs, read the tracker's events as they come (as a harness's task
    waiting on its descriptor would), so the kernel's queue never overflows."""
    if not drained:
        yield
        return
    stop = threading.Event()

    def drain() -> None:
        while not stop.is_set():
            select.select([tracker.fileno()], [], [], 0.05)
            tracker.drain()

    thread = threading.Thread(target=drain)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _pair_ms(tracker: Any, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        opened = tracker.before()
        tracker.after(opened.mark)
        samples.append((time.perf_counter() - started) * 1e3)
    return samples


def _harness_composition(state_dir: str, history: bool) -> list[dict[str, Any]]:
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local"},
        {"id": "bash", "name": "stockade.bash.sandbox", "config": {"history": history}},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]


def through_harness(base: str, root: str, rounds: int) -> dict[str, Any]:
    """A foreground bash call that changes nothing (`true`), through `run_tool` in
    workspace-write, with the history on and off (two harnesses, interleaved rounds):
    what the window around a call (before, after, the drain task) adds to its wall."""
    import trio

    from stockade import open_harness

    async def main() -> dict[str, Any]:
        state = {name: os.path.join(base, f"state-{name}") for name in ("on", "off")}
        async with (
            open_harness(_harness_composition(state["on"], True)) as on,
            open_harness(_harness_composition(state["off"], False)) as off,
        ):
            sessions = {
                "on": await on.open_session(cwd=root),
                "off": await off.open_session(cwd=root),
            }
            started = time.perf_counter()
            first = await sessions["on"].run_tool("bash", {"command": "true"})
            first_s = time.perf_counter() - started
            samples: dict[str, list[float]] = {"on": [], "off": []}
            for index in range(rounds + 10):
                order = ("on", "off") if index % 2 else ("off", "on")
                for name in order:
                    started = time.perf_counter()
                    result = await sessions[name].run_tool("bash", {"command": "true"})
                    if index >= 10:  # warm-up rounds left out
                        samples[name].append((time.perf_counter() - started) * 1e3)
                    assert result.facts["exit_code"] == 0, result.text
            paired = sorted(a - b for a, b in zip(samples["on"], samples["off"], strict=True))
            return {
                "first_call_s": first_s,
                "first_recorded": first.facts.get("changed", {}).get("recorded"),
                "on_ms": summarize(samples["on"]),
                "off_ms": summarize(samples["off"]),
                "added_ms": summarize(paired),
                "backend": first.facts.get("backend"),
            }

    return trio.run(main)


def run(ctx: Context) -> FamilyResult:
    from stockade.history import HistoryConfig, Record, SnapshotStore, Tracker

    result = FamilyResult("undo")
    files = 5_000 if ctx.quick else 50_000
    sizes = (1, 10, 100, 1_000) if ctx.quick else (1, 10, 100, 1_000, 10_000)
    idle_rounds = 300 if ctx.quick else 2_000
    base = ctx.scratch.dir("undo")
    root = os.path.join(base, "tree")
    os.makedirs(root)
    rng = random.Random(2)
    figures: dict[str, Any] = {"files": files}
    with Progress("undo", "tree", 5 + len(sizes)) as progress:
        started = time.perf_counter()
        paths = generate(root, files)
        figures["generate_s"] = time.perf_counter() - started
        progress.advance(label="first open")

        store = SnapshotStore.open(os.path.join(base, "state"))
        rss_before = rss_mib()
        started = time.perf_counter()
        tracker = Tracker.open(root, store)
        figures["first_open_s"] = time.perf_counter() - started
        figures["rss_added_mib"] = rss_mib() - rss_before
        objects, stored = store.size()
        figures["objects"], figures["stored_mib"] = objects, stored / 2**20
        figures["watches"] = len(tracker.watcher.watches) if tracker.watcher else 0
        figures["method"] = tracker.method
        started = time.perf_counter()
        again = Tracker.open(root, store)
        figures["second_open_s"] = time.perf_counter() - started
        again.close()
        progress.advance(label="nothing changed")

        _pair_ms(tracker, 50)
        idle = summarize(_pair_ms(tracker, idle_rounds))
        figures["idle_ms"] = idle
        scanner = Tracker.open(root, store, HistoryConfig(watch=False))
        scan = summarize(_pair_ms(scanner, 3 if ctx.quick else 5))
        scanner.close()
        figures["scan_idle_ms"] = scan
        progress.advance(label="changes")

        rows = []
        exact = True
        restored = True
        for size, drained in [(size, False) for size in sizes] + [(sizes[-1], True)]:
            rounds = 1 if size >= 10_000 else 3 if size >= 1_000 else 10
            after_ms, plan_ms, apply_ms, rescans = [], [], [], 0
            for _ in range(rounds):
                chosen = rng.sample(paths, size)
                opened = tracker.before()
                with _draining(tracker, drained):
                    for path in chosen:
                        with open(os.path.join(root, path), "ab") as handle:
                            handle.write(b"\n# changed\n")
                started = time.perf_counter()
                change = tracker.after(opened.mark)
                after_ms.append((time.perf_counter() - started) * 1e3)
                exact &= change.modified == sorted(chosen) and not change.created
                rescans += change.rescanned is not None
                records = [Record(1, "call", 1, change.items)]
                undo_window = tracker.before()
                started = time.perf_counter()
                plan = tracker.plan_undo(records, 1)
                plan_ms.append((time.perf_counter() - started) * 1e3)
                started = time.perf_counter()
                applied = tracker.apply(plan)
                apply_ms.append((time.perf_counter() - started) * 1e3)
                undone = tracker.after(undo_window.mark)
                restored &= (
                    not plan.blocked
                    and not applied.left
                    and {p: (b, a) for p, (a, b) in undone.items.items()} == dict(change.items)
                )
            after = summarize(after_ms)
            figures[f"changed_{size}{'_drained' if drained else ''}"] = {
                "after_ms": after,
                "plan_ms": summarize(plan_ms),
                "apply_ms": summarize(apply_ms),
                "rescans": rescans,
            }
            rows.append(
                [
                    f"{size:,} (drained while it ran)" if drained else size,
                    rounds,
                    after["median"],
                    after["median"] / size,
                    summarize(plan_ms)["median"],
                    summarize(apply_ms)["median"],
                    f"{rescans}/{rounds}",
                ]
            )
            progress.advance(label=f"{size} changed")
            progress.total = (progress.total or 0) + drained

        moved = f"pkg{(files // 1000) // 2:03}"
        opened = tracker.before()
        os.rename(os.path.join(root, moved), os.path.join(root, "moved"))
        started = time.perf_counter()
        change = tracker.after(opened.mark)
        figures["moved_dir_ms"] = (time.perf_counter() - started) * 1e3
        inside = sum(1 for p in paths if p.startswith(moved + "/"))
        exact &= len(change.created) == len(change.deleted) == inside + 1 + min(10, inside)
        progress.advance(label="full look")

        full = Tracker.open(root, store, HistoryConfig(watch=False))
        same = {p: k.entry for p, k in full.index.entries.items()} == {
            p: k.entry for p, k in tracker.index.entries.items()
        }
        full.close()
        tracker.close()
        figures["store_after_mib"] = store.size()[1] / 2**20
        store.close()
        progress.advance(label="through the harness")
        harness = through_harness(base, root, 60 if ctx.quick else 300)
        figures["harness"] = harness

    result.figures["cases"] = figures
    result.tables.append(
        Table(
            f"Keeping the history of a {files:,}-file tree",
            ["step", "value"],
            [
                ["generate the tree (s)", figures["generate_s"]],
                ["first open: look at all, store every content (s)", figures["first_open_s"]],
                ["objects stored / MiB (zlib)", f"{objects:,} / {fmt(figures['stored_mib'])}"],
                ["inotify watches (directories + files)", figures["watches"]],
                ["memory the open tracker added (RSS MiB)", figures["rss_added_mib"]],
                ["second open, same store (s)", figures["second_open_s"]],
                ["nothing changed, watched: before + after, median ms", idle["median"]],
                ["  p99 ms", idle["p99"]],
                ["nothing changed, full scan: before + after, median ms", scan["median"]],
                [f"a directory of {inside:,} files moved: after() ms", figures["moved_dir_ms"]],
            ],
            caption=f"method: {figures['method']}; {idle_rounds:,} idle rounds.",
        )
    )
    result.tables.append(
        Table(
            "A call that changed K files: after() (read, hash, store, commit), then its undo",
            ["K files", "rounds", "after() ms", "ms per file", "plan ms", "apply ms", "rescans"],
            rows,
            caption="Files appended to (each one then differs); the undo plans from a fresh "
            "read of every path and writes each back by rename. A rescan: the kernel's event "
            "queue overflowed and every path was compared; drained: a thread read the events "
            "while the call ran, as a harness's task on `Tracker.fileno()` would.",
        )
    )
    result.tables.append(
        Table(
            "A bash call that changes nothing (`true`) through the harness, history on vs off",
            ["", "median ms", "p99 ms"],
            [
                ["history on", harness["on_ms"]["median"], harness["on_ms"]["p99"]],
                ["history off", harness["off_ms"]["median"], harness["off_ms"]["p99"]],
                [
                    "added (paired per round)",
                    harness["added_ms"]["median"],
                    harness["added_ms"]["p99"],
                ],
            ],
            caption=f"run_tool in workspace-write on {harness['backend']}, the {files:,}-file tree "
            f"as the root; the first call (which opens the root's history) took "
            f"{harness['first_call_s']:.1f} s (recorded: {harness['first_recorded']}).",
        )
    )
    result.targets.append(
        Target(
            "per-call overhead when nothing changed (50,000 files)",
            "< 5 ms median",
            f"{idle['median']:.3f} ms",
            idle["median"] < 5 if not ctx.quick else None,
        )
    )
    result.checks.append(Check("every change counted exactly", exact))
    result.checks.append(Check("every undo put the tree back", restored))
    result.checks.append(Check("the watched index equals a full look", same))
    return result

"""`python -m bench [family ...] [--quick] [--out DIR]`: run, report, save, plot.

Exit status: 0 when every correctness check held (speed is reported, never
asserted), 1 when a check failed (an isolation error, fds not back to baseline),
2 when a family crashed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import resource
import shutil
import sys
import time
import traceback
from typing import Any

from ._common import Context, FamilyResult, Scratch, Table, note

FAMILIES = (
    "spawn",
    "cli",
    "stress",
    "actors",
    "log",
    "soak",
    "mcp",
    "network",
    "workflows",
    "rules",
    "undo",
)
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="stockade's benchmarks: spawn cost, whole-process CLI, concurrency "
        "stress, actor round trips, session log, a long-lived soak, the network proxy. "
        "Reports medians with spread; fails only on correctness (isolation, fd leaks, a "
        "growing job table, a proxied body or refusal), never on speed.",
    )
    parser.add_argument(
        "families", nargs="*", metavar="FAMILY", help=f"any of {', '.join(FAMILIES)} (default: all)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes (under a minute); for CI smoke runs"
    )
    parser.add_argument(
        "--out",
        default=DEFAULT_OUT,
        help="where the run's JSON, Markdown and plots go (default: bench/results)",
    )
    parser.add_argument("--plots", metavar="DIR", help="also copy the plots here (e.g. docs/perf)")
    parser.add_argument(
        "--peers",
        metavar="DIR",
        help="a directory whose node_modules holds codex and srt "
        "(default: $STOCKADE_BENCH_PEERS, then PATH)",
    )
    parser.add_argument("--keep-scratch", action="store_true", help="keep the scratch directory")
    return parser


def _machine_md(meta: dict[str, Any]) -> str:
    machine = meta["machine"]
    backends = meta["backends"]
    candidates = ", ".join(
        f"{name} ({'usable' if c['usable'] else 'unusable'}"
        + (f", ABI {c['abi']}" if c.get("abi") else "")
        + ")"
        for name, c in backends["candidates"].items()
    )
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items() if v)
    load = ", ".join(f"{x:.2f}" for x in machine["loadavg_start"])
    dirty = " (dirty)" if machine["git_dirty"] else ""
    lines = [
        f"- machine: {machine['cpu']}, {machine['cores']} cores, {machine['mem_gib']} GiB; "
        f"{machine['kernel']}; load at start {load}\n",
        f"- python {machine['python']}; {versions}\n",
    ]
    if meta.get("shell_level"):
        lines.append(f"- {meta['shell_level']}\n")
    if machine.get("reclaim"):
        lines.append(f"- reclaim: {'; '.join(machine['reclaim'])}\n")
    if meta.get("held_in_memory"):
        lines.append(f"- held in memory for the run: {', '.join(meta['held_in_memory'])}\n")
    lines += [
        f"- backends: {candidates}; selected: {backends['selected']}; "
        f"{backends.get('bwrap_version') or 'bwrap: -'}\n",
        f"- stockade {machine['stockade_source']} at {(machine['git_commit'] or '?')[:12]}{dirty}; "
        f"mode: {'quick' if meta['quick'] else 'full'}; started {machine['started']}\n",
    ]
    return "".join(lines)


def render_markdown(meta: dict[str, Any], results: list[FamilyResult]) -> str:
    parts = [f"## stockade benchmarks: run {meta['run_id']}\n", _machine_md(meta)]
    targets = [(r.name, t) for r in results for t in r.targets]
    if targets:
        rows = [
            [
                family,
                t.name,
                t.goal,
                t.value,
                "floor"
                if t.floor
                else "met"
                if t.met
                else ("MISSED" if t.met is False else "not measured"),
            ]
            for family, t in targets
        ]
        parts.append(
            Table("Targets", ["family", "target", "goal", "this run", "status"], rows).markdown()
        )
    checks = [c for r in results for c in r.checks]
    failed = [c for c in checks if not c.ok]
    parts.append(
        f"#### Correctness checks\n\n{len(checks) - len(failed)}/{len(checks)} held"
        + (
            ""
            if not failed
            else ":\n\n" + "\n".join(f"- FAILED {c.name}: {c.detail}" for c in failed)
        )
        + "\n"
    )
    for result in results:
        parts.append(f"### {result.name} ({result.seconds:.1f} s)\n")
        for table in result.tables:
            parts.append(table.markdown())
        for text in result.notes:
            parts.append(f"- note: {text}")
        if result.notes:
            parts.append("")
    return "\n".join(parts)


def _plot(module: Any, result: FamilyResult, directory: str) -> str | None:
    plot = getattr(module, "plot", None)
    if plot is None or not result.figures:
        return None
    path = os.path.join(directory, f"{result.name}.png")
    plot(result, path)
    return path


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    families = args.families or list(FAMILIES)
    unknown = [name for name in families if name not in FAMILIES]
    if unknown:
        build_parser().error(
            f"unknown family {', '.join(unknown)} (choose from {', '.join(FAMILIES)})"
        )

    from ._env import (
        backend_facts,
        held_in_memory,
        machine,
        node_version,
        ordinary_shell_level,
        peer_binaries,
    )

    shell_level = ordinary_shell_level()
    # A harness holding 1000 jobs needs ~3000 descriptors; the executor sizes its
    # running bound from this limit, so raise the soft limit to the hard one.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    started = time.monotonic()
    run_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + ("-quick" if args.quick else "")
    run_dir = os.path.join(os.path.abspath(args.out), run_id)
    os.makedirs(run_dir, exist_ok=True)
    meta: dict[str, Any] = {
        "run_id": run_id,
        "quick": args.quick,
        "families": families,
        "argv": sys.argv,
        "machine": machine(),
        "backends": backend_facts(),
        "node": node_version(),
        "shell_level": shell_level,
    }
    scratch = Scratch(keep=args.keep_scratch)
    ctx = Context(
        quick=args.quick, scratch=scratch, peers_dir=args.peers, backends=meta["backends"]
    )
    results: list[FamilyResult] = []
    crashed: list[str] = []
    held = contextlib.ExitStack()
    try:
        # Peers measured warm whatever the host's reclaim does (_env.held_in_memory).
        meta["held_in_memory"] = held.enter_context(held_in_memory(peer_binaries(args.peers)))
        for name in families:
            module = importlib.import_module(f"bench.{name}")
            begun = time.monotonic()
            try:
                result = module.run(ctx)
            except Exception:
                crashed.append(name)
                result = FamilyResult(name)
                detail = traceback.format_exc()
                sys.stderr.write(f"\n[{name}] crashed:\n{detail}")
                result.notes.append(f"crashed: {detail.strip().splitlines()[-1]}")
            result.seconds = time.monotonic() - begun
            results.append(result)
            sys.stderr.write(f"[{name}] done in {result.seconds:.1f}s\n")
    finally:
        held.close()
        scratch.cleanup()
    meta["seconds"] = time.monotonic() - started
    meta["machine"]["loadavg_end"] = os.getloadavg()

    plots: dict[str, str] = {}
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        note("matplotlib is missing: no plots (pip install -e '.[bench]')")
    else:
        for result in results:
            module = importlib.import_module(f"bench.{result.name}")
            try:
                path = _plot(module, result, run_dir)
            except Exception:
                note(f"plotting {result.name} failed:\n{traceback.format_exc()}")
                continue
            if path:
                plots[result.name] = path
                if args.plots:
                    os.makedirs(args.plots, exist_ok=True)
                    shutil.copy(path, os.path.join(args.plots, os.path.basename(path)))

    markdown = render_markdown(meta, results)
    document = {
        **meta,
        "plots": plots,
        "results": {
            r.name: {
                "seconds": r.seconds,
                "figures": r.figures,
                "targets": [vars(t) for t in r.targets],
                "checks": [vars(c) for c in r.checks],
                "notes": r.notes,
                "tables": [vars(t) for t in r.tables],
            }
            for r in results
        },
    }
    json_path = os.path.join(run_dir, "results.json")
    with open(json_path, "w", encoding="utf-8") as out:
        json.dump(document, out, indent=1, default=str)
    with open(os.path.join(run_dir, "report.md"), "w", encoding="utf-8") as out:
        out.write(markdown)
    sys.stdout.write(markdown + "\n")
    failed = [c for r in results for c in r.checks if not c.ok]
    sys.stderr.write(
        f"bench: {len(results)} families in {meta['seconds']:.1f}s; results in {run_dir}"
        + (f"; {len(failed)} CHECK(S) FAILED" if failed else "")
        + (f"; crashed: {', '.join(crashed)}" if crashed else "")
        + "\n"
    )
    if failed:
        return 1
    if crashed:
        return 2
    return 0

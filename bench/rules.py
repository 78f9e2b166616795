"""Family `rules`: what judging a command against the command rules costs (issue 40).

Parse (tree-sitter's bash grammar) + unwrap + match against the default rules, in
process, no Trio: a typical command, a few common shapes, and scripts of growing length
(N simple commands) to show the cost grows linearly. Never a failure on speed; one check:
a hidden force push in the longest script is still found.
"""

from __future__ import annotations

import time

from ._common import Check, Context, FamilyResult, Progress, Table, Target, fmt, summarize

TYPICAL = "git status --short"
SHAPES = {
    "typical: git status --short": TYPICAL,
    "pipeline + list: cd src && grep -rn TODO . | head -20": "cd src && grep -rn TODO . | head -20",
    "wrapped: env A=1 timeout 30 pytest -q tests": "env A=1 timeout 30 pytest -q tests",
    "carried: bash -c 'make && make test'": "bash -c 'make && make test'",
    "substitution: echo $(git rev-parse HEAD)": "echo $(git rev-parse HEAD)",
}


def _script(commands: int) -> str:
    return "\n".join(
        f"echo step {i} | grep -v x && test -f file{i}" for i in range(commands // 3)
    ) + ("\n" + "\n".join("true" for _ in range(commands - 3 * (commands // 3))))


def _time(ruleset: object, script: str, rounds: int) -> list[float]:
    judge = ruleset.judge  # type: ignore[attr-defined]
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        judge(script)
        samples.append(time.perf_counter_ns() - start)
    return samples


def run(ctx: Context) -> FamilyResult:
    from stockade.rules import RuleSet

    result = FamilyResult("rules")
    ruleset = RuleSet.defaults()
    started = time.perf_counter()
    ruleset.judge("true")  # imports tree-sitter and builds the parser once
    first_ms = (time.perf_counter() - started) * 1e3
    rounds = 2_000 if ctx.quick else 20_000
    sizes = (1, 10, 100, 1_000) if ctx.quick else (1, 10, 100, 1_000, 5_000)
    rows = []
    figures: dict[str, object] = {"first_judgement_ms": first_ms}
    with Progress("rules", "shapes", len(SHAPES) + len(sizes)) as progress:
        for label, script in SHAPES.items():
            _time(ruleset, script, 200)  # warm up
            us = summarize(_time(ruleset, script, rounds), 1e-3)
            figures[label] = us
            rows.append([label, us["n"], us["median"], f"{fmt(us['p10'])}-{fmt(us['p90'])}"])
            progress.advance()
        growth = []
        for size in sizes:
            script = _script(size)
            n = max(5, min(rounds, 20_000 // size))
            us = summarize(_time(ruleset, script, n), 1e-3)
            growth.append([size, len(script), us["median"], us["median"] / size])
            figures[f"script_{size}"] = us
            progress.advance()
    result.figures["cases"] = figures
    result.tables.append(
        Table(
            "Judge one command (parse + unwrap + match, default rules; µs)",
            ["command", "n", "median µs", "p10-p90"],
            rows,
            caption=f"First judgement in a process (imports tree-sitter): {first_ms:.1f} ms.",
        )
    )
    result.tables.append(
        Table(
            "Judge a script of N simple commands (µs): linear in its size",
            ["N commands", "characters", "median µs", "µs per command"],
            growth,
        )
    )
    typical = figures[next(iter(SHAPES))]
    median_ms = typical["median"] / 1e3  # type: ignore[index]
    result.targets.append(
        Target("judge a typical command", "< 0.2 ms median", f"{median_ms:.3f} ms", median_ms < 0.2)
    )
    hidden = _script(sizes[-1]) + "\ngit push --force origin main"
    verdict = ruleset.judge(hidden)
    result.checks.append(
        Check(
            "a force push hidden after the longest script is found",
            verdict.rule is not None and verdict.rule.name == "force-push",
            str(verdict.decision),
        )
    )
    return result

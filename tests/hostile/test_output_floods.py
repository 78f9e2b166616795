"""Hostile output: a gigabyte, one 100 MB line, binary noise, floods on both streams,
and commands that close their output early and keep running.

Memory must stay bounded (the executor keeps the head and tail of each stream,
1 MiB by default, and counts the rest in `stdout_dropped`/`stderr_dropped`), and a
call returns at its timeout or when its leader exits, never hangs. The floods run in
a fresh process (`_output_child.py`) so that its peak RSS (ru_maxrss) means
something; a full gigabyte takes well under a second through bwrap here, so the
sizes are not scaled down.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stockade import open_harness

from ..faults._support import (
    composition,
    kill_leftovers,
    marker,
    outside_temp_roots,
    pids_with_marker,
    python_env,
)
from ..support import require_backend

CHILD = Path(__file__).with_name("_output_child.py")
CAP = 1024 * 1024  # ExecutorConfig.output_cap default
GB = 1_000_000_000
PEAK_BUDGET_KIB = 64 * 1024

FLOODS = [
    ("gigabyte", {"command": f"head -c {GB} /dev/zero"}, ("stdout", GB)),
    ("one 100 MB line", {"command": "head -c 100000000 /dev/zero | tr '\\0' x"}, ("stdout", 10**8)),
    ("binary", {"command": "head -c 20000000 /dev/urandom"}, ("stdout", 20_000_000)),
    ("stderr flood", {"command": "head -c 300000000 /dev/zero >&2"}, ("stderr", 300_000_000)),
    (
        "both streams",
        {"command": "head -c 200000000 /dev/zero & head -c 200000000 /dev/zero >&2; wait"},
        ("both", 200_000_000),
    ),
    (
        "background gigabyte",
        {"command": f"head -c {GB} /dev/zero", "background": True},
        ("stdout", GB),
    ),
]


@pytest.fixture(scope="module")
def floods():
    require_backend("bwrap")
    with outside_temp_roots() as base:
        yield run_floods(base)


def run_floods(base: Path) -> dict[str, dict]:
    (base / "project").mkdir()
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            str(CHILD),
            str(base / "state"),
            str(base / "project"),
            "bwrap",
            json.dumps([arguments for _name, arguments, _expect in FLOODS]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=python_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    print(f"floods: {time.monotonic() - started:.1f}s in all")
    return dict(zip([name for name, _a, _e in FLOODS], results, strict=True))


@pytest.mark.parametrize(("name", "expect"), [(name, expect) for name, _a, expect in FLOODS])
def test_floods_stay_within_the_cap_and_count_what_was_dropped(floods, name, expect):
    result = floods[name]
    facts = result["facts"]
    stream, total = expect
    assert not result["is_error"], result["text_tail"]
    assert facts.get("exit_code") == 0 and not facts["denied"] and not facts["timed_out"]
    streams = ("stdout", "stderr") if stream == "both" else (stream,)
    for each in streams:
        assert facts[f"{each}_dropped"] == total - CAP, (each, facts)
    # What the model sees is bounded by the caps, whatever was printed.
    assert result["text_length"] < len(streams) * CAP + 1024
    assert "bytes dropped from the middle of the output" in result["text_tail"]
    assert result["peak_growth_kib"] < PEAK_BUDGET_KIB, result["peak_growth_kib"]
    print(f"{name}: {result['seconds']:.2f}s, peak RSS +{result['peak_growth_kib']} KiB")


def test_a_gigabyte_takes_seconds_not_minutes(floods):
    assert floods["gigabyte"]["seconds"] < 10


def test_binary_output_is_decoded_with_replacement(floods):
    assert "\ufffd" in floods["binary"]["text_tail"]


# --- commands that close their output and keep running ---------------------------------------


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
async def test_closing_output_early_returns_at_the_timeout_or_when_the_leader_exits(
    state_dir, project, backend
):
    require_backend(backend)
    name = marker()
    escape = f"setsid bash -c 'exec -a {name} sleep 30' & sleep 0.3; exit 0"
    cases = [
        ("stdout closed, sleeps", {"command": "exec 1>&-; sleep 30", "timeout_ms": 1000}, True),
        ("both closed, sleeps", {"command": "exec 1>&- 2>&-; sleep 30", "timeout_ms": 1000}, True),
        (
            "stdout closed, leader exits, a detached child keeps stderr",
            {"command": f"exec 1>&-; {escape}"},
            False,
        ),
    ]
    try:
        async with open_harness(
            composition(state_dir, sandbox={"backend": backend}, kill_grace=0.5)
        ) as harness:
            session = await harness.open_session(cwd=project)
            for label, arguments, times_out in cases:
                started = time.monotonic()
                result = await session.run_tool("bash", arguments)
                took = time.monotonic() - started
                assert result.facts["timed_out"] is times_out, (label, result.text)
                # The timeout (1 s) plus kill_grace, or the leader's exit plus the
                # executor's drain grace (0.5 s): nothing waits for the 30 s sleep.
                assert took < 3, (label, took)
        escaped = pids_with_marker(name)
        # The call's PID namespace (bwrap's, the Landlock launcher's) takes a detached
        # child down with the sandbox (docs/executor.md, "Decision").
        assert escaped == []
    finally:
        kill_leftovers(pids_with_marker(name))

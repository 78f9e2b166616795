"""Descriptor exhaustion (EMFILE) and the bound on running processes.

RLIMIT_NOFILE is lowered in a SUBPROCESS (`_limits_child.py`), never in the test
process. What must hold: a call that cannot get descriptors returns a clear,
model-facing error and runs nothing; nothing hangs; once descriptors are free again
the harness works. What the executor does without an explicit `max_running`: it
derives the bound from the soft limit (`ExecutorConfig.running_bound`), with a floor
of 8 processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from stockade.executor.actor import open_executor
from stockade.executor.config import DESCRIPTOR_HEADROOM, DESCRIPTORS_PER_PROCESS, ExecutorConfig
from stockade.vocab import ExecutionPolicy, SandboxMode

from ._support import outside_temp_roots, python_env

CHILD = Path(__file__).with_name("_limits_child.py")
EMFILE_TEXT = "Too many open files"


def run_child(soft: int, scenarios: str, directory: Path) -> dict[str, Any]:
    state_dir, project = directory / "state", directory / "project"
    project.mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, str(CHILD), str(soft), scenarios, str(state_dir), str(project)],
        capture_output=True,
        text=True,
        timeout=60,  # a hang fails here, with the child's output
        env=python_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outs = json.loads(done.stdout)
    outs["project"] = project
    return outs


LOW_LIMIT = 64


@pytest.fixture(scope="module")
def low_limit() -> Iterator[dict[str, Any]]:
    """One child at a soft limit of 64: a burst of 20 calls. (A call holds one lock per
    placeholder while its sandbox may run, up to about 16 for a root and its private
    temp directory: 32 leaves the harness no room for the first call.)"""
    with outside_temp_roots() as base:
        yield run_child(LOW_LIMIT, "burst", base)


@pytest.fixture(scope="module")
def exhausted() -> Iterator[dict[str, Any]]:
    """One child that holds every free descriptor around some calls (probe first)."""
    with outside_temp_roots() as base:
        yield run_child(64, "probe-exhausted,exhausted", base)


@pytest.fixture(scope="module")
def exhausted_fresh() -> Iterator[dict[str, Any]]:
    """The same, in a process whose very first temp-dir lookup meets EMFILE."""
    with outside_temp_roots() as base:
        yield run_child(64, "probe-exhausted-fresh", base)


def assert_clear(result: dict[str, Any]) -> None:
    """A model-facing result: ok, or an error text that says why and that nothing ran."""
    assert "raised" not in result, result["raised"]
    assert "Traceback" not in result["text"]
    if result["is_error"]:
        assert EMFILE_TEXT in result["text"] and "Nothing ran" in result["text"], result


def test_a_burst_under_a_low_descriptor_limit_errs_clearly_and_never_hangs(low_limit):
    out = low_limit["burst"]
    # Derived from the descriptors still free.
    assert 1 <= out["bound"] <= (LOW_LIMIT - DESCRIPTOR_HEADROOM) // DESCRIPTORS_PER_PROCESS
    assert out["first"] == {"is_error": False, "text": "probed\n[exit code: 0]"}
    for result in out["burst"]:
        assert_clear(result)
    assert out["after"] == {"is_error": False, "text": "after\n[exit code: 0]"}
    failed = sum(result["is_error"] for result in out["burst"])
    print(f"soft limit {LOW_LIMIT}: {failed}/20 calls got EMFILE, {out['seconds']:.1f}s")


def test_exhausted_descriptors_give_a_clear_error_and_the_harness_recovers(exhausted):
    out = exhausted["exhausted"]
    assert out["held"] > 0
    for key in ("foreground", "background"):
        assert out[key]["is_error"] is True, out[key]
        assert_clear(out[key])
    assert list(exhausted["project"].iterdir()) == []  # neither command ran
    assert out["after"] == {"is_error": False, "text": "after\n[exit code: 0]"}


def assert_unavailable_then_retried(out: dict[str, Any]) -> None:
    first = out["first"]
    assert "raised" not in first, first["raised"]
    # Out of descriptors before anything could run: the working directory is judged
    # (opened) first, and the probe would meet the same; either says so, nothing ran.
    assert first["is_error"], first
    assert first["text"].startswith(("SANDBOX_UNAVAILABLE: ", "the command could not start"))
    assert EMFILE_TEXT in first["text"]
    assert out["after"] == {"is_error": False, "text": "after\n[exit code: 0]"}


def test_a_probe_that_meets_emfile_is_unavailable_now_and_retried_later(exhausted):
    assert_unavailable_then_retried(exhausted["probe-exhausted"])


def test_a_first_probe_that_meets_emfile_in_a_fresh_process_is_unavailable(exhausted_fresh):
    assert_unavailable_then_retried(exhausted_fresh["probe-exhausted-fresh"])


def test_the_derived_bound_keeps_a_burst_within_the_descriptor_limit(low_limit):
    assert [result["is_error"] for result in low_limit["burst"]["burst"]] == [False] * 20


async def test_a_foreground_timeout_covers_the_wait_for_a_slot(project):
    policy = ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=str(project))
    async with open_executor(ExecutorConfig(max_running=2, kill_grace=0.2)) as executor:
        for _ in range(2):
            await executor.start(executor.resolve("sleep 30", policy=policy))
        with trio.move_on_after(2) as hung:
            result = await executor.run(executor.resolve("echo hi", policy=policy, timeout=0.5))
        assert not hung.cancelled_caught, "a 0.5 s call was still waiting for a slot after 2 s"
        assert result.timed_out and result.exit_code is None

"""`stockade run`, as a person runs it: pass-through, marker, --json, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stockade.cli import entry as cli
from stockade.cli import run as run_module
from stockade.cli.parser import build_parser
from stockade.sandbox import _probe

from .support import require_backend, stockade


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request):
    require_backend(request.param)
    return request.param


def test_read_only_prints_the_marker_and_writes_nothing(backend, scratch):
    done = stockade("run", "--backend", backend, "--mode", "read-only", "echo hi > f", cwd=scratch)
    assert done.returncode != 0
    assert not (Path(scratch) / "f").exists()
    assert "[sandbox: file access denied under read-only mode]" in done.stderr
    assert "Do not try to work around the denial" in done.stderr


def test_workspace_write_writes_the_file(backend, scratch):
    done = stockade(
        "run", "--backend", backend, "--mode", "workspace-write", "echo hi > f", cwd=scratch
    )
    assert done.returncode == 0, done.stderr
    assert (Path(scratch) / "f").read_text() == "hi\n"


def test_default_mode_is_workspace_write_and_output_passes_through(backend, scratch):
    done = stockade("run", "--backend", backend, "echo out; echo err >&2; exit 4", cwd=scratch)
    assert (done.returncode, done.stdout, done.stderr) == (4, "out\n", "err\n")


def test_json_gives_one_object_and_exit_zero(backend, scratch):
    done = stockade(
        "run", "--json", "--backend", backend, "--mode", "read-only", "echo hi > f", cwd=scratch
    )
    assert done.returncode == 0
    facts = json.loads(done.stdout)
    assert set(facts) == {
        "exit_code",
        "stdout",
        "stderr",
        "stdout_dropped",
        "stderr_dropped",
        "denial",
        "denied",
        "runner_failed",
        "timed_out",
        "mode",
        "network",
        "backend",
        "enforcement",
        "gaps",
    }
    assert facts["denied"] is True and facts["exit_code"] == 1
    # A `partial` claim says why; a `full` one has nothing to list.
    assert (facts["enforcement"] == "partial") == bool(facts["gaps"]), facts
    # The model's wording stays in --json (a person at a terminal gets a shorter line).
    assert facts["denial"].startswith("[sandbox: file access denied under read-only mode]\n")
    assert "Do not try to work around the denial" in facts["denial"]
    assert (facts["stdout_dropped"], facts["stderr_dropped"]) == (0, 0)
    assert (facts["mode"], facts["backend"], facts["enforcement"]) == ("read-only", backend, "full")
    assert facts["network"] == "off"
    assert not (Path(scratch) / "f").exists()


def test_timeout_kills_and_reports(backend, scratch):
    done = stockade(
        "run", "--backend", backend, "--timeout", "0.5", "--json", "sleep 30", cwd=scratch
    )
    facts = json.loads(done.stdout)
    assert facts["timed_out"] is True


def test_sandbox_unavailable_in_both_output_forms(monkeypatch, capsys, scratch):
    for name in ("bwrap", "landlock"):
        off = _probe.Verdict(name, False, why_not=f"{name} is off")
        monkeypatch.setitem(_probe.PROBES, name, lambda _timeout, off=off: off)
    marker = Path(scratch) / "ran"
    assert cli.main(["run", "--json", "--root", scratch, f"touch {marker}"]) == 125
    reply = json.loads(capsys.readouterr().out)
    assert reply["error"]["code"] == "SANDBOX_UNAVAILABLE"
    assert "bwrap is off" in reply["error"]["detail"]
    assert cli.main(["run", "--root", scratch, f"touch {marker}"]) == 125
    err = capsys.readouterr().err
    assert err.startswith("stockade: SANDBOX_UNAVAILABLE: ") and err.count("\n") == 1
    assert not marker.exists()


@pytest.mark.parametrize(("decision", "written"), [("allowed-once", True), ("rejected", False)])
def test_run_ask_retries_once_under_the_next_wider_mode(scratch, capsys, decision, written):
    from stockade.approval.answerers import ScriptedAnswerer

    answerer = ScriptedAnswerer([decision])
    args = build_parser().parse_args(
        ["run", "--ask", "--mode", "read-only", "--root", scratch, f"echo hi > {scratch}/f"]
    )
    status = run_module.run_command(args, answerer=answerer)
    err = capsys.readouterr().err
    assert "[sandbox: file access denied under read-only mode]" in err
    assert answerer.seen[0].requested_mode.value == "workspace-write"
    assert (Path(scratch) / "f").exists() is written
    assert (status == 0) is written
    assert ("retrying once under workspace-write" in err) is written


def test_run_ask_without_a_terminal_does_not_retry(scratch, capsys):
    from stockade.approval.answerers import TerminalAnswerer

    args = build_parser().parse_args(
        ["run", "--ask", "--mode", "read-only", "--root", scratch, f"echo hi > {scratch}/f"]
    )
    status = run_module.run_command(args, answerer=TerminalAnswerer(opener=lambda: None))
    assert status == 1
    err = capsys.readouterr().err
    assert "stockade: not retried: it could not be asked: no terminal to ask on\n" in err
    assert not (Path(scratch) / "f").exists()


def test_run_ask_with_no_controlling_terminal_says_why(scratch):
    """As a person's script runs it: no terminal at all (a new session, stdin closed)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "stockade", "run", "--ask", "--mode", "read-only", "echo hi > f"],
        cwd=scratch,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**__import__("os").environ, "STOCKADE_CONFIG": ""},
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "stockade: not retried: it could not be asked: no terminal to ask on" in done.stderr
    assert not (Path(scratch) / "f").exists()

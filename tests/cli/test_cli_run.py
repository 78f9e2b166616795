"""`stockade run`, as a person runs it: pass-through, marker, --json, exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from stockade import entry as cli
from stockade.cli import run as run_module
from stockade.cli.parser import build_parser
from stockade.sandbox import _probe, backends

from ..support import require_backend, stockade


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


def test_run_says_the_cause_the_model_would_be_told(backend, scratch, tmp_path):
    """A name lookup with the network off, and a write into a host directory a fresh
    /tmp hid: each gets its cause line on stderr, as the bash tool's result has it."""
    lookup = "python3 -c \"import socket; socket.getaddrinfo('example.com', 80)\""
    done = stockade("run", "--backend", backend, lookup, cwd=scratch)
    assert done.returncode != 0
    assert "stockade: network is off for this command, so a name lookup failed" in done.stderr
    assert tmp_path.is_dir() and str(tmp_path).startswith("/tmp/")
    done = stockade("run", "--backend", backend, f"echo x > {tmp_path}/f", cwd=scratch)
    assert done.returncode != 0 and not (tmp_path / "f").exists()
    assert "[sandbox: file access denied under workspace-write mode]" in done.stderr
    assert f"stockade: {tmp_path} lies in /tmp, which this command sees fresh" in done.stderr


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
        "read_denied",
        "runner_failed",
        "timed_out",
        "mode",
        "network",
        "backend",
        "tier",
        "enforcement",
        "gaps",
        "network_enforcement",
        "network_gaps",
        "connections",
        "connections_refused",
        "requests",
        "env_dropped",
        "cause",
        "limit",
        "note",
        "usage",
        "limits",
    }
    assert facts["denied"] is True and facts.get("exit_code") == 1
    # How it ended, and what held each limit (docs/limits.md).
    assert (facts["cause"], facts["limit"], facts["note"]) == ("exited", None, None)
    assert [claim["name"] for claim in facts["limits"]][:2] == ["processes", "memory"]
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
        monkeypatch.setitem(backends.PROBES, name, lambda _timeout, off=off: off)
    marker = Path(scratch) / "ran"
    assert cli.main(["run", "--json", "--root", scratch, f"touch {marker}"]) == 125
    reply = json.loads(capsys.readouterr().out)
    assert reply["error"]["code"] == "SANDBOX_UNAVAILABLE"
    assert "bwrap is off" in reply["error"]["detail"]
    assert cli.main(["run", "--root", scratch, f"touch {marker}"]) == 125
    err = capsys.readouterr().err
    assert err.startswith("stockade: SANDBOX_UNAVAILABLE: ") and err.count("\n") == 1
    assert not marker.exists()


def asked_in(state_dir: str, err: str) -> list[dict]:
    """The one session log an --ask wrote, named on stderr: its events."""
    (name,) = os.listdir(state_dir)
    session = name.removesuffix(".jsonl")
    assert f"stockade: the question and its answer are in session {session} " in err
    with open(os.path.join(state_dir, name), encoding="utf-8") as log:
        return [json.loads(line) for line in log]


@pytest.mark.parametrize(("decision", "written"), [("allowed-once", True), ("rejected", False)])
def test_run_ask_retries_once_under_the_next_wider_mode(
    scratch, state_dir_outside, monkeypatch, capsys, decision, written
):
    from stockade.approval.answerers import ScriptedAnswerer

    monkeypatch.setenv("STOCKADE_STATE_DIR", state_dir_outside)
    monkeypatch.delenv("STOCKADE_CONFIG", raising=False)
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
    # The ask went through the ApprovalActor: its audit pair is in the session's log,
    # beside the mode the run had.
    events = asked_in(state_dir_outside, err)
    assert [event["type"] for event in events] == [
        "session/header",
        "sandbox/mode",
        "approval/asked",
        "approval/answered",
    ]
    assert events[0]["cwd"] == scratch and events[1]["mode"] == "read-only"
    assert events[2]["requested_mode"] == "workspace-write"
    assert events[3]["decision"] == decision and events[3]["answerer"] == "scripted"
    assert events[2]["ask_id"] == events[3]["ask_id"]


def test_run_ask_that_nobody_answers_says_so(scratch, state_dir_outside, monkeypatch, capsys):
    from stockade.approval.answerers import ScriptedAnswerer

    monkeypatch.setenv("STOCKADE_STATE_DIR", state_dir_outside)
    monkeypatch.delenv("STOCKADE_CONFIG", raising=False)
    args = build_parser().parse_args(
        ["run", "--ask", "--mode", "read-only", "--root", scratch, f"echo hi > {scratch}/f"]
    )
    assert run_module.run_command(args, answerer=ScriptedAnswerer([])) == 1
    err = capsys.readouterr().err
    assert "stockade: not retried: nobody answered the question\n" in err
    assert asked_in(state_dir_outside, err)[-1]["decision"] == "unavailable"


def test_run_ask_whose_log_cannot_be_kept_asks_nobody(scratch, monkeypatch, capsys):
    from stockade.approval.answerers import ScriptedAnswerer

    # A log under the workspace root: a retried command could rewrite it.
    monkeypatch.setenv("STOCKADE_STATE_DIR", os.path.join(scratch, "logs"))
    monkeypatch.delenv("STOCKADE_CONFIG", raising=False)
    answerer = ScriptedAnswerer(["allowed-once"])
    args = build_parser().parse_args(
        ["run", "--ask", "--mode", "read-only", "--root", scratch, f"echo hi > {scratch}/f"]
    )
    assert run_module.run_command(args, answerer=answerer) == 1
    err = capsys.readouterr().err
    assert "stockade: not retried: it could not be asked: its session log cannot be used: " in err
    assert "session log directory" in err and "in session" not in err
    assert answerer.seen == [] and not (Path(scratch) / "f").exists()


def test_run_ask_without_a_terminal_does_not_retry(scratch, state_dir_outside, monkeypatch, capsys):
    from stockade.approval.answerers import TerminalAnswerer

    monkeypatch.setenv("STOCKADE_STATE_DIR", state_dir_outside)
    monkeypatch.delenv("STOCKADE_CONFIG", raising=False)
    args = build_parser().parse_args(
        ["run", "--ask", "--mode", "read-only", "--root", scratch, f"echo hi > {scratch}/f"]
    )
    status = run_module.run_command(args, answerer=TerminalAnswerer(opener=lambda: None))
    assert status == 1
    err = capsys.readouterr().err
    assert "stockade: not retried: it could not be asked: no terminal to ask on\n" in err
    assert not (Path(scratch) / "f").exists()


def test_run_ask_with_no_controlling_terminal_says_why(scratch, state_dir_outside):
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
        env={**os.environ, "STOCKADE_CONFIG": "", "STOCKADE_STATE_DIR": state_dir_outside},
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "stockade: not retried: it could not be asked: no terminal to ask on" in done.stderr
    assert not (Path(scratch) / "f").exists()

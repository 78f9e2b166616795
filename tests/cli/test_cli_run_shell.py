"""`stockade run` as people use it in a real terminal, through the installed command:
live output, stdin passed on, a shell's exit statuses on every backend, one line (or
one JSON object) for every bad input, and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import trio

from stockade.cli import run as run_module
from stockade.executor._buffer import OutputBuffer
from stockade.executor._classify import command_exec_status
from stockade.executor._facts import WrapFacts, settled_result
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.vocab import Enforcement, ExecutionPolicy, SandboxMode

from ..pty_screen import PtyChild
from ..support import pids_with_marker, require_backend

STOCKADE = str(Path(sys.executable).with_name("stockade"))
# No composition from the environment: the embedded defaults, as on a fresh machine.
ENV = {**os.environ, "STOCKADE_CONFIG": ""}
BACKENDS = ("bwrap", "landlock", "danger-full-access")
CAP = ExecutorConfig().output_cap


# What a person's shell gives a program: default dispositions, nothing blocked. This
# test process may carry others from in-process tests (exec's wait path leaves SIGINT
# and SIGQUIT ignored) or from how the suite was started (SIGHUP under nohup), which
# a child on the pty would inherit.
AS_A_PERSON = """
import os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, ())
for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTSTP):
    signal.signal(signum, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])
"""


def on_a_pty(argv: list[str], **options) -> PtyChild:
    return PtyChild([sys.executable, "-c", AS_A_PERSON, *argv], **options)


def backend_args(backend: str) -> list[str]:
    if backend == "danger-full-access":
        return ["--mode", "danger-full-access"]
    require_backend(backend)
    return ["--backend", backend]


def stockade(*args: str, cwd=None, env=None, stdin=subprocess.DEVNULL, timeout=60):
    return subprocess.run(
        [STOCKADE, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env or ENV,
        stdin=stdin,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(params=BACKENDS)
def backend(request):
    return backend_args(request.param)


@pytest.fixture
def config_dir():
    """Outside the workspace and every temp root: a composition a call cannot write."""
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="stockade-config-", dir="/var/tmp")
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


def test_the_installed_command_is_there():
    assert os.access(STOCKADE, os.X_OK), STOCKADE


# ---- live output on a terminal -------------------------------------------------------


@pytest.mark.parametrize("name", ["bwrap", "landlock"])
def test_output_arrives_live_on_a_terminal(name, scratch):
    command = "for i in 1 2 3; do echo line$i; echo err$i >&2; sleep 1; done"
    argv = [STOCKADE, "run", *backend_args(name), command]
    arrived: dict[str, float] = {}
    with PtyChild(argv, cwd=scratch, env=ENV) as child:
        for line in ("line1", "line2", "line3"):
            child.wait_for(lambda text, line=line: line in text, timeout=30)
            arrived[line] = time.monotonic()
        assert child.finish() == 0
        lines = child.text().splitlines()
    # A second apart, as printed; not all together at the end.
    assert arrived["line2"] - arrived["line1"] > 0.6
    assert arrived["line3"] - arrived["line2"] > 0.6
    # stdout and stderr are two pipes: within a second their order is not kept.
    shown = [line for line in lines if line]
    assert [sorted(shown[i : i + 2]) for i in (0, 2, 4)] == [
        [f"err{n}", f"line{n}"] for n in (1, 2, 3)
    ]


def test_a_denial_on_a_terminal_is_one_human_line(scratch):
    require_backend("bwrap")
    argv = [STOCKADE, "run", "--mode", "read-only", "echo hi > f"]
    with PtyChild(argv, cwd=scratch, env=ENV) as child:
        status = child.finish()
        screen = child.text()
    assert status == 1
    assert (
        "stockade: the sandbox refused a file write under read-only mode "
        "(try --mode workspace-write, or --ask)"
    ) in screen.splitlines()
    # The model's wording is not for a person; it stays in --json and the API.
    assert "Do not try to work around" not in screen
    assert "[sandbox:" not in screen
    assert not (Path(scratch) / "f").exists()


def test_a_denial_off_a_terminal_keeps_the_models_wording(scratch):
    require_backend("bwrap")
    done = stockade("run", "--mode", "read-only", "echo hi > f", cwd=scratch)
    assert done.returncode == 1
    assert "[sandbox: file access denied under read-only mode]" in done.stderr
    assert "Do not try to work around the denial" in done.stderr


# On a terminal the command runs on a pty of its own, stdin too (tests/cli/test_cli_run_pty.py).


def test_ctrl_c_on_a_terminal_ends_the_command_quietly(scratch):
    require_backend("bwrap")
    marker = f"stockade-{uuid.uuid4().hex[:12]}"
    argv = [STOCKADE, "run", f"echo started; {sleeper(marker)}"]
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "started" in text, timeout=30)
        wait_for_pids(marker)
        child.send(b"\x03")  # the command's terminal turns it into SIGINT for the command
        # ... and stockade ends by SIGINT too, as a shell's $? reads it: 130.
        assert child.finish(timeout=30) == -signal.SIGINT
        screen = child.text()
    assert "Traceback" not in screen and "KeyboardInterrupt" not in screen
    assert pids_with_marker(marker) == []


# ---- stdin ---------------------------------------------------------------------------


def test_piped_stdin_reaches_the_command(backend, scratch):
    piped = subprocess.run(
        f"echo hi | {STOCKADE} run {' '.join(backend)} cat",
        shell=True,
        capture_output=True,
        text=True,
        cwd=scratch,
        env=ENV,
        check=False,
    )
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, "hi\n", "")


def test_stdin_is_streamed_not_read_whole(scratch):
    require_backend("bwrap")
    # The command answers the first line while stdin is still open: it is passed on
    # as it comes, not read to its end first.
    with subprocess.Popen(
        [STOCKADE, "run", "head -n 1; echo answered"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=scratch,
        env=ENV,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(b"ping\n")
        process.stdin.flush()
        assert process.stdout.readline() == b"ping\n"
        assert process.stdout.readline() == b"answered\n"
        # The command is done although stdin never ended: stockade does not wait for it.
        assert process.wait(timeout=30) == 0
        process.stdin.close()


def test_more_stdin_than_the_capture_holds_passes_through(scratch):
    require_backend("bwrap")
    size = 3 * CAP
    done = subprocess.run(
        [STOCKADE, "run", "wc -c"],
        input=b"x" * size,
        capture_output=True,
        cwd=scratch,
        env=ENV,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stdout.strip()) == (0, str(size).encode())


# ---- output beyond the capture -------------------------------------------------------


def test_all_output_is_streamed_and_json_reports_what_the_capture_dropped(scratch):
    require_backend("bwrap")
    size = 3 * CAP
    command = f"head -c {size} /dev/zero | tr '\\0' a"
    streamed = stockade("run", command, cwd=scratch)
    assert streamed.returncode == 0
    assert len(streamed.stdout) == size and streamed.stderr == ""
    done = stockade("run", "--json", command, cwd=scratch)
    facts = json.loads(done.stdout)
    assert (facts["stdout_dropped"], facts["stderr_dropped"]) == (size - CAP, 0)
    assert len(facts["stdout"].encode()) < CAP + 100  # head + tail, and the gap marker
    notes = done.stderr.splitlines()
    assert len(notes) == 1 and notes[0].startswith("stockade: the capture keeps")
    assert f"{size - CAP} bytes of stdout" in notes[0]


def test_stderr_beyond_the_capture_is_shown_with_one_note(scratch):
    require_backend("bwrap")
    size = 2 * CAP
    done = stockade("run", f"head -c {size} /dev/zero | tr '\\0' e >&2", cwd=scratch)
    assert done.returncode == 0
    # The note starts on a line of its own although the output did not end one.
    body, note = done.stderr.removesuffix("\n").rsplit("\n", 1)
    assert body == "e" * size
    assert note.startswith("stockade: all output was shown, but ")
    assert f"{size - CAP} bytes from the middle of stderr" in note


def test_a_reader_that_goes_away_ends_the_command_as_a_pipe_would(scratch):
    require_backend("bwrap")
    done = subprocess.run(
        f"{STOCKADE} run yes | head -n 2; echo status=${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        cwd=scratch,
        env=ENV,
        timeout=30,
        check=False,
    )
    assert done.stdout == "y\ny\nstatus=141\n"  # yes died of SIGPIPE: 128 + 13
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


# ---- exit statuses, as a shell gives them ---------------------------------------------

STATUSES = {
    "not found": ("stockade-no-such-command", 127),
    "not executable": ("./plain", 126),
    "killed by SIGTERM": ("kill -TERM $$", 128 + signal.SIGTERM),
    "killed by SIGKILL": ("kill -KILL $$", 128 + signal.SIGKILL),
    "its own status": ("exit 3", 3),
}


@pytest.mark.parametrize("case", sorted(STATUSES))
def test_exit_status_reads_as_a_shells(backend, scratch, case):
    (Path(scratch) / "plain").write_text("echo ran\n")
    command, status = STATUSES[case]
    done = stockade("run", *backend, command, cwd=scratch)
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and "SANDBOX_UNAVAILABLE" not in done.stderr


def test_a_timeout_exits_124_with_one_line(backend, scratch):
    done = stockade("run", *backend, "--timeout", "0.5", "echo before; sleep 30", cwd=scratch)
    assert (done.returncode, done.stdout) == (124, "before\n")
    assert done.stderr == "stockade: timed out after 0.5s; the command was killed\n"


def test_the_compositions_default_timeout_is_reported(scratch, config_dir):
    require_backend("bwrap")
    config = config_dir / "stockade.yml"
    config.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n"
        "- id: bash\n  name: stockade.bash.sandbox\n  config:\n    default_timeout: 1\n"
    )
    done = stockade("run", "--config", str(config), "sleep 30", cwd=scratch)
    assert done.returncode == 124
    assert done.stderr == "stockade: timed out after 1s; the command was killed\n"
    # --timeout inf lifts it.
    done = stockade(
        "run", "--config", str(config), "--timeout", "inf", "sleep 1.5; echo ok", cwd=scratch
    )
    assert (done.returncode, done.stdout) == (0, "ok\n")


# ---- every bad input: one line, or one JSON object ------------------------------------

BAD = {
    "negative timeout": (["--timeout", "-1", "true"], "USAGE", 2, "--timeout"),
    "zero timeout": (["--timeout", "0", "true"], "USAGE", 2, "--timeout"),
    "nan timeout": (["--timeout", "nan", "true"], "USAGE", 2, "--timeout"),
    "unknown mode": (["--mode", "bogus", "true"], "USAGE", 2, "sandbox mode"),
    "unknown network": (["--network", "maybe", "true"], "USAGE", 2, "network"),
    "missing root": (["--root", "/nonexistent/x", "true"], "USAGE", 2, "workspace root"),
    "missing root, unconfined": (
        ["--mode", "danger-full-access", "--root", "/nonexistent/x", "true"],
        "USAGE",
        2,
        "workspace root",
    ),
    "missing config": (["--config", "/nonexistent.yml", "true"], "CONFIG", 2, "does not exist"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_input_is_one_line_and_its_status(scratch, case):
    args, code, status, mention = BAD[case]
    done = stockade("run", *args, cwd=scratch)
    assert done.returncode == status
    assert done.stdout == ""
    assert done.stderr.startswith("stockade: ") and done.stderr.count("\n") == 1, done.stderr
    assert mention in done.stderr
    as_json = stockade("run", "--json", *args, cwd=scratch)
    assert as_json.returncode == status
    assert as_json.stderr == ""
    assert json.loads(as_json.stdout)["error"]["code"] == code


def test_a_broken_composition_is_a_config_error(scratch, config_dir):
    config = config_dir / "stockade.yml"
    config.write_text("- just a string\n")
    done = stockade("run", "--json", "--config", str(config), "true", cwd=scratch)
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "CONFIG"


def test_a_stockade_yml_in_the_current_directory_is_a_config_error(scratch):
    (Path(scratch) / "stockade.yml").write_text("- id: x\n  name: stockade.sandbox.local\n")
    done = stockade("run", "true", cwd=scratch)
    assert done.returncode == 2
    assert done.stderr.startswith("stockade: ") and done.stderr.count("\n") == 1


def test_no_sandbox_is_the_only_125(scratch, config_dir):
    config = config_dir / "stockade.yml"
    config.write_text("- id: bash\n  name: stockade.bash.local\n")
    done = stockade("run", "--config", str(config), "--mode", "read-only", "true", cwd=scratch)
    assert done.returncode == 125
    assert done.stderr.startswith("stockade: SANDBOX_UNAVAILABLE: ")
    as_json = stockade(
        "run", "--json", "--config", str(config), "--mode", "read-only", "true", cwd=scratch
    )
    assert as_json.returncode == 125
    assert json.loads(as_json.stdout)["error"]["code"] == "SANDBOX_UNAVAILABLE"


def test_demo_with_a_state_directory_it_cannot_make_says_so_in_one_line():
    for env in (
        {"STOCKADE_STATE_DIR": "/proc/stockade-no-such-dir"},
        {"STOCKADE_STATE_DIR": "", "XDG_STATE_HOME": "", "HOME": "/proc/stockade-no-home"},
    ):
        done = stockade("demo", env={**ENV, **env}, timeout=120)
        assert done.returncode == 1, done.stderr  # ENVIRONMENT: the system refused
        assert "Traceback" not in done.stderr
        lines = done.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("stockade: cannot keep a session log in ")


# ---- Ctrl-C and other signals ---------------------------------------------------------


def sleeper(marker: str) -> str:
    """A `sleep 100` findable from the host by `marker`, which the command text (and so
    stockade's and bash's own command lines) does not hold literally."""
    return f"(m={marker[:5]}; exec -a ${{m}}{marker[5:]} sleep 100)"


def wait_for_pids(marker: str, timeout: float = 30, count: int = 1) -> list[int]:
    """The pids of `count` processes with `marker`: every sleeper a command starts,
    so a signal sent next cannot reach one still a subshell between fork and exec
    (whose SIGINT bash may take as handled, leaving the command waiting on it)."""
    deadline = time.monotonic() + timeout
    while len(found := pids_with_marker(marker)) < count:
        assert time.monotonic() < deadline, f"{marker} never started"
        time.sleep(0.05)
    return found


@pytest.mark.parametrize(
    ("signum", "json_mode"),
    [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False)],
)
def test_a_signal_kills_the_command_tree_and_exits_128_plus_n(backend, scratch, signum, json_mode):
    marker = f"stockade-{uuid.uuid4().hex[:12]}"
    command = f"{sleeper(marker)} & {sleeper(marker)}; wait"
    extra = ["--json"] if json_mode else []
    with subprocess.Popen(
        [STOCKADE, "run", *extra, *backend, command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=scratch,
        env=ENV,
    ) as process:
        wait_for_pids(marker, count=2)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + signum
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert pids_with_marker(marker) == []
    if json_mode:
        assert json.loads(stdout)["error"]["code"] == "INTERRUPTED"
        assert stderr == ""
    else:
        assert (stdout, stderr) == ("", "")


# ---- `stockade run -- CMD ARG...` -----------------------------------------------------


def test_an_argv_is_quoted_word_by_word():
    text = run_module.command_text(["printf", "%s|", "a b", "$HOME", "it's"])
    assert text == "printf '%s|' 'a b' '$HOME' 'it'\"'\"'s'"
    # One word is the shell text as written, as a string or as the parser's list.
    assert run_module.command_text("echo $HOME") == "echo $HOME"
    assert run_module.command_text(["echo $HOME > f"]) == "echo $HOME > f"
    with pytest.raises(run_module.RunError) as raised:
        run_module.command_text([])
    assert raised.value.code == "USAGE"


def test_an_argv_runs_as_those_words(scratch, capfd, monkeypatch):
    import argparse

    require_backend("bwrap")
    monkeypatch.delenv("STOCKADE_CONFIG", raising=False)
    args = argparse.Namespace(
        command=["printf", "%s|", "a b", "$HOME", "x;y"],
        mode=None,
        network=None,
        config=None,
        root=scratch,
        timeout=None,
        backend="bwrap",
        json=True,
        ask=False,
    )
    assert run_module.run_command(args) == 0
    assert json.loads(capfd.readouterr().out)["stdout"] == "a b|$HOME|x;y|"


# ---- the executor's part --------------------------------------------------------------


def bwrap_facts(program: str | None = "bash") -> WrapFacts:
    from stockade.sandbox.backends.bwrap import BWRAP_RULES

    return WrapFacts(
        mode=SandboxMode.WORKSPACE_WRITE,
        backend="bwrap",
        enforcement=Enforcement.FULL,
        runner_failure_rules=BWRAP_RULES,
        program=program,
    )


def settled(facts: WrapFacts, exit_code: int, stderr: bytes):
    err = OutputBuffer.with_cap(1000)
    err.write(stderr)
    return settled_result(
        facts,
        exit_code=exit_code,
        stdout=OutputBuffer.with_cap(1000),
        stderr=err,
        timed_out=False,
        cancelled=False,
        duration=0.0,
    )


def test_bwrap_failing_to_execute_the_command_is_a_command_result():
    missing = settled(bwrap_facts(), 1, b"bwrap: execvp bash: No such file or directory\n")
    assert (missing.exit_code, missing.runner_failed) == (127, False)
    refused = settled(bwrap_facts(), 1, b"bwrap: execvp bash: Permission denied\n")
    assert (refused.exit_code, refused.runner_failed) == (126, False)
    # Its filter stage (the launcher) missing is the runner's failure, as before.
    launcher = settled(
        bwrap_facts(), 1, b"bwrap: execvp /x/landlock-run: No such file or directory\n"
    )
    assert launcher.runner_failed
    # Only bwrap's exit 1 with that one line.
    assert command_exec_status("bash", 2, "bwrap: execvp bash: Permission denied\n") is None
    assert command_exec_status("bash", 1, "x\nbwrap: execvp bash: Permission denied\n") is None
    assert command_exec_status(None, 1, "bwrap: execvp bash: Permission denied\n") is None


def test_bwrap_without_its_filter_stage_reports_a_missing_shell_as_127(monkeypatch, scratch):
    config = require_backend("bwrap")
    from stockade.sandbox import _probe
    from stockade.sandbox.actor import open_provider

    monkeypatch.setattr(_probe, "filter_launcher", lambda: None)

    async def main():
        async with open_provider(config) as provider, open_executor(None, provider) as executor:
            # bwrap looks the command up on the PATH it inherits: bash is not there.
            monkeypatch.setenv("PATH", "/nonexistent")
            policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=scratch)
            return await executor.run(executor.resolve("true", policy=policy))

    result = trio.run(main)
    assert (result.exit_code, result.runner_failed) == (127, False)
    assert result.stderr == "bash: command not found\n" or "execvp bash" in result.stderr


def test_a_timeout_that_ends_before_a_free_slot_is_taken_says_so(scratch):
    async def main():
        async with open_executor(ExecutorConfig()) as executor:
            policy = ExecutionPolicy(
                mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=str(scratch)
            )
            return await executor.run(executor.resolve("true", policy=policy, timeout=0))

    result = trio.run(main)
    assert result.timed_out and result.exit_code is None
    assert (
        result.stderr
        == "[the command did not start: its timeout of 0s ran out before it could start]"
    )
    assert "slot" not in result.stderr


@pytest.mark.parametrize("timeout", [-1.0, float("nan")])
def test_the_executor_refuses_a_timeout_that_is_no_duration(scratch, timeout):
    from stockade.errors import CommandStartError

    async def main():
        async with open_executor(ExecutorConfig()) as executor:
            policy = ExecutionPolicy(
                mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=str(scratch)
            )
            spec = executor.resolve("true", policy=policy, timeout=timeout)
            with pytest.raises(CommandStartError, match="timeout"):
                await executor.run(spec)
            with pytest.raises(CommandStartError, match="timeout"):
                await executor.start(spec)

    trio.run(main)


# ---- a reader that went away, then a signal (issue 22, item 4) ------------------------

# Runs `stockade run --json <sleeper>` into a pipe that `cat` reads, on the terminal
# the test made. The driver ignores SIGINT itself (after starting both), so a Ctrl-C
# on the terminal reaches stockade and cat as it would in a person's shell pipeline.
PIPELINE = r"""
import os, signal, subprocess, sys
stockade, marker_cmd, kill_reader_first = sys.argv[1], sys.argv[2], sys.argv[3] == "yes"
reader = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
job = subprocess.Popen([stockade, "run", "--json", marker_cmd], stdout=reader.stdin)
reader.stdin.close()
signal.signal(signal.SIGINT, signal.SIG_IGN)
print("pipeline-started", flush=True)
if kill_reader_first:
    sys.stdin.readline()
    reader.kill()
    reader.wait()
    job.send_signal(signal.SIGTERM)
print(f"status={job.wait()}", flush=True)
reader.wait()
"""


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_a_closed_stdout_then_a_signal_ends_quietly(scratch, how):
    """`stockade run --json 'sleep 30' | reader`, then Ctrl-C (or SIGTERM to the job
    once the reader is gone): no BrokenPipeError traceback, the signal's status."""
    require_backend("bwrap")
    marker = f"stockade-{uuid.uuid4().hex[:12]}"
    argv = [sys.executable, "-c", PIPELINE, STOCKADE, sleeper(marker)]
    argv.append("yes" if how == "sigterm" else "no")
    with PtyChild(argv, cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "pipeline-started" in text, timeout=30)
        wait_for_pids(marker)
        child.send(b"\x03" if how == "ctrl-c" else b"go\n")
        expected = 128 + (signal.SIGINT if how == "ctrl-c" else signal.SIGTERM)
        child.wait_for(lambda text: "status=" in text, timeout=30)
        assert child.finish(timeout=30) == 0
        screen = child.text()
    assert f"status={expected}" in screen, screen
    assert "Traceback" not in screen and "BrokenPipe" not in screen, screen
    assert pids_with_marker(marker) == []


def test_help_into_a_closed_pipe_is_quiet(scratch):
    """Any verb's output into a reader that went away: no traceback (EPIPE)."""
    done = subprocess.run(
        f"{STOCKADE} run --help | true; {STOCKADE} session list | true; echo done",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        cwd=scratch,
        env=ENV,
        timeout=60,
        check=False,
    )
    assert done.stdout == "done\n"
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr

"""`stockade run` on a person's terminal runs the command on a pseudo-terminal of its own
(issue 22, item 2), tested as a person uses it: through the installed command, on a
real pty (tests/pty_screen.py), reading what the screen shows.

Live, coloured output of stdio-buffered programs; the window size and its changes;
typed input; Ctrl-C, Ctrl-Z; denials still classified; the person's terminal modes
restored on every way out; the person's own terminal never handed to the command;
pipes kept when piped or --json.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import signal
import struct
import subprocess
import sys
import termios
import time
import uuid
from pathlib import Path

import pytest
import trio

from stockade.executor._spawn import TerminalOutput

from ..pty_screen import PtyChild
from ..support import pids_with_marker, require_backend
from .test_cli_run_shell import ENV, STOCKADE, backend_args, on_a_pty, sleeper, wait_for_pids

BACKENDS = ("bwrap", "landlock", "danger-full-access")
CONFINING = ("bwrap", "landlock")
PYTHON = shlex.quote(sys.executable)
BIN = str(Path(STOCKADE).parent)
SIGINT_DEATH = -signal.SIGINT  # how a shell's $? reads it: 130


def run_argv(backend: str, *args: str) -> list[str]:
    return [STOCKADE, "run", *backend_args(backend), *args]


def held(argv: list[str]) -> list[str]:
    """`argv` started only once the test sent a newline: the test reads the
    terminal's modes before stockade can touch them. First it prints the terminal's
    device (major:minor, hex), as the command's own descriptors are shown below."""
    script = 'stat -L -c "outer=%t:%T" /proc/self/fd/0; read _; exec "$@"'
    return ["/bin/bash", "-c", script, "held", *argv]


def modes_at_exit(child: PtyChild) -> list:
    """The terminal's modes once the child and every process on the terminal ended
    (the master keeps them), before `finish` closes it."""
    while child._pump(0.2):
        pass
    return termios.tcgetattr(child.fd)


def raw(modes: list) -> bool:
    return not modes[3] & (termios.ICANON | termios.ECHO | termios.ISIG)


def arrival(child: PtyChild, texts: list[str], timeout: float = 30) -> dict[str, float]:
    arrived = {}
    for text in texts:
        child.wait_for(lambda screen, text=text: text in screen, timeout=timeout)
        arrived[text] = time.monotonic()
    return arrived


# ---- output: live, a terminal's, coloured -------------------------------------------

STDIO_BUFFERED = (
    f'{PYTHON} -c "import time\nfor i in range(6): print(f\\"tick{{i}}\\"); time.sleep(0.4)"'
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stdio_buffered_program_shows_each_line_as_it_prints_it(backend, scratch):
    # Python buffers stdout whole on a pipe: before, nothing showed for 2.4 s.
    with on_a_pty(run_argv(backend, STDIO_BUFFERED), cwd=scratch, env=ENV) as child:
        arrived = arrival(child, [f"tick{i}" for i in range(6)])
        assert child.finish() == 0
    assert arrived["tick5"] - arrived["tick0"] > 1.2
    assert arrived["tick3"] - arrived["tick1"] > 0.4


COMMAND_SEES = (
    "test -t 0 && test -t 1 && test -t 2 && echo all-three-are-terminals; "
    "echo size=$(stty size); echo cols=$(env -u COLUMNS -u LINES tput cols); "
    "printf '\\033[31mred-text\\033[0m\\n'; "
    'echo "std=$(stat -L -c %t:%T /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2 | sort -u)"; '
    # Every descriptor the shell holds, as the device it is (hex major:minor).
    'for f in /proc/$$/fd/*; do [ -e "$f" ] && stat -L -c "fd=%t:%T" "$f"; done; true'
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_command_runs_on_terminals_of_its_own(backend, scratch):
    with on_a_pty(held(run_argv(backend, COMMAND_SEES)), cwd=scratch, env=ENV) as child:
        outer = child.wait_for(lambda screen: "outer=" in screen, timeout=30)
        child.send(b"\n")
        child.wait_for(lambda screen: "cols=" in screen, timeout=30)
        assert child.finish() == 0
        lines = child.text().splitlines()
        red = next(n for n, line in enumerate(child.screen.display) if "red-text" in line)
        assert child.screen.buffer[red][0].fg == "red"  # the escape passed through
    assert "all-three-are-terminals" in lines
    # stdin, stdout and stderr: one terminal, as a shell's are (`bash -i`, `less` use fd 2).
    assert sum(line.startswith("std=") for line in lines) == 1
    # The window size is the person's (60 rows, 200 columns), not an environment's.
    assert "size=60 200" in lines and "cols=200" in lines
    # Not one of its descriptors is the person's terminal (its own ptys instead).
    person = next(line for line in outer.splitlines() if line.startswith("outer="))
    seen = [line.removeprefix("fd=") for line in lines if line.startswith("fd=")]
    assert len(seen) >= 3 and person.removeprefix("outer=") not in seen, (person, seen)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_window_resize_reaches_the_command(backend, scratch):
    command = (
        "trap 'echo now=$(stty size)' WINCH; echo ready; for i in $(seq 100); do sleep 0.1; done"
    )
    with on_a_pty(run_argv(backend, command), cwd=scratch, env=ENV) as child:
        child.wait_for(lambda screen: "ready" in screen, timeout=30)
        # The person's window changes: the kernel signals stockade, which passes it on.
        fcntl.ioctl(child.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
        child.wait_for(lambda screen: "now=40 100" in screen, timeout=30)
        child.send(b"\x03")
        assert child.finish(timeout=30) == SIGINT_DEATH


# ---- typed input --------------------------------------------------------------------

INTERACTIVE = (
    'read -p "name? " name; echo "got-$name"; '
    f"{PYTHON} -c \"print('py-got-' + input('py? '))\"; "
    "cat; echo cat-ended"
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_typed_input_reaches_an_interactive_command(backend, scratch):
    with on_a_pty(run_argv(backend, INTERACTIVE), cwd=scratch, env=ENV) as child:
        child.wait_for(lambda screen: "name?" in screen, timeout=30)
        child.send(b"alice\r")
        child.wait_for(lambda screen: "got-alice" in screen, timeout=30)
        child.wait_for(lambda screen: "py?" in screen, timeout=30)
        child.send(b"bob\r")
        child.wait_for(lambda screen: "py-got-bob" in screen, timeout=30)
        child.send(b"line-for-cat\r")
        # Echoed by the command's terminal, then printed by cat: twice.
        child.wait_for(lambda screen: screen.count("line-for-cat") == 2, timeout=30)
        child.send(b"\x04")  # Ctrl-D: the end of cat's input
        child.wait_for(lambda screen: "cat-ended" in screen, timeout=30)
        assert child.finish() == 0


def test_piped_stdin_with_a_terminal_for_output(scratch):
    require_backend("bwrap")
    script = f"echo piped-in | {STOCKADE} run 'cat; test -t 0 || echo in-pipe; test -t 1 && echo out-tty'"
    with on_a_pty(["/bin/bash", "-c", script], cwd=scratch, env=ENV) as child:
        assert child.finish() == 0
        lines = child.text().splitlines()
    assert lines[:3] == ["piped-in", "in-pipe", "out-tty"]


# ---- pipes stay pipes -----------------------------------------------------------------

PIPES = "test -t 0 || echo in-not-a-terminal; test -t 1 || echo out-not-a-terminal; test -t 2 || echo err-not-a-terminal >&2"


@pytest.mark.parametrize("backend", BACKENDS)
def test_piped_and_json_runs_keep_pipes(backend, scratch):
    piped = subprocess.run(
        run_argv(backend, PIPES),
        capture_output=True,
        text=True,
        cwd=scratch,
        env=ENV,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert piped.returncode == 0
    assert (piped.stdout, piped.stderr) == (
        "in-not-a-terminal\nout-not-a-terminal\n",
        "err-not-a-terminal\n",
    )
    # --json on a terminal: a program reads the object, the command gets pipes.
    with on_a_pty(run_argv(backend, "--json", PIPES), cwd=scratch, env=ENV) as child:
        assert child.finish() == 0
        raw_text = bytes(child.raw).decode()
    facts = json.loads(raw_text)
    assert facts["stdout"] == "in-not-a-terminal\nout-not-a-terminal\n"
    assert facts["stderr"] == "err-not-a-terminal\n"


NO_PTY = """
import os, sys
def no_pty():
    raise OSError(28, "No space left on device")
os.openpty = no_pty
from stockade.entry import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_a_pty_to_give_the_command_gets_pipes(scratch):
    require_backend("bwrap")
    argv = [sys.executable, "-c", NO_PTY, "run", "test -t 1 || echo out-pipe; echo done"]
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        assert child.finish(timeout=60) == 0
        lines = child.text().splitlines()
    assert lines[:2] == ["out-pipe", "done"]


def test_stdin_on_a_terminal_is_closed_when_the_output_is_piped(scratch):
    require_backend("bwrap")
    # stdout into a pipe: no terminal of its own, and the person's is not given; cat
    # would wait for the person to type, with stdin closed it ends at once.
    script = f"{STOCKADE} run 'cat; echo stdin-closed' | cat"
    with on_a_pty(["/bin/bash", "-c", script], cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "stdin-closed" in text, timeout=30)
        assert child.finish() == 0


# ---- Ctrl-C ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_ends_the_command_and_its_processes(backend, scratch):
    marker = f"stockade-{uuid.uuid4().hex[:12]}"
    command = f"echo started; {sleeper(marker)} & {sleeper(marker)}; wait"
    with on_a_pty(run_argv(backend, command), cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "started" in text, timeout=30)
        wait_for_pids(marker, count=2)
        child.send(b"\x03")  # into the command's terminal: SIGINT to its group
        # stockade ends by SIGINT too, as a program Ctrl-C ended does ($? reads 130).
        assert child.finish(timeout=30) == SIGINT_DEATH
        screen = child.text()
    assert "Traceback" not in screen and "KeyboardInterrupt" not in screen
    assert pids_with_marker(marker) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_command_that_handles_ctrl_c_decides_what_happens(backend, scratch):
    command = "trap 'echo handled-it; exit 3' INT; echo started; sleep 100 & wait"
    with on_a_pty(run_argv(backend, command), cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "started" in text, timeout=30)
        time.sleep(0.3)
        child.send(b"\x03")
        status = child.finish(timeout=30)
        screen = child.text()
    # Under bwrap too: its runner holds the key's SIGINT blocked, the command takes it
    # (tests/cli/test_cli_terminal_signals.py).
    assert (status, "handled-it" in screen) == (3, True)


IGNORING_SIGINT = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])
"""


def test_ctrl_c_with_sigint_ignored_on_entry_exits_130(scratch):
    # Started as under nohup: the command still gets Ctrl-C, stockade keeps SIGINT
    # ignored and says 130 with its status instead of dying of it.
    require_backend("bwrap")
    argv = [sys.executable, "-c", IGNORING_SIGINT, *run_argv("bwrap", "echo started; sleep 100")]
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "\nstarted" in f"\n{text}", timeout=30)
        time.sleep(0.3)
        child.send(b"\x03")
        assert child.finish(timeout=30) == 130


def test_ctrl_c_stops_a_calling_scripts_loop(scratch):
    require_backend("bwrap")
    # As in a shell: the loop's shell stops when its child died of Ctrl-C's SIGINT.
    script = f'for i in 1 2 3; do {STOCKADE} run "echo run$i; sleep 100"; done; echo loop-done'
    with on_a_pty(["/bin/bash", "-c", script], cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "run1" in text, timeout=30)
        time.sleep(0.3)
        child.send(b"\x03")
        status = child.finish(timeout=30)
        screen = child.text()
    assert status == SIGINT_DEATH, screen
    assert "run2" not in screen and "loop-done" not in screen


# ---- Ctrl-Z, in a shell with job control ----------------------------------------------

PROMPT = "prompt$ "


@pytest.mark.parametrize("backend", CONFINING)
def test_ctrl_z_stops_the_command_and_fg_continues_it(backend, scratch):
    require_backend(backend)
    env = {**ENV, "PS1": PROMPT, "PATH": f"{BIN}:{ENV['PATH']}"}
    shell = ["/bin/bash", "--norc", "--noprofile", "-i"]
    ticks = "for i in $(seq 1 300); do echo tick$i; sleep 0.1; done"
    with on_a_pty(shell, cwd=scratch, env=env, history=2000) as child:
        child.wait_for(lambda text: PROMPT.rstrip() in text, timeout=30)
        child.send(f"stockade run --backend {backend} '{ticks}'\r".encode())
        child.wait_for(lambda text: "tick3" in text, timeout=30)
        child.send(b"\x1a")
        child.wait_for(lambda text: "Stopped" in text, timeout=30)
        stopped_at = child.text().count("\ntick")
        time.sleep(1.0)  # ten ticks' time: none come while it is stopped
        child.wait_for(lambda text: True)
        assert child.text().count("\ntick") == stopped_at
        child.send(b"fg\r")
        child.wait_for(lambda text: text.count("\ntick") >= stopped_at + 3, timeout=30)
        child.send(b"\x03")
        child.wait_for(lambda text: text.rstrip().endswith(PROMPT.rstrip()), timeout=30)
        child.send(b"echo status=$?; exit\r")
        child.finish(timeout=30)
        screen = child.text()
    assert "status=130" in screen


def test_a_stopped_run_ends_when_its_job_is_killed(scratch):
    """`kill %1` on a run stopped by Ctrl-Z (SIGTERM, then SIGCONT from the shell):
    stockade, now in the background, ends as for SIGTERM and takes the command with it."""
    require_backend("bwrap")
    marker = f"stockade-{uuid.uuid4().hex[:12]}"
    env = {**ENV, "PS1": PROMPT, "PATH": f"{BIN}:{ENV['PATH']}"}
    shell = ["/bin/bash", "--norc", "--noprofile", "-i"]
    with on_a_pty(shell, cwd=scratch, env=env, history=2000) as child:
        child.wait_for(lambda text: PROMPT.rstrip() in text, timeout=30)
        child.send(f"stockade run 'echo started; {sleeper(marker)}'\r".encode())
        child.wait_for(lambda text: "\nstarted" in text, timeout=30)
        wait_for_pids(marker)
        child.send(b"\x1a")
        child.wait_for(lambda text: "Stopped" in text, timeout=30)
        child.send(b"kill %1; sleep 1; jobs\r")
        child.wait_for(lambda text: "Exit 143" in text, timeout=30)
        child.send(b"exit\r")
        child.finish(timeout=30)
    assert pids_with_marker(marker) == []


@pytest.mark.parametrize("backend", CONFINING)
def test_a_shell_inside_keeps_its_own_job_control(backend, scratch):
    """`stockade run bash`: its jobs are its own to stop and interrupt (Ctrl-Z stops
    the job, not stockade; Ctrl-C at its prompt ends nothing, under bwrap too)."""
    require_backend(backend)
    env = {**ENV, "PS1": PROMPT, "PATH": f"{BIN}:{ENV['PATH']}"}
    shell = ["/bin/bash", "--norc", "--noprofile", "-i"]
    inner = "PS1='inner''$ ' bash --norc --noprofile -i"  # the prompt, not this line
    with on_a_pty(shell, cwd=scratch, env=env, history=2000) as child:
        child.wait_for(lambda text: PROMPT.rstrip() in text, timeout=30)
        child.send(f'stockade run --backend {backend} "{inner}"\r'.encode())
        child.wait_for(lambda text: "inner$" in text, timeout=30)
        child.send(b"sleep 100\r")
        time.sleep(0.5)
        child.send(b"\x1a")
        child.wait_for(lambda text: "Stopped                 sleep 100" in text, timeout=30)
        child.send(b"kill -KILL %1; sleep 0.3\r")
        child.wait_for(lambda text: "Killed" in text, timeout=30)
        child.send(b"\x03")  # at the inner prompt: the inner shell's to ignore
        time.sleep(0.5)
        child.send(b"echo still-here\r")
        child.wait_for(lambda text: "\nstill-here" in text, timeout=30)
        child.send(b"exit\r")
        child.wait_for(lambda text: text.rstrip().endswith(PROMPT.rstrip()), timeout=30)
        child.send(b"echo status=$?; exit\r")
        child.finish(timeout=30)
        screen = child.text()
    assert "status=0" in screen
    assert "Stopped                 stockade" not in screen


# ---- the runner's lines, the command's lines, denials -------------------------------------


def test_the_commands_output_is_not_taken_for_the_runners(scratch):
    require_backend("bwrap")
    # The runner's stderr stays a pipe: a `bwrap:` line the command prints, on either
    # stream, is its output, not bwrap failing (off a terminal, its stderr would be).
    command = "echo 'bwrap: on stdout'; echo 'bwrap: on stderr' >&2"
    with on_a_pty(run_argv("bwrap", command), cwd=scratch, env=ENV) as child:
        assert child.finish(timeout=30) == 0
        lines = child.text().splitlines()
    assert lines[:2] == ["bwrap: on stdout", "bwrap: on stderr"]
    assert not any("SANDBOX_UNAVAILABLE" in line for line in lines)


HUMAN = "stockade: the sandbox refused a file write under read-only mode (try --mode workspace-write, or --ask)"


@pytest.mark.parametrize("backend", CONFINING)
@pytest.mark.parametrize("command", ["echo hi > f", "touch f 2>&1"])
def test_a_denial_on_a_terminal_is_still_found(backend, command, scratch):
    # `2>&1`: the refusal arrives on the command's terminal (stdout), not a pipe.
    argv = run_argv(backend, "--mode", "read-only", command)
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        status = child.finish(timeout=30)
        lines = child.text().splitlines()
    assert status == 1
    assert HUMAN in lines
    assert not any("[sandbox:" in line for line in lines)
    assert not (Path(scratch) / "f").exists()


@pytest.mark.parametrize("backend", CONFINING)
def test_a_protected_path_is_named_as_one_not_a_mode_to_widen(backend, scratch):
    """A write to `.vscode` in the workspace is refused by a protection no confining
    mode lifts: the line says so and names `unprotect`, not a wider mode."""
    argv = run_argv(backend, "--mode", "workspace-write", "mkdir -p .vscode && echo {} > .vscode/x")
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        assert child.finish(timeout=30) != 0
        text = child.text()
    assert "refused a write to a protected path in the workspace" in text, text
    assert "unprotect:" in text and "(try --mode" not in text
    assert not (Path(scratch) / ".vscode" / "x").exists()


@pytest.mark.parametrize("backend", CONFINING)
def test_a_denial_with_stderr_to_a_file_keeps_the_models_wording(backend, scratch):
    run = shlex.join(run_argv(backend, "--mode", "read-only", "echo out; echo hi > f"))
    script = f"{run} 2>err.txt; echo status=$?"
    with on_a_pty(["/bin/bash", "-c", script], cwd=scratch, env=ENV) as child:
        assert child.finish(timeout=30) == 0
        lines = child.text().splitlines()
    assert lines[:2] == ["out", "status=1"]
    err = (Path(scratch) / "err.txt").read_text()
    assert "[sandbox: file access denied under read-only mode]" in err
    assert "Read-only file system" in err  # bwrap, and Landlock's namespaced tier


# On a terminal the command's stderr joins its stdout (MERGE_STDERR): what
# classification reads is what `exec 2>&1; COMMAND` gives through pipes (the pty's
# \r\n is undone for the capture). The precision table, so run, differs from the
# pipes' verdicts in exactly these cases (docs/executor.md, "On a terminal").
ON_A_TERMINAL_DIFFERS = {
    # The signature text echoed with an outside path: read as a denial, as for any
    # command that says 2>&1 (stdout lines count only with a path's proof).
    "sig-on-stdout": True,
    # A relative path after a cd: unknown, and only a stderr line decides on the
    # signature alone; merged, the line is not known to be stderr.
    "cd-relative": False,
}


@pytest.mark.skipif(os.geteuid() != 0, reason="the precision table needs root")
@pytest.mark.nobody  # the table runs its cases as uid 65534 too (tests/README.md)
@pytest.mark.parametrize("backend", CONFINING)
def test_the_precision_table_on_a_terminal(backend, monkeypatch, nobody_public):
    from stockade.cli._run_terminal import MERGE_STDERR

    from ..precision import test_denials as precision

    prepare = precision._prepare

    def on_a_terminal(*args, **kwargs):
        call = prepare(*args, **kwargs)
        return {**call, "command": MERGE_STDERR + call["command"]}

    monkeypatch.setattr(precision, "_prepare", on_a_terminal)
    table = precision.build_table(backend, nobody_public)
    differs = {
        case: outcome["denied"]
        for case, outcome in table.outcomes.items()
        if outcome["denied"] != precision.CASES[case].denied
    }
    assert differs == ON_A_TERMINAL_DIFFERS


# ---- the person's terminal is given back as it was ---------------------------------------

ENDINGS = {
    # name: (command, flags, what the test does once it started, the status)
    "it exits": ("echo started; sleep 0.5", (), None, 0),
    "Ctrl-C": ("echo started; SLEEPER", (), b"\x03", SIGINT_DEATH),
    "a timeout": ("echo started; SLEEPER", ("--timeout", "1.5"), None, 124),
    "the command killed": ("echo started; SLEEPER & sleep 0.5; kill -KILL $$", (), None, 137),
    "a denial": ("echo started; sleep 0.5; echo x > f", ("--mode", "read-only"), None, 1),
    "SIGTERM to stockade": ("echo started; SLEEPER", (), signal.SIGTERM, 143),
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
@pytest.mark.parametrize("backend", CONFINING)
def test_the_persons_terminal_modes_are_restored(backend, ending, scratch):
    command, flags, action, status = ENDINGS[ending]
    marker = f"stockade-{uuid.uuid4().hex[:12]}"
    argv = held(run_argv(backend, *flags, command.replace("SLEEPER", sleeper(marker))))
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        child.wait_for(lambda screen: "outer=" in screen, timeout=30)
        before = termios.tcgetattr(child.fd)
        assert not raw(before)
        child.send(b"\n")
        child.wait_for(lambda screen: "started" in screen, timeout=30)
        assert raw(termios.tcgetattr(child.fd))  # stockade holds it raw meanwhile
        if "SLEEPER" in command:
            wait_for_pids(marker)
        if isinstance(action, bytes):
            child.send(action)
        elif action is not None:
            os.kill(child.pid, action)
        after = modes_at_exit(child)
        assert child.finish(timeout=30) == status, child.text()
    assert after == before
    assert pids_with_marker(marker) == []


@pytest.fixture
def config_dir():
    """Outside the workspace and every temp root: a composition a call cannot write."""
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="stockade-config-", dir="/var/tmp")
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


def test_a_runner_failure_inside_the_run_restores_the_terminal(scratch, config_dir):
    # SANDBOX_UNAVAILABLE raised by the executor while the terminal is raw.
    runner = config_dir / "runner"
    runner.write_text("#!/bin/sh\necho 'FAKE: the runner broke' >&2\nexit 1\n")
    runner.chmod(0o755)
    config = config_dir / "stockade.yml"
    config.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n"
        f"  config: {{runner_command: {runner}, runner_failure_signatures: ['FAKE:']}}\n"
        "- id: bash\n  name: stockade.bash.sandbox\n"
    )
    argv = held([STOCKADE, "run", "--config", str(config), "true"])
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        child.wait_for(lambda screen: "outer=" in screen, timeout=30)
        before = termios.tcgetattr(child.fd)
        child.send(b"\n")
        after = modes_at_exit(child)
        status = child.finish(timeout=30)
        lines = child.text().splitlines()
    assert after == before
    assert status == 125, lines
    assert any(line.startswith("stockade: SANDBOX_UNAVAILABLE: ") for line in lines), lines
    assert "Traceback" not in "\n".join(lines)


# ---- the executor's part: a pty master read as a pipe ------------------------------------


def test_the_capture_holds_what_the_command_wrote_not_the_terminals_crlf():
    async def main():
        master, slave = os.openpty()
        os.close(slave)
        output = TerminalOutput(master)
        os.close(master)  # the stream reads its own duplicate
        try:
            pieces = [b"one\r\ntw", b"o\r", b"\nthree\r", b"", b""]
            captured = b"".join(output.as_written(piece) for piece in pieces)
            # Every slave end is closed: the master's EIO reads as the end.
            return captured, await output.receive_some()
        finally:
            await output.aclose()

    assert trio.run(main) == (b"one\ntwo\nthree\r", b"")

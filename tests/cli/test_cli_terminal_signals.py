"""The terminal's Ctrl-C and Ctrl-\\ reach the command, and only the command, as in a
shell (issue 38, item 1): under `stockade run` and `stockade exec` on a terminal, on
every backend. Under bwrap the runner's outer process shares the terminal's
foreground group with the command; it holds SIGINT and SIGQUIT blocked and the
launcher's filter stage unblocks them for the command (docs/backends.md, "The
terminal's signals"), so it no longer dies of the key and takes the sandbox with it.

Driven as a person drives them: a real pty (tests/pty_screen.py), keys sent to it.
"""

from __future__ import annotations

import signal
import sys
import time
import uuid
from pathlib import Path

import pytest

from ..support import require_backend
from .test_cli_run_shell import ENV, STOCKADE, backend_args, on_a_pty

BACKENDS = ("bwrap", "landlock", "danger-full-access")
VERBS = ("run", "exec")
PYTHON = sys.executable

# A handler whose cleanup takes a while (a killed sandbox would cut it short), then a
# status of its own. Ctrl-\ has a handler too: it must reach the command as well.
HANDLER = """
import pathlib, signal, sys, time
done = pathlib.Path(sys.argv[1])
def on_interrupt(signum, frame):
    time.sleep(0.5)
    done.write_text("cleaned up")
    print("cleanup-finished", flush=True)
    sys.exit(3)
def on_quit(signum, frame):
    print("got-quit", flush=True)
    sys.exit(4)
signal.signal(signal.SIGINT, on_interrupt)
signal.signal(signal.SIGQUIT, on_quit)
print("handler-ready", flush=True)
while True:
    time.sleep(0.1)
"""


def argv_for(verb: str, backend: str, *command: str) -> list[str]:
    """`stockade run -- COMMAND...` or `stockade exec -- COMMAND...` on `backend`."""
    return [STOCKADE, verb, *backend_args(backend), "--", *command]


@pytest.fixture
def handler_script(scratch: Path) -> Path:
    script = Path(scratch) / "handler.py"
    script.write_text(HANDLER)
    return script


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_c_reaches_a_handler_that_cleans_up(verb, backend, scratch, handler_script):
    done = Path(scratch) / f"done-{uuid.uuid4().hex[:8]}"
    argv = argv_for(verb, backend, PYTHON, str(handler_script), str(done))
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "handler-ready" in text, timeout=30)
        child.send(b"\x03")
        status = child.finish(timeout=30)
        screen = child.text()
    assert (status, done.exists()) == (3, True), screen
    assert done.read_text() == "cleaned up"
    assert "cleanup-finished" in screen
    assert "Traceback" not in screen


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_ctrl_backslash_reaches_the_command(verb, backend, scratch, handler_script):
    done = Path(scratch) / "unused"
    argv = argv_for(verb, backend, PYTHON, str(handler_script), str(done))
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "handler-ready" in text, timeout=30)
        child.send(b"\x1c")
        status = child.finish(timeout=30)
        screen = child.text()
    assert (status, "got-quit" in screen) == (4, True), screen


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_repl_survives_ctrl_c(verb, backend, scratch):
    """`stockade run python3`: Ctrl-C is the REPL's KeyboardInterrupt, and the next
    line typed is evaluated inside it, not by the shell outside."""
    argv = argv_for(verb, backend, PYTHON, "-q")
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: ">>>" in text, timeout=30)
        time.sleep(0.3)
        child.send(b"\x03")
        child.wait_for(lambda text: "KeyboardInterrupt" in text, timeout=30)
        child.send(b"print(6 * 7)\r")
        child.wait_for(lambda text: "\n42" in text, timeout=30)
        child.send(b"raise SystemExit(5)\r")
        status = child.finish(timeout=30)
    assert status == 5


TIOCSTI = """
import errno, fcntl, os, termios
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b"x")
        print(f"fd{fd}-injected")
    except OSError as e:
        print(f"fd{fd}-" + errno.errorcode[e.errno])
"""


@pytest.mark.parametrize("backend", ("bwrap", "landlock"))
def test_exec_on_a_terminal_cannot_type_into_it(backend, scratch):
    # exec's command holds the person's own terminal, in its session now (under bwrap
    # too): the launcher's seccomp filter refuses TIOCSTI, on every descriptor.
    require_backend(backend)
    argv = argv_for("exec", backend, PYTHON, "-c", TIOCSTI)
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        status = child.finish(timeout=30)
        lines = child.text().splitlines()
    assert status == 0, lines
    assert lines[:3] == ["fd0-EPERM", "fd1-EPERM", "fd2-EPERM"], lines


def test_unconfined_the_same_ioctl_types_into_the_terminal(scratch):
    """The control: the refusal above is the launcher's filter, not this kernel's (one
    that refuses TIOCSTI to everyone, dev.tty.legacy_tiocsti = 0, proves nothing)."""
    argv = argv_for("exec", "danger-full-access", PYTHON, "-c", TIOCSTI)
    with on_a_pty(argv, cwd=scratch, env=ENV) as child:
        status = child.finish(timeout=30)
        lines = child.text().splitlines()
    if "fd0-injected" not in child.text():
        pytest.skip(f"this kernel refuses TIOCSTI unconfined too: {lines[:3]}")
    assert status == 0, lines


@pytest.mark.parametrize("backend", ("bwrap", "landlock"))
def test_the_runner_holds_the_terminals_signals_the_command_does_not(backend, scratch):
    """What the command gets: SIGINT and SIGQUIT neither blocked nor ignored (a person's
    shell gives it those), on both verbs; the filter stage undid the runner's mask."""
    require_backend(backend)
    show = "grep -E '^Sig(Blk|Ign)' /proc/self/status"
    mask = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGQUIT - 1))
    for verb in VERBS:
        argv = argv_for(verb, backend, "/bin/sh", "-c", f"exec {show}")
        with on_a_pty(argv, cwd=scratch, env=ENV) as child:
            assert child.finish(timeout=30) == 0
            written = bytes(child.raw).decode().splitlines()  # the screen makes tabs spaces
        fields = dict(line.split(":\t") for line in written if ":\t" in line)
        assert int(fields["SigBlk"], 16) & mask == 0, (verb, fields)
        assert int(fields["SigIgn"], 16) & mask == 0, (verb, fields)


@pytest.mark.parametrize("backend", ("bwrap", "landlock"))
def test_ctrl_c_under_exec_stops_a_calling_scripts_loop(backend, scratch):
    # As in a shell: the loop's shell goes on only past a command that handled the key;
    # exec ends by the SIGINT that ended its command (bwrap would say exit 130).
    require_backend(backend)
    exec_words = f"{STOCKADE} exec --backend {backend} --"
    script = f'for i in 1 2 3; do {exec_words} sh -c "echo run$i; sleep 100"; done; echo loop-done'
    with on_a_pty(["/bin/bash", "-c", script], cwd=scratch, env=ENV) as child:
        child.wait_for(lambda text: "run1" in text, timeout=30)
        time.sleep(0.3)
        child.send(b"\x03")
        status = child.finish(timeout=30)
        screen = child.text()
    assert status == -signal.SIGINT, screen
    assert "run2" not in screen and "loop-done" not in screen


PROMPT = "prompt$ "


@pytest.mark.parametrize("backend", ("bwrap", "landlock"))
def test_ctrl_z_stops_an_exec_and_fg_continues_it(backend, scratch):
    """exec's command is in the shell's job now (bwrap no longer puts it in a session of
    its own): Ctrl-Z stops it with exec, no output comes while stopped, `fg` goes on,
    and Ctrl-C then ends the job as the shell's own command's would."""
    require_backend(backend)
    env = {**ENV, "PS1": PROMPT}
    shell = ["/bin/bash", "--norc", "--noprofile", "-i"]
    ticks = "for i in $(seq 1 300); do echo tick$i; sleep 0.1; done"
    with on_a_pty(shell, cwd=scratch, env=env, history=2000) as child:
        child.wait_for(lambda text: PROMPT.rstrip() in text, timeout=30)
        child.send(f"{STOCKADE} exec --backend {backend} -- sh -c '{ticks}'\r".encode())
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
    assert "status=130" in screen, screen

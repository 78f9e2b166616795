"""The approval prompts on a real terminal: what the screen shows is what would run.

Each test runs a prompt in a child process whose controlling terminal is a real
pseudo-terminal, reads the screen through the pyte terminal emulator (which acts
on `\\r`, erase-line, cursor moves and colours as a terminal does), answers by
typing into the pty, and checks the answer arrived. One test per prompt: the
terminal answerer, `stockade run --ask`, `stockade demo --interactive`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ..pty_screen import PtyChild
from ..support import require_backend

HOSTILE = "echo safe\r\x1b[2Krm -rf ~"
SHOWN = "  command:   echo safe\\r\\x1b[2Krm -rf ~"
PROMPT = "Allow this command once? [y/N]"
WARNING = "  warning:   the command holds 2 control or invisible characters"

# Earlier output that would hide a prompt printed after it: a two-row scroll region
# (the prompt's rows would scroll away inside it) and black on black.
HIDING = "\x1b[2;3r\x1b[30;40m"

ASK_CHILD = r"""
import sys
import trio
from stockade.approval._chain import ApprovalRequest
from stockade.approval.answerers import TerminalAnswerer
from stockade.vocab import ApprovalPolicy, SandboxMode

sys.stdout.write(sys.argv[3] + "hidden-by-earlier-output\n")
sys.stdout.flush()
request = ApprovalRequest(
    session_id="s1",
    command=sys.argv[1],
    justification=sys.argv[2],
    current_mode=SandboxMode.READ_ONLY,
    requested_mode=SandboxMode.WORKSPACE_WRITE,
    policy=ApprovalPolicy.ASK,
    reason="denied under read-only",
)
answer = trio.run(TerminalAnswerer().answer, request)
print("DECISION:" + answer.decision.value)
"""


def row_with(child: PtyChild, text: str) -> int:
    for number, line in enumerate(child.screen.display):
        if text in line:
            return number
    raise AssertionError(f"no row shows {text!r}:\n{child.text()}")


def assert_plainly_drawn(child: PtyChild, row: int) -> None:
    """The row's characters are drawn in the default colours (not hidden)."""
    line = child.screen.buffer[row]
    for column in range(len(child.screen.display[row].rstrip())):
        char = line[column]
        assert (char.fg, char.bg, char.reverse) == ("default", "default", False), (row, column)


@pytest.mark.parametrize(("typed", "decision"), [(b"y\n", "allowed-once"), (b"n\n", "rejected")])
def test_the_terminal_answerer_shows_every_character_and_takes_the_answer(typed, decision):
    argv = [sys.executable, "-c", ASK_CHILD, HOSTILE, "tidy\u202e up\nthe cache", HIDING]
    with PtyChild(argv) as child:
        screen = child.wait_for(lambda text: PROMPT in text, timeout=30)
        lines = screen.splitlines()
        # The emulator honoured the hiding output: the line printed after it is black on black.
        hidden = row_with(child, "hidden-by-earlier-output")
        assert child.screen.buffer[hidden][0].fg == "black"
        # The prompt is whole, escaped, and drawn plainly in spite of it.
        assert "stockade: the agent asks to run a command with wider file access, once." in lines
        assert SHOWN in lines
        assert "rm -rf ~" in screen and "echo safe\\r" in screen
        assert "  why:       (2 lines, shown one per row)" in lines
        assert "    1 | tidy\\u202e up" in lines and "    2 | the cache" in lines
        assert "  mode:      read-only -> workspace-write" in lines
        assert any(line.startswith(WARNING) for line in lines)
        for text in (SHOWN, "  mode:", PROMPT):
            assert_plainly_drawn(child, row_with(child, text))
        child.send(typed)
        child.wait_for(lambda text: "DECISION:" in text, timeout=30)
        assert child.finish() == 0
        assert f"DECISION:{decision}" in child.text().splitlines()


@pytest.mark.parametrize(("typed", "written"), [(b"y\n", True), (b"n\n", False)])
def test_stockade_run_ask_on_a_terminal(scratch, state_dir_outside, typed, written):
    require_backend("bwrap")
    target = Path(scratch) / "f"
    # The denied attempt's own output tries to hide what follows; the command holds
    # a carriage return and an erase-line that would show only "echo harmless".
    command = f"printf '\\033[30;40m'; echo hi > {target} #\r\x1b[2Kecho harmless"
    argv = [sys.executable, "-m", "stockade", "run", "--ask", "--mode", "read-only", command]
    env = {**os.environ, "STOCKADE_CONFIG": "", "STOCKADE_STATE_DIR": state_dir_outside}
    with PtyChild(argv, cwd=scratch, env=env) as child:
        screen = child.wait_for(lambda text: PROMPT in text, timeout=60)
        lines = screen.splitlines()
        # A person at a terminal reads a short line (the model's wording is for --json).
        assert "stockade: the sandbox refused a file write under read-only mode" in screen
        shown = f"  command:   printf '\\033[30;40m'; echo hi > {target} #\\r\\x1b[2Kecho harmless"
        assert shown in lines, screen
        assert "  mode:      read-only -> workspace-write" in lines
        assert any(line.startswith(WARNING) for line in lines)
        for text in (shown, PROMPT):
            assert_plainly_drawn(child, row_with(child, text))
        assert not target.exists()
        child.send(typed)
        status = child.finish()
        after = child.text()
    assert target.exists() is written
    # What the person allowed (or not) is in the session log the run names.
    (log,) = os.listdir(state_dir_outside)
    assert f"in session {log.removesuffix('.jsonl')} " in after
    decision = "allowed-once" if written else "rejected"
    assert f'"decision":"{decision}"' in Path(state_dir_outside, log).read_text()
    if written:
        assert status == 0 and "stockade: retrying once under workspace-write" in after
        assert target.read_text() == "hi\n"
    else:
        assert status != 0 and "stockade: not retried: the retry was rejected" in after


def test_stockade_demo_interactive_on_a_terminal(state_dir_outside):
    require_backend("bwrap")
    argv = [sys.executable, "-m", "stockade", "demo", "--interactive"]
    env = {**os.environ, "STOCKADE_STATE_DIR": state_dir_outside, "NO_COLOR": "1"}
    with PtyChild(argv, env=env, rows=80, history=2000) as child:
        first = child.wait_for(lambda text: PROMPT in text, timeout=60)
        assert "  command:   echo 'hello' > notes.txt" in first.splitlines()
        assert "  why:       save the notes the user asked for" in first.splitlines()
        child.send(b"y\n")
        second = child.wait_for(lambda text: text.count(PROMPT) == 2, timeout=60)
        assert "  command:   rm -f notes.txt" in second.splitlines()
        assert "  mode:      read-only -> danger-full-access" in second.splitlines()
        child.send(b"n\n")
        assert child.finish(timeout=120) == 0
        out = child.text()
    # The headings do not foretell the person's answers (the scripted run's do).
    assert "the user rejects" not in out and "scripted user" not in out
    assert "A wider request, asked of you" in out
    assert 'escalation granted once: this call ran under "workspace-write"' in out
    assert 'the user rejected escalating this command to "danger-full-access"' in out
    assert "approval/answered" in out

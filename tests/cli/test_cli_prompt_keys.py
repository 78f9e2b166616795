"""Ctrl-C at an approval prompt on a person's terminal (issue 38, items 2 and 5): the
`^C` the terminal echoed gets its line ended, nothing else is printed (no traceback),
and the verb exits 130; `stockade run --ask` offers the person's own command back to
them instead of saying an agent asks. Tested on a real pty (tests/pty_screen.py)."""

from __future__ import annotations

import re
from pathlib import Path

from ..support import require_backend
from .test_cli_run_shell import ENV, STOCKADE, on_a_pty

PROMPT = "Allow this command once? [y/N]"


def test_ctrl_c_at_the_run_ask_prompt_ends_its_line_and_exits_130(scratch, state_dir_outside):
    require_backend("bwrap")
    env = {**ENV, "STOCKADE_STATE_DIR": state_dir_outside}
    argv = [STOCKADE, "run", "--ask", "--mode", "read-only", "--root", scratch, "echo hi > f"]
    with on_a_pty(argv, env=env) as child:
        screen = child.wait_for(lambda text: PROMPT in text)
        assert (
            "stockade: the sandbox denied your command; it can run again with wider file "
            "access, once." in screen
        )
        assert "the agent asks" not in screen  # the person typed it
        child.send(b"\x03")
        status = child.finish()
        raw = bytes(child.raw)
    assert status == 130
    assert raw.endswith(b"[y/N] ^C\r\n"), raw[-200:]
    assert not (Path(scratch) / "f").exists()


def test_ctrl_c_at_the_demo_prompt_ends_quietly_with_130(state_dir_outside):
    require_backend("bwrap")
    env = {**ENV, "STOCKADE_STATE_DIR": state_dir_outside}
    with on_a_pty([STOCKADE, "demo", "--interactive"], env=env, rows=200) as child:
        screen = child.wait_for(lambda text: PROMPT in text, timeout=120)
        assert "stockade: the agent asks to run a command with wider file access" in screen
        child.send(b"\x03")
        status = child.finish()
        raw = bytes(child.raw)
        text = child.text()
    assert status == 130, text
    assert raw.endswith(b"[y/N] ^C\r\n"), raw[-300:]
    assert "Traceback" not in text
    # The demo's temporary project is gone with it.
    project = re.search(r"project: (\S+) \(temporary\)", text)
    assert project is not None, text
    assert not Path(project.group(1)).exists()

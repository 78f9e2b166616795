"""`stockade demo` end to end on the real sandbox: the README's main job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..support import require_backend


def test_demo_shows_the_whole_loop_and_leaves_a_replayable_log(state_dir_outside):
    tmp_path = Path(state_dir_outside)
    require_backend("bwrap")
    done = subprocess.run(
        [sys.executable, "-m", "stockade", "demo"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "STOCKADE_STATE_DIR": str(tmp_path)},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\033[" not in out  # no colour when not a terminal
    assert "[sandbox: file access denied under read-only mode]" in out
    assert 'escalation granted once: this call ran under "workspace-write"' in out
    assert 'the user rejected escalating this command to "danger-full-access"' in out
    assert "tick 3" in out
    assert "a second pre_step with nothing changed: None" in out
    assert "enforced by bwrap (full enforcement)" in out
    assert "The session log, replayed" in out and "approval/answered" in out
    (log,) = tmp_path.glob("*.jsonl")
    assert f"session log: {log}" in out
    replay = subprocess.run(
        [sys.executable, "-m", "stockade", "session", "show", str(log), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    assert '"policy_message"' in replay.stdout
    contexts = [line for line in log.read_text().splitlines() if '"context/policy"' in line]
    assert len(contexts) == 2  # one at the start, exactly one after the switches
    assert Path(log).stat().st_size > 0

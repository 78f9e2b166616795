"""A long build's output streams live (issue 37): `stockade run make` on a real
terminal (tests/pty_screen.py) shows each step's line as make prints it, well before
the build ends; the build passes, nothing is refused, the home is untouched. Both
backends, as root and as nobody (through `setpriv`, the installed command's public
copy when nobody cannot read this checkout)."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from ..cli.test_cli_run_shell import on_a_pty
from .support import Workflows

pytestmark = pytest.mark.nobody  # runs stockade as uid 65534 (tests/README.md)

STEPS = [f"step{n}" for n in range(1, 6)]
# Five steps, each a line and half a second's work (a compiler's pace), run one by one.
MAKEFILE = f'all: {" ".join(STEPS)}\n\nstep%:\n\t@echo "building $@"; sleep 0.5\n\t@touch $@.done\n'
NOBODY_IDS = ("--reuid=65534", "--regid=65534", "--clear-groups")


def argv_for(wf: Workflows) -> list[str]:
    """`stockade run --backend B make` as this user runs it."""
    if wf.who == "root":
        return [
            str(Path(sys.executable).with_name("stockade")),
            "run",
            "--backend",
            wf.backend,
            "make",
        ]
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is missing"
    return [
        setpriv,
        *NOBODY_IDS,
        "--",
        wf.python,
        "-m",
        "stockade",
        "run",
        "--backend",
        wf.backend,
        "make",
    ]


def test_a_long_builds_output_streams_live_on_a_terminal(wf: Workflows, place):
    wf.need("make")
    (place.root / "Makefile").write_text(MAKEFILE)
    place.hand_over()
    # No composition from the environment: the embedded default, as on a fresh machine.
    env = {**wf.environment(place), "STOCKADE_CONFIG": ""}
    arrived: dict[str, float] = {}
    with on_a_pty(argv_for(wf), cwd=place.root, env=env) as child:
        for step in STEPS:
            line = f"building {step}"
            child.wait_for(lambda screen, line=line: line in screen, timeout=60)
            arrived[step] = time.monotonic()
            if step == STEPS[0]:
                # Shown while the build still runs: the later steps are not done yet.
                assert not (place.root / f"{STEPS[-1]}.done").exists()
                assert not child.closed
        status = child.finish()
        screen = child.text()
    assert status == 0, screen
    # One at a time, as printed; not all together at the end.
    assert arrived[STEPS[-1]] - arrived[STEPS[0]] > 1.2, arrived
    assert "refused" not in screen and "[sandbox:" not in screen, screen
    for step in STEPS:
        done = place.root / f"{step}.done"
        assert done.is_file() and done.stat().st_uid == place.uid
    place.assert_home_untouched()

"""The terminal's Ctrl-C reaches the command, not the runner, for a person who is not
root too (issue 38, item 1): bwrap then runs unprivileged, in a user namespace, and
the mask its caller sets and the filter stage undoes must hold there as well. A
person on a real pty (tests/pty_screen.py), as uid 65534, on both backends and verbs.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from ..pty_screen import PtyChild
from ..support import IS_ROOT, require_backend
from .test_cli_terminal_signals import HANDLER, VERBS

pytestmark = pytest.mark.nobody  # runs stockade as uid 65534 (tests/README.md)

NOBODY = 65534

# What a person's shell gives a program, as nobody: the pty child (root) drops to
# uid 65534 first, then default dispositions and nothing blocked, then the argv.
AS_NOBODY = """
import os, signal, sys
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
signal.pthread_sigmask(signal.SIG_SETMASK, ())
for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE, signal.SIGTSTP):
    signal.signal(signum, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])
"""


@pytest.mark.skipif(not IS_ROOT, reason="needs root to become nobody")
@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("backend", ("bwrap", "landlock"))
def test_ctrl_c_reaches_a_handler_as_nobody(verb, backend, scratch, nobody_public):
    require_backend(backend)
    root = Path(scratch) / "project"
    root.mkdir()
    os.chown(root, NOBODY, NOBODY)
    os.chmod(scratch, 0o755)
    # run's session logs: nobody's own, outside the root it may write.
    state = Path(scratch) / "state"
    state.mkdir(mode=0o700)
    os.chown(state, NOBODY, NOBODY)
    script = root / "handler.py"
    script.write_text(HANDLER)
    done = root / f"done-{uuid.uuid4().hex[:8]}"
    python = nobody_public.python
    stockade = [python, "-m", "stockade", verb, "--backend", backend]
    argv = [python, "-c", AS_NOBODY, *stockade, "--", python, str(script), str(done)]
    env = {
        **os.environ,
        "STOCKADE_CONFIG": "",
        "HOME": "/",
        "PYTHONPATH": nobody_public.pythonpath,
        "PYTHONDONTWRITEBYTECODE": "1",
        "STOCKADE_STATE_DIR": str(state),
    }
    with PtyChild(argv, cwd=root, env=env) as child:
        child.wait_for(lambda text: "handler-ready" in text, timeout=30)
        child.send(b"\x03")
        status = child.finish(timeout=30)
        screen = child.text()
    assert (status, done.exists()) == (3, True), screen
    assert done.stat().st_uid == NOBODY
    assert "cleanup-finished" in screen

"""The `stockade` process's end (`entry.console`): the heap is frozen before the
interpreter exits, so the exit does not trace it again, while what the exit owes (atexit
hooks, weakref finalizers, flushed output, the status) still happens."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

# A temporary directory left to its finalizer, in a cycle a collection would be needed
# to free; `rules check` then runs as the console script runs it.
SCRIPT = """
import atexit, gc, sys, tempfile
kept = tempfile.TemporaryDirectory(prefix="stockade-exit-")
cycle = [kept]
cycle.append(cycle)
print(kept.name, flush=True)
del kept, cycle
atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0))
sys.argv = ["stockade", "rules", "check", "--", "git push --force"]
from stockade.entry import console
raise SystemExit(console())
"""


def test_the_console_script_is_console():
    (script,) = importlib.metadata.entry_points(group="console_scripts", name="stockade")
    assert script.value == "stockade.entry:console"


def test_the_exit_keeps_its_duties_with_the_heap_frozen(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 121, done.stderr  # force-push: a prompt rule
    lines = done.stdout.splitlines()
    assert lines[1].startswith("decision: prompt"), done.stdout
    assert lines[-1] == "frozen True", done.stdout
    assert not Path(lines[0]).exists()  # its finalizer ran at exit


def test_main_leaves_the_callers_collector_alone(capsys):
    import gc

    from stockade.entry import main

    before = gc.get_freeze_count()
    assert main(["rules", "check", "--", "true"]) == 0
    assert gc.get_freeze_count() == before
    assert capsys.readouterr().out.startswith("decision: none")

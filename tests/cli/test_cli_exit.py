"""The `stockade` process's end (`entry.console`): the heap is frozen before the
interpreter exits, so the exit does not trace it again, while what the exit owes (atexit
hooks, weakref finalizers, flushed output, the status) still happens."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ..support import require_backend

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


# A verb stood in for by one that says how it finds the collector: MODULE.NAME (the
# function the entry calls for it) is replaced, then the words run as the console
# script runs them.
COLLECTOR_SCRIPT = """
import gc, importlib, sys, weakref

class Cycle:
    pass

def report(*args, **kwargs):
    cycle = Cycle()
    cycle.me = cycle
    gone = []
    weakref.finalize(cycle, gone.append, True)
    del cycle
    made = [[] for _ in range(100_000)]  # enough new objects for the collector to run
    print(gc.isenabled(), gc.get_freeze_count() > 0, bool(gone), flush=True)
    raise SystemExit(0)

module, name = sys.argv[1].rsplit(".", 1)
setattr(importlib.import_module(module), name, report)
sys.argv = ["stockade", *sys.argv[2:]]
from stockade.entry import console
raise SystemExit(console())
"""

# Every verb the parser knows, with words that reach it, and the function that runs it.
VERBS = {
    "probe": ("stockade.cli.run_probe", ["probe"]),
    "cache": ("stockade.cli.run_cache", ["cache", "show"]),
    "rules": ("stockade.cli.run_rules_check", ["rules", "check", "--", "true"]),
    "demo": ("stockade.cli.run_demo", ["demo"]),
    "run": ("stockade.cli.run_command", ["run", "true"]),
    "mcp": ("stockade.mcp.run_mcp", ["mcp"]),
    "acp": ("stockade.acp.main.main", ["acp"]),
    "session show": ("stockade.cli.run_show", ["session", "show", "an-id"]),
    "session list": ("stockade.cli.run_list", ["session", "list"]),
    "session prune": ("stockade.cli.run_prune", ["session", "prune", "--older-than", "9d"]),
    "session undo": ("stockade.cli.run_undo", ["session", "undo", "an-id"]),
}


def _parser_verbs() -> set[str]:
    import argparse

    from stockade.cli import build_parser

    def verbs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    found = set()
    for name, sub in verbs(build_parser()).items():
        found |= {f"{name} {inner}" for inner in verbs(sub)} if name == "session" else {name}
    return found


def test_every_verb_is_in_the_collectors_table():
    assert _parser_verbs() == {*VERBS, "exec"}


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_verb_runs_with_the_collector_on_over_what_it_makes(verb, tmp_path):
    """What loaded is frozen, and the collector runs over what the verb makes: a verb
    that forgot to resume it would run for as long as it serves with none."""
    target, words = VERBS[verb]
    env = {**os.environ, "STOCKADE_STATE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", COLLECTOR_SCRIPT, target, *words],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True True True"


def test_exec_never_resumes_the_collector(tmp_path):
    """exec ends in an exec or os._exit: nothing is frozen, and a cycle it makes stays
    until the process ends."""
    done = subprocess.run(
        [sys.executable, "-c", COLLECTOR_SCRIPT, "stockade.cli.run_exec", "exec", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False False False"


def test_main_leaves_a_callers_collector_running(capsys):
    import gc

    from stockade.entry import main

    assert gc.isenabled()
    assert main(["rules", "check", "--", "true"]) == 0
    assert gc.isenabled()
    capsys.readouterr()


def test_an_exec_ends_as_one_only_once_its_command_is_cleaned_up(monkeypatch):
    """`ends_as_exec` (the console script's os._exit, which skips atexit hooks) holds
    only once run_holding has cleaned up: a way out before that (a Ctrl-C before it
    ignores SIGINT) keeps the atexit hook that removes the private temp directory."""
    from stockade.cli import _exec_wait, fastpath

    monkeypatch.setattr(fastpath, "_WAITED", [])

    def interrupted(argv, held, sweep, *, bwrap, done, env):
        raise KeyboardInterrupt

    monkeypatch.setattr(_exec_wait, "run_holding", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fastpath._execute(["true"], runner_is_argv0=True, wait=True)
    assert not fastpath.ends_as_exec()

    def ran(argv, held, sweep, *, bwrap, done, env):
        done()
        raise SystemExit(5)

    monkeypatch.setattr(_exec_wait, "run_holding", ran)
    with pytest.raises(SystemExit):
        fastpath._execute(["true"], runner_is_argv0=True, wait=True)
    assert fastpath.ends_as_exec()


# A Ctrl-C that reaches exec before run_holding ignores SIGINT (made here at its
# os.pipe, the first thing it does for bwrap).
INTERRUPTED = """
import sys
import stockade.cli._exec_wait as waiting

class Os:
    def __getattr__(self, name):
        import os
        return getattr(os, name)

    def pipe(self):
        raise KeyboardInterrupt

waiting.os = Os()
sys.argv = ["stockade", "exec", "--backend", "bwrap", "--", "true"]
from stockade.entry import console
raise SystemExit(console())
"""


def test_an_exec_interrupted_before_its_command_still_removes_its_temp_directory(tmp_path):
    require_backend("bwrap")
    # The command's private directory is made in $TMPDIR: a short one of this test's
    # own (the probe's sockets would not fit a path as long as tmp_path's).
    parent = Path(tempfile.mkdtemp(prefix="x-", dir="/tmp"))
    try:
        done = subprocess.run(
            [sys.executable, "-c", INTERRUPTED],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "TMPDIR": str(parent)},
            timeout=60,
        )
        assert done.returncode == 130, done.stderr
        assert list(parent.iterdir()) == []
    finally:
        shutil.rmtree(parent)

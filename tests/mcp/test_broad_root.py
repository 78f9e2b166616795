"""`stockade mcp` without `--root` takes the current directory; when that is `/` or
the caller's home, it refuses in one line and says how to choose (door 7). Naming
such a root with `--root` is the caller's choice and is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support import stockade
from .support import session_logs

REFUSED = "the workspace root would be"


@pytest.fixture
def home(scratch) -> Path:
    path = Path(scratch) / "home"
    path.mkdir()
    return path


def test_the_root_directory_by_default_is_refused(state_dir):
    done = stockade("mcp", cwd="/", env={"STOCKADE_STATE_DIR": str(state_dir)})
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and REFUSED in done.stderr, done.stderr
    assert "/, the whole disk" in done.stderr and "pass --root / to mean it" in done.stderr
    assert session_logs(state_dir) == []


@pytest.mark.parametrize("http", [False, True])
def test_the_home_directory_by_default_is_refused(http, home, state_dir):
    env = {"STOCKADE_STATE_DIR": str(state_dir), "HOME": str(home)}
    extra = ("--http", "127.0.0.1:0") if http else ()
    done = stockade("mcp", *extra, cwd=str(home), env=env)
    assert done.returncode == 2, done
    assert done.stderr == (
        f"stockade: {REFUSED} {home}, your home directory (the current directory), which a "
        "workspace-write command could then write throughout; run from a project "
        f"directory, or pass --root {home} to mean it\n"
    )
    assert session_logs(state_dir) == []


def test_a_home_named_explicitly_is_served(home, state_dir):
    env = {"STOCKADE_STATE_DIR": str(state_dir), "HOME": str(home)}
    done = stockade("mcp", "--root", str(home), cwd=str(home), env=env)
    # stdin is /dev/null: the one stdio session opens, sees EOF and ends.
    assert done.returncode == 0, done.stderr
    assert REFUSED not in done.stderr and f"root {home}" in done.stderr
    assert len(session_logs(state_dir)) == 1


def test_the_root_directory_named_explicitly_is_not_refused_as_broad(state_dir):
    done = stockade("mcp", "--root", "/", cwd="/", env={"STOCKADE_STATE_DIR": str(state_dir)})
    # Accepted as a root; the harness still refuses a session log inside it.
    assert REFUSED not in done.stderr
    assert "the session log directory" in done.stderr, done.stderr


def test_a_directory_below_home_by_default_is_served(home, state_dir):
    project = home / "project"
    project.mkdir()
    env = {"STOCKADE_STATE_DIR": str(state_dir), "HOME": str(home)}
    done = stockade("mcp", cwd=str(project), env=env)
    assert done.returncode == 0, done.stderr
    assert f"root {project}" in done.stderr

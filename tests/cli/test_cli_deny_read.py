"""`stockade exec` and `run` hide deny_read's defaults with no composition: judged by
what the command printed and wrote; `run --json` says read_denied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support import require_backend, stockade


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request):
    require_backend(request.param)
    return request.param


@pytest.fixture
def home(scratch) -> Path:
    home = Path(scratch) / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("SECRET-aws\n")
    return home


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_exec_and_run_hide_the_defaults(backend, scratch, home, mode):
    root = Path(scratch) / "project"
    root.mkdir()
    (root / ".env").write_text("SECRET-env\n")
    env = {"HOME": str(home)}
    command = f"cat {home}/.aws/credentials .env; cat .env > copy 2>/dev/null; true"
    ran = stockade(
        "exec", "--backend", backend, "--mode", mode, "--", "sh", "-c", command, cwd=root, env=env
    )
    by_run = stockade(
        "run", "--json", "--backend", backend, "--mode", mode, command, cwd=root, env=env
    )
    assert by_run.returncode == 0, by_run.stderr
    facts = json.loads(by_run.stdout)
    for output in (ran.stdout + ran.stderr, facts["stdout"] + facts["stderr"]):
        assert "SECRET" not in output and "Permission denied" in output
    assert facts["denied"] and facts["read_denied"]
    assert "danger-full-access" in facts["denial"]
    copy = root / "copy"
    assert not copy.exists() or "SECRET" not in copy.read_text()


def test_danger_full_access_reads_them(backend, scratch, home):
    done = stockade(
        "run",
        "--json",
        "--mode",
        "danger-full-access",
        f"cat {home}/.aws/credentials",
        cwd=scratch,
        env={"HOME": str(home)},
    )
    assert json.loads(done.stdout)["stdout"] == "SECRET-aws\n"


def test_probe_shows_the_list_and_what_it_hides_here(scratch, home):
    require_backend("bwrap")
    env = {"HOME": str(home)}
    text = stockade("probe", cwd=scratch, env=env)
    assert text.returncode == 0, text.stderr
    assert "deny_read" in text.stdout and "~/.ssh" in text.stdout
    assert f"{home}/.aws" in text.stdout
    report = json.loads(stockade("probe", "--json", cwd=scratch, env=env).stdout)
    assert f"{home}/.aws" in report["deny_read"]["hidden_here"]
    assert ".env" in report["deny_read"]["patterns"]

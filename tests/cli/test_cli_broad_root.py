"""A root of `/` or exactly the home directory is never taken implicitly (issue 21, door 7).

`--root` defaults to the current directory, so `cd / && stockade run 'touch /etc/x'`
would make workspace-write danger-full-access by another name. Each face refuses such a
root unless the caller names it on purpose; judged by the host's disk.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from stockade import ConfigError, open_harness
from stockade.acp.core import ClientError, _checked_root
from stockade.trust import broad_root_refusal

from ..harness.conftest import composition
from ..support import require_backend, stockade


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request):
    require_backend(request.param)
    return request.param


@pytest.fixture
def outside():
    """A directory outside every default writable root (not under /tmp or $HOME)."""
    path = tempfile.mkdtemp(prefix="stockade-broad-", dir="/var/tmp")
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def home(outside):
    """A throwaway home directory, made the caller's HOME for the command."""
    path = outside / "home"
    path.mkdir()
    return path


# -- the pure decision ---------------------------------------------------------------


def test_the_rule_refuses_only_an_implicit_disk_or_home():
    assert "whole disk" in broad_root_refusal("/", explicit=False, home="/home/me")
    assert "home directory" in broad_root_refusal("/home/me", explicit=False, home="/home/me")
    assert broad_root_refusal("/", explicit=True, home="/home/me") is None
    assert broad_root_refusal("/home/me/src", explicit=False, home="/home/me") is None
    assert broad_root_refusal("/home", explicit=False, home="/home/me") is None
    assert broad_root_refusal("/home/me", explicit=False, home=None) is None
    said = broad_root_refusal("/", explicit=False, home=None, naming="cwd={root!r}")
    assert said.endswith("or pass cwd='/' to mean it")


# -- the command line ----------------------------------------------------------------


def test_control_an_explicit_disk_root_really_writes_outside(outside):
    """The attack is real: with `/` as the root a workspace-write command writes
    anywhere (here a directory no default root covers). bwrap only: the Landlock
    launcher refuses a root that holds stockade's own installation."""
    require_backend("bwrap")
    target = outside / "planted"
    done = stockade("run", "--backend", "bwrap", "--root", "/", f"touch {target}", cwd="/")
    assert done.returncode == 0, done.stderr
    assert target.exists()


@pytest.mark.parametrize("verb", ["run", "exec"])
def test_the_current_directory_as_the_disk_is_refused(backend, outside, verb):
    target = outside / "planted"
    words = ["touch", str(target)] if verb == "exec" else [f"touch {target}"]
    done = stockade(verb, "--backend", backend, "--mode", "workspace-write", "--", *words, cwd="/")
    assert done.returncode == 2
    assert not target.exists()
    assert done.stderr.count("\n") == 1, done.stderr
    assert "the workspace root would be /, the whole disk" in done.stderr
    assert "pass --root / to mean it" in done.stderr


@pytest.mark.parametrize("verb", ["run", "exec"])
def test_the_home_directory_as_the_current_directory_is_refused(backend, home, verb):
    target = home / ".bashrc"
    words = ["touch", str(target)] if verb == "exec" else [f"touch {target}"]
    done = stockade(verb, "--backend", backend, "--", *words, cwd=home, env={"HOME": str(home)})
    assert done.returncode == 2, done.stderr
    assert not target.exists()
    assert f"{home}, your home directory" in done.stderr


def test_run_json_says_it_as_one_error_object(backend):
    done = stockade("run", "--json", "--backend", backend, "true", cwd="/")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "USAGE"


def test_read_only_from_the_disk_still_runs_but_ask_could_widen_it(backend):
    read = stockade("run", "--backend", backend, "--mode", "read-only", "echo ok", cwd="/")
    assert (read.returncode, read.stdout) == (0, "ok\n"), read.stderr
    asking = stockade("run", "--backend", backend, "--mode", "read-only", "--ask", "true", cwd="/")
    assert asking.returncode == 2
    assert "whole disk" in asking.stderr


def test_a_composition_fallback_root_is_explicit(outside):
    require_backend("bwrap")
    config = outside / "stockade.yml"
    config.write_text(
        "- {id: sandbox, name: stockade.sandbox.local, config: {backend: bwrap}}\n"
        "- {id: bash, name: stockade.bash.sandbox, config: {workspace_root: /}}\n"
    )
    target = outside / "named"
    done = stockade("run", "--config", str(config), f"touch {target}", cwd="/")
    assert done.returncode == 0, done.stderr
    assert target.exists()


# -- the library and the ACP agent ---------------------------------------------------


async def test_a_session_with_no_cwd_in_the_home_directory_is_refused(
    home, monkeypatch, state_dir_outside
):
    monkeypatch.chdir(home)
    monkeypatch.setenv("HOME", str(home))
    async with open_harness(composition(state_dir_outside)) as harness:
        with pytest.raises(ConfigError, match="your home directory"):
            await harness.open_session()
        assert os.listdir(state_dir_outside) == []  # no session log was made
        session = await harness.open_session(cwd=home)  # named on purpose
        assert session.cwd == str(home)


def test_the_acp_agent_refuses_the_disk_and_home_as_a_session_cwd(home, monkeypatch):
    monkeypatch.setenv("HOME", str(home))
    for cwd in ("/", str(home)):
        with pytest.raises(ClientError, match="the session's cwd"):
            _checked_root(cwd)
        assert _checked_root(cwd, (cwd,)) == cwd  # --allow-root
    assert _checked_root(str(home.parent)) == str(home.parent)

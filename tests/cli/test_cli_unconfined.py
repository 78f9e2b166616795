"""`stockade run` and `stockade exec` with a composition that cannot confine.

Such a composition (`stockade.bash.local`, or no executor entry at all) has one true
mode: danger-full-access, its default. A confining mode asked for with --mode exits
125 with SANDBOX_UNAVAILABLE and runs nothing. The composition lies in a private
directory beside the workspace, both under /var/tmp (outside every writable root).
"""

from __future__ import annotations

import json

import pytest

from ..support import stockade
from .test_cli_config import private_dir, write_config

COMPOSITIONS = {
    "bash-local": (
        "- {id: bash, name: stockade.bash.local}\n",
        "its executor 'stockade.bash.local' does not confine",
    ),
    "provider-only": (
        "- {id: sandbox, name: stockade.sandbox.local}\n",
        "it mounts no executor entry",
    ),
}
FIX = (
    "To confine commands, mount 'stockade.bash.sandbox' as the executor beside a "
    "'stockade.sandbox.local' provider entry"
)


@pytest.fixture(params=sorted(COMPOSITIONS))
def unconfined(request, scratch):
    body, why = COMPOSITIONS[request.param]
    workspace = private_dir(scratch, "work")
    config = write_config(private_dir(scratch, "conf"), body)
    return workspace, config, why


def one_refusal_line(done, mode: str, why: str) -> None:
    assert done.returncode == 125, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"stockade: SANDBOX_UNAVAILABLE: sandbox mode {mode!r} cannot be honoured: "
        "this composition runs commands without a sandbox"
    ), line
    assert why in line and FIX in line


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_run_refuses_a_confining_mode_and_runs_nothing(unconfined, mode):
    workspace, config, why = unconfined
    done = stockade("run", "--config", str(config), "--mode", mode, "echo hi > f", cwd=workspace)
    one_refusal_line(done, mode, why)
    assert done.stdout == ""
    assert not (workspace / "f").exists()


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_run_json_refusal_is_one_error_object(unconfined, mode):
    workspace, config, why = unconfined
    done = stockade(
        "run", "--config", str(config), "--json", "--mode", mode, "echo hi > f", cwd=workspace
    )
    assert done.returncode == 125, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "SANDBOX_UNAVAILABLE"
    assert error["detail"].startswith(f"sandbox mode {mode!r} cannot be honoured")
    assert why in error["detail"] and FIX in error["detail"]
    assert not (workspace / "f").exists()


def test_run_ask_refuses_before_anything_runs(unconfined):
    workspace, config, why = unconfined
    done = stockade(
        "run", "--config", str(config), "--ask", "--mode", "read-only", "echo hi > f", cwd=workspace
    )
    one_refusal_line(done, "read-only", why)
    assert not (workspace / "f").exists()


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
def test_exec_refuses_a_confining_mode_and_runs_nothing(unconfined, mode):
    workspace, config, why = unconfined
    done = stockade(
        "exec", "--config", str(config), "--mode", mode, "--", "touch", "f", cwd=workspace
    )
    one_refusal_line(done, mode, why)
    assert done.stdout == ""
    assert not (workspace / "f").exists()


def test_the_default_is_danger_full_access_and_runs(unconfined):
    workspace, config, _why = unconfined
    ran = stockade("run", "--config", str(config), "--json", "echo hi > f", cwd=workspace)
    assert ran.returncode == 0, ran.stderr
    facts = json.loads(ran.stdout)
    assert (facts["mode"], facts["backend"], facts["denied"]) == (
        "danger-full-access",
        "none",
        False,
    )
    assert (workspace / "f").read_text() == "hi\n"
    executed = stockade("exec", "--config", str(config), "--", "touch", "g", cwd=workspace)
    assert executed.returncode == 0, executed.stderr
    assert (workspace / "g").exists()
    explicit = stockade(
        "run", "--config", str(config), "--mode", "danger-full-access", "echo ok", cwd=workspace
    )
    assert (explicit.returncode, explicit.stdout) == (0, "ok\n"), explicit.stderr


def test_probe_says_first_that_commands_run_without_a_sandbox(unconfined, scratch):
    """A backend usable here says nothing of whether the composition's commands get it:
    probe's first line (and `commands` in --json) says they run unconfined, and why."""
    workspace, config, why = unconfined
    text = stockade("probe", "--config", str(config), cwd=workspace)
    if "executor entry" not in why:
        # `stockade.bash.local` with no provider entry: nothing to probe, and its one
        # error line says what that means for the commands.
        assert text.returncode == 125, text.stdout + text.stderr
        (line,) = text.stderr.splitlines()
        assert line.startswith("stockade: SANDBOX_UNAVAILABLE: the composition mounts no")
        assert f"its commands run WITHOUT a sandbox ({why}" in line
        assert "they default to danger-full-access" in line and line.endswith(FIX)
        reply = stockade("probe", "--config", str(config), "--json", cwd=workspace)
        assert "run WITHOUT a sandbox" in json.loads(reply.stdout)["error"]["detail"]
        return
    assert text.returncode in (0, 125), text.stderr
    first = text.stdout.splitlines()[0]
    assert first.startswith("commands: run WITHOUT a sandbox, whatever is usable below (")
    assert why in first and "they default to danger-full-access" in first
    assert "mount 'stockade.bash.sandbox' as the executor" in first
    reply = stockade("probe", "--config", str(config), "--json", cwd=workspace)
    commands = json.loads(reply.stdout)["commands"]
    assert commands["confined"] is False
    assert commands["default_mode"] == "danger-full-access"
    assert why in commands["unconfined"]
    # The same host and backend under a composition that confines: said so.
    confining = write_config(
        private_dir(scratch, "confining"),
        "- {id: sandbox, name: stockade.sandbox.local}\n"
        "- {id: bash, name: stockade.bash.sandbox}\n",
    )
    confined = stockade("probe", "--config", str(confining), "--json", cwd=workspace)
    assert json.loads(confined.stdout)["commands"] == {
        "confined": True,
        "default_mode": "workspace-write",
        "unconfined": None,
    }

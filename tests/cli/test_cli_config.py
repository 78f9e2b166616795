"""`--config` and $STOCKADE_CONFIG steer run, exec and probe; ./stockade.yml is never
loaded implicitly (the trust base, docs/security.md).

A composition that loosens confinement (runner_command, bwrap_path,
allow_unprotected_installation) is honoured only from a file outside the workspace
and the temp directories, so those tests keep it in a private directory beside the
workspace, both under /var/tmp (see the `scratch` fixture).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stockade.testing import PASS_THROUGH

from ..support import require_backend, stockade

READ_ONLY_BWRAP = (
    "- {id: sandbox, name: stockade.sandbox.local, config: {backend: bwrap}}\n"
    "- {id: bash, name: stockade.bash.sandbox, config: {mode: read-only}}\n"
)
IMPLICIT_FIX = (
    "Pass --config FILE (or set STOCKADE_CONFIG) naming a composition outside the "
    "workspace and the temp directories"
)


def write_config(directory: Path, body: str, name: str = "stockade.yml") -> Path:
    path = directory / name
    path.write_text(body)
    path.chmod(0o644)
    return path


def private_dir(parent: str | Path, name: str) -> Path:
    """A directory only the caller may write (whatever the umask)."""
    path = Path(parent) / name
    path.mkdir(mode=0o700)
    path.chmod(0o700)
    return path


def fake_runner(directory: Path, leaves: Path | None = None) -> Path:
    """A pass-through runner_command; `leaves`: a file each run of it creates."""
    runner = directory / "fake-runner"
    touch = f"touch {leaves}\n" if leaves is not None else ""
    runner.write_text(PASS_THROUGH.replace("\n", f"\n{touch}", 1))
    runner.chmod(0o755)
    return runner


def test_config_runner_command_and_default_mode_reach_run_exec_and_probe(scratch):
    # The workspace (the cwd) and the composition's directory are siblings: the
    # composition lies outside every writable root, so its runner_command is honoured.
    workspace = private_dir(scratch, "work")
    trusted = private_dir(scratch, "conf")
    leaves = trusted / "runner-ran"
    runner = fake_runner(trusted, leaves=leaves)
    config = write_config(
        trusted,
        "- id: sandbox\n"
        "  name: stockade.sandbox.local\n"
        f"  config: {{runner_command: {runner}, runner_failure_signatures: ['FAKE:']}}\n"
        "- id: bash\n"
        "  name: stockade.bash.sandbox\n"
        "  config: {mode: read-only}\n",
        name="custom.yml",
    )
    ran = stockade("run", "--config", str(config), "--json", "echo via-fake", cwd=workspace)
    assert ran.returncode == 0, ran.stderr
    facts = json.loads(ran.stdout)
    assert (facts["backend"], facts["mode"], facts["stdout"]) == (
        "runner-command",
        "read-only",
        "via-fake\n",
    )
    assert leaves.exists()  # the fake runner ran the command
    leaves.unlink()
    executed = stockade("exec", "--config", str(config), "--", "echo", "exec-fake", cwd=workspace)
    assert (executed.returncode, executed.stdout) == (0, "exec-fake\n"), executed.stderr
    assert leaves.exists()
    probed = stockade("probe", "--json", cwd=workspace, env={"STOCKADE_CONFIG": str(config)})
    assert probed.returncode == 0, probed.stderr
    assert json.loads(probed.stdout)["selected"] == "runner-command"


@pytest.mark.parametrize(
    "verb", [("run", "touch f"), ("exec", "--", "touch", "f"), ("probe",)], ids=lambda v: v[0]
)
def test_a_stockade_yml_in_the_cwd_is_never_loaded_implicitly(scratch, verb):
    config = write_config(Path(scratch), READ_ONLY_BWRAP)
    done = stockade(*verb, cwd=scratch, env={"STOCKADE_CONFIG": ""})
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"stockade: {config} lies in the current directory")
    assert lines[0].endswith(IMPLICIT_FIX)
    assert "Traceback" not in done.stderr
    assert not (Path(scratch) / "f").exists()


def test_an_explicit_stockade_yml_in_the_cwd_is_used_and_kept_read_only(scratch):
    require_backend("bwrap")
    config = write_config(Path(scratch), READ_ONLY_BWRAP)
    done = stockade("run", "--config", "./stockade.yml", "--json", "echo hi > f", cwd=scratch)
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert (facts["mode"], facts["backend"], facts["denied"]) == ("read-only", "bwrap", True)
    assert not (Path(scratch) / "f").exists()
    # A flag still wins over the composition.
    done = stockade(
        "run",
        "--config",
        "./stockade.yml",
        "--json",
        "--mode",
        "workspace-write",
        "echo hi > f",
        cwd=scratch,
    )
    assert json.loads(done.stdout)["denied"] is False
    assert (Path(scratch) / "f").exists()
    # The composition lies in the workspace: bwrap keeps it read-only there.
    tamper = "echo '- {id: bash, name: stockade.bash.local}' > stockade.yml"
    explicit = ("--config", "./stockade.yml", "--mode", "workspace-write")
    ran = stockade("run", *explicit, tamper, cwd=scratch)
    executed = stockade("exec", *explicit, "--", "sh", "-c", tamper, cwd=scratch)
    for done in (ran, executed):
        assert "Read-only file system" in done.stderr, done.stderr
    assert executed.returncode != 0
    assert config.read_text() == READ_ONLY_BWRAP


def test_an_explicit_config_in_the_workspace_is_kept_read_only_under_landlock(scratch):
    """The namespaced tier binds it read-only (and deny_read hides it) as bwrap does:
    the call runs, and cannot change it."""
    require_backend("landlock")
    body = READ_ONLY_BWRAP.replace("backend: bwrap", "backend: landlock")
    config = write_config(Path(scratch), body)
    for verb, *rest in (
        ("run", "touch f; echo evil >> stockade.yml"),
        ("exec", "--", "sh", "-c", "touch f; echo evil >> stockade.yml"),
    ):
        explicit = ("--config", "./stockade.yml", "--mode", "workspace-write")
        done = stockade(verb, *explicit, *rest, cwd=scratch)
        assert done.returncode != 0, done.stderr
        assert "Permission denied" in done.stderr or "Read-only" in done.stderr, done.stderr
        assert (Path(scratch) / "f").exists()
        (Path(scratch) / "f").unlink()
        assert config.read_text() == body


@pytest.mark.parametrize("where", ["workspace", "temp"])
@pytest.mark.parametrize("key", ["runner_command", "bwrap_path", "allow_unprotected_installation"])
def test_a_config_a_command_could_write_may_not_loosen_confinement(scratch, tmp_path, where, key):
    trusted = private_dir(scratch, "conf")
    leaves = trusted / "runner-ran"
    runner = fake_runner(trusted, leaves=leaves)
    value = {"allow_unprotected_installation": "true"}.get(key, str(runner))
    home = Path(scratch) if where == "workspace" else tmp_path
    config = write_config(
        home,
        f"- {{id: sandbox, name: stockade.sandbox.local, config: {{{key}: {value}}}}}\n"
        "- {id: bash, name: stockade.bash.sandbox}\n",
        name="custom.yml",
    )
    for verb, *rest in (("run", "touch f"), ("exec", "--", "touch", "f"), ("probe",)):
        done = stockade(verb, "--config", str(config), *rest, cwd=scratch)
        assert done.returncode == 2, done.stderr
        assert done.stdout == "" and "Traceback" not in done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"stockade: the composition file {config}")
        assert f"so its {key} is not honoured" in line
        assert "move the file outside the workspace and the temp directories" in line
    assert not (Path(scratch) / "f").exists()
    assert not leaves.exists()


def test_opt_out_composition_runs_unconfined(scratch):
    config = write_config(Path(scratch), "- {id: bash, name: stockade.bash.local}\n")
    outside = Path(scratch) / "outside"
    outside.mkdir()
    done = stockade(
        "run",
        "--config",
        str(config),
        "--json",
        "--root",
        str(outside),
        f"touch {scratch}/free",
        cwd=scratch,
    )
    facts = json.loads(done.stdout)
    assert (facts["backend"], facts["mode"]) == ("none", "danger-full-access")
    assert (Path(scratch) / "free").exists()


def test_a_broken_config_reports_every_mistake_with_its_position(scratch):
    config = write_config(
        Path(scratch),
        "- id: bash\n  name: stockade.bash.sandbox\n  config: {mode: yolo, colour: red}\n",
    )
    done = stockade("run", "--config", str(config), "true", cwd=scratch)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "stockade.yml:3:" in done.stderr
    assert "allowed: read-only, workspace-write, danger-full-access" in done.stderr
    assert "unknown key 'colour'" in done.stderr
    assert "needs a sandbox provider" in done.stderr


def test_missing_explicit_config_is_a_clear_error(scratch):
    done = stockade("exec", "--config", "nope.yml", "--", "true", cwd=scratch)
    assert done.returncode == 2
    assert "nope.yml" in done.stderr and "does not exist" in done.stderr

"""`--config`, $STOCKADE_CONFIG and ./stockade.yml steer run, exec and probe."""

from __future__ import annotations

import json
from pathlib import Path

from .support import require_backend, stockade

PASS_THROUGH = '#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift\nexec "$@"\n'


def write_config(directory: Path, body: str, name: str = "stockade.yml") -> Path:
    path = directory / name
    path.write_text(body)
    return path


def test_config_runner_command_and_default_mode_reach_run_exec_and_probe(scratch):
    here = Path(scratch)
    runner = here / "fake-runner"
    runner.write_text(PASS_THROUGH)
    runner.chmod(0o755)
    config = write_config(
        here,
        "- id: sandbox\n"
        "  name: stockade.sandbox.local\n"
        f"  config: {{runner_command: {runner}, runner_failure_signatures: ['FAKE:']}}\n"
        "- id: bash\n"
        "  name: stockade.bash.sandbox\n"
        "  config: {mode: read-only}\n",
        name="custom.yml",
    )
    ran = stockade("run", "--config", str(config), "--json", "echo via-fake", cwd=scratch)
    facts = json.loads(ran.stdout)
    assert (facts["backend"], facts["mode"], facts["stdout"]) == (
        "runner-command",
        "read-only",
        "via-fake\n",
    )
    executed = stockade("exec", "--config", str(config), "--", "echo", "exec-fake", cwd=scratch)
    assert executed.stdout == "exec-fake\n"
    probed = stockade("probe", "--json", cwd=scratch, env={"STOCKADE_CONFIG": str(config)})
    assert json.loads(probed.stdout)["selected"] == "runner-command"


def test_stockade_yml_in_the_cwd_is_used(scratch):
    require_backend("bwrap")
    write_config(
        Path(scratch),
        "- {id: sandbox, name: stockade.sandbox.local, config: {backend: bwrap}}\n"
        "- {id: bash, name: stockade.bash.sandbox, config: {mode: read-only}}\n",
    )
    done = stockade("run", "--json", "echo hi > f", cwd=scratch)
    facts = json.loads(done.stdout)
    assert (facts["mode"], facts["backend"], facts["denied"]) == ("read-only", "bwrap", True)
    assert not (Path(scratch) / "f").exists()
    # A flag still wins over the composition.
    done = stockade("run", "--json", "--mode", "workspace-write", "echo hi > f", cwd=scratch)
    assert json.loads(done.stdout)["denied"] is False
    assert (Path(scratch) / "f").exists()


def test_opt_out_composition_runs_unconfined(scratch):
    write_config(Path(scratch), "- {id: bash, name: stockade.bash.local}\n")
    outside = Path(scratch) / "outside"
    outside.mkdir()
    done = stockade("run", "--json", "--root", str(outside), f"touch {scratch}/free", cwd=scratch)
    facts = json.loads(done.stdout)
    assert (facts["backend"], facts["mode"]) == ("none", "danger-full-access")
    assert (Path(scratch) / "free").exists()


def test_a_broken_config_reports_every_mistake_with_its_position(scratch):
    write_config(
        Path(scratch),
        "- id: bash\n  name: stockade.bash.sandbox\n  config: {mode: yolo, colour: red}\n",
    )
    done = stockade("run", "true", cwd=scratch)
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

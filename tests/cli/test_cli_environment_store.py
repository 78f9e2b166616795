"""`stockade exec`, `run` and `probe` with a postgres session store named: the store's
credentials never reach the command, whatever the composition's `env:` says (issue 24).
Nothing here connects to the store; judged by what `env` printed inside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support import require_backend, stockade
from .test_cli_environment import seen

PASSWORD = "cli-store-password-1234"
DSN = f"host=127.0.0.1 port=5999 user=log dbname=log password={PASSWORD}"
HOST = {
    "LOGSTORE": DSN,  # what `dsn: !env LOGSTORE` reads
    "PGPASSWORD": "cli-pgpassword",
    "MY_NOTE": PASSWORD,  # the store's password under a name nothing excludes
    "ENVTEST_ORDINARY": "kept",
}


def composition(tmp_path: Path, backend: str, env: str) -> str:
    path = tmp_path / "stockade.yml"
    path.write_text(
        "- id: sandbox\n"
        "  name: stockade.sandbox.local\n"
        f"  config: {{backend: {backend}}}\n"
        "- id: bash\n"
        "  name: stockade.bash.sandbox\n"
        f"  config: {{env: {env}}}\n"
        "- id: log\n"
        "  name: stockade.session.log\n"
        "  config: {store: postgres, dsn: !env LOGSTORE}\n"
    )
    return str(path)


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_exec_and_run_never_pass_the_stores_credentials(backend, scratch, tmp_path):
    require_backend(backend)
    config = composition(tmp_path, backend, "{keep_default_excludes: false}")
    ran = stockade("exec", "--config", config, "--", "env", "-0", cwd=scratch, env=HOST)
    assert ran.returncode == 0, ran.stderr
    by_run = stockade("run", "--json", "--config", config, "env -0", cwd=scratch, env=HOST)
    assert by_run.returncode == 0, by_run.stderr
    facts = json.loads(by_run.stdout)
    for stdout in (ran.stdout, facts["stdout"]):
        inside = seen(stdout)
        assert inside["ENVTEST_ORDINARY"] == "kept"
        assert not {"LOGSTORE", "PGPASSWORD", "MY_NOTE"} & set(inside)
        assert PASSWORD not in stdout and "cli-pgpassword" not in stdout
    assert {"LOGSTORE", "PGPASSWORD", "MY_NOTE"} <= set(facts["env_dropped"])


def test_probe_shows_them_and_a_set_naming_one_is_refused(scratch, tmp_path):
    require_backend("bwrap")
    config = composition(tmp_path, "bwrap", "{keep_default_excludes: false}")
    probe = stockade("probe", "--config", config, env=HOST)
    assert probe.returncode == 0, probe.stderr
    assert "always dropped, whatever the policy: STOCKADE_* PGPASSWORD" in probe.stdout
    assert PASSWORD not in probe.stdout
    environment = json.loads(stockade("probe", "--json", "--config", config, env=HOST).stdout)[
        "environment"
    ]
    assert "PGPASSWORD" in environment["always_dropped"] and environment["withheld_values"] == 2
    # A DSN with no password of its own (the password from PGPASSWORD): withheld whole,
    # without loading the store's module to parse it.
    bare = {**HOST, "LOGSTORE": "host=127.0.0.1 port=5999 user=log dbname=log"}
    environment = json.loads(stockade("probe", "--json", "--config", config, env=bare).stdout)[
        "environment"
    ]
    assert "PGPASSWORD" in environment["always_dropped"] and environment["withheld_values"] == 1
    refused = composition(tmp_path, "bwrap", "{set: {PGPASSWORD: mine}}")
    done = stockade("exec", "--config", refused, "--", "true", cwd=scratch, env=HOST)
    assert done.returncode != 0
    assert "env.set may not give a command the harness's own secrets" in done.stderr
    assert "PGPASSWORD" in done.stderr and PASSWORD not in done.stderr

"""`stockade exec`, `run` and `probe` and the environment policy: the defaults without
a composition, a composition's `env:`, judged by what `env` printed inside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stockade.sandbox import tool_caches

from ..support import require_backend, stockade

SECRETS = {
    "OPENAI_API_KEY": "sk-cli-openai",
    "PGPASSWORD": "pg-cli-password",
    "AWS_SECRET_ACCESS_KEY": "aws-cli-secret",
    "STORE_DSN": "postgresql://u:dsn-cli-pw@h/db",
    "SSH_AUTH_SOCK": "/run/agent.sock",
}
HOST = {**SECRETS, "ENVTEST_ORDINARY": "kept"}


def seen(stdout: str) -> dict[str, str]:
    pairs = [item.split("=", 1) for item in stdout.split("\0") if "=" in item]
    return {name: value for name, value in pairs}


def assert_clean(stdout: str) -> dict[str, str]:
    inside = seen(stdout)
    for name, value in SECRETS.items():
        assert name not in inside and value not in stdout, name
    assert inside["ENVTEST_ORDINARY"] == "kept" and inside["PATH"]
    return inside


def composition(tmp_path: Path, backend: str, env: str) -> str:
    path = tmp_path / "stockade.yml"
    path.write_text(
        "- id: sandbox\n"
        "  name: stockade.sandbox.local\n"
        f"  config: {{backend: {backend}}}\n"
        "- id: bash\n"
        "  name: stockade.bash.sandbox\n"
        f"  config: {{env: {env}}}\n"
    )
    return str(path)


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request):
    require_backend(request.param)
    return request.param


@pytest.mark.parametrize("mode", ["read-only", "workspace-write", "danger-full-access"])
def test_exec_drops_them_without_a_composition(backend, scratch, mode):
    done = stockade(
        "exec", "--backend", backend, "--mode", mode, "--", "env", "-0", cwd=scratch, env=HOST
    )
    assert done.returncode == 0, done.stderr
    assert_clean(done.stdout)


@pytest.mark.parametrize("mode", ["read-only", "workspace-write", "danger-full-access"])
def test_run_drops_them_and_json_lists_the_names(backend, scratch, mode):
    done = stockade(
        "run", "--json", "--backend", backend, "--mode", mode, "env -0", cwd=scratch, env=HOST
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert_clean(facts["stdout"])
    assert set(SECRETS) <= set(facts["env_dropped"])
    for value in SECRETS.values():
        assert value not in json.dumps(facts["env_dropped"])


def test_exec_and_run_apply_the_compositions_policy(backend, scratch, tmp_path):
    config = composition(
        tmp_path,
        backend,
        "{inherit: core, set: {ENVTEST_SET: from-set}, exclude: [LANG], include_only: [PATH, ENVTEST_*, LANG]}",
    )
    host = {**HOST, "LANG": "C.UTF-8"}
    ran = stockade("exec", "--config", config, "--", "env", "-0", cwd=scratch, env=host)
    assert ran.returncode == 0, ran.stderr
    by_run = stockade("run", "--json", "--config", config, "env -0", cwd=scratch, env=host)
    assert by_run.returncode == 0, by_run.stderr
    facts = json.loads(by_run.stdout)
    for stdout in (ran.stdout, facts["stdout"]):
        inside = seen(stdout)
        # core dropped ENVTEST_ORDINARY, exclude LANG; set added; include_only kept
        # PATH and the set name (TMPDIR: the session's own temp directory, laid over).
        # The tool caches' variables are the sandbox's own, laid over as TMPDIR is.
        own = {"TMPDIR", "PWD", "SHLVL", "_", *tool_caches.variables("/c", tool_caches.TOOLS)}
        assert set(inside) - own == {"PATH", "ENVTEST_SET"}
        assert inside["ENVTEST_SET"] == "from-set"
    assert {"ENVTEST_ORDINARY", "LANG", *SECRETS} <= set(facts["env_dropped"])


def test_a_bad_env_key_is_a_composition_error_naming_it(tmp_path, scratch):
    config = composition(tmp_path, "auto", "{set: {STOCKADE_CONFIG: x}}")
    done = stockade("exec", "--config", config, "--", "true", cwd=scratch)
    assert done.returncode != 0
    assert "config.env.set" in done.stderr and "STOCKADE_CONFIG" in done.stderr


def test_probe_shows_the_policy_in_text_and_json(tmp_path):
    require_backend("bwrap")
    text = stockade("probe")
    assert text.returncode == 0, text.stderr
    assert "command environment: inherit all" in text.stdout
    assert "*KEY*" in text.stdout and "STOCKADE_*" in text.stdout
    report = json.loads(stockade("probe", "--json").stdout)
    assert report["environment"]["inherit"] == "all"
    assert "*SECRET*" in report["environment"]["default_excludes"]
    config = composition(tmp_path, "bwrap", "{inherit: none, set: {A: secret-value}}")
    configured = stockade("probe", "--json", "--config", config)
    assert configured.returncode == 0, configured.stderr
    environment = json.loads(configured.stdout)["environment"]
    assert environment["inherit"] == "none" and environment["set"] == ["A"]
    assert "secret-value" not in configured.stdout

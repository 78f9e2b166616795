"""The composition plan carries credential and request rules (issue 41) to every face:
each credential's variable withheld from commands by name and by value, a trust
directory named for the CA bundle, kept read-only and in sight of every confined call;
and from a composition file a command could write, no credential and no upstream CA."""

from __future__ import annotations

import os

import pytest

from stockade.config import load_composition, plan
from stockade.errors import ConfigError
from stockade.executor import EnvPolicy, apply_policy
from stockade.network import CredentialRule

SECRET = "ghp_plan-test-secret-value-0123456789"

HEAD = (
    "- id: sandbox\n  name: stockade.sandbox.local\n"
    "- id: bash\n  name: stockade.bash.sandbox\n  config:\n    network: allowlist\n"
)
CREDENTIAL = (
    "    network_credentials:\n"
    "      - {host: api.github.com, placeholder_env: GITHUB_TOKEN, value: !env GITHUB_TOKEN}\n"
)
REQUESTS = "    network_requests:\n      - {host: api.github.com, methods: [GET]}\n"


def _trusted(directory, body: str):
    """A composition file no confined command could write (outside every root, 0644)."""
    path = directory / "stockade.yml"
    path.write_text(HEAD + body)
    path.chmod(0o644)
    return load_composition(str(path))


@pytest.fixture
def token(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    monkeypatch.setenv("OTHER_NAME_SAME_VALUE", SECRET)


def test_the_rules_reach_the_executor_config_and_its_variable_is_withheld(
    tmp_path, runner_dir, token
):
    decided = plan(_trusted(runner_dir, CREDENTIAL + REQUESTS), cwd=tmp_path)
    executor = decided.executor
    assert executor.network_credentials == (
        CredentialRule("api.github.com", None, "GITHUB_TOKEN", placeholder_env="GITHUB_TOKEN"),
    )
    assert executor.network_requests[0].methods == frozenset({"GET"})
    # By name and by value, whatever the policy would pass (keep_default_excludes off).
    environment, _ = apply_policy(
        {"GITHUB_TOKEN": SECRET, "OTHER_NAME_SAME_VALUE": SECRET, "KEPT": "x"},
        EnvPolicy(inherit="all", keep_default_excludes=False),
        withheld=executor.withheld,
    )
    assert environment == {"KEPT": "x"}


def test_a_trust_directory_is_named_protected_and_kept_in_sight(tmp_path, runner_dir, token):
    decided = plan(_trusted(runner_dir, CREDENTIAL), cwd=tmp_path)
    directory = decided.executor.network_trust_directory
    assert directory is not None and os.path.isabs(directory)
    assert not os.path.exists(directory), "the plan names it; the harness makes it"
    # Read-only and in sight in every call, never hidden (a composition file is).
    assert directory not in decided.provider.trusted_files
    assert directory in decided.provider.in_sight
    # Another plan, another harness: another directory.
    again = plan(_trusted(runner_dir, CREDENTIAL), cwd=tmp_path)
    assert again.executor.network_trust_directory != directory


def test_request_rules_alone_name_a_trust_directory_too(tmp_path, runner_dir):
    decided = plan(_trusted(runner_dir, REQUESTS), cwd=tmp_path)
    assert decided.executor.network_trust_directory is not None
    assert (
        decided.executor.withheld == plan(_trusted(runner_dir, ""), cwd=tmp_path).executor.withheld
    )


def test_without_rules_nothing_changes(tmp_path, runner_dir):
    decided = plan(_trusted(runner_dir, ""), cwd=tmp_path)
    assert decided.executor.network_trust_directory is None
    assert decided.provider.in_sight == ()


def test_a_composition_a_command_could_write_may_not_add_a_credential(tmp_path, token):
    """In the workspace (or a temp root) a command could point a credential at a host
    of its own: refused. Request rules only narrow what a host is asked: kept."""
    root = tmp_path / "work"
    root.mkdir()
    writable = root / "stockade.yml"
    upstream = "    network_upstream_ca: /etc/ssl/certs/ca-certificates.crt\n"
    for body in (CREDENTIAL, upstream + REQUESTS):
        writable.write_text(HEAD + body)
        with pytest.raises(ConfigError, match="network_credentials") as info:
            plan(load_composition(str(writable)), cwd=root)
        assert len(str(info.value).splitlines()) == 1
        assert SECRET not in str(info.value)
    writable.write_text(HEAD + REQUESTS)
    narrowed = plan(load_composition(str(writable)), cwd=root)
    assert narrowed.executor.network_requests


def test_credentials_given_in_code_are_trusted(tmp_path, token):
    composition = load_composition(
        [
            {"id": "sandbox", "name": "stockade.sandbox.local"},
            {
                "id": "bash",
                "name": "stockade.bash.sandbox",
                "config": {
                    "network_credentials": [
                        {"host": "a.test", "header": "X-Key", "value_from": "GITHUB_TOKEN"}
                    ]
                },
            },
        ]
    )
    assert plan(composition, cwd=tmp_path).executor.network_credentials


def test_an_upstream_ca_a_command_could_write_is_refused(tmp_path, runner_dir):
    root = tmp_path / "work"
    root.mkdir()
    planted = root / "ca.pem"
    planted.write_text("")
    with pytest.raises(ConfigError, match="network_upstream_ca"):
        plan(_trusted(runner_dir, f"    network_upstream_ca: {planted}\n" + REQUESTS), cwd=root)
    kept = runner_dir / "ca.pem"
    kept.write_text("")
    kept.chmod(0o644)
    decided = plan(_trusted(runner_dir, f"    network_upstream_ca: {kept}\n"), cwd=root)
    assert decided.executor.network_upstream_ca == str(kept)


def test_env_set_handing_a_command_the_credential_is_refused(tmp_path, runner_dir, token):
    with pytest.raises(ConfigError, match="GITHUB_TOKEN"):
        plan(
            _trusted(runner_dir, CREDENTIAL + "    env:\n      set: {GITHUB_TOKEN: other}\n"),
            cwd=tmp_path,
        )

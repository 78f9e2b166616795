"""The executor's broker (issue 41): made once when the executor starts (a missing
credential is the start's error), its CA bundle written to a new 0755 directory and
removed with it, the CA key never written; and every command's environment without the
real value (whatever the policy passes), with the placeholder and the trust variables."""

from __future__ import annotations

import os
import stat

import pytest

from stockade.errors import ConfigError
from stockade.executor import open_broker
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.executor.environment import EnvPolicy
from stockade.network import (
    BUNDLE_NAME,
    PLACEHOLDER_PREFIX,
    TRUST_VARIABLES,
    CredentialRule,
    RequestRule,
    trust_directory,
)
from stockade.vocab import ExecutionPolicy, Network, SandboxMode

SECRET = "ghp_executor-test-secret-0123456789abcdef"
PLACEHOLDER_FORM = CredentialRule(
    "api.github.com", None, "GITHUB_TOKEN", placeholder_env="GH_TOKEN"
)
HEADER_FORM = CredentialRule("pypi.example.test", "Authorization", "PYPI_SECRET", "Bearer")


def _config(directory, **changes) -> ExecutorConfig:
    fields = {
        "network_credentials": (PLACEHOLDER_FORM, HEADER_FORM),
        "network_requests": (RequestRule("api.github.com", methods=frozenset({"GET"})),),
        "network_trust_directory": str(directory),
        # The loosest policy: nothing but the broker keeps the secrets out.
        "env": EnvPolicy(inherit="all", keep_default_excludes=False),
    }
    return ExecutorConfig(**{**fields, **changes})


ENVIRON = {"GITHUB_TOKEN": SECRET, "PYPI_SECRET": SECRET + "-pypi"}


def test_the_bundle_is_written_in_a_new_0755_directory_without_the_key(tmp_path):
    directory = tmp_path / "trust"
    brokered = open_broker(_config(directory), ENVIRON)
    assert brokered is not None
    try:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o755
        assert os.listdir(directory) == [BUNDLE_NAME]
        bundle = directory / BUNDLE_NAME
        assert stat.S_IMODE(bundle.stat().st_mode) == 0o644
        text = bundle.read_bytes()
        assert brokered.broker.authority.certificate_pem in text
        assert b"PRIVATE KEY" not in text
        assert brokered.bundle == str(bundle)
    finally:
        brokered.close()
    assert not directory.exists()


def test_the_environment_holds_placeholders_and_trust_never_a_value(tmp_path):
    brokered = open_broker(_config(tmp_path / "trust"), ENVIRON)
    assert brokered is not None
    try:
        environment = brokered.environment()
        assert environment["GH_TOKEN"].startswith(PLACEHOLDER_PREFIX)
        for name in TRUST_VARIABLES:
            assert environment[name] == brokered.bundle
        assert SECRET not in repr(environment)
        # What is withheld: the variables by name and the values, shown by name only.
        assert set(brokered.withheld.names) == {"GITHUB_TOKEN", "PYPI_SECRET"}
        assert SECRET not in repr(brokered)
    finally:
        brokered.close()


def test_no_rule_no_broker(tmp_path):
    assert open_broker(ExecutorConfig(network_trust_directory=str(tmp_path / "t")), ENVIRON) is None
    assert not (tmp_path / "t").exists()


def test_a_missing_variable_is_one_line_naming_it(tmp_path):
    with pytest.raises(ConfigError) as info:
        open_broker(_config(tmp_path / "trust"), {"GITHUB_TOKEN": SECRET})
    assert "PYPI_SECRET" in str(info.value) and len(str(info.value).splitlines()) == 1
    assert not (tmp_path / "trust").exists()


def test_an_existing_directory_is_never_used(tmp_path):
    planted = tmp_path / "trust"
    planted.mkdir()
    with pytest.raises(ConfigError, match="cannot be made"):
        open_broker(_config(planted), ENVIRON)


def test_env_set_handing_out_the_credential_is_refused(tmp_path):
    config = _config(tmp_path / "trust", env=EnvPolicy(set={"MINE": SECRET}))
    with pytest.raises(ConfigError, match="MINE") as info:
        open_broker(config, ENVIRON)
    assert SECRET not in str(info.value)


def test_the_trust_directory_is_a_fresh_name_in_the_temporary_directory(tmp_path):
    one, two = trust_directory(str(tmp_path)), trust_directory(str(tmp_path))
    assert one != two and os.path.dirname(one) == str(tmp_path)
    assert not os.path.exists(one)


def _seen(stdout: str) -> dict[str, str]:
    pairs = [item.split("=", 1) for item in stdout.split("\0") if "=" in item]
    return {name: value for name, value in pairs}


@pytest.mark.parametrize("network", [Network.ALLOWLIST, Network.ON])
async def test_a_command_gets_the_placeholder_and_the_bundle_never_the_value(
    tmp_path, monkeypatch, network
):
    """Unconfined here (no provider): the environment is built the same for every
    call; the proxy swaps the placeholder under network allowlist only."""
    for name, value in ENVIRON.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SAME_VALUE_OTHER_NAME", SECRET)
    monkeypatch.setenv("GH_TOKEN", "the host's own, replaced")
    directory = tmp_path / "trust"
    async with open_executor(_config(directory)) as executor:
        policy = ExecutionPolicy(
            mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=str(tmp_path), network=network
        )
        result = await executor.run(
            executor.resolve(f"env -0; cat {directory / BUNDLE_NAME} >/dev/null", policy=policy)
        )
        assert directory.is_dir()
    assert result.exit_code == 0, result.stderr
    inside = _seen(result.stdout)
    assert SECRET not in result.stdout
    assert "GITHUB_TOKEN" not in inside and "PYPI_SECRET" not in inside
    assert "SAME_VALUE_OTHER_NAME" not in inside
    assert inside["GH_TOKEN"].startswith(PLACEHOLDER_PREFIX)
    assert inside["SSL_CERT_FILE"] == str(directory / BUNDLE_NAME)
    assert {"GITHUB_TOKEN", "PYPI_SECRET"} <= set(result.env_dropped)
    assert not directory.exists(), "the bundle's directory goes with the executor"


async def test_a_missing_credential_fails_the_start_not_a_call(tmp_path, monkeypatch):
    for name in ENVIRON:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="GITHUB_TOKEN"):
        async with open_executor(_config(tmp_path / "trust")):
            pytest.fail("started without its credential")

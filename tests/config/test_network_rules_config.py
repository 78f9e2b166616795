"""`network: allowlist` and its rules on the executor entry (issue 25): read, checked
at load, and refused on a backend that cannot hold them yet."""

from __future__ import annotations

import pytest

from stockade.config import load_composition
from stockade.errors import ConfigError
from stockade.executor.config import ExecutorConfig
from stockade.vocab import Network

SANDBOX = {"id": "sandbox", "name": "stockade.sandbox.local"}


def bash(**config):
    return {"id": "bash", "name": "stockade.bash.sandbox", "config": config}


def test_the_rules_and_the_value_are_read():
    composition = load_composition(
        [SANDBOX, bash(network="allowlist", network_allow=["pypi.org:443", "*.github.com"])]
    )
    executor = composition.executor.config.executor_config()
    assert executor.default_network is Network.ALLOWLIST
    assert executor.network_allow == ("pypi.org:443", "*.github.com")
    assert executor.network_deny == ()


@pytest.mark.parametrize("entry", ["bad host", "", "exa\x00mple.com", "10.0.0.0/33"])
def test_a_bad_entry_is_a_located_error(entry):
    with pytest.raises(ConfigError, match=r"entry\[1\]\.config\.network_allow"):
        load_composition([SANDBOX, bash(network_allow=[entry])])


def test_the_executor_config_checks_its_entries_too():
    with pytest.raises(ConfigError, match="network rule"):
        ExecutorConfig(network_deny=["not a host"])
    with pytest.raises(ConfigError, match="a list"):
        ExecutorConfig(network_allow="pypi.org")  # type: ignore[arg-type]

"""The broker (issue 41): which hosts it terminates, what a command's environment gets
and loses, and that it never holds a value where it could be printed."""

from __future__ import annotations

import pytest

from stockade.errors import ConfigError
from stockade.network import (
    PLACEHOLDER_PREFIX,
    make_broker,
    parse_credential_rules,
    parse_request_rules,
)

CREDENTIALS = parse_credential_rules(
    [
        {
            "host": "api.example.test",
            "header": "Authorization",
            "value_from": "API",
            "scheme": "Bearer",
        },
        {"host": "git.example.test", "value_from": "GIT_TOKEN", "placeholder_env": "GIT_TOKEN"},
    ]
)
REQUESTS = parse_request_rules([{"host": "read.example.test", "methods": ["GET"]}])
ENVIRON = {"API": "real-api-value", "GIT_TOKEN": "real-git-value"}


def test_no_rule_no_broker() -> None:
    assert make_broker((), (), ENVIRON) is None


def test_ruled_hosts_are_terminated_and_others_are_not() -> None:
    broker = make_broker(CREDENTIALS, REQUESTS, ENVIRON)
    assert broker is not None
    assert broker.hosts == {"api.example.test", "git.example.test", "read.example.test"}
    assert broker.terminates("read.example.test")
    assert not broker.terminates("other.example.test")
    assert broker.authority.hosts == broker.hosts


def test_environment_gets_placeholders_and_loses_real_values() -> None:
    broker = make_broker(CREDENTIALS, REQUESTS, ENVIRON)
    assert broker is not None
    assert broker.withheld == {"API", "GIT_TOKEN"}
    ((name, placeholder),) = broker.placeholders.items()
    assert name == "GIT_TOKEN" and placeholder.startswith(PLACEHOLDER_PREFIX)
    assert "real" not in repr(broker)
    assert [c.name for c in broker.credentials_for("git.example.test")] == ["GIT_TOKEN"]


def test_missing_value_is_one_line_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match="API is not set") as raised:
        make_broker(CREDENTIALS, (), {"GIT_TOKEN": "x"})
    assert "\n" not in str(raised.value)


def test_unreadable_upstream_bundle_is_a_config_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot be read"):
        make_broker((), REQUESTS, {}, upstream_ca=tmp_path / "missing.pem")

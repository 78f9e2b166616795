"""Credential and request rules on the executor entry (issue 41): `value: !env NAME`
names a variable and never reads it into the composition, a value written out is
refused without being repeated, and every mistake is one located line."""

from __future__ import annotations

import pytest

from stockade.config import load_composition
from stockade.errors import ConfigError
from stockade.executor.config import ExecutorConfig
from stockade.network import CredentialRule, RequestRule

from .support import errors, load

SECRET = "ghp_the-real-token-never-in-a-composition"

HEAD = """\
- id: sandbox
  name: stockade.sandbox.local
- id: bash
  name: stockade.bash.sandbox
  config:
    network: allowlist
"""


def _executor(tmp_path, body: str, environ=None) -> ExecutorConfig:
    composition = load(tmp_path, HEAD + body, environ=environ or {"GITHUB_TOKEN": SECRET})
    return composition.executor.config.executor_config()


def test_env_names_the_variable_and_never_reads_its_value(tmp_path):
    config = _executor(
        tmp_path,
        "    network_credentials:\n"
        "      - host: API.github.com\n"
        "        header: Authorization\n"
        "        scheme: Bearer\n"
        "        value: !env GITHUB_TOKEN\n",
    )
    assert config.network_credentials == (
        CredentialRule("api.github.com", "Authorization", "GITHUB_TOKEN", "Bearer"),
    )
    composition = load(
        tmp_path,
        HEAD + "    network_credentials:\n"
        "      - {host: a.test, header: X-Key, value: !env GITHUB_TOKEN}\n",
        environ={"GITHUB_TOKEN": SECRET},
    )
    # Nothing the composition holds (its entries, their reprs) has the value.
    assert SECRET not in repr(composition)


def test_a_variable_unset_at_load_is_no_error_there(tmp_path):
    """The harness reads it when it starts (a missing one is its start's error):
    `probe` and `session show` work without the secret."""
    config = _executor(
        tmp_path,
        "    network_credentials:\n"
        "      - {host: a.test, placeholder_env: A_TOKEN, value: !env NOT_SET_HERE}\n",
        environ={},
    )
    assert config.network_credentials[0].value_from == "NOT_SET_HERE"


def test_value_from_is_the_same(tmp_path):
    config = _executor(
        tmp_path,
        "    network_credentials:\n"
        "      - {host: a.test, placeholder_env: A_TOKEN, value_from: A_REAL}\n",
    )
    assert config.network_credentials == (
        CredentialRule("a.test", None, "A_REAL", placeholder_env="A_TOKEN"),
    )


def test_a_value_written_out_is_refused_and_not_repeated(tmp_path):
    (line,) = errors(
        tmp_path,
        HEAD + "    network_credentials:\n"
        f"      - {{host: a.test, header: X-Key, value: {SECRET}}}\n",
    )
    assert "network_credentials[0]" in line
    assert "value: !env NAME" in line
    assert SECRET not in line


def test_a_value_expanded_by_another_route_is_refused_too(tmp_path):
    """`!env` anywhere else expands; only as a credential's `value` is it a name."""
    with pytest.raises(ConfigError, match="value: !env NAME") as info:
        load_composition(
            [
                {"id": "sandbox", "name": "stockade.sandbox.local"},
                {
                    "id": "bash",
                    "name": "stockade.bash.sandbox",
                    "config": {
                        "network_credentials": [{"host": "a.test", "header": "X", "value": SECRET}]
                    },
                },
            ]
        )
    assert SECRET not in str(info.value)


def test_value_and_value_from_together_are_refused(tmp_path):
    (line,) = errors(
        tmp_path,
        HEAD + "    network_credentials:\n"
        "      - {host: a.test, header: X, value: !env GITHUB_TOKEN, value_from: OTHER}\n",
    )
    assert "not both" in line


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ("{host: '*.github.com', header: X, value_from: T}", "without wildcard"),
        ("{host: a.test, value_from: T}", "give `header`"),
        ("{host: a.test, header: 'Bad Header', value_from: T}", "not an HTTP token"),
        ("{host: a.test, header: X, value_from: 'not a name'}", "environment variable"),
        ("{host: a.test, header: X, value_from: T, colour: red}", "unknown key"),
    ],
)
def test_a_wrong_credential_rule_is_one_located_line(tmp_path, rule, said):
    (line,) = errors(tmp_path, HEAD + f"    network_credentials:\n      - {rule}\n")
    assert line.startswith("stockade.yml:")
    assert said in line


def test_env_without_a_name_is_its_tag_error(tmp_path):
    lines = errors(
        tmp_path, HEAD + "    network_credentials:\n      - {host: a.test, value: !env ''}\n"
    )
    assert any(line.endswith("!env needs a NAME, as in `!env NAME`") for line in lines)


def test_request_rules_are_read(tmp_path):
    config = _executor(
        tmp_path,
        "    network_requests:\n"
        "      - {host: api.github.com, methods: [get, HEAD], paths: ['/repos/org/**'], "
        "name: read-only}\n",
    )
    (rule,) = config.network_requests
    assert isinstance(rule, RequestRule)
    assert rule.host == "api.github.com" and rule.methods == frozenset({"GET", "HEAD"})
    assert rule.name == "read-only"


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ("{methods: [GET]}", "`host` is required"),
        ("{host: a.test, paths: [relative]}", "network_requests[0]"),
        ("{host: a.test, methods: ['NOT A TOKEN']}", "network_requests[0]"),
    ],
)
def test_a_wrong_request_rule_is_one_located_line(tmp_path, rule, said):
    (line,) = errors(tmp_path, HEAD + f"    network_requests:\n      - {rule}\n")
    assert line.startswith("stockade.yml:") and "network_requests" in line
    assert said in line


def test_the_rules_must_be_lists(tmp_path):
    (line,) = errors(tmp_path, HEAD + "    network_requests: {host: a.test}\n")
    assert "must be a list" in line


def test_the_upstream_ca_is_an_absolute_path(tmp_path):
    config = _executor(tmp_path, "    network_upstream_ca: /etc/ssl/private-ca.pem\n")
    assert config.network_upstream_ca == "/etc/ssl/private-ca.pem"
    (line,) = errors(tmp_path, HEAD + "    network_upstream_ca: relative.pem\n")
    assert "network_upstream_ca" in line


def test_the_executor_config_takes_rules_or_mappings():
    rule = CredentialRule("a.test", "X", "T")
    assert ExecutorConfig(network_credentials=[rule]).network_credentials == (rule,)
    parsed = ExecutorConfig(network_requests=[{"host": "b.test", "methods": ["GET"]}])
    assert parsed.network_requests[0].host == "b.test"
    assert parsed.has_ruled_hosts and not ExecutorConfig().has_ruled_hosts
    with pytest.raises(ConfigError, match="network_credentials"):
        ExecutorConfig(network_credentials=[{"host": "a.test"}])

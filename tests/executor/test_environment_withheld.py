"""The harness's own secrets (the session store's credentials, the MCP tokens) never
reach a command's environment, whatever the policy says: the pure step, and how a
composition's store and the MCP server's tokens get there."""

from __future__ import annotations

import pytest

from stockade.errors import ConfigError
from stockade.executor.config import ExecutorConfig
from stockade.executor.environment import EnvPolicy, Withheld, apply_policy
from stockade.harness import assemble
from stockade.sessionlog import store_secrets

from ..config.support import SANDBOXED, load

DSN = "postgresql://stockade:s3cret-store-pw@127.0.0.1:5432/log"
TOKEN = "mcp-token-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
HOST = {
    "PATH": "/usr/bin:/bin",
    "PGPASSWORD": "s3cret-store-pw",
    "LOG_URL": DSN,  # the DSN under a name no exclude matches
    "NOTES": f"see {TOKEN} here",  # a token inside another value
    "SHORT": "pw",
    "EDITOR": "vi",
}
WITHHELD = Withheld(("PGPASSWORD",), (DSN, "s3cret-store-pw", TOKEN, "pw"))

LOOSEST = [
    EnvPolicy(keep_default_excludes=False),
    EnvPolicy(keep_default_excludes=False, include_only=("PGPASSWORD", "LOG_URL", "NOTES", "PATH")),
    EnvPolicy(inherit="all", keep_default_excludes=False, include_only=("*",)),
]


@pytest.mark.parametrize("policy", LOOSEST, ids=["no-default-excludes", "include-only", "star"])
def test_withheld_names_and_values_are_dropped_under_the_loosest_policy(policy):
    out, dropped = apply_policy(HOST, policy, withheld=WITHHELD)
    assert "PGPASSWORD" not in out and "PGPASSWORD" in dropped
    # By value: the DSN under an innocuous name, the token inside another value.
    assert "LOG_URL" not in out and "NOTES" not in out
    assert {"LOG_URL", "NOTES"} <= set(dropped)
    # A value shorter than 8 characters is matched whole only: `pw` drops SHORT (equal),
    # but not PATH, which holds no such whole value.
    assert "SHORT" not in out
    assert out["PATH"] == HOST["PATH"]
    for value in out.values():
        assert DSN not in value and TOKEN not in value


def test_without_withheld_the_policy_is_unchanged():
    policy = EnvPolicy(keep_default_excludes=False)
    assert apply_policy(HOST, policy) == apply_policy(HOST, policy, withheld=Withheld())
    assert apply_policy(HOST, policy)[0]["PGPASSWORD"] == "s3cret-store-pw"


def test_a_set_that_names_or_carries_a_secret_is_refused_naming_only_the_name():
    for given in ({"PGPASSWORD": "mine"}, {"MY_URL": DSN}, {"X": f"Bearer {TOKEN}"}):
        config = ExecutorConfig(env=EnvPolicy(set=given))
        with pytest.raises(ConfigError) as info:
            config.withholding(WITHHELD)
        message = str(info.value)
        assert next(iter(given)) in message and "Secrets: the environment" in message
        assert DSN not in message and TOKEN not in message and "s3cret" not in message
    ok = ExecutorConfig(env=EnvPolicy(set={"EDITOR": "nano"})).withholding(WITHHELD)
    assert ok.withheld == WITHHELD
    assert "s3cret" not in repr(ok) and TOKEN not in repr(ok)


def test_a_postgres_stores_credentials_are_its_secrets_and_jsonl_has_none(tmp_path):
    text = SANDBOXED + (
        "- id: log\n  name: stockade.session.log\n"
        "  config: {store: postgres, dsn: !env STOCKADE_LOG_DSN}\n"
    )
    composition = load(tmp_path, text, environ={"HOME": "/h", "STOCKADE_LOG_DSN": DSN})
    assert composition.session_log is not None
    names, values = store_secrets(composition.session_log.config)
    assert "PGPASSWORD" in names and "PGPASSFILE" in names
    assert set(values) == {DSN, "s3cret-store-pw"}
    assert store_secrets(None) == ((), ())
    jsonl = load(tmp_path, SANDBOXED + "- id: log\n  name: stockade.session.log\n")
    assert jsonl.session_log is not None
    assert store_secrets(jsonl.session_log.config) == ((), ())


def test_assembly_withholds_the_store_and_the_hosts_values_and_refuses_a_set(tmp_path):
    log = (
        "- id: log\n  name: stockade.session.log\n"
        "  config: {store: postgres, dsn: !env STOCKADE_LOG_DSN}\n"
    )
    environ = {"HOME": "/h", "STOCKADE_LOG_DSN": DSN}
    composition = load(tmp_path, SANDBOXED + log, environ=environ)
    actors, _harness = assemble(composition, cwd=tmp_path, withhold=(TOKEN,))
    (executor,) = [actor for actor in actors if type(actor).__name__ == "ExecutorActor"]
    withheld = executor.config.withheld
    assert withheld.holds("ANY", DSN) and withheld.holds("ANY", TOKEN)
    assert withheld.holds("PGPASSWORD", "whatever") and not withheld.holds("EDITOR", "vi")

    loose = SANDBOXED.replace(
        "name: stockade.bash.sandbox\n",
        "name: stockade.bash.sandbox\n  config:\n    env: {set: {PGPASSWORD: mine}}\n",
    )
    refused = load(tmp_path, loose + log, environ=environ)
    with pytest.raises(ConfigError, match="PGPASSWORD"):
        assemble(refused, cwd=tmp_path)


def test_probe_describes_the_withheld_names_and_counts_the_values():
    from stockade.executor.environment import render_policy

    described = EnvPolicy().describe(WITHHELD)
    assert described["always_dropped"] == ["STOCKADE_*", "PGPASSWORD"]
    assert described["withheld_values"] == 4
    text = render_policy(EnvPolicy(), WITHHELD)
    assert "always dropped, whatever the policy: STOCKADE_* PGPASSWORD" in text
    assert "4 secret value(s)" in text
    for secret in WITHHELD.values:
        assert secret not in repr(described) and secret not in text
    # Without any, both read as before.
    assert EnvPolicy().describe()["always_dropped"] == ["STOCKADE_*"]
    assert "always dropped" not in render_policy(EnvPolicy())

"""THE composition plan: the harness and the CLI verbs get one answer from it (the
store's paths hidden, its login withheld), and the embedded defaults cost nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from stockade.config import (
    StoreFacts,
    facts_of_config,
    facts_of_store,
    load_composition,
    loads_composition,
    plan,
)
from stockade.errors import ConfigError
from stockade.events import EventRegistry
from stockade.sandbox import ProviderConfig
from stockade.sessionlog import build_store
from stockade.trust.secrets import deny_read_for
from stockade.vocab import ApprovalPolicy, Network, SandboxMode

MOVED_LOG = """
- id: sandbox
  name: stockade.sandbox.local
- id: bash
  name: stockade.bash.sandbox
- id: log
  name: stockade.session.log
  config:
    state_dir: {state}
"""

POSTGRES_LOG = """
- id: sandbox
  name: stockade.sandbox.local
- id: bash
  name: stockade.bash.sandbox
- id: log
  name: stockade.session.log
  config:
    store: postgres
    dsn: "host=/nowhere dbname=logs user=me passfile={passfile}"
"""

UNCONFINED = """
- id: bash
  name: stockade.bash.local
"""


def _both_ways(composition, root: str):
    """The plan as the harness makes it (from its built store) and as a CLI verb
    makes it (from the log entry's config)."""
    log = composition.session_log
    store = build_store(log.config, EventRegistry(()), composition_path=composition.path)
    harness = plan(composition, store=facts_of_store(store), cwd=root)
    verb = plan(composition, store=facts_of_config(log.config), root=root)
    return harness, verb


def test_a_moved_log_directory_is_hidden_by_the_harness_and_the_verbs_alike(tmp_path: Path):
    state = tmp_path / "elsewhere" / "logs"
    root = tmp_path / "work"
    root.mkdir()
    composition = loads_composition(MOVED_LOG.format(state=state))
    harness, verb = _both_ways(composition, str(root))
    for decided in (harness, verb):
        assert str(state) in decided.provider.secret_state
        assert decided.deny_read.denies(str(state / "s.jsonl"), ())


def test_a_database_logs_login_is_withheld_and_its_files_hidden_both_ways(tmp_path: Path):
    passfile = tmp_path / "pgpass"
    composition = loads_composition(POSTGRES_LOG.format(passfile=passfile))
    harness, verb = _both_ways(composition, str(tmp_path))
    for decided in (harness, verb):
        assert str(passfile) in decided.provider.secret_tokens
        assert "PGPASSWORD" in decided.executor.withheld.names
    assert harness.provider.secret_tokens == verb.provider.secret_tokens
    assert harness.executor.withheld == verb.executor.withheld


def test_the_embedded_defaults_are_the_embedded_composition(tmp_path: Path):
    """`plan(None)` (no YAML read) decides what the embedded stockade.yml decides."""
    embedded = plan(load_composition(None, cwd=tmp_path), cwd=tmp_path)
    defaults = plan(None, cwd=tmp_path)
    assert defaults.provider == attrs.evolve(embedded.provider, trusted_files=())
    assert attrs.evolve(embedded.executor, fallback_root=None) == defaults.executor
    for name in ("confines", "mode", "network", "approval_policy", "unconfined", "root"):
        assert getattr(defaults, name) == getattr(embedded, name), name


def test_the_plain_defaults_answer_as_their_configs_would(tmp_path: Path):
    plain = plan(None, root=str(tmp_path))
    assert plain.deny_read.literal_paths() == deny_read_for(ProviderConfig()).literal_paths()
    setting = plain.tool_caches()
    assert (setting.enabled, setting.directory, setting.tools) == (
        True,
        ProviderConfig().tool_cache_directory,
        ProviderConfig().tool_cache_tools,
    )
    assert plain.writable_roots() == ()
    # Asking for the configs makes them, and the answers stay the same.
    assert plain.provider == ProviderConfig()
    assert plain.deny_read.literal_paths() == deny_read_for(ProviderConfig()).literal_paths()


def test_a_named_root_wins_over_the_fallback_which_wins_over_cwd(tmp_path: Path):
    named, fallback, cwd = (tmp_path / n for n in ("named", "fallback", "cwd"))
    for directory in (named, fallback, cwd):
        directory.mkdir()
    composition = loads_composition(
        MOVED_LOG.format(state=tmp_path / "logs").replace(
            "  name: stockade.bash.sandbox\n",
            f"  name: stockade.bash.sandbox\n  config:\n    workspace_root: {fallback}\n",
        )
    )
    assert plan(composition, root=str(named), cwd=cwd).root == str(named)
    assert plan(composition, cwd=cwd).root == str(fallback)
    assert plan(None, cwd=cwd).root == str(cwd)
    assert plan(None, cwd=cwd).root_explicit
    assert not plan(None).root_explicit
    assert plan(None).root == os.path.realpath(os.getcwd())


def test_an_unconfined_composition_has_one_true_mode_and_network(tmp_path: Path):
    decided = plan(loads_composition(UNCONFINED), cwd=tmp_path)
    assert not decided.confines
    assert decided.mode is SandboxMode.DANGER_FULL_ACCESS
    assert decided.network is Network.ON
    assert decided.approval_policy is ApprovalPolicy.NEVER
    assert "does not confine" in decided.unconfined
    assert decided.tool_caches() is None
    assert decided.agents == ()
    # A flag's value is laid over it; the verb then refuses it (cli/settings.py).
    assert plan(loads_composition(UNCONFINED), mode="read-only").mode is SandboxMode.READ_ONLY


def test_the_hosts_own_secrets_are_withheld_and_hidden(tmp_path: Path):
    token = tmp_path / "token"
    decided = plan(None, withhold=("s3cret-value",), unreadable=(str(token),))
    assert "s3cret-value" in decided.executor.withheld.values
    assert str(token) in decided.provider.secret_tokens
    assert decided.deny_read.denies(str(token), ())


def test_an_env_set_that_hands_out_a_withheld_credential_is_refused():
    composition = loads_composition(
        UNCONFINED.replace(
            "  name: stockade.bash.local\n",
            "  name: stockade.bash.local\n  config:\n    env:\n      set: {TOKEN: s3cret}\n",
        )
    )
    with pytest.raises(ConfigError):
        plan(composition, withhold=("s3cret",))


def test_store_facts_compare_by_value():
    assert StoreFacts(("a",)) == StoreFacts(("a",))
    assert not StoreFacts()
    assert StoreFacts((), (), (), ("f",))


def test_the_embedded_plan_imports_no_attrs_typing_or_event_loop(tmp_path: Path):
    """`stockade exec` without a composition decides through the plan on the standard
    library alone."""
    code = (
        "import sys\n"
        "from stockade.config import plan\n"
        "p = plan(None, root=sys.argv[1])\n"
        "p.mode, p.network, p.root, p.deny_read.literal_paths(), p.tool_caches(), "
        "p.writable_roots()\n"
        "heavy = ('attrs', 'cattrs', 'msgspec', 'trio', 'ruamel', 'typing', 're')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == "[]\n", done.stderr


RULED = """
- id: sandbox
  name: stockade.sandbox.local
- id: bash
  name: stockade.bash.sandbox
  config:
    rules:
      drop: [delete-workspace]
      rules:
        - name: no-deploy
          prefix: [make, deploy]
          decision: forbid
          reason: deploys go through CI
          match: ["make deploy"]
    rules_file: {rules_file}
"""


def test_the_command_rules_are_the_files_then_the_compositions_less_the_dropped(
    tmp_path, runner_dir
):
    rules_file = runner_dir / "rules.yml"  # outside every temp and workspace root
    rules_file.write_text(
        "rules:\n"
        "  - {name: no-npm-publish, prefix: [npm, publish], decision: prompt, reason: r}\n"
        "drop: [force-push]\n"
    )
    rules_file.chmod(0o644)
    root = tmp_path / "work"
    root.mkdir()
    decided = plan(loads_composition(RULED.format(rules_file=rules_file)), cwd=root)
    names = decided.rules.names()
    assert "no-deploy" in names and "no-npm-publish" in names
    assert "delete-workspace" not in names and "force-push" not in names
    assert names.index("no-npm-publish") < names.index("no-deploy")
    assert decided.rules.judge("make deploy").forbidden


def test_a_rules_file_a_command_could_write_is_refused(tmp_path):
    root = tmp_path / "work"
    root.mkdir()
    rules_file = root / "rules.yml"  # inside the workspace root: a command could write it
    rules_file.write_text("[]\n")
    decided = plan(loads_composition(RULED.format(rules_file=rules_file)), cwd=root)
    with pytest.raises(ConfigError, match="rules file"):
        decided.rules  # noqa: B018


def test_a_wrong_rule_in_the_composition_is_refused_at_load():
    with pytest.raises(ConfigError, match="no-deploy"):
        loads_composition(
            RULED.format(rules_file="/nonexistent").replace('["make deploy"]', '["make test"]')
        )


def test_without_rules_the_defaults_are_in_force():
    assert "force-push" in plan(None).rules.names()


def _composition_in(directory, rules_yaml: str):
    path = directory / "stockade.yml"
    path.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n"
        "- id: bash\n  name: stockade.bash.sandbox\n  config:\n" + rules_yaml
    )
    return load_composition(str(path))


ALLOW_ALL = (
    "    rules:\n      - {name: anything, prefix: ['*'], decision: allow, reason: planted}\n"
)
FORBID_MAKE = (
    "    rules:\n      - {name: no-deploy, prefix: [make, deploy], decision: forbid, reason: r}\n"
)


def test_a_composition_a_command_could_write_may_not_loosen_the_rules(tmp_path):
    """A stockade.yml in the workspace may forbid or ask, never allow, drop a default,
    turn the defaults off or name a rules file."""
    for loosening in (
        ALLOW_ALL,
        "    rules: {drop: [force-push]}\n",
        "    rules: {defaults: false}\n",
        "    rules_file: /etc/stockade-rules.yml\n",
    ):
        composition = _composition_in(tmp_path, loosening)
        with pytest.raises(ConfigError, match="command rules"):
            plan(composition, cwd=tmp_path)
    tightened = plan(_composition_in(tmp_path, FORBID_MAKE), cwd=tmp_path)
    assert tightened.rules.judge("make deploy").forbidden


def test_a_rules_file_in_a_granted_directory_is_refused_and_any_is_kept_read_only(
    tmp_path, runner_dir
):
    shared = runner_dir / "shared"
    shared.mkdir()
    (shared / "rules.yml").write_text("defaults: false\n")
    trusted = runner_dir / "stockade.yml"
    trusted.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n"
        f"  config:\n    writable_roots: [{shared}]\n"
        f"- id: bash\n  name: stockade.bash.sandbox\n  config:\n"
        f"    rules_file: {shared / 'rules.yml'}\n"
    )
    trusted.chmod(0o644)
    decided = plan(load_composition(str(trusted)), cwd=tmp_path)
    assert str(shared / "rules.yml") in decided.provider.trusted_files
    with pytest.raises(ConfigError, match="rules file"):
        decided.rules  # noqa: B018

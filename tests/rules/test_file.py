"""A rules file: YAML like the composition, honoured only outside every writable root."""

from __future__ import annotations

import os

import pytest

from stockade.errors import ConfigError
from stockade.rules import load_rules_file, render_forbidden, rules_from_text

TEXT = """\
drop: [delete-workspace]
rules:
  - name: no-deploy
    prefix: [make, deploy]
    decision: forbid
    reason: deploys go through CI
    match: ["make deploy", "cd app && make deploy ENV=prod"]
    not_match: ["make test"]
  - name: tests
    prefix: [[pytest, tox]]
    decision: allow
    reason: running the tests is always fine
"""


def test_a_rules_file_adds_rules_and_drops_defaults_by_name():
    ruleset = rules_from_text(TEXT)
    assert ruleset.names() == (
        "force-push",
        "delete-root-or-home",
        "download-to-shell",
        "no-deploy",
        "tests",
    )
    assert ruleset.judge("make deploy").forbidden
    assert ruleset.judge("pytest -q").allowed
    assert ruleset.judge("rm -rf .").decision is None


def test_a_plain_list_is_rules_with_the_defaults():
    ruleset = rules_from_text("- {name: a, prefix: [ls], decision: allow, reason: ok}\n")
    assert ruleset.names()[-1] == "a"
    assert "force-push" in ruleset.names()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules: [", r"^f.yml:\d+: invalid YAML"),
        ("rulez: []", r"^f.yml: unknown key 'rulez' \(allowed: rules, drop, defaults\)"),
        ("defaults: maybe", r"'defaults' must be true or false"),
        (
            "rules:\n  - name: x\n    prefix: []\n    decision: allow\n    reason: r\n",
            r"^f.yml: command rule 1 \(x\) at line 2: 'prefix' is empty",
        ),
    ],
)
def test_a_wrong_file_is_refused_with_where_and_what(text, message):
    with pytest.raises(ConfigError, match=message):
        rules_from_text(text, source="f.yml")


def test_a_file_a_confined_command_could_write_is_not_honoured(tmp_path):
    root = tmp_path / "workspace"
    root.mkdir()
    inside = root / "rules.yml"
    inside.write_text(TEXT)
    with pytest.raises(ConfigError, match=r"the rules file .* is not trusted.*not honoured"):
        load_rules_file(str(inside), [str(root)])
    outside = tmp_path / "rules.yml"
    outside.write_text(TEXT)
    os.chmod(tmp_path, 0o755)
    assert "no-deploy" in load_rules_file(str(outside), [str(root)]).names()


def test_the_policy_message_names_the_forbidden_prefixes_and_their_reasons():
    text = render_forbidden(rules_from_text(TEXT).rules)
    assert "Commands that are refused (nothing runs):" in text
    assert "- `make deploy` (no-deploy): deploys go through CI" in text
    assert "`rm ... [-r, -R, --r*] ... [/, //, /\\*, ~, ~/, ~/\\*]`" in text
    assert "Commands that wait for the person's approval:" in text
    assert "`git push ... [-f, --force*, +*, --mirror]` (force-push)" in text

"""Every load mistake is one line `stockade.yml:LINE:COL: what (allowed: ...)`, all at once."""

from __future__ import annotations

import os

import pytest

from stockade.config import load_composition
from stockade.errors import ConfigError

from .support import SANDBOXED, errors, write

MODES = "read-only, workspace-write, danger-full-access"


def test_mode_outside_the_vocabulary(tmp_path):
    text = SANDBOXED.replace(
        "name: stockade.bash.sandbox\n",
        "name: stockade.bash.sandbox\n  config:\n    mode: wide-open\n",
    )
    assert errors(tmp_path, text) == [
        f"stockade.yml:6:11: config.mode: unknown sandbox mode 'wide-open' (allowed: {MODES})"
    ]


def test_approval_policy_outside_the_vocabulary(tmp_path):
    text = SANDBOXED + "  config: {policy: sometimes}\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:7:20: config.policy: unknown approval policy 'sometimes' "
        "(allowed: ask, never)"
    ]


def test_unknown_entry_name_lists_the_known_names(tmp_path):
    (line,) = errors(tmp_path, "- id: bash\n  name: stockade.bash.sandboxed\n")
    assert line.startswith("stockade.yml:2:9: unknown plugin 'stockade.bash.sandboxed' (allowed: ")
    for known in ("stockade.bash.local", "stockade.bash.sandbox", "stockade.sandbox.local"):
        assert known in line


def test_unknown_key_in_a_config_lists_the_allowed_keys(tmp_path):
    text = (
        "- id: bash\n  name: stockade.bash.local\n  config:\n    output_cap: 10\n    colour: red\n"
    )
    assert errors(tmp_path, text) == [
        "stockade.yml:5:5: unknown key 'colour' (allowed: output_cap, kill_grace, default_timeout, env, limits, session_limits, rules, rules_file, history)"
    ]


def test_unknown_key_in_an_entry_lists_the_allowed_keys(tmp_path):
    text = "- id: bash\n  name: stockade.bash.local\n  settings: {}\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:3:3: unknown key 'settings' (allowed: id, name, config)"
    ]


def test_duplicate_id_names_the_first(tmp_path):
    text = SANDBOXED + "- id: bash\n  name: stockade.session.log\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:7:7: duplicate id 'bash' (first at stockade.yml:3:7)"
    ]


def test_wrong_type_says_the_expected_type(tmp_path):
    text = (
        "- id: bash\n  name: stockade.bash.local\n  config:\n"
        "    output_cap: lots\n    kill_grace: true\n    default_timeout: [1]\n"
    )
    assert errors(tmp_path, text) == [
        "stockade.yml:4:17: config.output_cap: expected an integer, got 'lots'",
        "stockade.yml:5:17: config.kill_grace: expected a number, got true",
        "stockade.yml:6:22: config.default_timeout: expected a number or null, got a list",
    ]


def test_wrong_type_of_an_entry_and_of_its_config(tmp_path):
    text = "- just a string\n- id: fs\n  name: stockade.fs.local\n  config: 5\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:1:3: expected a mapping, got 'just a string'",
        "stockade.yml:4:11: config: expected a mapping or null, got 5",
    ]


def test_missing_id_and_missing_name_point_at_the_entry(tmp_path):
    text = "- name: stockade.bash.local\n- id: other\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:1:3: missing required key 'id'",
        "stockade.yml:2:3: missing required key 'name'",
    ]


def test_missing_id_still_reports_the_config_mistakes(tmp_path):
    text = "- name: stockade.fs.local\n  config: {read_cap: 0}\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:1:3: missing required key 'id'",
        "stockade.yml:2:22: config.read_cap: must be a positive integer, got 0",
    ]


def test_confining_executor_without_a_sandbox_entry(tmp_path):
    text = "- id: bash\n  name: stockade.bash.sandbox\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:2:9: 'stockade.bash.sandbox' confines commands and needs a sandbox "
        "provider entry (allowed: stockade.sandbox.local)"
    ]


def test_presets_without_the_approval_entry(tmp_path):
    text = SANDBOXED.replace("- id: approval\n  name: stockade.approval.user\n", "")
    text += "- id: permission\n  name: stockade.permission.presets\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:6:9: 'stockade.permission.presets' needs an approval entry "
        "(allowed: stockade.approval.user)"
    ]


def test_presets_without_a_confining_executor(tmp_path):
    text = (
        "- id: bash\n  name: stockade.bash.local\n"
        "- id: approval\n  name: stockade.approval.user\n"
        "- id: permission\n  name: stockade.permission.presets\n"
    )
    assert errors(tmp_path, text) == [
        "stockade.yml:6:9: 'stockade.permission.presets' needs a confining executor entry "
        "(allowed: stockade.bash.sandbox)"
    ]


def test_presets_alone_reports_both_missing_neighbours(tmp_path):
    lines = errors(tmp_path, "- id: permission\n  name: stockade.permission.presets\n")
    assert [line.split(" needs ")[1].split(" (")[0] for line in lines] == [
        "an approval entry",
        "a confining executor entry",
    ]
    assert all(line.startswith("stockade.yml:2:9: ") for line in lines)


def test_fenced_fs_without_a_confining_executor(tmp_path):
    text = "- id: bash\n  name: stockade.bash.local\n- id: fs\n  name: stockade.fs.sandbox\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:4:9: 'stockade.fs.sandbox' fences by the sandbox policy and needs a "
        "confining executor entry (allowed: stockade.bash.sandbox)"
    ]


def test_two_executors(tmp_path):
    text = SANDBOXED + "- id: local\n  name: stockade.bash.local\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:8:9: a second executor entry ('stockade.bash.local'); a composition "
        "mounts one executor (the first is at stockade.yml:3:3)"
    ]


def test_yaml_syntax_error_has_its_position(tmp_path):
    assert errors(tmp_path, "- id: bash\n  name: [stockade.bash.local\n") == [
        "stockade.yml:3:1: invalid YAML: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence)"
    ]


def test_duplicate_yaml_key_is_a_syntax_error(tmp_path):
    (line,) = errors(tmp_path, "- id: bash\n  id: again\n  name: stockade.bash.local\n")
    assert line.startswith('stockade.yml:2:3: invalid YAML: found duplicate key "id"')


def test_not_a_list(tmp_path):
    assert errors(tmp_path, "id: bash\nname: stockade.bash.local\n") == [
        "stockade.yml:1:1: expected a list of entries (id, name, config), got a mapping"
    ]
    assert errors(tmp_path, "# nothing here\n") == [
        "stockade.yml:1:1: empty document; expected a list of entries"
    ]


def test_three_mistakes_report_three_lines_in_file_order(tmp_path):
    text = (
        "- id: sandbox\n  name: stockade.sandbox.local\n  config: {backend: docker}\n"
        "- id: bash\n  name: stockade.bash.sandbox\n  config:\n    mode: yolo\n"
        "- id: log\n  name: stockade.session.lag\n"
    )
    assert errors(tmp_path, text) == [
        "stockade.yml:3:21: config.backend: unknown value 'docker' "
        "(allowed: auto, bwrap, landlock, seatbelt)",
        f"stockade.yml:7:11: config.mode: unknown sandbox mode 'yolo' (allowed: {MODES})",
        "stockade.yml:9:9: unknown plugin 'stockade.session.lag' (allowed: "
        "stockade.approval.user, stockade.bash.local, stockade.bash.sandbox, "
        "stockade.fs.local, stockade.fs.sandbox, stockade.mcp, stockade.permission.presets, "
        "stockade.sandbox.local, stockade.session.log)",
    ]


def test_value_checks_of_the_builtin_configs(tmp_path):
    text = """\
- id: sandbox
  name: stockade.sandbox.local
  config:
    runner_failure_signatures: ["fatal:", "two\\nlines", ""]
- id: bash
  name: stockade.bash.sandbox
  config: {workspace_root: relative/dir, kill_grace: -1}
- id: approval
  name: stockade.approval.user
  config:
    reject:
      - {pattern: "rm (-rf", reason: no}
      - {pattern: "^sudo"}
    answerers: [terminal, nosuch, "my.pkg:ask"]
- id: permission
  name: stockade.permission.presets
  config:
    presets:
      custom: {sandbox_mode: read-only, approval_policy: ask}
"""
    assert errors(tmp_path, text) == [
        "stockade.yml:4:43: config.runner_failure_signatures[1]: must be a single line, "
        "got 'two\\nlines'",
        "stockade.yml:4:57: config.runner_failure_signatures[2]: must not be empty",
        "stockade.yml:7:28: config.workspace_root: 'relative/dir' is not an absolute path; "
        "write `!path relative/dir` for one relative to this file, or `!cwd`",
        "stockade.yml:7:54: config.kill_grace: must not be negative, got -1",
        "stockade.yml:12:19: config.reject[0].pattern: invalid regular expression 'rm (-rf': "
        "missing ), unterminated subpattern at position 3",
        "stockade.yml:13:9: missing required key 'reason'",
        "stockade.yml:14:27: config.answerers[1]: unknown answerer 'nosuch' "
        "(allowed: terminal, scripted, or a module:attribute import path)",
        "stockade.yml:19:7: config.presets.custom: preset name 'custom' is reserved for "
        "combinations outside the table",
    ]


def test_empty_preset_table(tmp_path):
    text = SANDBOXED + "- id: p\n  name: stockade.permission.presets\n  config: {presets: {}}\n"
    assert errors(tmp_path, text) == [
        "stockade.yml:9:21: config.presets: must name at least one preset"
    ]


def test_a_bad_load_writes_nothing(tmp_path):
    path = write(tmp_path, "- id: x\n  name: nope\n  config: {state_dir: !path logs}\n")
    before = sorted(os.listdir(tmp_path)), path.stat().st_mtime_ns, path.read_bytes()
    with pytest.raises(ConfigError):
        load_composition(path)
    assert (sorted(os.listdir(tmp_path)), path.stat().st_mtime_ns, path.read_bytes()) == before

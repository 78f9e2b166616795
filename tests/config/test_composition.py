"""The embedded default, the opt-out, Python sources, `find_config`, and the built-in configs."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.config import (
    CompositionError,
    default_composition_text,
    find_config,
    load_composition,
)
from stockade.config.builtins import (
    Backend,
    LocalBashConfig,
    SandboxBashConfig,
    SandboxLocalConfig,
)
from stockade.errors import ConfigError
from stockade.sandbox.config import BACKEND_CHOICES
from stockade.vocab import ApprovalPolicy, SandboxMode, allowed_modes

from .support import load, write

OPT_OUT = """\
- id: bash
  name: stockade.bash.local
- id: approval
  name: stockade.approval.user
- id: log
  name: stockade.session.log
- id: fs
  name: stockade.fs.local
"""


def test_embedded_default_is_the_sandboxed_product_path(tmp_path):
    composition = load_composition(cwd=tmp_path, environ={})
    assert [(entry.id, entry.name) for entry in composition.entries] == [
        ("sandbox", "stockade.sandbox.local"),
        ("bash", "stockade.bash.sandbox"),
        ("approval", "stockade.approval.user"),
        ("permission", "stockade.permission.presets"),
        ("log", "stockade.session.log"),
        ("fs", "stockade.fs.sandbox"),
    ]
    assert composition.confines
    assert composition.source == "<embedded default>"
    bash = composition.executor.config
    assert bash.mode is SandboxMode.WORKSPACE_WRITE
    assert bash.workspace_root == str(tmp_path)
    assert composition.approval.config.policy is ApprovalPolicy.ASK
    assert list(composition.presets.config.presets) == ["workspace-write", "danger-full-access"]
    assert composition.session_log.config.state_dir is None
    assert composition.fs.config.read_cap == 262144
    assert composition.provider.position == "<embedded default>:9:3"


def test_embedded_default_copied_to_a_file_loads_the_same(tmp_path):
    write(tmp_path, default_composition_text())
    copied = load_composition("stockade.yml", cwd=tmp_path, environ={})
    default = load_composition(cwd=tmp_path, environ={})
    assert [(e.name, e.config) for e in copied.entries] == [
        (e.name, e.config) for e in default.entries
    ]


def test_opt_out_is_valid_and_does_not_confine(tmp_path):
    composition = load(tmp_path, OPT_OUT)
    assert not composition.confines
    assert composition.provider is None
    assert composition.presets is None
    assert composition.executor.name == "stockade.bash.local"
    assert composition.fs.plugin.confines is False


def test_confining_without_approval_is_valid(tmp_path):
    text = "- id: s\n  name: stockade.sandbox.local\n- id: b\n  name: stockade.bash.sandbox\n"
    composition = load(tmp_path, text)
    assert composition.confines
    assert composition.approval is None
    assert composition.get("b") is composition.executor
    assert composition.get("nope") is None


def test_an_empty_list_is_an_empty_composition(tmp_path):
    composition = load(tmp_path, "[]\n")
    assert composition.entries == ()
    assert not composition.confines


def test_a_python_list_gets_the_same_checks_with_key_paths():
    with pytest.raises(CompositionError) as info:
        load_composition(
            [
                {"id": "sandbox", "name": "stockade.sandbox.local"},
                {"id": "bash", "name": "stockade.bash.sandbox", "config": {"mode": "wide"}},
                {"id": "bash", "name": "stockade.bash.local", "config": {"colour": 1}},
            ]
        )
    assert info.value.lines == (
        "<mapping>:entry[1].config.mode: unknown sandbox mode 'wide' "
        f"(allowed: {', '.join(allowed_modes())})",
        "<mapping>:entry[2].id: duplicate id 'bash' (first at <mapping>:entry[1].id)",
        "<mapping>:entry[2].config.colour: unknown key 'colour' "
        "(allowed: output_cap, kill_grace, default_timeout, env, limits, session_limits, rules, rules_file, history)",
        "<mapping>:entry[2].name: a second executor entry ('stockade.bash.local'); a "
        "composition mounts one executor (the first is at <mapping>:entry[1])",
    )


def test_a_python_list_that_is_valid():
    composition = load_composition(
        [
            {"id": "bash", "name": "stockade.bash.local", "config": {"default_timeout": 30}},
        ]
    )
    assert composition.executor.config == LocalBashConfig(default_timeout=30.0)
    assert composition.executor.position == "<mapping>:entry[0]"


def test_a_python_mapping_is_not_a_list():
    with pytest.raises(ConfigError, match=r"^<mapping>: expected a list of entries"):
        load_composition({"id": "bash", "name": "stockade.bash.local"})


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"^gone\.yml: cannot read: No such file"):
        load_composition("gone.yml", cwd=tmp_path)


@settings(max_examples=30)
@given(st.text(max_size=20).filter(lambda text: text not in allowed_modes()))
def test_any_other_mode_is_rejected_listing_the_modes(mode):
    with pytest.raises(ConfigError) as info:
        load_composition(
            [
                {"id": "s", "name": "stockade.sandbox.local"},
                {"id": "b", "name": "stockade.bash.sandbox", "config": {"mode": mode}},
            ]
        )
    assert str(info.value).endswith(f"(allowed: {', '.join(allowed_modes())})")


# --- find_config ----------------------------------------------------------------------------


def test_find_config_explicit_wins(tmp_path):
    write(tmp_path, "[]\n")
    write(tmp_path, "[]\n", name="env.yml")
    write(tmp_path, "[]\n", name="flag.yml")
    environ = {"STOCKADE_CONFIG": "env.yml"}
    assert find_config("flag.yml", environ, tmp_path) == tmp_path / "flag.yml"


def test_find_config_environment_beats_the_working_directory(tmp_path):
    write(tmp_path, "[]\n")
    write(tmp_path, "[]\n", name="env.yml")
    assert find_config(None, {"STOCKADE_CONFIG": "env.yml"}, tmp_path) == tmp_path / "env.yml"


def test_find_config_working_directory_then_default(tmp_path):
    assert find_config(None, {}, tmp_path) is None
    assert find_config(None, {"STOCKADE_CONFIG": ""}, tmp_path) is None
    write(tmp_path, "[]\n")
    assert find_config(None, {}, tmp_path) == tmp_path / "stockade.yml"


def test_find_config_explicit_file_must_exist(tmp_path):
    write(tmp_path, "[]\n")  # present, but the flag names another file
    with pytest.raises(ConfigError, match=r"'missing\.yml' \(from --config\) does not exist"):
        find_config("missing.yml", {}, tmp_path)
    with pytest.raises(ConfigError, match=r"\(from STOCKADE_CONFIG\) is not a file"):
        find_config(None, {"STOCKADE_CONFIG": str(tmp_path)}, tmp_path)


def test_find_config_absolute_path(tmp_path):
    path = write(tmp_path, "[]\n", name="abs.yml")
    assert find_config(str(path), {}, "/") == path


# --- built-in configs -----------------------------------------------------------------------


def test_backend_vocabulary_is_the_providers():
    assert get_args(Backend) == BACKEND_CHOICES


def test_provider_config_from_the_entry():
    config = SandboxLocalConfig(
        runner_command="/opt/fake-runner", runner_failure_signatures=("fatal:",), backend="bwrap"
    ).provider_config()
    assert (config.runner_command, config.runner_failure_signatures, config.backend) == (
        "/opt/fake-runner",
        ("fatal:",),
        "bwrap",
    )


def test_executor_configs_from_the_entries():
    confined = SandboxBashConfig(
        mode=SandboxMode.READ_ONLY, workspace_root="/w", output_cap=10, default_timeout=5.0
    ).executor_config()
    assert (confined.default_mode, confined.fallback_root, confined.output_cap) == (
        SandboxMode.READ_ONLY,
        "/w",
        10,
    )
    assert confined.default_timeout == 5.0
    local = LocalBashConfig(kill_grace=0.5).executor_config()
    assert (local.default_mode, local.kill_grace) == (SandboxMode.DANGER_FULL_ACCESS, 0.5)

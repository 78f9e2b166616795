"""The `env:` key of the executor entries: its shape, its defaults, its error lines."""

from __future__ import annotations

import pytest

from stockade.executor.environment import EnvPolicy

from .support import SANDBOXED, errors, load

LOCAL = """\
- id: bash
  name: stockade.bash.local
"""


def with_env(env: str, base: str = SANDBOXED, name: str = "stockade.bash.sandbox") -> str:
    return base.replace(f"name: {name}\n", f"name: {name}\n  config:\n    env: {env}\n")


def policy_of(tmp_path, text: str) -> EnvPolicy:
    composition = load(tmp_path, text)
    assert composition.executor is not None
    return composition.executor.config.executor_config().env


def test_without_env_the_defaults_hold(tmp_path):
    assert policy_of(tmp_path, SANDBOXED) == EnvPolicy()
    assert policy_of(tmp_path, LOCAL) == EnvPolicy()


@pytest.mark.parametrize(
    ("base", "name"), [(SANDBOXED, "stockade.bash.sandbox"), (LOCAL, "stockade.bash.local")]
)
def test_every_key_reaches_the_executors_policy(tmp_path, base, name):
    env = (
        "{inherit: core, exclude: [FOO*], include_only: [PATH, A], "
        "set: {A: '1'}, keep_default_excludes: false}"
    )
    policy = policy_of(tmp_path, with_env(env, base, name))
    assert policy.inherit == "core"
    assert policy.exclude == ("FOO*",) and policy.include_only == ("PATH", "A")
    assert dict(policy.set) == {"A": "1"} and policy.keep_default_excludes is False


@pytest.mark.parametrize(
    ("env", "line"),
    [
        ("{inherit: some}", "config.env.inherit: unknown value 'some' (allowed: all, core, none)"),
        (
            "{set: {STOCKADE_CONFIG: x}}",
            "config.env.set: 'STOCKADE_CONFIG': stockade's own variables (STOCKADE_*) cannot be set",
        ),
        ("{set: {1A: x}}", "config.env.set: '1A' is not a variable name"),
        ("{set: {A: 1}}", "config.env.set.A: expected a string, got 1"),
        ("{exclude: ['']}", "config.env.exclude[0]: must not be empty"),
        (
            "{keep_default_excludes: 'no'}",
            "config.env.keep_default_excludes: expected true or false",
        ),
        (
            "{bogus: 1}",
            "unknown key 'bogus' (allowed: inherit, exclude, include_only, set, keep_default_excludes)",
        ),
        ("[1]", "config.env: expected a mapping, got a list"),
    ],
)
def test_a_bad_value_is_a_clear_error_naming_the_key(tmp_path, env, line):
    (found,) = errors(tmp_path, with_env(env))
    assert line in found, found

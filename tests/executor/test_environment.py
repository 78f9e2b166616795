"""The environment policy's pure step: each key, their order, stockade's own names."""

from __future__ import annotations

from typing import get_args

import pytest

from stockade.config.builtins import Inherit
from stockade.executor.environment import (
    CORE,
    DEFAULT_EXCLUDES,
    INHERIT_CHOICES,
    EnvPolicy,
    apply_policy,
    glob_match,
    matches,
    render_policy,
)

HOST = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "LC_ALL": "C",
    "EDITOR": "vi",
    "OPENAI_API_KEY": "sk-1",
    "PGPASSWORD": "pw",
    "STOCKADE_CONFIG": "/etc/stockade.yml",
}


def test_defaults_drop_the_secret_looking_names_and_keep_the_rest():
    out, dropped = apply_policy(HOST, EnvPolicy())
    assert out == {k: HOST[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "EDITOR")}
    assert dropped == ("OPENAI_API_KEY", "PGPASSWORD", "STOCKADE_CONFIG")


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "api_key",  # case-insensitive
        "GITHUB_TOKEN",
        "MY_SECRET",
        "DB_PASSWORD",
        "MYSQL_PASSWD",
        "GIT_CREDENTIAL_HELPER",
        "STORE_DSN",
        "DATABASE_URL",
        "PGPASSWORD",
        "PGHOST",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_PROFILE",
        "AZURE_CLIENT_ID",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SSH_AUTH_SOCK",
        "GPG_AGENT_INFO",
        "STOCKADE_TEST_PG_DSN",
        "stockade_state_dir",
    ],
)
def test_each_default_exclude_drops_its_names(name):
    out, dropped = apply_policy({name: "v", "PATH": "/bin"}, EnvPolicy())
    assert out == {"PATH": "/bin"} and dropped == (name,)


@pytest.mark.parametrize("name", ["PATH", "HOME", "USER", "TERM", "LANG", "PWD", "SHELL"])
def test_ordinary_names_are_not_default_excluded(name):
    assert not matches(name, DEFAULT_EXCLUDES)


def test_inherit_core_keeps_only_the_core_names():
    out, dropped = apply_policy(HOST, EnvPolicy(inherit="core"))
    assert set(out) == {"PATH", "HOME", "LANG", "LC_ALL"}
    assert dropped == ("EDITOR", "OPENAI_API_KEY", "PGPASSWORD", "STOCKADE_CONFIG")
    assert "PATH" in CORE and "LC_*" in CORE


def test_inherit_core_matches_names_case_sensitively():
    out, _ = apply_policy({"path": "x", "PATH": "/bin"}, EnvPolicy(inherit="core"))
    assert out == {"PATH": "/bin"}


def test_inherit_none_starts_empty_and_set_adds():
    out, dropped = apply_policy(HOST, EnvPolicy(inherit="none", set={"PATH": "/bin"}))
    assert out == {"PATH": "/bin"}
    # PATH was given a value of the policy's own: not reported as dropped.
    assert "PATH" not in dropped and len(dropped) == len(HOST) - 1


def test_exclude_drops_case_insensitively_after_the_defaults():
    out, dropped = apply_policy(HOST, EnvPolicy(exclude=("editor", "LC_*")))
    assert set(out) == {"PATH", "HOME", "LANG"}
    assert {"EDITOR", "LC_ALL"} <= set(dropped)


def test_keep_default_excludes_false_passes_them_but_never_stockades_own():
    out, dropped = apply_policy(HOST, EnvPolicy(keep_default_excludes=False))
    assert out["OPENAI_API_KEY"] == "sk-1" and out["PGPASSWORD"] == "pw"
    assert dropped == ("STOCKADE_CONFIG",)


def test_set_overrides_after_exclude():
    # The order: exclude drops EDITOR, then set gives it back with the policy's value.
    out, dropped = apply_policy(HOST, EnvPolicy(exclude=("EDITOR",), set={"EDITOR": "nano"}))
    assert out["EDITOR"] == "nano" and "EDITOR" not in dropped


def test_set_may_give_a_secret_looking_name_a_value_of_its_own():
    # An operator's explicit value, not the harness's: the defaults filter only inherited.
    out, _ = apply_policy(HOST, EnvPolicy(set={"OPENAI_API_KEY": "sk-for-the-command"}))
    assert out["OPENAI_API_KEY"] == "sk-for-the-command"


def test_include_only_comes_last_and_filters_set_too():
    policy = EnvPolicy(include_only=("PATH", "home", "MINE"), set={"MINE": "1", "OTHER": "2"})
    out, dropped = apply_policy(HOST, policy)
    assert out == {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "MINE": "1"}
    assert "OTHER" not in out and "EDITOR" in dropped


def test_include_only_cannot_bring_back_a_default_exclude():
    out, dropped = apply_policy(HOST, EnvPolicy(include_only=("*KEY*", "PATH")))
    assert out == {"PATH": "/usr/bin:/bin"} and "OPENAI_API_KEY" in dropped


def test_include_only_cannot_keep_stockades_own():
    policy = EnvPolicy(keep_default_excludes=False, include_only=("STOCKADE_*",))
    out, dropped = apply_policy(HOST, policy)
    assert out == {} and "STOCKADE_CONFIG" in dropped


@pytest.mark.parametrize("name", ["STOCKADE_CONFIG", "stockade_x"])
def test_set_may_not_name_stockades_own(name):
    with pytest.raises(ValueError, match="stockade's own variables"):
        EnvPolicy(set={name: "x"})


def test_unknown_inherit_is_refused():
    with pytest.raises(ValueError, match="inherit"):
        EnvPolicy(inherit="some")  # type: ignore[arg-type]


def test_the_policy_copies_set_and_stays_hashable():
    given = {"A": "1"}
    policy = EnvPolicy(set=given)
    given["B"] = "2"
    assert dict(policy.set) == {"A": "1"}
    assert hash(policy) == hash(EnvPolicy(set={"A": "other"}))


def test_the_input_environment_is_not_changed():
    host = dict(HOST)
    apply_policy(host, EnvPolicy(inherit="none"))
    assert host == HOST


def test_describe_and_render_name_no_value_of_set():
    policy = EnvPolicy(inherit="core", exclude=("X*",), include_only=("P*",), set={"A": "v1"})
    described = policy.describe()
    assert described["set"] == ["A"] and described["inherit"] == "core"
    assert described["default_excludes"] == list(DEFAULT_EXCLUDES)
    assert described["always_dropped"] == ["STOCKADE_*"]
    text = render_policy(policy)
    assert "v1" not in text and "v1" not in repr(described)
    assert "inherit core" in text and "*KEY*" in text and "exclude: X*" in text
    assert "include_only: P*" in text and "set: A" in text and "core: PATH" in text
    off = render_policy(EnvPolicy(keep_default_excludes=False))
    assert "*KEY*" not in off and "STOCKADE_* only" in off
    assert EnvPolicy(keep_default_excludes=False).describe()["default_excludes"] == []


def test_the_compositions_inherit_choices_are_the_policys():
    assert get_args(Inherit) == INHERIT_CHOICES


@pytest.mark.parametrize(
    ("name", "pattern", "expected"),
    [
        ("ABC", "ABC", True),
        ("ABC", "AB", False),
        ("ABC", "A*", True),
        ("ABC", "*C", True),
        ("ABC", "*B*", True),
        ("ABC", "*", True),
        ("", "*", True),
        ("", "?", False),
        ("ABC", "A?C", True),
        ("AC", "A?C", False),
        ("A_DSN", "*_DSN", True),
        ("A_DSN_X", "*_DSN", False),
        ("AXBXC", "*X*X*", True),
        ("AXB", "*X*X*", False),
        ("A*B", "A*B", True),
        ("abc", "ABC", False),  # case-sensitive: `matches` folds
    ],
)
def test_glob_match(name, pattern, expected):
    assert glob_match(name, pattern) is expected


@pytest.mark.parametrize("name", ["1A", "", "A-B", "A B", "É"])
def test_set_refuses_what_is_no_variable_name(name):
    with pytest.raises(ValueError, match="names no variable"):
        EnvPolicy(set={name: "x"})


def test_the_policy_is_immutable_and_its_repr_names_no_value():
    policy = EnvPolicy(set={"A": "hidden-value"})
    with pytest.raises(AttributeError):
        policy.inherit = "none"  # type: ignore[misc]
    assert "hidden-value" not in repr(policy) and "A" in repr(policy)
    assert policy != EnvPolicy() and policy == EnvPolicy(set={"A": "hidden-value"})


def test_compiled_pattern_sets_agree_with_the_glob_walk_on_every_shape():
    """The policy's patterns are sorted by shape once (exact, prefix, suffix, infix, the
    rest); each shape must judge exactly as matching pattern by pattern would."""
    import itertools
    import random

    shapes = [
        "",
        "*",
        "**",
        "?",
        "A",
        "AB",
        "A*",
        "*A",
        "*A*",
        "**A",
        "A**",
        "A*B",
        "*A?*",
        "?A*",
        "A?",
        "*_DSN",
        "PG*",
        "*KEY*",
        "LC_*",
        "PATH",
        "a*",
    ]
    names = [
        "",
        "A",
        "AB",
        "BA",
        "ABA",
        "XAY",
        "AXB",
        "PGHOST",
        "DB_DSN",
        "MY_KEY_X",
        "LC_ALL",
        "PATH",
        "PATHX",
        "a",
        "ab",
        "_DSN",
        "KEY",
        "AAB",
    ]
    rng = random.Random(7)
    sets = [tuple(rng.sample(shapes, k)) for k in (1, 2, 3, 5) for _ in range(30)]
    for patterns, name in itertools.product(sets, names):
        walked = any(glob_match(name.upper(), p.upper()) for p in patterns)
        assert matches(name, patterns) == walked, (name, patterns)

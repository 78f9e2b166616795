"""Fuzzing the composition loader: every input loads or raises a located ConfigError.

Inputs are YAML documents (written to a file and loaded with `load_composition`, as
`--config` does) and Python lists of entries. Their shapes lean on the real vocabulary
(plugin names, config keys, tags, anchors) so that the fuzzer reaches the structuring
and cross-entry checks, not only the YAML parser. Whatever the input: a Composition,
or a ConfigError whose every line starts with its location; never another exception,
and nothing written.
"""

from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from stockade.config import BUILTIN_PLUGINS, CompositionError, load_composition
from stockade.errors import ConfigError

ENV = {"HOME": "/home/fuzz", "SET": "/srv/set", "EMPTY": ""}
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
FILE_LINE = re.compile(r"stockade\.yml:(\d+):(\d+): \S")
# A key path: `.plain_key`, `[index]`, or `['any other key']`.
MAPPING_LINE = re.compile(r"<mapping>(:entry\[\d+\](\.[A-Za-z_][\w-]*|\[\d+\]|\[.+?\])*)?: \S")

PLUGIN_NAMES = sorted(BUILTIN_PLUGINS)
CONFIG_KEYS = [
    "backend", "runner_command", "runner_failure_signatures", "mode", "workspace_root",
    "output_cap", "kill_grace", "default_timeout", "policy", "reject", "answerers",
    "presets", "state_dir", "read_cap", "pattern", "reason", "sandbox_mode",
    "approval_policy",
]  # fmt: skip
WORDS = [
    "auto", "bwrap", "landlock", "seatbelt", "read-only", "workspace-write",
    "danger-full-access", "ask", "never", "terminal", "scripted", "custom", "a:b",
    "os:system", "/abs/path", "rel/path", "~", "(", "[a-", "", " ", "\t", "yolo",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from([2**1100, -(2**64)]),
    st.floats(),  # nan and the infinities included
    st.sampled_from(WORDS + PLUGIN_NAMES),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(CONFIG_KEYS) | st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
configs = st.one_of(
    st.none(),
    values,
    st.dictionaries(st.sampled_from(CONFIG_KEYS), values, max_size=4),
)
entries = st.one_of(
    values,
    st.fixed_dictionaries(
        {"id": st.sampled_from(["a", "b", "sandbox", "bash", ""]) | scalars},
        optional={
            "name": st.sampled_from(PLUGIN_NAMES) | scalars,
            "config": configs,
            "extra": scalars,
        },
    ),
)
documents = st.one_of(st.lists(entries, max_size=6), values)

# Fragments that YAML gives a meaning to, spliced into otherwise valid documents.
TOKENS = [
    "!cwd", "!cwd ''", "!env SET", "!env UNSET", "!env", "!path x", "!path ~/y",
    "!path", "!!python/object:os.system", "!!python/name:os.system", "!custom",
    "&anchor", "*anchor", "*missing", "<<: *anchor", "? ", ": ", "- ", "{", "}", "[",
    "]", "'", '"', "\t", "\n", "\n  ", "#", "|", ">", "%YAML 1.2\n---\n", "---",
    "...", "\x00", "\x85", "\ufeff", "\ud7ff", "@", "`", "!!binary", "1e400",
    ".nan", "-.inf", "0x_", "~",
]  # fmt: skip


def dump(document: Any) -> str:
    yaml = YAML(typ="safe", pure=True)
    stream = io.StringIO()
    yaml.dump(document, stream)
    return stream.getvalue()


def check_error(error: ConfigError, pattern: re.Pattern[str], prefix: str) -> None:
    if isinstance(error, CompositionError):
        assert error.lines, "an error with no lines"
        for line in error.lines:
            assert "\n" not in line, line
            assert pattern.match(line), line
            if pattern is FILE_LINE:
                match = pattern.match(line)
                assert match and int(match[1]) >= 1 and int(match[2]) >= 1, line
    else:
        # Only reading the file itself can fail outside a CompositionError.
        assert str(error).startswith(prefix), str(error)


def load_text(directory: Path, text: str) -> None:
    path = directory / "stockade.yml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    before = sorted(os.listdir(directory))
    try:
        load_composition("stockade.yml", cwd=directory, environ=ENV)
    except ConfigError as error:
        check_error(error, FILE_LINE, "stockade.yml: ")
    assert sorted(os.listdir(directory)) == before, "loading wrote something"


@SETTINGS
@given(documents)
def test_yaml_documents_load_or_fail_with_located_lines(tmp_path_factory, document):
    directory = tmp_path_factory.mktemp("cfg")
    load_text(directory, dump(document))


@SETTINGS
@given(
    documents,
    st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(TOKENS)), max_size=4),
)
def test_spliced_yaml_loads_or_fails_with_located_lines(tmp_path_factory, document, splices):
    directory = tmp_path_factory.mktemp("cfg")
    text = dump(document)
    for position, token in splices:
        at = position % (len(text) + 1)
        text = text[:at] + token + text[at:]
    load_text(directory, text)


@SETTINGS
@given(st.text(max_size=200))
def test_any_text_loads_or_fails_with_located_lines(tmp_path_factory, text):
    load_text(tmp_path_factory.mktemp("cfg"), text)


@SETTINGS
@given(documents)
def test_python_lists_load_or_fail_with_located_lines(document):
    if isinstance(document, str | os.PathLike) or document is None:
        return  # a str is a path and None the embedded default: other tests cover them
    try:
        load_composition(document if isinstance(document, list) else [document], environ=ENV)
    except ConfigError as error:
        check_error(error, MAPPING_LINE, "<mapping>")


# --- hand-picked shapes the fuzzer may take long to find ----------------------------------------


def deep(depth: int, opener: str, closer: str) -> str:
    return opener * depth + closer * depth


@pytest.mark.parametrize(
    "text",
    [
        "- id: a\n  name: stockade.bash.local\n  config: " + deep(3000, "[", "]") + "\n",
        "- id: a\n  name: stockade.bash.local\n  config: {x: " + deep(3000, "[", "]") + "}\n",
        "- " * 3000 + "x\n",
        deep(50_000, "[", "]"),
        "- &a [*a]\n",
        "- id: a\n  name: stockade.bash.local\n  config: &c {kill_grace: 1}\n"
        "- id: b\n  <<: {name: stockade.sandbox.local}\n  config: *c\n",
        "- id: !!python/object/apply:os.system ['touch /tmp/stockade-pwned']\n  name: x\n",
        "- {id: a, name: stockade.bash.local, config: {output_cap: 1e400}}\n",
        "- {? [a, b] : c, id: a, name: stockade.bash.local}\n",
        "- {? {a: b} : c, id: a, name: stockade.bash.local}\n",
        "\ufeff- id: a\n  name: stockade.bash.local\n",
        "- id: a\n  name: stockade.bash.local\n  config: !env\n",
        "- id: a\n  name: stockade.bash.local\n  config:\n    !cwd : 1\n",
    ],
    ids=[
        "deep-list-config",
        "deep-value",
        "deep-block-seq",
        "deep-flow",
        "recursive-alias",
        "merge-key",
        "python-tag",
        "overflowing-float",
        "seq-as-key",
        "map-as-key",
        "bom",
        "env-tag-on-config",
        "tag-as-key",
    ],
)
def test_hostile_yaml_loads_or_fails_with_located_lines(tmp_path, text):
    load_text(tmp_path, text)
    assert not Path("/tmp/stockade-pwned").exists()


@pytest.mark.parametrize("value", [math.nan, -math.nan])
@pytest.mark.parametrize("key", ["kill_grace", "default_timeout"])
def test_nan_is_not_a_duration(tmp_path, key, value):
    """NaN passes `<= 0` checks; a NaN timeout would fail every command at run time."""
    with pytest.raises(CompositionError) as caught:
        load_composition([{"id": "bash", "name": "stockade.bash.local", "config": {key: value}}])
    (line,) = caught.value.lines
    assert line.startswith(f"<mapping>:entry[0].config.{key}: ")
    assert "nan" in line


def test_nan_in_yaml_points_at_its_value(tmp_path):
    text = "- id: bash\n  name: stockade.bash.local\n  config:\n    default_timeout: .nan\n"
    (tmp_path / "stockade.yml").write_text(text)
    with pytest.raises(CompositionError) as caught:
        load_composition("stockade.yml", cwd=tmp_path)
    assert caught.value.lines[0].startswith("stockade.yml:4:22: ")


def test_a_forbidden_character_is_located_on_one_line(tmp_path):
    text = "- id: a\n  name: stockade.bash.local\n  config: {a\x01: 1}\n"
    (tmp_path / "stockade.yml").write_text(text)
    with pytest.raises(CompositionError) as caught:
        load_composition("stockade.yml", cwd=tmp_path)
    assert caught.value.lines == (
        "stockade.yml:3:13: invalid YAML: unacceptable character '\\x01' (#x0001): "
        "special characters are not allowed",
    )


def test_a_recursive_alias_is_an_error_not_a_hang(tmp_path):
    (tmp_path / "stockade.yml").write_text("- &a [*a]\n")
    with pytest.raises(CompositionError) as caught:
        load_composition("stockade.yml", cwd=tmp_path)
    assert caught.value.lines == ("stockade.yml:1:3: expected a mapping, got a list",)

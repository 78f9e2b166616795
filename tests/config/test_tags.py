"""`!cwd`, `!env NAME` and `!path P` expand at load; a tag that cannot is a positioned error."""

from __future__ import annotations

import os

from stockade.config import loads_composition

from .support import errors, load, write

LOG = "- id: log\n  name: stockade.session.log\n  config:\n    state_dir: {}\n"


def state_dir(tmp_path, value, **kwargs):
    return load(tmp_path, LOG.format(value), **kwargs).session_log.config.state_dir


def test_cwd_is_the_working_directory(tmp_path):
    assert state_dir(tmp_path, "!cwd") == str(tmp_path)


def test_cwd_takes_no_value(tmp_path):
    assert errors(tmp_path, LOG.format("!cwd somewhere")) == [
        "stockade.yml:4:16: !cwd takes no value, got 'somewhere'"
    ]


def test_env_reads_the_variable(tmp_path):
    environ = {"LOGS": "/srv/logs"}
    assert state_dir(tmp_path, "!env LOGS", environ=environ) == "/srv/logs"


def test_env_of_an_unset_variable_names_it(tmp_path):
    assert errors(tmp_path, LOG.format("!env STOCKADE_TEST_UNSET"), environ={}) == [
        "stockade.yml:4:16: environment variable 'STOCKADE_TEST_UNSET' is not set "
        "(from !env STOCKADE_TEST_UNSET)"
    ]


def test_env_of_an_unset_variable_is_reported_once(tmp_path):
    text = (
        "- id: sandbox\n  name: stockade.sandbox.local\n"
        "- id: bash\n  name: stockade.bash.sandbox\n  config: {mode: !env MODE}\n"
    )
    assert errors(tmp_path, text, environ={}) == [
        "stockade.yml:5:18: environment variable 'MODE' is not set (from !env MODE)"
    ]


def test_env_value_is_checked_like_any_other(tmp_path):
    text = (
        "- id: sandbox\n  name: stockade.sandbox.local\n"
        "- id: bash\n  name: stockade.bash.sandbox\n  config: {mode: !env MODE}\n"
    )
    (line,) = errors(tmp_path, text, environ={"MODE": "wide"})
    assert line.startswith("stockade.yml:5:18: config.mode: unknown sandbox mode 'wide' (allowed:")


def test_path_expands_home(tmp_path):
    assert state_dir(tmp_path, "!path ~/state/../logs", environ={"HOME": "/home/u"}) == (
        "/home/u/logs"
    )


def test_path_is_relative_to_the_file_not_the_cwd(tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    path = write(conf, LOG.format("!path ./logs/"))
    composition = loads_composition(
        path.read_text(), filename="conf/stockade.yml", base_dir=conf, cwd=tmp_path
    )
    assert composition.session_log.config.state_dir == str(conf / "logs")


def test_path_keeps_an_absolute_path_normalised(tmp_path):
    assert state_dir(tmp_path, "!path /var//lib/./x/") == "/var/lib/x"


def test_path_and_env_need_an_argument(tmp_path):
    assert errors(tmp_path, LOG.format("!path")) == [
        "stockade.yml:4:16: !path needs a PATH, as in `!path PATH`"
    ]


def test_unknown_tag_lists_the_known_ones(tmp_path):
    assert errors(tmp_path, LOG.format("!home logs")) == [
        "stockade.yml:4:16: unknown tag !home (allowed: !cwd, !env, !path)"
    ]


def test_python_object_tags_are_refused_not_constructed(tmp_path):
    (line,) = errors(tmp_path, LOG.format("!!python/object:os.system echo"))
    assert line == (
        "stockade.yml:4:16: unknown tag !!python/object:os.system (allowed: !cwd, !env, !path)"
    )


def test_tag_on_a_mapping(tmp_path):
    assert errors(tmp_path, LOG.format("!env {a: b}")) == [
        "stockade.yml:4:16: !env takes a plain scalar, not a mapping or a list"
    ]


def test_default_cwd_is_the_process_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    composition = loads_composition(LOG.format("!cwd"))
    assert composition.session_log.config.state_dir == os.getcwd()


POSTGRES_LOG = "- id: log\n  name: stockade.session.log\n  config:\n    store: postgres\n{dsn}"


def test_a_postgres_dsn_from_an_unset_variable_names_only_the_variable(tmp_path):
    """Not "store postgres needs a dsn" first, though the file gives one: the variable
    to set is the one line (issue 38, item 5)."""
    text = POSTGRES_LOG.format(dsn="    dsn: !env STOCKADE_LOG_DSN\n")
    assert errors(tmp_path, text, environ={}) == [
        "stockade.yml:5:10: environment variable 'STOCKADE_LOG_DSN' is not set "
        "(from !env STOCKADE_LOG_DSN)"
    ]


def test_a_postgres_store_without_a_dsn_says_which_key_and_variable(tmp_path):
    [said] = errors(tmp_path, POSTGRES_LOG.format(dsn=""), environ={})
    assert said.endswith(
        "config.dsn: store postgres needs a dsn: add `dsn: !env STOCKADE_LOG_DSN` to this "
        "entry's config and set STOCKADE_LOG_DSN to a libpq connection string"
    )

"""What the bench does to the host it measures on, so peers are timed as they usually
run: a shell level of at least 1, a peer's binary held in memory, and the host's
proactive reclaim said in the report."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bench._env import held_in_memory, ordinary_shell_level, proactive_reclaim


@pytest.mark.parametrize("level", [None, "", "0"])
def test_a_shell_level_below_one_is_set_to_one_and_said(monkeypatch, level):
    # Set first, so the original (maybe none) is what the monkeypatch restores.
    monkeypatch.setenv("SHLVL", "9")
    if level is None:
        monkeypatch.delenv("SHLVL")
    else:
        monkeypatch.setenv("SHLVL", level)
    said = ordinary_shell_level()
    assert os.environ["SHLVL"] == "1"
    assert said is not None and "set to 1" in said


def test_an_ordinary_shell_level_is_left_alone(monkeypatch):
    monkeypatch.setenv("SHLVL", "3")
    assert ordinary_shell_level() is None
    assert os.environ["SHLVL"] == "3"


def _mapped(path: Path) -> bool:
    return str(path) in Path("/proc/self/maps").read_text()


def test_held_files_are_mapped_for_the_block_alone(tmp_path):
    binary = tmp_path / "peer"
    binary.write_bytes(os.urandom(3 * 4096 + 5))
    missing = tmp_path / "gone"
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with held_in_memory([str(binary), str(missing), str(empty), str(binary)]) as held:
        assert held == [str(binary)]
        assert _mapped(binary)
    assert not _mapped(binary)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_a_running_pageout_scheme_is_said_with_its_idle_age(tmp_path):
    kdamond = tmp_path / "0"
    _write(kdamond / "state", "on")
    context = kdamond / "contexts" / "0"
    _write(context / "monitoring_attrs/intervals/aggr_us", "5000000")
    scheme = context / "schemes" / "0"
    _write(scheme / "action", "pageout")
    _write(scheme / "access_pattern/age/min", "12")
    _write(scheme / "ops_filters/0/type", "anon")
    _write(scheme / "ops_filters/0/allow", "N")
    _write(scheme / "ops_filters/1/type", "unmapped")
    _write(scheme / "ops_filters/1/allow", "Y")
    # Not said: a stopped kdamond, and a scheme that only watches.
    _write(tmp_path / "1" / "state", "off")
    _write(tmp_path / "1/contexts/0/schemes/0/action", "pageout")
    _write(context / "schemes/1/action", "stat")
    assert proactive_reclaim(str(tmp_path)) == [
        "DAMON pageout of memory unread for 60 s (anon excluded, unmapped included)"
    ]
    assert proactive_reclaim(str(tmp_path / "absent")) == []

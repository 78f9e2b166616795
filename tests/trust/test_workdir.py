"""Where a working directory really leads (trust/workdir.py): judged through one
descriptor, entered only as that same directory."""

from __future__ import annotations

import os

import pytest

from stockade.errors import CommandStartError
from stockade.trust import enter_judged, judge_workdir, spawn_cwd


def test_every_spelling_is_judged_by_where_it_leads(tmp_path):
    target = tmp_path / "a" / "b"
    target.mkdir(parents=True)
    (tmp_path / "link").symlink_to(target)
    real = str(target.resolve())
    for spelled in (
        str(target),
        str(tmp_path / "a" / "b" / ".." / "b"),
        str(tmp_path / "link"),
        f"/proc/self/root{target}",
    ):
        judged = judge_workdir(spelled)
        assert judged.real == real, spelled
        assert judged.identity == (os.stat(target).st_dev, os.stat(target).st_ino)


def test_what_is_no_directory_cannot_be_a_workdir(tmp_path):
    (tmp_path / "f").write_text("x")
    for spelled in (tmp_path / "missing", tmp_path / "f"):
        with pytest.raises(CommandStartError, match="could not start the command in"):
            judge_workdir(str(spelled))


def test_the_judged_directory_is_the_one_entered(tmp_path):
    target = tmp_path / "w"
    target.mkdir()
    judged = judge_workdir(str(target))
    fd = enter_judged(judged)
    try:
        assert os.path.samestat(os.fstat(fd), os.stat(target))
        assert os.path.samefile(spawn_cwd(fd, judged), target)
    finally:
        os.close(fd)


def test_a_directory_replaced_after_it_was_judged_is_not_entered(tmp_path):
    target = tmp_path / "w"
    target.mkdir()
    judged = judge_workdir(str(target))
    target.rename(tmp_path / "moved")
    target.mkdir()
    with pytest.raises(CommandStartError, match="replaced after the call was checked"):
        enter_judged(judged)
    os.rmdir(target)
    (tmp_path / "elsewhere").mkdir()
    target.symlink_to(tmp_path / "moved")  # the same directory, through a link now
    with pytest.raises(CommandStartError):
        enter_judged(judged)

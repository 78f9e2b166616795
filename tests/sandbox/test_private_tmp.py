"""Making and removing a private temp directory (sandbox/private_tmp.py), on this
machine's real file system: the mode, the name, and a removal that follows no link
and removes nothing it did not make."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.sandbox.private_tmp import PREFIX, make_private_tmp, remove_private_tmp

pytestmark = pytest.mark.nobody  # runs something as uid 65534 (tests/README.md)

IS_ROOT = os.geteuid() == 0
NOBODY = 65534
# Nobody can run neither a venv's interpreter under root's home nor import from it.
SYSTEM_PYTHON = "/usr/bin/python3"
SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def parent() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="stockade-ptmp-unit-", dir="/var/tmp"))
    try:
        yield path
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(path)], check=False)
        subprocess.run(["rm", "-rf", "--one-file-system", str(path)], check=False)


def test_it_is_0700_whatever_the_umask(parent):
    old = os.umask(0o777)
    try:
        tmp = make_private_tmp(str(parent))
    finally:
        os.umask(old)
    info = os.lstat(tmp.path)
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
    assert (info.st_dev, info.st_ino) == (tmp.device, tmp.inode)
    assert os.path.basename(tmp.path).startswith(PREFIX)
    assert remove_private_tmp(tmp) and not os.path.lexists(tmp.path)
    assert remove_private_tmp(tmp)  # gone already: nothing to do


def test_a_named_one_takes_the_name_only_when_it_is_free(parent):
    first = make_private_tmp(str(parent), name="s-1")
    assert first.path == str(parent / f"{PREFIX}s-1")
    second = make_private_tmp(str(parent), name="s-1")  # taken: a random name instead
    assert second.path != first.path and os.path.dirname(second.path) == str(parent)
    target = parent / "elsewhere"
    target.mkdir()
    (parent / f"{PREFIX}s-2").symlink_to(target)
    planted = make_private_tmp(str(parent), name="s-2")
    assert planted.path != str(parent / f"{PREFIX}s-2")
    assert remove_private_tmp(first) and remove_private_tmp(second) and remove_private_tmp(planted)
    assert (parent / f"{PREFIX}s-2").is_symlink() and target.is_dir()


def test_a_resumed_session_takes_back_only_what_its_user_left(parent):
    """`reuse` (a resumed session whose killed process left its directory): the one
    this user made, 0700, not a link, is taken back; anything else is not."""
    left = make_private_tmp(str(parent), name="s-1")
    (Path(left.path) / "work.txt").write_text("kept\n")
    again = make_private_tmp(str(parent), name="s-1", reuse=True)
    assert again == left and (Path(again.path) / "work.txt").read_text() == "kept\n"
    loose = parent / f"{PREFIX}s-2"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)  # not what make_private_tmp makes: someone else's doing
    assert make_private_tmp(str(parent), name="s-2", reuse=True).path != str(loose)
    target = parent / "elsewhere"
    target.mkdir(mode=0o700)
    (parent / f"{PREFIX}s-3").symlink_to(target)
    assert make_private_tmp(str(parent), name="s-3", reuse=True).path != str(target)
    if IS_ROOT:
        theirs = parent / f"{PREFIX}s-4"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, NOBODY, NOBODY)
        assert make_private_tmp(str(parent), name="s-4", reuse=True).path != str(theirs)
    assert remove_private_tmp(again) and not os.path.lexists(left.path)


def test_removal_follows_no_link(parent):
    outside = parent / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "file").write_text("keep")
    (outside / "sub" / "file").write_text("keep")
    tmp = make_private_tmp(str(parent))
    top = Path(tmp.path)
    (top / "file-link").symlink_to(outside / "file")
    (top / "dir-link").symlink_to(outside)
    deep = top / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "link").symlink_to(outside / "sub")
    (deep / "f").write_text("x")
    (top / "a" / "b").chmod(0)
    assert remove_private_tmp(tmp)
    assert not os.path.lexists(tmp.path)
    assert (outside / "file").read_text() == "keep"
    assert (outside / "sub" / "file").read_text() == "keep"


def test_removal_leaves_what_now_stands_at_the_path(parent):
    """Renamed away and replaced (a command that may write the temp root could): the
    directory standing there is not the one made, so nothing is removed."""
    tmp = make_private_tmp(str(parent))
    os.rename(tmp.path, parent / "moved")
    os.mkdir(tmp.path)
    (Path(tmp.path) / "theirs").write_text("theirs")
    assert remove_private_tmp(tmp) is False
    assert (Path(tmp.path) / "theirs").read_text() == "theirs"
    os.unlink(Path(tmp.path) / "theirs")
    os.rmdir(tmp.path)
    os.symlink(parent / "moved", tmp.path)
    assert remove_private_tmp(tmp) is False
    assert (parent / "moved").is_dir()


def removed_as_nobody(parent: Path, nobody_public, made: str) -> list[str]:
    """As uid 65534: make a private temp directory in `parent`, run `made` (code that
    fills `tmp.path` as a command would), remove it; what it printed: whether the
    removal said it was gone, and whether anything is left at the path."""
    parent.chmod(0o777)
    script = (
        f"import os, sys; sys.path.insert(0, {nobody_public.path(SRC)!r})\n"
        "from stockade.sandbox.private_tmp import make_private_tmp, remove_private_tmp\n"
        f"tmp = make_private_tmp({str(parent)!r})\n"
        f"{made}\n"
        "print(remove_private_tmp(tmp), os.path.lexists(tmp.path))\n"
    )
    done = subprocess.run(
        [SYSTEM_PYTHON, "-I", "-S", "-c", script],
        capture_output=True,
        text=True,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(not IS_ROOT, reason="needs root to become nobody")
@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="needs the system python")
def test_a_caller_other_than_root_removes_what_a_command_made_unreadable(parent, nobody_public):
    """Without root's override, an unreadable or unwritable directory inside would
    stop a plain rmtree: it is made 0700 again (through O_PATH, never a path)."""
    made = (
        "os.makedirs(tmp.path + '/a/b/c'); open(tmp.path + '/a/b/c/f', 'w').close()\n"
        "os.chmod(tmp.path + '/a/b', 0); os.chmod(tmp.path + '/a', 0o500)"
    )
    assert removed_as_nobody(parent, nobody_public, made) == ["True", "False"]


@pytest.mark.skipif(not IS_ROOT, reason="needs root to become nobody")
@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="needs the system python")
def test_a_command_that_took_the_directorys_own_rights_away_leaves_nothing(parent, nobody_public):
    """`chmod 0 "$TMPDIR"`: the directory is opened without rights, made 0700 through
    that descriptor and opened again through it (never the name), then emptied; a link
    inside, and a FIFO (which a plain open would block on), are removed themselves,
    never opened."""
    made = (
        "os.makedirs(tmp.path + '/a/b'); os.mkfifo(tmp.path + '/a/fifo')\n"
        "os.symlink(tmp.path + '/a/fifo', tmp.path + '/a/link')\n"
        "os.symlink('/etc', tmp.path + '/a/b/etc')\n"
        "os.chmod(tmp.path + '/a', 0o500); os.chmod(tmp.path, 0)"
    )
    assert removed_as_nobody(parent, nobody_public, made) == ["True", "False"]


def test_a_directory_inside_is_opened_never_through_a_link_nor_a_fifo(tmp_path):
    """What the walk opens below the directory: a directory only, never a link to one,
    and a FIFO fails at once instead of blocking its open."""
    from stockade.sandbox.private_tmp import _opened_below

    (tmp_path / "d").mkdir()
    (tmp_path / "to-d").symlink_to(tmp_path / "d")
    os.mkfifo(tmp_path / "fifo")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        opened = _opened_below(fd, "d")
        assert opened >= 0
        os.close(opened)
        assert _opened_below(fd, "to-d") == -1
        assert _opened_below(fd, "fifo") == -1
    finally:
        os.close(fd)


def test_a_deep_tree_is_removed_without_recursion_past_the_bound_too(parent):
    """The walk holds one descriptor a level and no Python frame: 300 levels go, and
    past `_MAX_DEPTH` (512) the rest is moved up and goes too (a command's 600 or 1,500
    levels used to stay behind, its files readable), and nothing raises."""
    for depth, gone in ((300, True), (600, True), (1500, True)):
        tmp = make_private_tmp(str(parent))
        fd = os.open(tmp.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for _ in range(depth):
                os.mkdir("d", dir_fd=fd)
                below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = below
            os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        finally:
            os.close(fd)
        assert remove_private_tmp(tmp) is gone
        assert os.path.lexists(tmp.path) is not gone

"""Placeholders (sandbox/placeholders.py): made marked, held shared, removed only by
the last holder and only when marked and empty. Two opens of one path stand for two
processes: a flock belongs to the open file description."""

from __future__ import annotations

import fcntl
import os

import pytest

from stockade.sandbox import placeholders


def test_a_missing_directory_is_made_marked_and_held(tmp_path):
    path = str(tmp_path / ".git")
    fd = placeholders.hold(path, directory=True)
    assert fd is not None
    info = os.stat(path)
    assert os.path.isdir(path) and info.st_mtime_ns == 0 and os.listdir(path) == []
    assert os.get_inheritable(fd) is False
    os.close(fd)
    assert placeholders.sweep(path) and not os.path.lexists(path)


def test_a_missing_file_is_made_empty_read_only_and_marked(tmp_path):
    path = str(tmp_path / "stockade.yml")
    fd = placeholders.hold(path, directory=False)
    assert fd is not None
    info = os.stat(path)
    assert info.st_size == 0 and info.st_mode & 0o777 == 0o444 and info.st_mtime_ns == 0
    os.close(fd)
    assert placeholders.sweep(path) and not os.path.lexists(path)


def test_a_held_placeholder_is_not_removed_until_its_last_holder_lets_go(tmp_path):
    path = str(tmp_path / ".git")
    first = placeholders.hold(path, directory=True)
    second = placeholders.hold(path, directory=True)  # another process's hold
    assert first is not None and second is not None
    os.close(first)
    assert placeholders.sweep(path)  # done with it: the other holder removes it
    assert os.path.isdir(path)
    os.close(second)
    assert placeholders.sweep(path) and not os.path.lexists(path)


def test_a_removal_in_progress_makes_hold_wait(tmp_path):
    path = str(tmp_path / "stockade.yml")
    fd = placeholders.hold(path, directory=False)
    assert fd is not None
    os.close(fd)
    remover = os.open(path, os.O_RDONLY)
    fcntl.flock(remover, fcntl.LOCK_EX)
    try:
        assert placeholders.hold(path, directory=False) is None
        with pytest.raises(BlockingIOError):
            placeholders.hold_all([(path, False)], patience=0.05)
    finally:
        os.close(remover)
    again = placeholders.hold_all([(path, False)])
    assert len(again) == 1
    os.close(again[0])


def test_the_users_own_empty_files_are_held_but_never_removed(tmp_path):
    """An empty `.git/hooks` or `stockade.yml` of the user's is blocked like a
    placeholder, but only a marked one (mtime 0) is removed."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    config = tmp_path / "stockade.yml"
    config.write_text("")
    for path, directory in ((hooks, True), (config, False)):
        fd = placeholders.hold(str(path), directory)
        assert fd is not None
        os.close(fd)
        assert placeholders.sweep(str(path))
        assert path.exists()


def test_a_marked_placeholder_that_gained_content_is_kept(tmp_path):
    path = tmp_path / ".git"
    fd = placeholders.hold(str(path), directory=True)
    assert fd is not None
    os.close(fd)
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    os.utime(path, (0, 0))
    assert placeholders.sweep(str(path)) and (path / "HEAD").exists()
    stuffed = tmp_path / "config"
    stuffed.write_text("[core]\n")
    os.utime(stuffed, (0, 0))
    assert placeholders.sweep(str(stuffed)) and stuffed.exists()


def test_links_fifos_and_sockets_are_not_placeholders(tmp_path):
    (tmp_path / "target").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (link, fifo):
        with pytest.raises(placeholders.NotAPlaceholder):
            placeholders.hold(str(path), directory=True)
        assert placeholders.sweep(str(path)) and os.path.lexists(path)
    assert (tmp_path / "target").is_dir()


def test_sweeping_what_is_gone_is_done(tmp_path):
    assert placeholders.sweep(str(tmp_path / "never-there"))


def test_a_link_swapped_in_above_a_placeholder_sends_nothing_elsewhere(tmp_path):
    """Another session that can write an ancestor (through a temp root) swaps it for a
    link: neither making nor removing may then touch what the link points at."""
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    (root / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    fd = placeholders.hold(str(root / "sub" / "stockade.yml"), directory=False)
    assert fd is not None
    os.close(fd)
    victim = elsewhere / "stockade.yml"
    victim.write_text("")  # empty and marked: exactly what a sweep would remove
    os.utime(victim, (0, 0))
    (root / "sub").rename(root / "away")
    (root / "sub").symlink_to(elsewhere)
    assert placeholders.sweep(str(root / "sub" / "stockade.yml"))
    assert victim.exists()
    with pytest.raises(placeholders.NotAPlaceholder):
        placeholders.hold(str(root / "sub" / ".git"), directory=True)
    assert sorted(os.listdir(elsewhere)) == ["stockade.yml"]


def test_a_made_directory_is_held_through_the_descriptor_that_made_it(tmp_path):
    """A missing directory is made first and that very descriptor is the held one: the
    hold names the marked placeholder on disk, and an exclusive lock is refused."""
    path = tmp_path / ".vscode"
    fd = placeholders.hold(str(path), directory=True)
    assert fd is not None
    held, there = os.fstat(fd), os.stat(path)
    assert (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)
    assert there.st_mtime_ns == 0
    other = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(other)
    os.close(fd)
    assert placeholders.sweep(str(path)) and not path.exists()


def test_a_batch_works_in_each_directory_as_it_was_opened(tmp_path):
    """One call's placeholders share their directories' descriptors (`Parents`): a
    directory swapped for a link during the batch sends none of its makes or removals
    to what the link points at; they stay in the directory the batch checked."""
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    parents = placeholders.Parents()
    try:
        first = placeholders.hold(str(root / ".claude"), True, parents)
        (root).rename(tmp_path / "away")
        root.symlink_to(elsewhere)
        second = placeholders.hold(str(root / ".codex"), True, parents)
        assert first is not None and second is not None
        assert os.listdir(elsewhere) == []
        assert sorted(os.listdir(tmp_path / "away")) == [".claude", ".codex"]
        os.close(first)
        os.close(second)
        placeholders.sweep(str(root / ".claude"), parents)
        placeholders.sweep(str(root / ".codex"), parents)
        assert os.listdir(tmp_path / "away") == []
    finally:
        parents.close()
    # A new batch judges the directory afresh: now a link, so nothing is made.
    with pytest.raises(placeholders.NotAPlaceholder):
        placeholders.hold(str(root / ".idea"), directory=True)
    assert os.listdir(elsewhere) == []


def test_sweep_all_removes_a_batch_and_keeps_what_is_not_ours(tmp_path):
    made = [str(tmp_path / name) for name in (".claude", ".codex", ".idea")]
    fds = placeholders.hold_all([(path, True) for path in made])
    for fd in fds:
        os.close(fd)
    own = tmp_path / ".vscode"
    own.mkdir()  # the user's own: not marked
    placeholders.sweep_all([*made, str(own)])
    assert os.listdir(tmp_path) == [".vscode"]

"""Atomic replacement: mode and owner kept, a failed write leaves the original and no temp."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from stockade.tools import _fence
from stockade.tools.fs import edit_file, write_file
from stockade.vocab import ExecutionPolicy, SandboxMode

from .conftest import TEMP_ROOTS

POLICIES = [SandboxMode.WORKSPACE_WRITE, SandboxMode.DANGER_FULL_ACCESS]


def _file(ws: str, mode: int = 0o644) -> str:
    path = os.path.join(ws, "f.txt")
    with open(path, "w") as handle:
        handle.write("old text\n")
    os.chmod(path, mode)
    return path


def _write(mode: SandboxMode, ws: str, op: str):
    policy = ExecutionPolicy(mode=mode, workspace_root=ws)
    if op == "write":
        return write_file(policy, ws, "f.txt", "new text\n", temp_roots=TEMP_ROOTS)
    return edit_file(policy, ws, "f.txt", "old", "new", temp_roots=TEMP_ROOTS)


@pytest.mark.parametrize("mode", POLICIES, ids=lambda mode: mode.value)
@pytest.mark.parametrize("op", ["write", "edit"])
@pytest.mark.parametrize("bits", [0o600, 0o640, 0o755, 0o4750])
def test_the_files_mode_is_kept(mode: SandboxMode, op: str, bits: int, ws: str) -> None:
    path = _file(ws, bits)
    inode = os.stat(path).st_ino
    result = _write(mode, ws, op)
    assert not result.is_error, result.text
    after = os.stat(path)
    assert stat.S_IMODE(after.st_mode) == bits
    assert after.st_ino != inode  # replaced by rename, not rewritten in place
    with open(path) as handle:
        assert handle.read() == "new text\n"
    assert os.listdir(ws) == ["f.txt"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another owner")
@pytest.mark.parametrize("op", ["write", "edit"])
def test_the_owner_is_kept_when_root(op: str, ws: str) -> None:
    path = _file(ws, 0o640)
    os.chown(path, 1234, 4321)
    assert not _write(SandboxMode.WORKSPACE_WRITE, ws, op).is_error
    after = os.stat(path)
    assert (after.st_uid, after.st_gid) == (1234, 4321)
    assert stat.S_IMODE(after.st_mode) == 0o640


def test_a_new_file_gets_the_umask_default(ws: str) -> None:
    umask = os.umask(0o022)
    try:
        policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
        assert not write_file(policy, ws, "new.txt", "x", temp_roots=()).is_error
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(os.path.join(ws, "new.txt")).st_mode) == 0o644


@pytest.mark.parametrize("mode", POLICIES, ids=lambda mode: mode.value)
@pytest.mark.parametrize("op", ["write", "edit"])
@pytest.mark.parametrize("step", ["rename", "fsync", "write"])
def test_a_failed_write_leaves_the_original_and_no_temp_file(
    mode: SandboxMode, op: str, step: str, ws: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(ws, 0o640)

    def fail(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(_fence.os, step, fail)
    result = _write(mode, ws, op)
    monkeypatch.undo()
    assert result.is_error and not result.denied
    assert result.os_error == "EIO"
    with open(path) as handle:
        assert handle.read() == "old text\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert os.listdir(ws) == ["f.txt"]


def test_a_failed_new_file_leaves_nothing(ws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_fence.os, "rename", fail)
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    result = write_file(policy, ws, "new.txt", "x", temp_roots=())
    monkeypatch.undo()
    assert result.os_error == "ENOSPC"
    assert os.listdir(ws) == []


def test_missing_parent_directories_are_not_created(ws: str) -> None:
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    result = write_file(policy, ws, "a/b/c.txt", "x", temp_roots=())
    assert result.is_error and not result.denied
    assert result.os_error == "ENOENT"
    assert "does not exist" in result.text and "mkdir -p" in result.text
    assert os.listdir(ws) == []


def test_a_file_in_the_middle_of_the_path(ws: str) -> None:
    _file(ws)
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    result = write_file(policy, ws, "f.txt/x", "x", temp_roots=())
    assert result.os_error == "ENOTDIR" and not result.denied


def test_the_symlink_decision_inside_the_root(resolver: str, ws: str) -> None:
    """Relative links that stay beneath the root are followed (the link survives);
    absolute links are refused even when they point inside, as RESOLVE_BENEATH does."""
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    os.makedirs(os.path.join(ws, "real", "deep"))
    _file(os.path.join(ws, "real"))
    os.symlink("real", os.path.join(ws, "dirlink"))
    os.symlink("real/f.txt", os.path.join(ws, "filelink"))
    os.symlink("../f.txt", os.path.join(ws, "real", "deep", "up"))
    os.symlink(os.path.join(ws, "real", "f.txt"), os.path.join(ws, "abslink"))

    assert not write_file(policy, ws, "dirlink/f.txt", "1", temp_roots=()).is_error
    assert not write_file(policy, ws, "filelink", "2", temp_roots=()).is_error
    assert os.path.islink(os.path.join(ws, "filelink"))
    assert not write_file(policy, ws, "real/deep/up", "3", temp_roots=()).is_error
    assert not write_file(policy, ws, "dirlink/deep/../f.txt", "4", temp_roots=()).is_error
    with open(os.path.join(ws, "real", "f.txt")) as handle:
        assert handle.read() == "4"
    refused = write_file(policy, ws, "abslink", "5", temp_roots=())
    assert refused.denied
    with open(os.path.join(ws, "real", "f.txt")) as handle:
        assert handle.read() == "4"
    assert os.path.islink(os.path.join(ws, "abslink"))


def test_danger_full_access_follows_every_link(ws: str, outside: str) -> None:
    policy = ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=ws)
    target = os.path.join(outside, "t.txt")
    with open(target, "w") as handle:
        handle.write("old\n")
    os.symlink(target, os.path.join(ws, "abs"))
    os.symlink(os.path.relpath(target, ws), os.path.join(ws, "rel"))
    assert not write_file(policy, ws, "abs", "1\n", temp_roots=()).is_error
    assert not edit_file(policy, ws, "rel", "1", "2", temp_roots=()).is_error
    with open(target) as handle:
        assert handle.read() == "2\n"
    assert os.path.islink(os.path.join(ws, "abs")) and os.path.islink(os.path.join(ws, "rel"))
    assert sorted(os.listdir(outside)) == ["t.txt"]

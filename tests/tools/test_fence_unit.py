"""The fence's pure decisions, and openat2 vs the fallback walk on one table of layouts."""

from __future__ import annotations

import errno
import os

import pytest

from stockade.tools import _fence
from stockade.tools._fence import (
    FenceRefused,
    PathProblem,
    absolute_path,
    locate,
    open_beneath,
    parts_of,
    walk_beneath,
    writable_roots,
)
from stockade.vocab import ExecutionPolicy, SandboxMode

from .conftest import kernel_has_openat2


def test_writable_roots_per_mode() -> None:
    def roots(mode: SandboxMode) -> tuple[str, ...] | None:
        return writable_roots(ExecutionPolicy(mode=mode, workspace_root="/w"), ("/tmp", "/w"))

    assert roots(SandboxMode.READ_ONLY) == ()
    assert roots(SandboxMode.WORKSPACE_WRITE) == ("/w", "/tmp")
    assert roots(SandboxMode.DANGER_FULL_ACCESS) is None


@pytest.mark.parametrize(
    ("cwd", "path", "expected"),
    [
        ("/w", "a.txt", "/w/a.txt"),
        ("/w/sub", "../a", "/w/sub/../a"),
        ("/w", "/x//y/./z", "/x/y/z"),
        ("/w", "./", "/w"),
        ("/", "/", "/"),
    ],
)
def test_absolute_path_keeps_dotdot(cwd: str, path: str, expected: str) -> None:
    assert absolute_path(cwd, path) == expected


@pytest.mark.parametrize(
    ("cwd", "path", "message"),
    [
        ("/w", "", "empty"),
        ("/w", "a\0b", "NUL"),
        ("rel", "a", "not an absolute path"),
        ("/w", None, "must be a string"),
    ],
)
def test_absolute_path_problems(cwd: str, path: object, message: str) -> None:
    with pytest.raises(PathProblem, match=message):
        absolute_path(cwd, path)


def test_locate_picks_the_outermost_root_lexically() -> None:
    spellings = (("/tmp/ws", "/tmp/ws"), ("/tmp", "/tmp"), ("/w", "/real/w"))
    assert locate(parts_of("/tmp/ws/a/../b"), spellings) == ("/tmp", ("ws", "a", "..", "b"))
    assert locate(parts_of("/w/x"), spellings) == ("/real/w", ("x",))
    assert locate(parts_of("/wx/y"), spellings) is None  # a name prefix is no path prefix
    assert locate(parts_of("/proc/self/root/w/x"), spellings) is None
    assert locate(parts_of("/w/../etc/passwd"), spellings) == ("/real/w", ("..", "etc", "passwd"))


def _layout(ws: str, outside: str) -> None:
    os.makedirs(os.path.join(ws, "a", "b"))
    os.symlink("a/b", os.path.join(ws, "rel"))
    os.symlink("../..", os.path.join(ws, "a", "b", "up2"))  # back to ws
    os.symlink("../../..", os.path.join(ws, "a", "b", "up3"))  # one above ws
    os.symlink(os.path.join(ws, "a"), os.path.join(ws, "abs-in"))
    os.symlink(outside, os.path.join(ws, "abs-out"))
    os.symlink("loop", os.path.join(ws, "loop"))
    os.symlink("a/nope", os.path.join(ws, "dangling"))
    with open(os.path.join(ws, "file"), "w"):
        pass


CASES = [
    ("a/b", "ok", "a/b"),
    ("rel", "ok", "a/b"),
    ("rel/../b", "ok", "a/b"),  # `..` after a link is the link target's parent
    ("a/b/up2/a", "ok", "a"),
    ("a/b/up3", FenceRefused, None),
    ("..", FenceRefused, None),
    ("a/../..", FenceRefused, None),
    ("abs-in", FenceRefused, None),
    ("abs-out", FenceRefused, None),
    ("loop", OSError, None),
    ("dangling", FileNotFoundError, None),
    ("file", NotADirectoryError, None),
    ("file/x", NotADirectoryError, None),
    ("missing/x", FileNotFoundError, None),
]


@pytest.mark.parametrize(("path", "outcome", "lands"), CASES)
def test_openat2_and_the_walk_agree(ws: str, outside: str, path: str, outcome, lands) -> None:
    if not kernel_has_openat2():
        pytest.skip("this kernel has no openat2")
    _layout(ws, outside)
    root_fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for opener in (open_beneath, walk_beneath):
            if outcome == "ok":
                fd = opener(root_fd, parts_of(path), ws)
                try:
                    assert os.path.samestat(os.fstat(fd), os.stat(os.path.join(ws, lands)))
                finally:
                    os.close(fd)
            else:
                with pytest.raises(outcome):
                    opener(root_fd, parts_of(path), ws)
    finally:
        os.close(root_fd)


def test_openat2_is_absent_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fence.sys, "platform", "darwin")
    with pytest.raises(OSError) as caught:
        _fence.openat2(-1, ".", os.O_RDONLY, 0)
    assert caught.value.errno == errno.ENOSYS


def test_eagain_is_retried(ws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _fence.openat2
    calls = []

    def flaky(*args: object) -> int:
        calls.append(args)
        if len(calls) < 3:
            raise OSError(errno.EAGAIN, "try again")
        return real(*args)  # type: ignore[arg-type]

    if not kernel_has_openat2():
        pytest.skip("this kernel has no openat2")
    monkeypatch.setattr(_fence, "openat2", flaky)
    root_fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(open_beneath(root_fd, (), ws))
    finally:
        os.close(root_fd)
    assert len(calls) == 3

"""The escape table: no path trick lets write_file or edit_file change a file outside
the writable roots, under openat2 and under the forced fallback walk alike."""

from __future__ import annotations

import errno
import json
import os
import threading
from collections.abc import Callable

import pytest

from stockade.tools import _fence
from stockade.tools.fs import FsResult, edit_file, read_file, write_file
from stockade.vocab import DENIAL_INSTRUCTION, ExecutionPolicy, SandboxMode, denial_marker

from .conftest import TEMP_ROOTS, snapshot

pytestmark = pytest.mark.nobody
OPS = ("write", "edit")


def attempt(op: str, policy: ExecutionPolicy, cwd: str, path: str) -> FsResult:
    if op == "write":
        return write_file(policy, cwd, path, "NEW\n", temp_roots=TEMP_ROOTS)
    return edit_file(policy, cwd, path, "old", "NEW", temp_roots=TEMP_ROOTS)


def plant(directory: str, name: str = "victim.txt") -> str:
    path = os.path.join(directory, name)
    with open(path, "w") as handle:
        handle.write("old content\n")
    return path


def assert_denied(result: FsResult, mode: SandboxMode = SandboxMode.WORKSPACE_WRITE) -> None:
    assert result.denied, result.text
    assert result.is_error
    assert result.os_error is None
    assert result.mode is mode
    assert result.text.endswith(f"\n{denial_marker(mode)}\n{DENIAL_INSTRUCTION}")


@pytest.fixture(params=OPS)
def op(request: pytest.FixtureRequest, resolver: str) -> str:
    return str(request.param)


def test_dotdot_out_relative(op: str, ww: ExecutionPolicy, ws: str, outside: str) -> None:
    plant(outside)
    before = snapshot(ws, outside)
    path = f"../{os.path.basename(outside)}/victim.txt"
    assert_denied(attempt(op, ww, ws, path))
    assert snapshot(ws, outside) == before


def test_dotdot_out_from_inside_the_root(
    op: str, ww: ExecutionPolicy, ws: str, outside: str
) -> None:
    """The path starts beneath the root, so the root is chosen; `..` then climbs out."""
    plant(outside)
    os.mkdir(os.path.join(ws, "sub"))
    before = snapshot(ws, outside)
    path = f"{ws}/sub/../../{os.path.basename(outside)}/victim.txt"
    assert_denied(attempt(op, ww, ws, path))
    assert snapshot(ws, outside) == before


def test_absolute_outside(op: str, ww: ExecutionPolicy, ws: str, outside: str) -> None:
    victim = plant(outside)
    before = snapshot(ws, outside)
    assert_denied(attempt(op, ww, ws, victim))
    assert snapshot(ws, outside) == before


@pytest.mark.parametrize("form", ["absolute", "relative"])
def test_symlink_file_inside_pointing_out(
    op: str, form: str, ww: ExecutionPolicy, ws: str, outside: str
) -> None:
    victim = plant(outside)
    link = victim if form == "absolute" else os.path.relpath(victim, ws)
    os.symlink(link, os.path.join(ws, "link.txt"))
    before = snapshot(ws, outside)
    assert_denied(attempt(op, ww, ws, "link.txt"))
    assert snapshot(ws, outside) == before


@pytest.mark.parametrize("form", ["absolute", "relative"])
def test_symlink_dir_in_the_middle_pointing_out(
    op: str, form: str, ww: ExecutionPolicy, ws: str, outside: str
) -> None:
    plant(outside)
    os.makedirs(os.path.join(ws, "a", "b"))
    target = outside if form == "absolute" else os.path.relpath(outside, os.path.join(ws, "a"))
    os.symlink(target, os.path.join(ws, "a", "out"))
    before = snapshot(ws, outside)
    assert_denied(attempt(op, ww, ws, "a/out/victim.txt"))
    assert_denied(attempt(op, ww, ws, "a/out/new-file.txt"))
    assert snapshot(ws, outside) == before


def test_hard_link_to_an_outside_file(op: str, ww: ExecutionPolicy, ws: str, outside: str) -> None:
    victim = plant(outside)
    os.link(victim, os.path.join(ws, "hard.txt"))
    before = snapshot(ws, outside)
    result = attempt(op, ww, ws, "hard.txt")
    assert_denied(result)
    assert "hard links" in result.text
    assert snapshot(ws, outside) == before


def test_proc_self_root(op: str, ww: ExecutionPolicy, ws: str, outside: str) -> None:
    victim = plant(outside)
    before = snapshot(ws, outside)
    assert_denied(attempt(op, ww, ws, f"/proc/self/root{victim}"))
    assert_denied(attempt(op, ww, ws, f"/proc/self/root{outside}/new.txt"))
    assert snapshot(ws, outside) == before


def test_proc_self_cwd_with_the_process_cwd_outside(
    op: str, ww: ExecutionPolicy, ws: str, outside: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant(outside)
    monkeypatch.chdir(outside)
    before = snapshot(ws, outside)
    assert_denied(attempt(op, ww, ws, "/proc/self/cwd/victim.txt"))
    assert snapshot(ws, outside) == before


@pytest.mark.parametrize("via", ["root", "cwd"])
@pytest.mark.parametrize("resolve", ["openat2", "fallback"])
def test_magic_link_beneath_a_root_is_never_followed(
    via: str,
    resolve: str,
    ws: str,
    outside: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A root that holds /proc magic links: openat2 refuses them (ELOOP), the walk
    reads their absolute text and refuses it; both end in the same denial."""
    if resolve == "fallback":
        monkeypatch.setattr(_fence, "openat2", _forced_enosys)
    victim = plant(outside)
    monkeypatch.chdir(outside)
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root="/proc/self")
    path = f"/proc/self/root{victim}" if via == "root" else "/proc/self/cwd/victim.txt"
    before = snapshot(ws, outside)
    for op in OPS:
        assert_denied(attempt(op, policy, ws, path))
    assert snapshot(ws, outside) == before


def _forced_enosys(*_args: object) -> int:
    raise OSError(errno.ENOSYS, "forced")


def test_path_with_nul(op: str, ww: ExecutionPolicy, ws: str, outside: str) -> None:
    before = snapshot(ws, outside)
    result = attempt(op, ww, ws, "a\0b")
    assert result.is_error and not result.denied
    assert "NUL" in result.text
    assert snapshot(ws, outside) == before


def test_path_that_is_a_directory(op: str, ww: ExecutionPolicy, ws: str) -> None:
    os.mkdir(os.path.join(ws, "d"))
    before = snapshot(ws)
    for path in ("d", ws, ".", "d/.."):
        result = attempt(op, ww, ws, path)
        assert result.is_error and not result.denied, path
        assert "is a directory" in result.text, result.text
    assert snapshot(ws) == before


def _finishes(call: Callable[[], FsResult], seconds: float = 10.0) -> FsResult:
    box: list[FsResult] = []
    worker = threading.Thread(target=lambda: box.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the call blocked on a special file"
    return box[0]


def test_fifo_is_refused_without_blocking(op: str, ww: ExecutionPolicy, ws: str) -> None:
    fifo = os.path.join(ws, "pipe")
    os.mkfifo(fifo)
    before = snapshot(ws)
    result = _finishes(lambda: attempt(op, ww, ws, "pipe"))
    assert result.is_error and not result.denied
    assert "fifo" in result.text
    assert snapshot(ws) == before


def test_fifo_behind_a_symlink_is_refused_without_blocking(
    op: str, ww: ExecutionPolicy, ws: str
) -> None:
    os.mkfifo(os.path.join(ws, "pipe"))
    os.symlink("pipe", os.path.join(ws, "to-pipe"))
    result = _finishes(lambda: attempt(op, ww, ws, "to-pipe"))
    assert result.is_error and not result.denied
    assert "fifo" in result.text


# -- OS permission denied is an OS error, not a sandbox denial ----------------------


def _call(op: str, root: str, path: str) -> dict[str, object]:
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root)
    if op == "read":
        result = read_file(policy, root, path)
    elif op == "write":
        result = write_file(policy, root, path, "NEW", temp_roots=())
    else:
        result = edit_file(policy, root, path, "old", "NEW", temp_roots=())
    return dict(result.facts(), text=result.text)


def _as_unprivileged(op: str, root: str, path: str) -> dict[str, object]:
    """Run one fs call as an unprivileged user: in a forked child as nobody when root.

    The child inherits the test's monkeypatches (the forced fallback among them).
    """
    if os.geteuid() != 0:
        return _call(op, root, path)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, run the call, report, exit without cleanup
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_end, json.dumps(_call(op, root, path)).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return json.loads(report)


@pytest.mark.parametrize("operation", ["write", "edit", "read"])
def test_os_permission_denied_is_an_os_error(operation: str, resolver: str, ws: str) -> None:
    if operation == "read" and os.geteuid() != 0:
        pytest.skip("the snapshot reads the 0000 file, which only root can")
    os.chmod(ws, 0o755)
    locked = os.path.join(ws, "locked")
    os.mkdir(locked)
    victim = plant(locked)
    if operation == "read":
        os.chmod(victim, 0o000)
    os.chmod(locked, 0o555)  # searchable and readable, not writable
    before = snapshot(ws)
    facts = _as_unprivileged(operation, ws, "locked/victim.txt")
    assert facts["is_error"] is True
    assert facts["denied"] is False
    assert facts["os_error"] == "EACCES"
    assert "not the sandbox" in str(facts["text"])
    assert denial_marker(SandboxMode.WORKSPACE_WRITE) not in str(facts["text"])
    assert snapshot(ws) == before


def test_permission_error_mapping(
    op: str, ww: ExecutionPolicy, ws: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever step the OS refuses with EACCES/EPERM/EROFS, the result says OS, not sandbox."""
    plant(ws)
    for code in (errno.EACCES, errno.EPERM, errno.EROFS):

        def refuse(*_args: object, code: int = code, **_kwargs: object) -> None:
            raise OSError(code, os.strerror(code))

        with monkeypatch.context() as patch:
            patch.setattr(_fence.os, "rename", refuse)
            result = attempt(op, ww, ws, "victim.txt")
        assert result.is_error and not result.denied
        assert result.os_error == errno.errorcode[code]
        assert "not the sandbox" in result.text
    with open(os.path.join(ws, "victim.txt")) as handle:
        assert handle.read() == "old content\n"

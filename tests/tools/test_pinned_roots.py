"""Pinned roots: the fs tools judge every call against the roots a session pinned when
it opened (an fd per root), never against a path resolved again per call.

Real files, no sandbox backend: the attacks here need none (bash-level swaps are in
test_root_swap.py). Each attack has its unconfined control: a plain open through the
swapped path does land outside.
"""

from __future__ import annotations

import gc
import os
import threading

import pytest

from stockade.tools import _roots
from stockade.tools._roots import PinnedRoots, RootReplaced
from stockade.tools.fs import edit_file, read_file, write_file
from stockade.vocab import ExecutionPolicy, SandboxMode

from .conftest import snapshot

WW = SandboxMode.WORKSPACE_WRITE


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def child(ws: str) -> str:
    """A session root below another writable root (`ws` plays the parent's root)."""
    path = os.path.join(ws, "child")
    os.mkdir(path)
    with open(os.path.join(path, "victim.txt"), "w") as handle:
        handle.write("inside\n")
    return path


@pytest.fixture
def secret(outside: str) -> str:
    path = os.path.join(outside, "victim.txt")
    with open(path, "w") as handle:
        handle.write("secret outside\n")
    return path


def swap_for_link(path: str, target: str) -> str:
    """Replace directory `path` by a symlink to `target`; returns where the original went."""
    moved = path + ".old"
    os.rename(path, moved)
    os.symlink(target, path)
    return moved


def control_lands_outside(path: str, outside: str) -> None:
    """The unconfined control: a plain open through the swapped root writes outside."""
    probe = os.path.join(path, "control.txt")
    with open(probe, "w") as handle:
        handle.write("control")
    assert os.path.exists(os.path.join(outside, "control.txt"))
    os.unlink(probe)


def test_a_root_swapped_for_a_symlink_refuses_every_fs_call(
    resolver: str, child: str, outside: str, secret: str
) -> None:
    policy = ExecutionPolicy(WW, child)
    with PinnedRoots.pin(child, ()) as roots:
        swap_for_link(child, outside)
        control_lands_outside(child, outside)
        before = snapshot(outside)
        results = [
            write_file(policy, child, "new.txt", "pwned", roots=roots),
            write_file(policy, child, f"{child}/victim.txt", "pwned", roots=roots),
            edit_file(policy, child, "victim.txt", "secret", "pwned", roots=roots),
            read_file(policy, child, "victim.txt", roots=roots),
        ]
        assert snapshot(outside) == before
    for result in results:
        assert result.is_error and not result.denied, result.text
        assert "secret" not in result.text
        assert result.text.endswith(
            f"the workspace root {child} was replaced since the session opened (it now "
            f"resolves to {outside} through a symlink); nothing was read or written. Open a "
            "new session from the directory you mean."
        )
        assert "\n" not in result.text


def test_without_pinned_roots_the_same_swap_writes_outside(
    child: str, outside: str, secret: str
) -> None:
    """What pinning stops: roots resolved per call follow the swapped root outside."""
    policy = ExecutionPolicy(WW, child)
    swap_for_link(child, outside)
    result = write_file(policy, child, "new.txt", "pwned", temp_roots=())
    assert not result.is_error, result.text
    assert os.path.exists(os.path.join(outside, "new.txt"))


def test_a_swap_after_the_check_still_cannot_send_a_write_out(
    resolver: str,
    child: str,
    outside: str,
    secret: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check is the clear line; the pinned fd is the fence. With the check blinded,
    as if the swap raced it, nothing lands outside: the walk starts at the pinned fd, and
    a write whose root is no longer where it was pinned cannot be judged, so it is
    refused. A read goes to the pinned directory."""
    policy = ExecutionPolicy(WW, child)
    with PinnedRoots.pin(child, ()) as roots:
        moved = swap_for_link(child, outside)
        monkeypatch.setattr(_roots, "change", lambda _pin: None)
        before = snapshot(outside, moved)
        wrote = write_file(policy, child, "new.txt", "pinned", roots=roots)
        edited = edit_file(policy, child, "victim.txt", "inside", "edited", roots=roots)
        read = read_file(policy, child, "victim.txt", roots=roots)
        assert snapshot(outside, moved) == before
    for refused in (wrote, edited):
        assert refused.denied and "where the write would land cannot be told" in refused.text
    assert read.text == "inside\n"


def test_writes_open_beneath_the_pinned_fd_not_the_path(
    resolver: str, ws: str, outside: str, scratch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root named through a symlink (pinned for one call, not strictly) keeps its fd:
    with the check blinded, the link re-pointed outside still writes into the pinned
    directory. (Control: the same path opened plainly lands outside.)"""
    link = os.path.join(scratch, "link")
    os.symlink(ws, link)
    policy = ExecutionPolicy(WW, link)
    with PinnedRoots.pin(link, (), strict=False) as roots:
        os.unlink(link)
        os.symlink(outside, link)
        control_lands_outside(link, outside)
        monkeypatch.setattr(_roots, "change", lambda _pin: None)
        wrote = write_file(policy, link, "new.txt", "pinned", roots=roots)
    assert not wrote.is_error, wrote.text
    assert os.listdir(outside) == []
    with open(os.path.join(ws, "new.txt")) as handle:
        assert handle.read() == "pinned"


def test_a_temp_root_swapped_for_a_symlink(
    resolver: str, ws: str, temp_root: str, outside: str, secret: str
) -> None:
    """$TMPDIR below /tmp turned into a link: neither it nor the place it now names is a
    temp root; every fenced call of the session is refused, as bash is."""
    tmpdir = os.path.join(temp_root, "tmpdir")
    os.mkdir(tmpdir)
    policy = ExecutionPolicy(WW, ws)
    with PinnedRoots.pin(ws, (temp_root, tmpdir)) as roots:
        os.rmdir(tmpdir)
        os.symlink(outside, tmpdir)
        control_lands_outside(tmpdir, outside)
        before = snapshot(outside)
        results = [
            write_file(policy, ws, f"{tmpdir}/x", "pwned", roots=roots),
            write_file(policy, ws, f"{outside}/y", "pwned", roots=roots),
            edit_file(policy, ws, f"{tmpdir}/victim.txt", "secret", "pwned", roots=roots),
            write_file(policy, ws, "inside.txt", "fine?", roots=roots),
        ]
        assert snapshot(outside) == before
    assert not os.path.exists(os.path.join(ws, "inside.txt"))
    for result in results:
        assert result.is_error and not result.denied, result.text
        assert f"the temp root {tmpdir} was replaced since the session opened" in result.text


def test_the_temp_roots_are_the_pinned_paths_not_their_targets_now(
    ws: str, temp_root: str, outside: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the check blinded, the place a swapped temp root points to is still no root."""
    tmpdir = os.path.join(temp_root, "tmpdir")
    os.mkdir(tmpdir)
    policy = ExecutionPolicy(WW, ws)
    with PinnedRoots.pin(ws, (tmpdir,)) as roots:
        os.rename(tmpdir, tmpdir + ".old")
        os.symlink(outside, tmpdir)
        monkeypatch.setattr(_roots, "change", lambda _pin: None)
        direct = write_file(policy, ws, f"{outside}/y", "pwned", roots=roots)
        through = write_file(policy, ws, f"{tmpdir}/x", "pinned", roots=roots)
    assert direct.denied and "outside the writable roots" in direct.text
    assert through.denied and "cannot be told" in through.text
    assert os.listdir(outside) == [] and os.listdir(tmpdir + ".old") == []


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("removed", "it no longer exists"),
        ("another directory", "it is now another directory"),
        ("a file", "it is no longer a directory"),
    ],
)
def test_other_replacements_are_refused_too(child: str, change: str, said: str) -> None:
    policy = ExecutionPolicy(WW, child)
    with PinnedRoots.pin(child, ()) as roots:
        os.rename(child, child + ".old")
        if change == "another directory":
            os.mkdir(child)
        elif change == "a file":
            open(child, "w").close()
        result = write_file(policy, child, "x", "1", roots=roots)
    assert result.is_error and not result.denied
    assert f"was replaced since the session opened ({said})" in result.text
    assert not os.path.exists(os.path.join(child + ".old", "x"))


def test_a_root_already_swapped_when_the_session_opens_is_refused(child: str, outside: str) -> None:
    """A resumed session's root comes from its log: if it resolves elsewhere by then,
    it is not pinned at the link's target."""
    swap_for_link(child, outside)
    policy = ExecutionPolicy(WW, child)
    with PinnedRoots.pin(child, ()) as roots:
        assert roots.workspace.fd == -1
        result = write_file(policy, child, "x", "1", roots=roots)
        read = read_file(policy, child, "x", roots=roots)
    assert os.listdir(outside) == []
    for refused in (result, read):
        assert refused.is_error and not refused.denied
        assert (
            f"the workspace root {child} could not be pinned when the session opened "
            f"(it is reached through a symlink, to {outside})" in refused.text
        )


def test_danger_full_access_is_unfenced_as_bash_is(child: str, outside: str, secret: str) -> None:
    """danger-full-access never asks the provider, so a swapped root does not stop bash
    there either: the fs tools follow the path as the kernel does."""
    danger = ExecutionPolicy(SandboxMode.DANGER_FULL_ACCESS, child)
    with PinnedRoots.pin(child, ()) as roots:
        swap_for_link(child, outside)
        read = read_file(danger, child, "victim.txt", roots=roots)
    assert read.text == "secret outside\n"


def test_closing_closes_every_fd(ws: str, temp_root: str) -> None:
    roots = PinnedRoots.pin(ws, ("/tmp", temp_root, ws))
    fds = [pin.fd for pin in roots.held()]
    assert len(fds) == len(set(fds)) == 3 and all(map(_fd_open, fds))
    roots.close()
    roots.close()
    assert roots.closed and not any(map(_fd_open, fds))
    with pytest.raises(RootReplaced, match="this session is closed"), roots.use():
        pass


def test_a_close_during_a_call_waits_for_the_call(ws: str) -> None:
    """fs calls run in worker threads: a close meanwhile must not free an fd number the
    call is about to open beneath (it could be reused for another directory)."""
    roots = PinnedRoots.pin(ws, ())
    fd = roots.workspace.fd
    with roots.use():
        closer = threading.Thread(target=roots.close)
        closer.start()
        closer.join()
        assert _fd_open(fd)
        os.close(os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd))
        later = write_file(ExecutionPolicy(WW, ws), ws, "x", "1", roots=roots)
        assert later.is_error and "this session is closed" in later.text
    assert not _fd_open(fd)
    assert not os.path.exists(os.path.join(ws, "x"))


def test_many_sessions_leak_no_fd(ws: str, temp_root: str) -> None:
    baseline = _open_fds()
    for _ in range(500):
        roots = PinnedRoots.pin(ws, ("/tmp", temp_root))
        with roots.use():
            roots.check()
        roots.close()
    assert _open_fds() == baseline
    for _ in range(200):
        PinnedRoots.pin(ws, ("/tmp",))  # dropped unclosed: the finalizer gives them back
    gc.collect()
    assert _open_fds() == baseline


def test_calls_without_a_session_pin_for_the_call_alone(ws: str) -> None:
    baseline = _open_fds()
    policy = ExecutionPolicy(WW, ws)
    for index in range(50):
        assert not write_file(policy, ws, f"f{index}", "1", temp_roots=("/tmp",)).is_error
    assert _open_fds() == baseline
    missing = write_file(ExecutionPolicy(WW, f"{ws}/gone"), ws, f"{ws}/gone/x", "1", temp_roots=())
    assert missing.os_error == "ENOENT"  # as before: the OS's answer, not a refusal

"""The executor's own process type (`executor._child`): started from the loop's thread,
its pipes, its exit waited for without reaping, then reaped; nothing leaked on failure."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from functools import partial
from pathlib import Path

import pytest
import trio

from stockade.executor._child import start_child


async def _read_all(stream: trio.abc.ReceiveStream) -> bytes:
    data = b""
    while chunk := await stream.receive_some(65536):
        data += chunk
    return data


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


async def test_output_exit_status_and_input_through_its_pipes():
    child = start_child(
        ["sh", "-c", "cat; echo err >&2; exit 3"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    await child.stdin.send_all(b"through stdin\n")
    await child.stdin.aclose()
    out = await _read_all(child.stdout)
    err = await _read_all(child.stderr)
    assert (await child.wait(), out, err) == (3, b"through stdin\n", b"err\n")
    assert child.returncode == 3 and child.pidfd is None


async def test_exited_is_seen_without_reaping_then_wait_reaps():
    child = start_child(["true"], stdin=subprocess.DEVNULL, stdout=None, stderr=None)
    assert child.pidfd is not None  # this kernel has pidfds
    with trio.fail_after(10):
        await child.wait_exited()
    assert _state(child.pid) == "Z"  # exited, its pid still held
    assert await child.wait() == 0
    assert not Path(f"/proc/{child.pid}").exists() or _state(child.pid) != "Z"


async def test_a_signal_reads_as_its_negative_number():
    child = start_child(["sleep", "30"], stdin=subprocess.DEVNULL, stdout=None, stderr=None)
    child.send_signal(signal.SIGTERM)
    with trio.fail_after(10):
        assert await child.wait() == -signal.SIGTERM


async def test_it_is_started_from_the_calling_thread_with_no_worker():
    threads = threading.active_count()
    child = start_child(
        ["sh", "-c", "echo $PPID"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=None
    )
    assert child.stdout is not None
    parent = int(await _read_all(child.stdout))
    assert await child.wait() == 0
    assert (parent, threading.active_count()) == (os.getpid(), threads)


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_a_program_that_cannot_start_leaks_no_descriptor():
    before = _open_descriptors()
    with pytest.raises(FileNotFoundError):
        start_child(
            ["/no/such/program"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    assert _open_descriptors() == before


async def test_its_pipes_end_when_it_exits_even_if_never_read_before():
    child = start_child(
        ["sh", "-c", "exit 0"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=None
    )
    assert child.stdout is not None
    with trio.fail_after(10):
        assert await _read_all(child.stdout) == b""  # our copy of its end was closed
    assert await child.wait() == 0


def _no_pidfds(pid: int, flags: int = 0) -> int:
    raise OSError(38, "Function not implemented")  # a kernel before Linux 5.3


async def test_without_pidfds_exit_is_still_seen_unreaped(monkeypatch):
    """A kernel before Linux 5.3: no pidfd, the exit is polled for, still not reaped."""
    monkeypatch.setattr(os, "pidfd_open", _no_pidfds)
    child = start_child(["true"], stdin=subprocess.DEVNULL, stdout=None, stderr=None)
    assert child.pidfd is None
    with trio.fail_after(10):
        await child.wait_exited()
    assert _state(child.pid) == "Z"
    assert await child.wait() == 0


@pytest.mark.parametrize("pidfds", [True, False])
async def test_a_signal_to_an_exited_leader_does_not_reap_it(pidfds, monkeypatch):
    """`subprocess.Popen.send_signal` polls first, which reaps an exited child: through
    it a signal would let the leader's pid, its group's id, go before `settle` signals
    the group. `Child`'s signals never reap (with a pidfd or without)."""
    if not pidfds:
        monkeypatch.setattr(os, "pidfd_open", _no_pidfds)
    child = start_child(["true"], stdin=subprocess.DEVNULL, stdout=None, stderr=None)
    with trio.fail_after(10):
        await child.wait_exited()
    for send in (partial(child.send_signal, signal.SIGCONT), child.terminate, child.kill):
        send()
        assert _state(child.pid) == "Z" and not child.reaped
    assert await child.wait() == 0
    child.send_signal(signal.SIGTERM)  # reaped: nothing is sent, nothing raised

"""The watcher of a private temp directory (`cli/_tmp_watch.py`): a process that removes
the directory once its owner ended without removing it (killed), and never anything
else. Judged on the real file system, with a real owner process killed by SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# The owner: makes the directory in PARENT, starts its watcher, says where and who,
# then waits to be killed (or, told "release", removes it itself and releases it).
OWNER = r"""
import json, os, sys
from stockade.sandbox import make_private_tmp, remove_private_tmp
from stockade.cli._tmp_watch import watch_private_tmp
tmp = make_private_tmp(sys.argv[1])
watch = watch_private_tmp(tmp)
open(os.path.join(tmp.path, "left-by-the-command"), "w").write("x")
print(json.dumps({"path": tmp.path, "watcher": watch.pid}), flush=True)
if sys.stdin.readline().strip() == "release":
    remove_private_tmp(tmp)
    watch.release()
    print("released", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def parent() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="stockade-ptmp-watch-", dir="/var/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# Another interpreter, which finds stockade only where it is told (no site, no
# PYTHONPATH): as an installation the watcher's `-I` would not find through site.
SYSTEM_PYTHON = "/usr/bin/python3"
SRC = str(Path(__file__).resolve().parents[2] / "src")


def start_owner(
    parent: Path, pass_fds: tuple[int, ...] = (), python: tuple[str, ...] = (sys.executable,)
) -> tuple[subprocess.Popen[str], Path, int]:
    """The owner run by `python` (an interpreter and its options: the last may be a
    line of code run first)."""
    *interpreter, first = python if len(python) > 1 else (*python, "")
    owner = subprocess.Popen(
        [*interpreter, "-c", f"{first}\n{OWNER}", str(parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        pass_fds=pass_fds,
    )
    assert owner.stdout is not None
    said = json.loads(owner.stdout.readline())
    return owner, Path(said["path"]), int(said["watcher"])


def gone(pid: int) -> bool:
    """No live process `pid` (a zombie is gone: its parent may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def wait_for(predicate, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_killed_owners_directory_is_removed_by_its_watcher(parent):
    owner, path, watcher = start_owner(parent)
    assert path.is_dir() and (path / "left-by-the-command").exists()
    assert not gone(watcher)
    assert os.getsid(watcher) == watcher  # a session of its own: a group kill leaves it
    owner.kill()
    owner.wait()
    wait_for(lambda: gone(watcher))
    assert not path.exists()
    assert list(parent.iterdir()) == []


@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="needs the system python")
def test_the_watcher_finds_stockade_where_its_owner_did_not_through_site(parent):
    """stockade imported from a path only its owner was given (here -I -S and a path
    inserted by hand; a --user install, PYTHONPATH): the watcher's removal is told its
    import root instead of finding it."""
    python = (SYSTEM_PYTHON, "-I", "-S", f"import sys; sys.path.insert(0, {SRC!r})")
    owner, path, watcher = start_owner(parent, python=python)
    owner.kill()
    owner.wait()
    wait_for(lambda: gone(watcher))
    assert not path.exists()


def test_the_watcher_runs_the_real_interpreter_not_the_links_its_owner_was_started_by(
    parent,
):
    """An owner started through links (its interpreter and its import root, as a venv
    reached through a link in the workspace is) that a command re-points while it runs:
    the watcher, unconfined, runs the real interpreter and imports from the real
    directory (what the installation's protection holds), not what the links lead to
    once the owner is killed."""
    links = parent / "links"
    links.mkdir()
    (links / "python").symlink_to(sys.executable)
    (links / "src").symlink_to(SRC)
    python = (str(links / "python"), f"import sys; sys.path.insert(0, {str(links / 'src')!r})")
    owner, path, watcher = start_owner(parent, python=python)
    marker = parent / "ran-the-planted-interpreter"
    (links / "python").unlink()
    (links / "python").write_text(f'#!/bin/sh\necho "$@" > {marker}\n')
    (links / "python").chmod(0o755)
    (links / "src").unlink()
    (links / "src").mkdir()
    owner.kill()
    owner.wait()
    wait_for(lambda: gone(watcher))
    assert not marker.exists()
    assert not path.exists()


def test_control_a_killed_owner_whose_watcher_is_killed_too_leaves_its_directory(parent):
    owner, path, watcher = start_owner(parent)
    os.kill(watcher, signal.SIGKILL)
    wait_for(lambda: gone(watcher))
    owner.kill()
    owner.wait()
    time.sleep(0.3)
    assert (path / "left-by-the-command").exists()


def test_an_owner_that_removed_it_releases_its_watcher(parent):
    owner, path, watcher = start_owner(parent)
    assert owner.stdin is not None and owner.stdout is not None
    owner.stdin.write("release\n")
    owner.stdin.flush()
    assert owner.stdout.readline() == "released\n"
    assert gone(watcher)  # waited for: ended, and reaped by its owner
    assert not path.exists()
    owner.stdin.close()
    owner.wait()


def test_the_watcher_removes_nothing_that_stands_at_the_name_in_the_directorys_place(parent):
    """A command that may write the parent (the plain tier, $TMPDIR inside a writable
    root) renamed its directory away and made another at the name: neither is removed,
    the moved one (elsewhere now) nor the one at the name (not the directory made)."""
    owner, path, watcher = start_owner(parent)
    moved = parent / "moved"
    path.rename(moved)
    path.mkdir()
    (path / "keep").write_text("not the watcher's\n")
    owner.kill()
    owner.wait()
    wait_for(lambda: gone(watcher))
    assert (path / "keep").read_text() == "not the watcher's\n"
    assert (moved / "left-by-the-command").exists()


def open_in(pid: int) -> dict[int, str]:
    """The descriptors open in `pid` now, each with what it names."""
    found = {}
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            found[int(fd.name)] = os.readlink(fd)
        except FileNotFoundError:
            continue  # closed since it was listed
    return found


def _settled(fds: dict[int, str]) -> bool:
    return 3 in fds and 4 in fds and len({t for t in fds.values() if t.startswith("pipe:")}) == 1


def test_the_watcher_holds_none_of_its_owners_descriptors(parent):
    """Its owner's pipes (a caller reading the owner's output until its end) are not
    held past the owner: the watcher's standard streams are /dev/null (its shell reads
    the pipe on 0 while it waits), and nothing else of the owner's is open in it: only
    the pipe it waits on and the directory it pins (not the pipe its owner inherited,
    open for whatever the owner runs)."""
    inherited, kept = os.pipe()
    owner, path, watcher = start_owner(parent, pass_fds=(kept,))
    os.close(kept)
    try:
        # Until its shell has placed its own and waits (a descriptor listed may be
        # closed before it is read): then its set stays as it is.
        wait_for(lambda: _settled(open_in(watcher)))
        fds = open_in(watcher)
        (pipe,) = {target for target in fds.values() if target.startswith("pipe:")}
        assert fds[1] == fds[2] == "/dev/null" and fds[3] == pipe, fds
        assert fds[4] == str(path), fds
        assert set(fds.values()) <= {"/dev/null", pipe, str(path)}, fds
    finally:
        owner.kill()
        owner.wait()
        wait_for(lambda: gone(watcher))
    assert os.read(inherited, 1) == b""  # nobody holds the inherited end now
    os.close(inherited)


def test_a_directory_its_owner_could_not_remove_is_said_and_its_watcher_released(
    parent, monkeypatch, capsys
):
    """What stays (a removal that failed: a mount inside, a survivor refilling it) is
    said on stderr in one line, and the watcher is ended all the same."""
    from stockade.cli import _tmp_watch
    from stockade.sandbox import make_private_tmp

    tmp = make_private_tmp(str(parent))
    watch = _tmp_watch.watch_private_tmp(tmp)
    assert watch is not None
    monkeypatch.setattr(_tmp_watch, "remove_private_tmp", lambda _: False)
    _tmp_watch.remove_and_release(tmp, watch)
    said = capsys.readouterr().err
    assert said == (
        f"stockade: the command's temp directory {tmp.path} could not be removed whole: "
        "remove it by hand\n"
    )
    assert watch.fd == -1 and gone(watch.pid)
    assert os.path.isdir(tmp.path)  # what the failed removal left

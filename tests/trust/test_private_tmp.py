"""A session's private temp directory instead of the host's shared temp roots.

Real kernel, bwrap AND Landlock, through the harness (bash and the fs tools),
`stockade exec` and `stockade run`. Judged by the host's state: what exists in
/tmp, /var/tmp and /dev/shm afterwards, the private directory's mode and whether it
is gone, an outside file a planted link pointed at. Controls: danger-full-access
writes /tmp, and the composition key `allow_host_temp` gives it back (claimed).
"""

from __future__ import annotations

import os
import stat
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.sandbox._profiles import host_temp_gap
from stockade.sandbox.private_tmp import PREFIX, default_parent
from stockade.trust import host_temp_roots

from ._support import Area, cli, composition

HOST_TEMP = ("/tmp", "/var/tmp", "/dev/shm")
PY = sys.executable


def with_fs(state_dir: str, **sandbox: object) -> list[dict]:
    entries = composition(state_dir, **sandbox)
    entries.insert(-1, {"id": "fs", "name": "stockade.fs.sandbox"})
    return entries


@pytest.fixture
def tag() -> Iterator[str]:
    """A unique name prefix for paths in the host's temp roots, swept afterwards."""
    name = f"stockade-ptmp-{uuid.uuid4().hex[:10]}"
    yield name
    for directory in HOST_TEMP:
        for entry in os.listdir(directory):
            if entry.startswith(name):
                path = os.path.join(directory, entry)
                if os.path.isdir(path) and not os.path.islink(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)


def host_residue(tag: str) -> list[str]:
    return sorted(
        os.path.join(directory, entry)
        for directory in HOST_TEMP
        for entry in os.listdir(directory)
        if entry.startswith(tag)
    )


def assert_private(path: str) -> None:
    info = os.lstat(path)
    assert stat.S_ISDIR(info.st_mode), path
    assert stat.S_IMODE(info.st_mode) == 0o700, oct(info.st_mode)
    assert info.st_uid == os.geteuid()
    assert os.path.dirname(path) == default_parent()
    assert os.path.basename(path).startswith(PREFIX)


def temp_script(tag: str) -> str:
    """Uses $TMPDIR three ways, then tries the host's shared temp roots."""
    python = (
        "import tempfile; f = tempfile.NamedTemporaryFile(delete=False); f.write(b'py-ok'); "
        "f.close(); print('py:' + f.name + ':' + open(f.name).read())"
    )
    host = "; ".join(f"echo x > {directory}/{tag}-bash" for directory in HOST_TEMP)
    return (
        'echo "tmpdir:$TMPDIR"; echo data > "$TMPDIR/a" && echo "read:$(cat "$TMPDIR/a")"; '
        'f=$(mktemp) && echo mk-ok > "$f" && echo "mk:$f:$(cat "$f")"; '
        f'{PY} -I -c "{python}"; {host}; true'
    )


async def test_a_command_writes_its_private_tmp_and_not_the_hosts(
    backend, area: Area, state_dir, tag
):
    async with open_harness(with_fs(state_dir, backend=backend)) as harness:
        session = await harness.open_session(cwd=str(area.root))
        tmp = session.temp_dir
        assert tmp is not None
        assert_private(tmp)
        shell = await session.run_tool("bash", {"command": temp_script(tag)})
        out = shell.text
        assert f"tmpdir:{tmp}\n" in out, out
        assert "read:data" in out, out
        assert f"mk:{tmp}/tmp." in out and ":mk-ok" in out, out
        assert f"py:{tmp}/" in out and ":py-ok" in out, out
        assert shell.facts["denied"] is True  # the writes to the host's temp roots
        # The fs tools see the same places: the private directory, never the host's.
        wrote = await session.run_tool("write_file", {"path": f"{tmp}/fs.txt", "content": "fs"})
        read = await session.run_tool("read_file", {"path": f"{tmp}/a"})
        assert not wrote.is_error and (Path(tmp) / "fs.txt").read_text() == "fs"
        assert "data" in read.text
        for directory in HOST_TEMP:
            refused = await session.run_tool(
                "write_file", {"path": f"{directory}/{tag}-fs", "content": "x"}
            )
            assert refused.facts["denied"] is True, (directory, refused.text)
        assert host_residue(tag) == []
        await session.close()
    assert not os.path.lexists(tmp)


async def test_removal_never_follows_a_link_planted_inside(backend, area: Area, state_dir):
    """A command plants links to an outside file and directory in its TMPDIR (and hides
    some behind an unreadable directory), and leaves a job running there: closing the
    session removes the directory and only it."""
    victim = area.outside / "victim.txt"
    victim.write_text("keep me\n")
    kept = area.outside / "kept"
    kept.mkdir()
    (kept / "inner.txt").write_text("keep me too\n")
    plant = (
        f'ln -s {victim} "$TMPDIR/file-link"; ln -s {kept} "$TMPDIR/dir-link"; '
        f'mkdir -p "$TMPDIR/deep/er"; ln -s {victim} "$TMPDIR/deep/er/link"; '
        f'ln -s {kept} "$TMPDIR/deep/dir-link"; chmod 000 "$TMPDIR/deep"; '
        'mkdir "$TMPDIR/many" && for i in $(seq 50); do echo $i > "$TMPDIR/many/$i"; done'
    )
    async with open_harness(composition(state_dir, backend=backend)) as harness:
        session = await harness.open_session(cwd=str(area.root))
        tmp = session.temp_dir
        planted = await session.shell.run(plant)
        assert planted.exit_code == 0, planted.stderr
        assert os.path.islink(f"{tmp}/file-link")
        await session.shell.start('while :; do echo x >> "$TMPDIR/busy"; sleep 0.01; done')
        await session.close()
    assert not os.path.lexists(tmp)
    assert victim.read_text() == "keep me\n"
    assert (kept / "inner.txt").read_text() == "keep me too\n"


async def test_each_session_has_its_own_and_none_is_left(area: Area, state_dir):
    """Every open, resume and fork makes a directory of its own (a resumed session's at
    its old path, free since it closed); closing removes it, and the harness removes
    those its sessions left open when it stops. Many background jobs in one session
    share one."""
    seen: list[str] = []
    async with open_harness(composition(state_dir)) as harness:
        first = await harness.open_session(cwd=str(area.root))
        child = await first.fork_child()
        seen += [first.temp_dir, child.temp_dir]
        for i in range(300):
            await first.shell.start(f'echo {i} > "$TMPDIR/job-{i}"')
        with trio.move_on_after(120):
            while len([n for n in os.listdir(first.temp_dir) if n.startswith("job-")]) < 300:
                await trio.sleep(0.1)
        assert len([n for n in os.listdir(first.temp_dir) if n.startswith("job-")]) == 300
        session_id = first.id
        await first.close()
        assert not os.path.lexists(seen[0])
        resumed = await harness.resume_session(session_id)
        assert resumed.temp_dir == seen[0]  # made again, at the same path: it was free
        for _ in range(40):
            other = await harness.open_session(cwd=str(area.root))
            seen.append(other.temp_dir)
            await other.close()
        left_open = await harness.open_session(cwd=str(area.root))
        seen.append(left_open.temp_dir)
        assert len(set(seen)) == len(seen)  # never shared, never reused
        for path in (child.temp_dir, resumed.temp_dir, left_open.temp_dir):
            assert os.path.isdir(path)
    assert [path for path in seen if os.path.lexists(path)] == []


KILLED = """
import json, sys, trio
from stockade import open_harness

async def main():
    async with open_harness(json.loads(sys.argv[1])) as harness:
        session = await harness.open_session(cwd=sys.argv[2])
        await session.run_tool("bash", {"command": 'echo kept > "$TMPDIR/work.txt"'})
        print(json.dumps([session.id, session.temp_dir]), flush=True)
        await trio.sleep_forever()

trio.run(main)
"""


def killed_session(entries: list[dict], root: str) -> tuple[str, str]:
    """A session opened in another process, which is then killed with SIGKILL: its
    id and temp directory."""
    import json
    import signal
    import subprocess

    process = subprocess.Popen(
        [PY, "-c", KILLED, json.dumps(entries), root], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        session_id, temp_dir = json.loads(process.stdout.readline())
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    return session_id, temp_dir


async def test_a_killed_sessions_temp_directory_is_taken_back_on_resume(area: Area, state_dir):
    """A harness killed with SIGKILL cannot remove its session's directory: resuming
    the session takes it back (what its commands left is still there), and closing
    removes it."""
    entries = composition(state_dir)
    session_id, temp_dir = killed_session(entries, str(area.root))
    assert os.path.isfile(os.path.join(temp_dir, "work.txt"))  # left behind
    async with open_harness(entries) as harness:
        resumed = await harness.resume_session(session_id)
        assert resumed.temp_dir == temp_dir
        done = await resumed.run_tool("bash", {"command": 'cat "$TMPDIR/work.txt"'})
        assert "kept" in done.text, done.text
        await resumed.close()
    assert not os.path.lexists(temp_dir)


async def test_the_key_restores_the_host_temp_roots_and_says_so(
    backend, area: Area, state_dir, tag
):
    """`allow_host_temp: true` (a trusted composition): /tmp is writable again, by bash
    and the fs tools alike, and every workspace-write result claims it (partial)."""
    entries = with_fs(state_dir, backend=backend, allow_host_temp=True)
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=str(area.root))
        assert session.temp_dir is not None and session.host_temp == host_temp_roots()
        shell = await session.run_tool("bash", {"command": f"echo x > /tmp/{tag}-key"})
        wrote = await session.run_tool("write_file", {"path": f"/tmp/{tag}-fs", "content": "x"})
        told = await session.pre_step()
    assert shell.facts["denied"] is False and os.path.exists(f"/tmp/{tag}-key")
    assert not wrote.is_error and os.path.exists(f"/tmp/{tag}-fs")
    assert shell.facts["enforcement"] == "partial"
    assert host_temp_gap(host_temp_roots()) in shell.facts["gaps"]
    assert told is not None and "/tmp" in told.text and "are writable too" in told.text


async def test_control_danger_full_access_writes_the_hosts_tmp(area: Area, state_dir, tag):
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=str(area.root))
        await session.set_sandbox_mode("danger-full-access")
        shell = await session.run_tool("bash", {"command": f"echo x > /tmp/{tag}-control"})
        await session.close()
    assert shell.facts["denied"] is False
    assert os.path.exists(f"/tmp/{tag}-control")


async def test_the_policy_message_names_the_sessions_tmpdir(area: Area, state_dir):
    """The model is told where its temp directory is. A resumed session gets it back at
    the same path (nothing to tell again); where that name is taken, it gets another
    directory, never the one standing there, and is told the new path."""
    squatted = area.outside / "squatted"
    squatted.mkdir()
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=str(area.root))
        told = await session.pre_step()
        assert told is not None and f"$TMPDIR ({session.temp_dir})" in told.text
        assert "(/tmp, /var/tmp) are not writable" in told.text
        assert told.temp_dir == session.temp_dir
        assert "$TMPDIR" in harness.tool_schemas()[0]["description"]
        session_id, path = session.id, session.temp_dir
        await session.close()
        resumed = await harness.resume_session(session_id)
        assert resumed.temp_dir == path
        assert await resumed.pre_step() is None
        await resumed.close()
        # Someone plants a link at the session's name while it is closed.
        os.symlink(squatted, path)
        try:
            again = await harness.resume_session(session_id)
            moved = again.temp_dir
            assert moved != path and os.path.isdir(moved) and not os.path.islink(moved)
            written = await again.shell.run('echo x > "$TMPDIR/f"')
            assert written.exit_code == 0, written.stderr
            retold = await again.pre_step()
            await again.close()
            assert os.path.islink(path)  # the plant is not the session's: left alone
        finally:
            os.unlink(path)
    assert list(squatted.iterdir()) == []
    assert retold is not None and f"$TMPDIR ({moved})" in retold.text
    assert not os.path.lexists(moved)


def _cli_script(tag: str, victim: Path) -> str:
    return f'{temp_script(tag)}; ln -s {victim} "$TMPDIR/link"; stat -c "mode:%a" "$TMPDIR"'


@pytest.mark.parametrize("verb", ["exec", "run"])
def test_the_command_line_gives_a_private_tmp_and_removes_it(backend, area: Area, tag, verb):
    victim = area.outside / "victim.txt"
    victim.write_text("keep me\n")
    script = _cli_script(tag, victim)
    if verb == "exec":
        done = cli("exec", "--backend", backend, "--", "sh", "-c", script, cwd=area.root)
    else:
        done = cli("run", "--backend", backend, script, cwd=area.root)
    out = done.stdout
    tmp = next(line.split(":", 1)[1] for line in out.splitlines() if line.startswith("tmpdir:"))
    assert os.path.dirname(tmp) == default_parent() and os.path.basename(tmp).startswith(PREFIX)
    assert "mode:700" in out, out + done.stderr
    assert "read:data" in out and f"mk:{tmp}/tmp." in out and f"py:{tmp}/" in out, out
    assert host_residue(tag) == [], done.stderr
    assert not os.path.lexists(tmp)
    assert victim.read_text() == "keep me\n"


@pytest.mark.parametrize("verb", ["exec", "run"])
def test_a_command_nesting_past_the_walks_bound_leaves_nothing_behind(backend, area: Area, verb):
    """Directories nested 600 levels deep in its TMPDIR, a file at the bottom, and the
    directory opened up to others: the removal lifts what lies past its 512 levels and
    removes it too (it stayed, readable, with nothing said)."""
    script = (
        'echo "tmpdir:$TMPDIR"; chmod 755 "$TMPDIR"; cd "$TMPDIR"; '
        "for i in $(seq 600); do mkdir d && cd d || exit 3; done; echo payload > deep.txt"
    )
    if verb == "exec":
        done = cli("exec", "--backend", backend, "--", "sh", "-c", script, cwd=area.root)
    else:
        done = cli("run", "--backend", backend, script, cwd=area.root)
    assert done.returncode == 0, done
    said = done.stdout.splitlines()
    tmp = next(line.split(":", 1)[1] for line in said if line.startswith("tmpdir:"))
    assert os.path.basename(tmp).startswith(PREFIX)
    assert not os.path.lexists(tmp)
    assert "could not be removed" not in done.stderr

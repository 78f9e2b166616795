"""The attacks on undo (issue 42), judged on the host: a confined command can neither
read nor rewrite the snapshot store (bwrap and the Landlock launcher, each with the
unconfined control showing the attack is real), and a symlink a later call plants
cannot make an undo or a restore write outside the root."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.harness import UndoRefused

from ..support import REAL_BACKENDS, need, require_backend, small_filesystem
from .conftest import composition


def _store_of(state_dir: str, root: Path) -> Path:
    """The root's store: the one beside the session logs."""
    (store,) = (Path(state_dir) / "history").glob("*/history.sqlite")
    return store


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


READ = "head -c 15 {store}; echo; ls {directory}"
WRITE = (
    "echo rewritten >> {store}; : > {store}; rm -rf {directory}; "
    "mv {directory} {directory}.gone; ln -sf /dev/null {store}"
)


async def _attack(config: list[dict], root: Path, state_dir: str) -> tuple[str, str, str]:
    """One recorded call (the store exists), then the reading and the writing command:
    their output, and the store's digest before them."""
    async with open_harness(config) as harness:
        session = await harness.open_session(cwd=root)
        first = await session.run_tool("bash", {"command": "echo a > a.txt"})
        assert first.facts["changed"]["recorded"] is True, first.facts
        store = _store_of(state_dir, root)
        digest = _digest(store)
        names = {"store": store, "directory": store.parent}
        read = await session.run_tool("bash", {"command": READ.format(**names)})
        await session.run_tool("bash", {"command": WRITE.format(**names)})
        return digest, read.text, _digest(store) if store.exists() else "gone"


@pytest.mark.parametrize("backend", REAL_BACKENDS)
async def test_a_confined_command_can_neither_read_nor_rewrite_the_store(state_dir, root, backend):
    require_backend(backend)
    before, read, after = await _attack(composition(state_dir, backend=backend), root, state_dir)
    assert "SQLite format 3" not in read
    assert after == before


async def test_control_an_unconfined_command_reads_and_rewrites_it(state_dir, root):
    # The same commands with nothing confining them: the store is there to be read and
    # rewritten, so the confined test above judges a real attack.
    before, read, after = await _attack(composition(state_dir, executor="local"), root, state_dir)
    assert "SQLite format 3" in read
    assert after != before


@pytest.mark.parametrize("kind", ["undo", "restore"])
async def test_a_symlink_planted_later_never_sends_an_undo_outside(state_dir, root, outside, kind):
    victim = outside / "x"
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": "mkdir d && echo mine > d/x"})
        planted = await session.run_tool("bash", {"command": f"rm -r d && ln -s {outside} d"})
        assert planted.facts.get("exit_code") == 0, planted.text
        assert (root / "d").is_symlink()
        calls = [c.seq for c in await session.undoable_calls()]
        if kind == "undo":
            outcome = await session.undo(calls[1])
        else:
            outcome = await session.restore(calls[1])
        assert outcome.left == ()
    assert not victim.exists() and os.listdir(outside) == []
    assert not (root / "d").is_symlink() and (root / "d" / "x").read_text() == "mine\n"
    # The control: written by path, the same plan would have written the person's file.
    (root / "d" / "x").unlink()
    (root / "d").rmdir()
    (root / "d").symlink_to(outside)
    (root / "d" / "x").write_text("mine\n")
    assert victim.read_text() == "mine\n"


async def test_a_file_over_the_budget_is_reported_and_never_half_restored(state_dir, root):
    big = root / "big.bin"
    big.write_bytes(b"A" * 10_000)
    config = composition(state_dir, history={"file_budget": 4096})
    async with open_harness(config) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool(
            "bash", {"command": "head -c 20000 /dev/zero | tr '\\0' B >> big.bin; echo s > s.txt"}
        )
        changed = result.facts["changed"]
        assert changed["modified"] == 1 and changed["not_recorded"] == ["big.bin"]
        (call,) = [c.seq for c in await session.undoable_calls()]
        outcome = await session.undo(call)
        assert outcome.unrecorded == ("big.bin",)
        assert outcome.deleted == 1 and outcome.paths == ("s.txt",)
    # Left whole as the call left it: never cut back, never half written.
    assert big.read_bytes() == b"A" * 10_000 + b"B" * 20_000
    assert not (root / "s.txt").exists()


async def test_a_name_a_command_chose_cannot_split_or_color_a_refusal_line(state_dir, root):
    name = "x\n\x1b[2Kundo: all clear\x1b]0;t\x07"
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        await session.run_tool("bash", {"command": f"echo a > $'{_bash(name)}'"})
        await session.run_tool("bash", {"command": f"echo b >> $'{_bash(name)}'"})
        first = (await session.undoable_calls())[0].seq
        with pytest.raises(UndoRefused) as refused:
            await session.undo(first)
    line = str(refused.value)
    # The control: the conflict names the file the command made, control bytes and all.
    assert refused.value.conflicts[0].startswith(name)
    assert "\n" not in line and "\x1b" not in line and "\x07" not in line
    assert "x\\n\\x1b[2Kundo: all clear" in line


def _bash(text: str) -> str:
    return "".join(f"\\x{ord(c):02x}" for c in text)


DAEMON = (
    "(setsid sh -c 'sleep 1.5; echo late > late.txt' >/dev/null 2>&1 </dev/null &); echo started"
)


@pytest.mark.parametrize("backend", REAL_BACKENDS)
async def test_a_process_a_call_daemonised_is_gone_before_any_undo(state_dir, root, backend):
    # A process left behind could swap paths under an undo's apply; none is left.
    require_backend(backend)
    async with open_harness(composition(state_dir, backend=backend)) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": DAEMON})
        assert "started" in result.text
        await trio.sleep(2.5)
    assert not (root / "late.txt").exists()


async def test_control_the_same_command_run_plainly_leaves_its_daemon(root):
    process = await trio.run_process(["bash", "-c", DAEMON], cwd=root, capture_stdout=True)
    assert b"started" in process.stdout
    await trio.sleep(2.5)
    assert (root / "late.txt").read_text() == "late\n"


@pytest.mark.parametrize("backend", REAL_BACKENDS)
async def test_a_commands_git_exclude_file_hides_nothing_from_the_history(state_dir, root, backend):
    """`.git/info/exclude` is not recorded (`.git` is not) and a command may write it: a
    later harness that read it dropped every path it named, so the next call's
    `rm -rf src` was recorded as nothing and could not be undone. The history reads only
    the `.gitignore` files, which are recorded themselves."""
    require_backend(backend)
    need("git")
    await trio.run_process(["git", "init", "-q", str(root)])
    (root / "src").mkdir()
    (root / "src" / "thesis.tex").write_text("precious\n")
    config = composition(state_dir, backend=backend)
    async with open_harness(config) as harness:
        session = await harness.open_session(cwd=root)
        planted = await session.run_tool("bash", {"command": "echo '*' >> .git/info/exclude"})
        assert planted.facts.get("exit_code") == 0, planted.text
    assert (root / ".git" / "info" / "exclude").read_text().endswith("*\n")  # it is there
    async with open_harness(config) as harness:
        session = await harness.open_session(cwd=root)
        removed = await session.run_tool("bash", {"command": "rm -rf src"})
        assert removed.facts["changed"]["deleted"] >= 1, removed.facts["changed"]
        (call,) = [c.seq for c in await session.undoable_calls()]  # this harness's one
        outcome = await session.undo(call)
        assert outcome.created >= 1, outcome
    assert (root / "src" / "thesis.tex").read_text() == "precious\n"


@pytest.fixture
def small_root(scratch) -> Iterator[Path]:
    """A workspace root on a 128 MiB tmpfs of its own (mounted as root)."""
    with small_filesystem(Path(scratch) / "small", "128m") as path:
        yield path


async def test_an_undo_that_would_fill_the_disk_is_refused_and_changes_nothing(
    state_dir, small_root
):
    """A sparse 32 MiB file and five more names for it cost the command nothing on disk;
    undoing their removal writes each name whole, 192 MiB on a 128 MiB filesystem (a
    real disk: gigabytes, as root). Refused before anything is touched. The control:
    the undo of one such name is done, and does take its full 32 MiB."""
    root = small_root
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        made = "truncate -s 32M big && for i in 1 2 3 4 5; do ln big l$i; done"
        assert (await session.run_tool("bash", {"command": made})).facts.get("exit_code") == 0
        await session.run_tool("bash", {"command": "rm -f big l1 l2 l3 l4 l5"})
        calls = [c.seq for c in await session.undoable_calls()]
        with pytest.raises(UndoRefused, match=r"would write \d+ bytes where \d+ are free"):
            await session.undo(calls[-1])
        names = ("big", "l1", "l2", "l3", "l4", "l5")
        assert not any(os.path.lexists(root / name) for name in names)  # nothing put back
        assert not [p for p in root.iterdir() if p.name.startswith(".stockade")]  # nor half
        await session.run_tool("bash", {"command": "truncate -s 32M one"})
        await session.run_tool("bash", {"command": "rm one"})
        calls = [c.seq for c in await session.undoable_calls()]
        outcome = await session.undo(calls[-1])
        assert outcome.created == 1
    assert os.stat(root / "one").st_blocks * 512 >= 32 << 20  # written whole: 32 MiB


async def test_many_sparse_files_cost_a_boundary_its_bytes_budget_not_their_size(state_dir, root):
    """Sparse 32 MiB files cost the command nothing on disk; read whole they cost the
    harness their size after the call, outside its timeout (an audit's reproduction:
    a hundred took 20 s). Of twenty, 256 MiB are read now, eight files; the other 12 are
    reported, not stored. The control: under a budget that does not bind, all are read."""
    made = "for i in $(seq 20); do truncate -s 32M f$i; done"
    async with open_harness(composition(state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": made})
        changed = result.facts["changed"]
    assert changed["created"] == 20 and len(changed["not_recorded"]) == 12, changed
    assert changed["not_recorded_why"] == ["past the byte budget of one look (bytes_budget)"]
    control_root = root / "control"
    control_root.mkdir()
    control = composition(state_dir + "-control", history={"bytes_budget": 4 << 30})
    async with open_harness(control) as harness:
        session = await harness.open_session(cwd=control_root)
        result = await session.run_tool("bash", {"command": made})
        changed = result.facts["changed"]
    assert changed["created"] == 20 and not changed["not_recorded"], changed

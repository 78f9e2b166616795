"""The provider's guard memo (sandbox/_guard_memo.py): an answer is reused only while
every path its guard call looked at is unchanged, and never when that call read the
disk outside the memo or saw a change too recent to tell from the next one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from stockade.sandbox import _guard_memo
from stockade.sandbox._argv import writable_roots
from stockade.sandbox._guard import guard_call
from stockade.sandbox._guard_memo import GuardMemo
from stockade.sandbox.backends.bwrap import NAME as BWRAP
from stockade.sandbox.backends.landlock import NAME as LANDLOCK
from stockade.vocab import SandboxMode

WW = SandboxMode.WORKSPACE_WRITE


@pytest.fixture
def settled(monkeypatch):
    """Changes made by the test count as old at once (the settle rule has its own test)."""
    monkeypatch.setattr(_guard_memo, "SETTLE_NS", -(10**18))


@pytest.fixture
def roots(tmp_path):
    ws, temp = tmp_path / "ws", tmp_path / "temp"
    ws.mkdir()
    temp.mkdir()
    return str(ws), str(temp)


def ask(memo: GuardMemo, backend: str, ws: str, temp: str, calls: list[int]):
    def compute(facts):
        calls.append(1)
        return guard_call(backend, WW, ws, [temp], facts=facts)

    return memo.answer((backend, ws), writable_roots(WW, ws, [temp]), compute)


@pytest.mark.parametrize("backend", [BWRAP, LANDLOCK])
def test_an_unchanged_disk_gets_the_same_answer_without_reading_it_again(settled, roots, backend):
    ws, temp = roots
    memo, calls = GuardMemo(), []
    first = ask(memo, backend, ws, temp, calls)
    again = ask(memo, backend, ws, temp, calls)
    assert again is first and len(calls) == 1 and memo.hits == 1
    assert again == guard_call(backend, WW, ws, [temp])


@pytest.mark.parametrize(
    "change",
    [
        lambda ws: os.makedirs(os.path.join(ws, ".git", "hooks")),
        lambda ws: open(os.path.join(ws, "stockade.yml"), "w").close(),
        lambda ws: os.mkdir(os.path.join(ws, ".git")),
    ],
    ids=["a repository appears", "an empty stockade.yml appears", "an empty .git appears"],
)
def test_any_change_on_the_way_is_seen(settled, roots, change):
    ws, temp = roots
    memo, calls = GuardMemo(), []
    ask(memo, BWRAP, ws, temp, calls)
    change(ws)
    after = ask(memo, BWRAP, ws, temp, calls)
    assert len(calls) == 2 and memo.hits == 0
    assert after == guard_call(BWRAP, WW, ws, [temp])


def test_a_placeholder_that_gains_content_is_seen(settled, roots):
    ws, temp = roots
    os.mkdir(os.path.join(ws, ".git"))
    memo, calls = GuardMemo(), []
    ask(memo, BWRAP, ws, temp, calls)
    os.mkdir(os.path.join(ws, ".git", "hooks"))  # the empty .git is a repository now
    after = ask(memo, BWRAP, ws, temp, calls)
    assert len(calls) == 2 and after == guard_call(BWRAP, WW, ws, [temp])


def test_a_gitdir_elsewhere_is_watched_and_a_link_is_never_remembered(settled, roots, tmp_path):
    """A worktree's `.git` file names a gitdir outside every root: what was read there
    (its commondir) is watched, the rest of the way by what each path is."""
    ws, temp = roots
    gitdir = tmp_path / "gitdir"
    (gitdir / "hooks").mkdir(parents=True)
    with open(os.path.join(ws, ".git"), "w") as dotgit:
        dotgit.write(f"gitdir: {gitdir}\n")
    memo, calls = GuardMemo(), []
    first = ask(memo, BWRAP, ws, temp, calls)
    (gitdir / "index").write_text("x")  # git at work there: times change, not kinds
    assert ask(memo, BWRAP, ws, temp, calls) is first and len(calls) == 1
    # Its commondir now leads into the root: seen, and that common dir is protected.
    git_init("--bare", "common", cwd=ws)
    (gitdir / "commondir").write_text(f"{ws}/common\n")
    after = ask(memo, BWRAP, ws, temp, calls)
    assert len(calls) == 2 and after == guard_call(BWRAP, WW, ws, [temp])
    assert os.path.join(ws, "common", "config") in {p.path for p in after.protections}
    # The gitdir replaced by a link to another: seen too.
    os.rename(gitdir, tmp_path / "moved")
    os.symlink(tmp_path / "moved", gitdir)
    ask(memo, BWRAP, ws, temp, calls)
    assert len(calls) == 3
    os.unlink(os.path.join(ws, ".git"))
    os.symlink(gitdir, os.path.join(ws, ".git"))
    ask(memo, BWRAP, ws, temp, calls)
    ask(memo, BWRAP, ws, temp, calls)
    assert len(calls) == 5 and memo.hits == 1


def git_init(*args: str, cwd: str) -> None:
    subprocess.run(["git", "init", "-q", *args], cwd=cwd, check=True, capture_output=True)


def test_what_is_read_inside_the_roots_is_remembered_and_watched(settled, roots):
    """A `.git` file and a commondir read, and the directories searched for nested
    repositories, all lie in the root: the answer is kept, and any change to them is
    seen."""
    ws, temp = roots
    git_init("--separate-git-dir", os.path.join(ws, "gd"), ".", cwd=ws)
    os.makedirs(os.path.join(ws, "vendor", "lib"))
    os.makedirs(os.path.join(ws, "src", "pkg"))
    memo, calls = GuardMemo(), []
    first = ask(memo, BWRAP, ws, temp, calls)
    assert ask(memo, BWRAP, ws, temp, calls) is first and len(calls) == 1
    changes = [
        # a nested repository appears one, then two, directories down
        lambda: git_init(cwd=os.path.join(ws, "vendor")),
        lambda: git_init(cwd=os.path.join(ws, "src", "pkg")),
        # a bare one, two directories down
        lambda: git_init("--bare", "deps/x", cwd=ws),
        # the `.git` file is rewritten, the gitdir gains a commondir, a worktree
        lambda: Path(ws, ".git").write_text("gitdir: gd\n\n"),
        lambda: Path(ws, "gd", "commondir").write_text(".\n"),
        lambda: os.makedirs(os.path.join(ws, "gd", "worktrees", "w")),
    ]
    for change in changes:
        change()
        after = ask(memo, BWRAP, ws, temp, calls)
        assert after == guard_call(BWRAP, WW, ws, [temp]) and after is not first
        assert ask(memo, BWRAP, ws, temp, calls) is after  # and kept again
        first = after
    assert memo.hits == 1 + len(changes)


def test_an_answer_that_saw_a_fresh_change_is_computed_again(roots):
    """A change younger than SETTLE_NS could share its ctime with the next change."""
    ws, temp = roots
    open(os.path.join(ws, "just-made"), "w").close()  # the root's ctime is now
    memo, calls = GuardMemo(), []
    ask(memo, BWRAP, ws, temp, calls)
    ask(memo, BWRAP, ws, temp, calls)
    assert len(calls) == 2 and memo.hits == 0


def test_an_answer_with_a_root_of_stockades_own_is_kept_and_watches_what_it_looked_up(
    settled, roots
):
    """A root of stockade's own (a tool cache: no repository looked for there) still
    lets the answer be kept; a startup file looked up inside it is watched."""
    ws, own = roots
    bashrc = os.path.join(own, ".bashrc")
    memo, calls = GuardMemo(), []

    def ask_own() -> object:
        def compute(facts):
            calls.append(1)
            return guard_call(
                BWRAP, WW, ws, [own], facts=facts, own_roots=[own], startup=[(".bashrc", bashrc)]
            )

        return memo.answer((BWRAP, ws), writable_roots(WW, ws, [own]), compute, (own,))

    first = ask_own()
    assert ask_own() is first and len(calls) == 1 and memo.hits == 1
    Path(bashrc).write_text("# the person's\n")
    after = ask_own()
    assert len(calls) == 2 and after != first

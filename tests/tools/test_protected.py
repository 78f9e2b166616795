"""Protected paths inside the writable roots: git hooks and config, stockade.yml, a
worktree's gitdir and configured extras are refused by write_file and edit_file as a
fence denial (judged by where the write really lands), except in danger-full-access."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.approval.answerers import ScriptedAnswerer
from stockade.tools import _fence, _protected
from stockade.tools.fs import FsResult, edit_file, write_file
from stockade.tools.fs_tool import FsTool
from stockade.vocab import DENIAL_INSTRUCTION, ExecutionPolicy, SandboxMode, denial_marker

from ..harness.conftest import composition
from ..harness.conftest import state_dir as state_dir
from .conftest import TEMP_ROOTS, snapshot

OLD = "[core]\n\tbare = false\n"


def write(
    policy: ExecutionPolicy,
    cwd: str,
    path: str,
    extra: tuple[str, ...] = (),
    *,
    temp_roots: tuple[str, ...] = TEMP_ROOTS,
) -> FsResult:
    return write_file(policy, cwd, path, "EVIL\n", temp_roots=temp_roots, protected_extra=extra)


def edit(policy: ExecutionPolicy, cwd: str, path: str, extra: tuple[str, ...] = ()) -> FsResult:
    return edit_file(
        policy, cwd, path, "bare", "EVIL", temp_roots=TEMP_ROOTS, protected_extra=extra
    )


def put(path: str, text: str = OLD) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    return path


def assert_protected(result: FsResult, named: str | None = None) -> None:
    mode = SandboxMode.WORKSPACE_WRITE
    assert result.denied and result.is_error and result.os_error is None, result.text
    assert result.text.endswith(f"\n{denial_marker(mode)}\n{DENIAL_INSTRUCTION}"), result.text
    assert "is protected (repository metadata / configuration" in result.text, result.text
    if named is not None:
        assert f"refused {result.path}: {named} is protected" in result.text, result.text


@pytest.fixture
def repo(ws: str) -> str:
    """`ws` as a git checkout: .git/hooks (with a sample hook) and .git/config."""
    put(os.path.join(ws, ".git", "config"))
    put(os.path.join(ws, ".git", "hooks", "pre-commit.sample"), "#!/bin/sh\n")
    put(os.path.join(ws, ".git", "HEAD"), "ref: refs/heads/main\n")
    return ws


# -- the defaults -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        ".git/hooks/pre-commit",
        ".git/hooks/pre-commit.sample",
        ".git/config",
        "stockade.yml",
        "sub/../.git/hooks/post-checkout",
    ],
)
def test_default_protected_paths_are_denied(
    resolver: str, ww: ExecutionPolicy, repo: str, path: str
) -> None:
    put(os.path.join(repo, "stockade.yml"), "[]\n")
    os.mkdir(os.path.join(repo, "sub"))
    before = snapshot(repo)
    assert_protected(write(ww, repo, path))
    assert snapshot(repo) == before


@pytest.mark.parametrize("path", [".git/config", "stockade.yml"])
def test_edit_of_a_protected_file_is_denied(
    resolver: str, ww: ExecutionPolicy, repo: str, path: str
) -> None:
    put(os.path.join(repo, "stockade.yml"), "bare: 1\n")
    before = snapshot(repo)
    assert_protected(edit(ww, repo, path), named=os.path.join(repo, path))
    assert snapshot(repo) == before


def test_ordinary_writes_still_succeed(resolver: str, ww: ExecutionPolicy, repo: str) -> None:
    for path in ("notes.txt", ".git/description", ".github/config", "hooks/pre-commit"):
        os.makedirs(os.path.dirname(os.path.join(repo, path)), exist_ok=True)
        result = write(ww, repo, path)
        assert not result.is_error and not result.denied, result.text
        with open(os.path.join(repo, path)) as handle:
            assert handle.read() == "EVIL\n"
    put(os.path.join(repo, "plain.txt"))
    assert edit(ww, repo, "plain.txt").replacements == 1


def test_a_missing_hooks_directory_is_still_protected(
    resolver: str, ww: ExecutionPolicy, ws: str
) -> None:
    """No .git/hooks (or no .git at all): a file there, or a file taking its name."""
    before = snapshot(ws)
    assert_protected(write(ww, ws, ".git"))  # would create the repository's .git
    os.mkdir(os.path.join(ws, ".git"))
    before = snapshot(ws)
    for path in (".git/hooks", ".git/hooks/pre-commit"):
        assert_protected(write(ww, ws, path))
    assert snapshot(ws) == before
    assert not os.path.lexists(os.path.join(ws, ".git", "hooks"))


def test_temp_roots_are_protected_too(ww: ExecutionPolicy, ws: str, temp_root: str) -> None:
    put(os.path.join(temp_root, ".git", "config"))
    before = snapshot(temp_root)
    for path in (".git/config", ".git/hooks", "stockade.yml"):
        result = write(ww, ws, os.path.join(temp_root, path), temp_roots=(temp_root,))
        assert_protected(result)
    assert snapshot(temp_root) == before


def test_configured_extra_paths(
    resolver: str, ww: ExecutionPolicy, ws: str, outside: str, temp_root: str
) -> None:
    os.mkdir(os.path.join(ws, "ci"))
    os.mkdir(os.path.join(temp_root, "absolute"))
    extra = ("ci", "Makefile", os.path.join(temp_root, "absolute"))
    before = snapshot(ws, temp_root)
    assert_protected(write(ww, ws, "ci/deploy.sh", extra), named=os.path.join(ws, "ci"))
    assert_protected(write(ww, ws, "Makefile", extra))
    roots = (temp_root,)
    assert_protected(write(ww, ws, f"{temp_root}/absolute/x", extra, temp_roots=roots))
    # relative extras are relative to EACH writable root
    assert_protected(write(ww, ws, f"{temp_root}/Makefile", extra, temp_roots=roots))
    assert snapshot(ws, temp_root) == before
    # without the extras the same writes are ordinary
    assert not write(ww, ws, "ci/deploy.sh").is_error
    assert not write(ww, ws, "Makefile").is_error


# -- worktrees and submodules: `.git` is a file -------------------------------------------


def test_a_worktree_gitdir_inside_the_root(resolver: str, ww: ExecutionPolicy, ws: str) -> None:
    common = os.path.join(ws, "main-git")
    gitdir = os.path.join(common, "worktrees", "wt")
    put(os.path.join(common, "config"))
    os.mkdir(os.path.join(common, "hooks"))
    put(os.path.join(gitdir, "commondir"), "../..\n")
    put(os.path.join(gitdir, "config.worktree"))
    put(os.path.join(ws, ".git"), "gitdir: main-git/worktrees/wt\n")
    before = snapshot(ws)
    for path in (
        "main-git/worktrees/wt/hooks/pre-commit",
        "main-git/worktrees/wt/config",
        "main-git/worktrees/wt/config.worktree",
        "main-git/hooks/pre-commit",
        "main-git/config",
        ".git",  # rewriting the .git file would point git at another gitdir
    ):
        assert_protected(write(ww, ws, path))
    assert_protected(edit(ww, ws, "main-git/config"))
    assert snapshot(ws) == before
    assert not write(ww, ws, "main-git/worktrees/wt/HEAD").is_error


def test_a_gitdir_in_a_temp_root(ww: ExecutionPolicy, ws: str, temp_root: str) -> None:
    gitdir = os.path.join(temp_root, "gitdir")
    put(os.path.join(gitdir, "config"))
    put(os.path.join(ws, ".git"), f"gitdir: {gitdir}\n")
    roots = (temp_root,)
    before = snapshot(ws, temp_root)
    for path in ("hooks", "hooks/pre-commit", "config", "config.worktree"):
        assert_protected(write(ww, ws, os.path.join(gitdir, path), temp_roots=roots))
    assert snapshot(ws, temp_root) == before
    assert not write(ww, ws, os.path.join(gitdir, "HEAD"), temp_roots=roots).is_error


# -- symlinks: judged by where the write really lands -------------------------------------


def test_symlinks_inside_the_root_to_protected_paths(
    resolver: str, ww: ExecutionPolicy, repo: str
) -> None:
    os.symlink(".git/hooks/pre-commit", os.path.join(repo, "hook-link"))
    os.symlink(".git/config", os.path.join(repo, "config-link"))
    os.symlink(".git/hooks", os.path.join(repo, "hooks-dir"))
    os.symlink(".git", os.path.join(repo, "dotgit"))
    before = snapshot(repo)
    for path in ("hook-link", "config-link", "hooks-dir/pre-commit", "dotgit/hooks/x"):
        assert_protected(write(ww, repo, path))
    assert_protected(edit(ww, repo, "config-link"))
    assert snapshot(repo) == before


def test_dot_git_as_a_symlink_to_a_directory_in_the_root(
    resolver: str, ww: ExecutionPolicy, ws: str
) -> None:
    put(os.path.join(ws, "real-git", "config"))
    os.mkdir(os.path.join(ws, "real-git", "hooks"))
    os.symlink("real-git", os.path.join(ws, ".git"))
    before = snapshot(ws)
    for path in (".git/hooks/pre-commit", "real-git/hooks/pre-commit", "real-git/config"):
        assert_protected(write(ww, ws, path))
    assert snapshot(ws) == before


@pytest.mark.parametrize("landing", ["early-check-off", "unknown"])
def test_the_landing_check_stands_alone(
    resolver: str,
    ww: ExecutionPolicy,
    repo: str,
    monkeypatch: pytest.MonkeyPatch,
    landing: str,
) -> None:
    """Where the opened directory really is decides, even when the early (by-path)
    classification is skipped; a landing place that cannot be told is refused."""
    os.symlink(".git/hooks", os.path.join(repo, "hooks-dir"))
    monkeypatch.setattr(_fence, "_refuse_protected_early", lambda *_args: None)
    if landing == "unknown":
        monkeypatch.setattr(_protected, "dir_location", lambda _fd: None)
        result = write(ww, repo, "ordinary.txt")
        assert result.denied and "cannot be told" in result.text
        assert not os.path.exists(os.path.join(repo, "ordinary.txt"))
        return
    before = snapshot(repo)
    assert_protected(write(ww, repo, "hooks-dir/pre-commit"))
    assert snapshot(repo) == before
    assert not write(ww, repo, "ordinary.txt").is_error


def test_hard_linked_files_are_still_refused(ww: ExecutionPolicy, ws: str) -> None:
    put(os.path.join(ws, "a.txt"))
    os.link(os.path.join(ws, "a.txt"), os.path.join(ws, "b.txt"))
    result = write(ww, ws, "b.txt")
    assert result.denied and "2 hard links" in result.text


# -- modes and the escalation path ---------------------------------------------------------


def test_danger_full_access_writes_protected_paths(
    policy: Callable[[SandboxMode], ExecutionPolicy], repo: str
) -> None:
    danger = policy(SandboxMode.DANGER_FULL_ACCESS)
    assert not write(danger, repo, ".git/hooks/pre-commit").is_error
    assert edit(danger, repo, ".git/config").replacements == 1
    with open(os.path.join(repo, ".git", "hooks", "pre-commit")) as handle:
        assert handle.read() == "EVIL\n"


async def test_fs_tool_passes_its_protected_paths(ws: str) -> None:
    ww = ExecutionPolicy(SandboxMode.WORKSPACE_WRITE, ws)
    tool = FsTool(fenced=True, protected=["secret"])
    result = await tool.call("c1", "write_file", {"path": "secret", "content": "x"}, None, ww)
    assert result.facts["denied"] is True and "secret is protected" in result.text
    assert not os.path.exists(os.path.join(ws, "secret"))
    unfenced = FsTool(fenced=False, protected=("secret",))
    result = await unfenced.call("c2", "write_file", {"path": "secret", "content": "x"}, None, ww)
    assert not result.is_error and os.path.exists(os.path.join(ws, "secret"))


async def test_a_protected_write_escalates_like_any_denial(state_dir: str, repo: str) -> None:
    entries = composition(state_dir)
    entries.insert(-1, {"id": "fs", "name": "stockade.fs.sandbox"})
    answerer = ScriptedAnswerer(["allowed-once"])
    hook = os.path.join(repo, ".git", "hooks", "pre-commit")
    async with open_harness(entries, answerers=[answerer]) as harness:
        session = await harness.open_session(cwd=repo)
        denied = await session.run_tool(
            "write_file", {"path": ".git/hooks/pre-commit", "content": "1"}
        )
        assert denied.facts["denied"] is True and not os.path.exists(hook)
        assert denial_marker(SandboxMode.WORKSPACE_WRITE) in denied.text
        assert "is protected" in denied.text and "sandbox_permissions" in denied.text
        ask = {"sandbox_permissions": "danger-full-access", "justification": "install a hook"}
        granted = await session.run_tool(
            "write_file", {"path": ".git/hooks/pre-commit", "content": "1", **ask}
        )
        again = await session.run_tool(
            "edit_file", {"path": ".git/hooks/pre-commit", "old": "1", "new": "2"}
        )
    assert not granted.is_error and granted.facts["granted"] == "danger-full-access"
    assert again.facts["denied"] is True  # the grant was for that one call
    assert Path(hook).read_text() == "1"
    assert answerer.seen[0].reason == "the sandbox denied this command under workspace-write"

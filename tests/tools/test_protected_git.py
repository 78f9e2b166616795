"""The fs tools refuse what bash cannot write either (trust.protected_set): every git
directory's hooks, config, config.worktree and commondir (the root's, a `.git` file's
gitdir and its common dir, worktrees, submodules, nested repositories), a `.git` where
none is, editor and agent settings in every root, and the caller's startup files in a
root that holds the home directory; `!NAME` (the composition's `unprotect`) leaves a
default item writable."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.vocab import ExecutionPolicy

from ..harness.conftest import composition
from ..harness.conftest import state_dir as state_dir
from .conftest import snapshot
from .test_protected import assert_protected, write

IDENTITY = ("-c", "user.email=t@x", "-c", "user.name=t")


def git(*args: str, cwd: str | Path) -> None:
    subprocess.run(["git", *IDENTITY, *args], cwd=cwd, check=True, capture_output=True)


def repository(path: str) -> None:
    os.makedirs(path, exist_ok=True)
    git("init", "-q", ".", cwd=path)
    Path(path, "file.txt").write_text("one\n")
    git("add", "file.txt", cwd=path)
    git("commit", "-q", "-m", "one", cwd=path)


@pytest.fixture
def layout(ws: str, outside: str) -> str:
    """A repository with worktree config on, a submodule at vendor/lib, a nested
    repository at deps/other, and a linked worktree's gitdir."""
    upstream = os.path.join(outside, "upstream")
    repository(upstream)
    repository(ws)
    git("config", "extensions.worktreeConfig", "true", cwd=ws)
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", upstream, "vendor/lib",
        cwd=ws)  # fmt: skip
    repository(os.path.join(ws, "deps", "other"))
    git("worktree", "add", "-q", os.path.join(outside, "side"), cwd=ws)
    return ws


GIT_PATHS = [
    ".git/commondir",
    ".git/config.worktree",
    ".git/hooks/post-checkout",
    ".git/worktrees/side/commondir",
    ".git/worktrees/side/config.worktree",
    ".git/modules/vendor/lib/config",
    ".git/modules/vendor/lib/commondir",
    ".git/modules/vendor/lib/hooks/pre-commit",
    "vendor/lib/.git",  # the submodule's `.git` file: re-pointing it
    "deps/other/.git/config",
    "deps/other/.git/commondir",
    "deps/other/.git/hooks/pre-commit",
]


def test_git_metadata_wherever_git_looks_is_refused(
    resolver: str, ww: ExecutionPolicy, layout: str
) -> None:
    before = snapshot(layout)
    for path in GIT_PATHS:
        assert_protected(write(ww, layout, path))
    assert snapshot(layout) == before


def test_a_gitdir_named_by_a_dotgit_file_and_its_common_dir(ww: ExecutionPolicy, ws: str) -> None:
    git("init", "-q", "--separate-git-dir", os.path.join(ws, "gd"), ".", cwd=ws)
    os.makedirs(os.path.join(ws, "common"))
    before = snapshot(ws)
    for path in ("gd/commondir", "gd/config.worktree", "gd/config", ".git"):
        assert_protected(write(ww, ws, path))
    assert snapshot(ws) == before
    Path(ws, "gd", "commondir").write_text("../common\n")  # as the person set it up
    for path in ("common/config", "common/commondir", "common/hooks/x"):
        assert_protected(write(ww, ws, path))


def test_a_dotgit_cannot_be_made_where_none_is(ww: ExecutionPolicy, ws: str) -> None:
    for path in (".git", ".git/config", ".git/description"):
        assert_protected(write(ww, ws, path))
    assert not os.path.lexists(os.path.join(ws, ".git"))


def test_ordinary_writes_beside_the_metadata_still_succeed(ww: ExecutionPolicy, layout: str):
    for path in ("vendor/lib/file.txt", "deps/other/new.txt", ".git/description", "gd/x"):
        os.makedirs(os.path.dirname(os.path.join(layout, path)), exist_ok=True)
        result = write(ww, layout, path)
        assert not result.is_error and not result.denied, result.text


SETTINGS = [".vscode/settings.json", ".idea/workspace.xml", ".mcp.json", ".claude/x", ".codex/c"]
STARTUP = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".config/fish/config.fish",
    ".gitconfig",
    ".config/git/config",
    ".ssh/authorized_keys",
    ".ssh/rc",
]


@pytest.mark.parametrize("path", SETTINGS)
def test_editor_and_agent_settings_are_refused_in_every_root(
    ww: ExecutionPolicy, ws: str, temp_root: str, path: str
) -> None:
    assert_protected(write(ww, ws, path))
    assert_protected(write(ww, ws, os.path.join(temp_root, path), temp_roots=(temp_root,)))
    name = path.split("/")[0]
    os.makedirs(os.path.dirname(os.path.join(ws, path)), exist_ok=True)
    assert not write(ww, ws, path, (f"!{name}",)).is_error  # unprotect


@pytest.mark.parametrize("path", STARTUP)
def test_startup_files_are_refused_in_a_root_that_holds_the_home(
    ww: ExecutionPolicy, ws: str, outside: str, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    home = os.path.join(ws, "home")
    os.makedirs(os.path.join(home, ".config"))
    monkeypatch.setenv("HOME", home)
    before = snapshot(ws)
    assert_protected(write(ww, ws, os.path.join("home", path)))
    assert snapshot(ws) == before
    assert not write(ww, ws, "home/notes.txt").is_error
    # A home outside every root: nothing of it is the fence's business.
    monkeypatch.setenv("HOME", outside)
    os.makedirs(os.path.join(ws, "home", os.path.dirname(path)), exist_ok=True)
    assert not write(ww, ws, os.path.join("home", path)).is_error


def test_unprotect_names_a_startup_file(ww: ExecutionPolicy, ws: str, monkeypatch) -> None:
    monkeypatch.setenv("HOME", ws)
    assert_protected(write(ww, ws, ".bashrc"))
    assert not write(ww, ws, ".bashrc", ("!~/.bashrc",)).is_error
    assert_protected(write(ww, ws, ".profile", ("!~/.bashrc",)))


async def test_the_composition_unprotect_reaches_the_fs_tools(state_dir: str, ws: str) -> None:
    entries = composition(state_dir)
    entries.insert(-1, {"id": "fs", "name": "stockade.fs.sandbox"})
    for entry in entries:
        if entry["name"] == "stockade.sandbox.local":
            entry.setdefault("config", {})["unprotect"] = [".vscode"]
    os.mkdir(os.path.join(ws, ".vscode"))
    os.mkdir(os.path.join(ws, ".idea"))
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=ws)
        opened = await session.run_tool("write_file", {"path": ".vscode/x.json", "content": "1"})
        kept = await session.run_tool("write_file", {"path": ".idea/x.xml", "content": "1"})
    assert not opened.is_error, opened.text
    assert kept.facts["denied"] is True and "is protected" in kept.text

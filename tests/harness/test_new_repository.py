"""A repository a confined command makes in a workspace root that had none (issue 37):
`git init` there works (no placeholder blocks `.git` any more), and what git would run
of it (a config key that runs a program, a hook) is held aside when the call ends, so
the person's own git run there later runs none of it. Real kernel, both backends;
the unconfined control shows the attack is real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.trust import new_repository

from ..support import require_backend
from .conftest import on_backend as composition

BACKENDS = ("bwrap", "landlock")
GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@example.invalid",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@example.invalid",
}


@pytest.fixture
def root(monkeypatch) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="stockade-newrepo-", dir="/var/tmp"))
    (base / "ws").mkdir()
    (base / "home").mkdir()
    monkeypatch.setenv("HOME", str(base / "home"))
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "STOCKADE_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield base / "ws"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def attack(root: Path) -> str:
    """A repository whose config and pre-commit hook run a program of the command's."""
    return (
        "git init -q && "
        f"git config core.fsmonitor 'touch {root}/FSMONITOR-RAN' && "
        f"printf '#!/bin/sh\\ntouch {root}/HOOK-RAN\\n' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit && git remote add origin /srv/repo.git"
    )


def host_git(root: Path) -> None:
    """The person's own git, later, unconfined: a status and a commit."""
    subprocess.run(["git", "status"], cwd=root, env=GIT_ENV, capture_output=True, check=False)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=root,
        env=GIT_ENV,
        capture_output=True,
        check=False,
    )


def test_the_control_runs_what_the_repository_names(root):
    subprocess.run(["bash", "-c", attack(root)], cwd=root, env=GIT_ENV, check=True)
    host_git(root)
    assert (root / "FSMONITOR-RAN").exists() and (root / "HOOK-RAN").exists()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_what_git_would_run_is_held_when_the_call_ends(backend, root):
    require_backend(backend)
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(root))
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool("bash", {"command": attack(str(root))})
    assert result.facts.get("exit_code") == 0, result.text
    assert not result.facts["denied"]
    assert list(result.facts["held"]) == [".git/hooks/pre-commit", ".git/config: core.fsmonitor"]
    assert f"the repository this command made in {root} held what git would run" in result.text
    host_git(root)
    assert not (root / "FSMONITOR-RAN").exists() and not (root / "HOOK-RAN").exists()
    # Held, not lost; the rest of the config kept.
    assert (root / ".git" / "hooks.stockade-held" / "pre-commit").is_file()
    assert "fsmonitor" in (root / ".git" / "config.stockade-held").read_text()
    config = (root / ".git" / "config").read_text()
    assert "fsmonitor" not in config and "/srv/repo.git" in config


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_ordinary_new_repository_is_left_alone(backend, root):
    require_backend(backend)
    script = (
        "git init -q && git config user.email a@example.invalid && git config user.name a "
        "&& echo one > a && git add a && git commit -qm one && git remote add origin /srv/r"
    )
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(root))
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool("bash", {"command": script})
    assert result.facts.get("exit_code") == 0, result.text
    assert not result.facts["held"] and "held what git would run" not in result.text
    assert not list((root / ".git").glob("*.stockade-held"))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_git_link_made_by_the_command_is_held_whole_unfollowed(backend, root):
    """A `.git` symlink the command made to a repository of its own elsewhere in the
    root: held whole (renamed), what it leads to left as it is."""
    require_backend(backend)
    script = (
        "git init -q real && git -C real config core.fsmonitor 'touch FSMONITOR-RAN' "
        "&& ln -s real/.git .git"
    )
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(root))
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool("bash", {"command": script})
    assert result.facts.get("exit_code") == 0, result.text
    assert list(result.facts["held"]) == [".git"]
    assert "moved to .git.stockade-held" in result.text
    assert (root / ".git.stockade-held").is_symlink() and not os.path.lexists(root / ".git")
    assert "fsmonitor" in (root / "real" / ".git" / "config").read_text()  # not followed
    host_git(root)
    assert not (root / "FSMONITOR-RAN").exists() and not (root / "real" / "FSMONITOR-RAN").exists()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_empty_git_directory_left_in_the_root_is_a_new_repository(backend, root):
    """An empty `.git` (a placeholder an older stockade left, or a person's mkdir) is
    no repository: not blocked, and what a command fills it with is held."""
    require_backend(backend)
    (root / ".git").mkdir()
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(root))
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool("bash", {"command": attack(root)})
    assert result.facts.get("exit_code") == 0, result.text
    assert ".git/hooks/pre-commit" in result.facts["held"]
    host_git(root)
    assert not (root / "FSMONITOR-RAN").exists() and not (root / "HOOK-RAN").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_stockade_exec_holds_too(backend, root):
    require_backend(backend)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stockade",
            "exec",
            "--backend",
            backend,
            "--mode",
            "workspace-write",
            "--",
            "bash",
            "-c",
            attack(root),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "held what git would run (.git/hooks/pre-commit; .git/config: core.fsmonitor)" in (
        done.stderr
    )
    host_git(root)
    assert not (root / "FSMONITOR-RAN").exists() and not (root / "HOOK-RAN").exists()


def test_a_git_pointer_is_held_whole_without_being_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config").write_text("[core]\n\tfsmonitor = touch /x\n")
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".git").symlink_to(elsewhere)
    (root / ".git.stockade-held").write_text("taken")  # a name taken: the next one
    assert new_repository.hold(str(root)) == ([".git"], [".git.stockade-held.2"])
    assert (root / ".git.stockade-held.2").is_symlink() and not (root / ".git").exists()
    assert (elsewhere / "config").read_text().startswith("[core]")  # untouched


def test_a_taken_aside_name_is_passed_over(tmp_path):
    """A command that makes `hooks.stockade-held` a link (or takes any held name)
    cannot make the hold give up, nor lead it anywhere: the next free name is used."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], env=GIT_ENV, check=True)
    hook = tmp_path / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch /x\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".git" / "hooks.stockade-held").symlink_to(elsewhere)
    assert new_repository.hold(str(tmp_path)) == (
        [".git/hooks/pre-commit"],
        [".git/hooks.stockade-held.2/"],
    )
    assert (tmp_path / ".git" / "hooks.stockade-held.2" / "pre-commit").is_file()
    assert (tmp_path / ".git" / "hooks.stockade-held").is_symlink()  # left alone
    assert list(elsewhere.iterdir()) == []


def test_a_submodule_git_directory_is_held_too(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], env=GIT_ENV, check=True)
    module = tmp_path / ".git" / "modules" / "a" / "b"
    subprocess.run(["git", "init", "-q", "--bare", str(module)], env=GIT_ENV, check=True)
    subprocess.run(
        ["git", "config", "--file", str(module / "config"), "core.fsmonitor", "touch /x"],
        env=GIT_ENV,
        check=True,
    )
    held, moved = new_repository.hold(str(tmp_path))
    assert held == [".git/modules/a/b/config: core.fsmonitor"]
    assert moved == [".git/modules/a/b/config.stockade-held"]
    assert "fsmonitor" not in (module / "config").read_text()


def test_the_judge_allows_what_runs_nothing():
    pairs = [
        ("core.repositoryformatversion", "0"),
        ("remote.origin.url", "/srv/r.git"),
        ("remote.evil.url", "ext::sh -c touch% /x"),
        ("remote.scp.url", "git@example.com:a/b.git"),
        ("remote.web.url", "https://example.com/a.git"),
        ("remote.helper.pushurl", "evil::whatever"),
        ("remote.scheme.url", "evil://host/x"),
        ("branch.main.merge", "refs/heads/main"),
        ("submodule.a.update", "rebase"),
        ("submodule.b.update", "!touch /x"),
        ("submodule.c.url", "ext::sh"),
        ("core.hooksPath", "/x"),
        ("alias.st", "!touch /x"),
        ("include.path", "/x"),
        ("filter.lfs.smudge", "touch /x"),
        ("commit.gpgsign", "true"),
        ("user.email", "a@b"),
    ]
    assert new_repository.offending_keys(pairs) == [
        "remote.evil.url",
        "remote.helper.pushurl",
        "remote.scheme.url",
        "submodule.b.update",
        "submodule.c.url",
        "core.hooksPath",
        "alias.st",
        "include.path",
        "filter.lfs.smudge",
        "commit.gpgsign",
    ]
    entries = [("pre-commit.sample", True), ("pre-commit", True), ("post-merge", False)]
    assert new_repository.offending_hooks(entries) == ["pre-commit", "post-merge"]
    assert os.path.isabs(new_repository.GIT_ENV["PATH"].split(":")[0])

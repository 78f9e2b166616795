"""The escape battery, a new repository in the workspace root (issue 37).

A root with no `.git` as a call starts is no longer blocked: `git init` there works.
What the person's own git, run later in that root unconfined, would run of the new
repository (a config key naming a program, a hook, a submodule's git directory, a
submodule update command, a pointer `.git`) is held when the call ends, and the
result says so. Each attack is judged on the host: the host's git runs after the call
and no marker appears outside the root (where nothing confined can write one). The
controls make the same repositories unconfined and the host's git runs every marker:
the attacks are real. An ordinary new repository (commit, remote, worktree,
submodule) is left as it is, with no notice.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from .support import WW, known_escape

HOST_GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "person",
    "GIT_AUTHOR_EMAIL": "person@example.invalid",
    "GIT_COMMITTER_NAME": "person",
    "GIT_COMMITTER_EMAIL": "person@example.invalid",
    # A local submodule is cloned over file://, which git refuses unless asked.
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "protocol.file.allow",
    "GIT_CONFIG_VALUE_0": "always",
}
# The command's own git: no global or system config of the host's, an identity.
PRELUDE = " ".join(f"{key}={shlex.quote(value)}" for key, value in HOST_GIT_ENV.items())
PRELUDE = f"export {PRELUDE}; set -e; "
HELD_LINE = "held what git would run"


@pytest.fixture
def project(terrain) -> Iterator[tuple[Path, Path]]:
    """A fresh workspace root with no repository, and a directory for markers outside
    every writable root."""
    root = terrain.base / "project"
    marks = terrain.base / "marks"
    root.mkdir()
    marks.mkdir()
    yield root, marks


def run_program(marks: Path, name: str) -> str:
    """A shell command git runs (a value git passes arguments after: they go to sh)."""
    return f"sh -c 'touch {marks}/{name}' x"


def hook(marks: Path, name: str) -> str:
    return f"printf '#!/bin/sh\\ntouch {marks}/{name}\\n'"


def submodule(marks: Path) -> str:
    """A submodule `s` of a repository made here (its source `src` beside it)."""
    return (
        "git init -q src && git -C src commit -q --allow-empty -m s && "
        "git submodule add -q ./src s && git commit -qm sub && "
    )


def attacks(marks: Path) -> dict[str, str]:
    """Each way a repository made in the root names a program the host's git runs
    later (after `git init -q && `), by name: what the command does."""
    fsmonitor = run_program(marks, "fsmonitor")
    return {
        "config": f"git config core.fsmonitor {shlex.quote(fsmonitor)}",
        "hook": (
            f"{hook(marks, 'pre-commit')} > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit"
        ),
        # The hold must not fail open on names it would move things to.
        "planted-held-names": (
            f"git config core.fsmonitor {shlex.quote(fsmonitor)} && "
            f"{hook(marks, 'pre-commit')} > .git/hooks/pre-commit && "
            "chmod +x .git/hooks/pre-commit && touch .git/hooks.stockade-held && "
            "mkdir .git/config.stockade-held && ln -s /nonexistent .git.stockade-held"
        ),
        # git status in the root runs git in each populated submodule, with its own
        # git directory's config.
        "submodule-gitdir": (
            f"{submodule(marks)}"
            f"git config -f .git/modules/s/config core.fsmonitor {shlex.quote(fsmonitor)} && "
            "echo dirty > s/dirty"
        ),
        # `!command` in .git/config is run by `git submodule update`.
        "submodule-update": (
            f"{submodule(marks)}"
            f"git config submodule.s.update {shlex.quote('!' + run_program(marks, 'update'))} "
            "&& git -C s commit -q --allow-empty -m moved"
        ),
        # A repository made in a subdirectory and recorded in the root's index (an
        # embedded repository): git status in the root runs git in it too.
        "embedded-repository": (
            "git init -q x && git -C x commit -q --allow-empty -m x && "
            f"git -C x config core.fsmonitor {shlex.quote(fsmonitor)} && "
            "git add x 2>/dev/null && git commit -qm embedded && echo dirty > x/dirty"
        ),
        # A submodule's git directory that is a link to one made elsewhere in the root.
        "submodule-gitdir-link": (
            f"{submodule(marks)}"
            "mv .git/modules/s elsewhere && ln -s ../../elsewhere .git/modules/s && "
            "git config -f elsewhere/config --unset core.worktree && "
            f"git config -f elsewhere/config core.fsmonitor {shlex.quote(fsmonitor)} && "
            "echo dirty > s/dirty"
        ),
    }


def host_git(root: Path) -> None:
    """What the person does later, unconfined: status, a commit, a submodule update."""
    for argv in (
        ["git", "status"],
        ["git", "commit", "-q", "--allow-empty", "-m", "person"],
        ["git", "submodule", "update"],
    ):
        subprocess.run(argv, cwd=root, env=HOST_GIT_ENV, capture_output=True, timeout=60)


def host_repository(root: Path, *config: tuple[str, str]) -> None:
    """A repository the person made in `root` before the call, with `config`."""
    subprocess.run(["git", "init", "-q"], cwd=root, env=HOST_GIT_ENV, check=True)
    for key, value in config:
        subprocess.run(["git", "config", key, value], cwd=root, env=HOST_GIT_ENV, check=True)


def host_status(where: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", "status", "--short"], cwd=where, env=HOST_GIT_ENV, capture_output=True
    )


def markers(marks: Path) -> list[str]:
    return sorted(path.name for path in marks.iterdir())


ATTACKS = list(attacks(Path("/m")))


@pytest.mark.parametrize("name", ATTACKS)
def test_control_each_attack_runs_in_the_hosts_git_unconfined(project, name):
    root, marks = project
    command = PRELUDE + "git init -q && " + attacks(marks)[name]
    subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True)
    host_git(root)
    assert markers(marks), f"{name}: the attack ran nothing in the host's git: not real"


@pytest.mark.parametrize("via", ["run", "job"])
@pytest.mark.parametrize("name", ATTACKS)
async def test_what_git_would_run_is_held_when_the_call_ends(sandbox, project, name, via):
    root, marks = project
    command = PRELUDE + "git init -q && " + attacks(marks)[name]
    with sandbox.battery.attempt(f"new repository in the root: {name} ({via})"):
        result = await sandbox.run(command, WW, root=root, via=via)
        assert result.exit_code == 0, result.stderr
        assert [path for path in root.iterdir() if path.name.startswith(".git")]
        assert result.held, result
        assert result.note is not None and HELD_LINE in result.note, result.note
        host_git(root)
        assert markers(marks) == [], f"the host's git ran {markers(marks)}"


def fsmonitor_set(root: Path) -> bool:
    config = root / ".git" / "config"
    return config.is_file() and "fsmonitor" in config.read_text()


def anything_held(root: Path) -> bool:
    return any(root.rglob("*stockade-held*"))


async def eventually(check, seconds: float = 20.0) -> bool:
    with trio.move_on_after(seconds):
        while not check():
            await trio.sleep(0.05)
        return True
    return False


async def test_a_call_cancelled_midway_is_held_all_the_same(sandbox, project):
    """No result comes back to carry the line (its caller went away, or the executor
    is closing), yet what the command made is held once its processes are killed."""
    root, marks = project
    command = PRELUDE + "git init -q && " + attacks(marks)["config"] + " && sleep 60"
    with sandbox.battery.attempt("new repository in the root: call cancelled"):
        spec = sandbox.spec(command, WW, root=root)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sandbox.executor.run, spec)
            assert await eventually(lambda: fsmonitor_set(root)), "the command made none"
            nursery.cancel_scope.cancel()
        assert await eventually(lambda: anything_held(root)), "nothing was held"
        host_git(root)
        assert markers(marks) == [], f"the host's git ran {markers(marks)}"


async def test_a_git_link_made_in_the_root_is_held_without_being_followed(sandbox, project):
    root, marks = project
    elsewhere = root.parent / "elsewhere"
    elsewhere.mkdir()
    with sandbox.battery.attempt("new repository in the root: .git a link"):
        result = await sandbox.run(
            PRELUDE + "git init -q --separate-git-dir inner . && rm .git && ln -s inner .git && "
            f"git config core.fsmonitor {shlex.quote(run_program(marks, 'fsmonitor'))}",
            WW,
            root=root,
        )
        assert result.exit_code == 0, result.stderr
        assert not os.path.lexists(root / ".git"), "the link is still the root's .git"
        assert (root / ".git.stockade-held").is_symlink()
        # Not followed: what it led to is as the command left it.
        assert "fsmonitor" in (root / "inner" / "config").read_text()
        host_git(root)
        assert markers(marks) == []


ORDINARY = (
    "git init -q -b main && echo one > a && git add a && git commit -qm one && "
    "git remote add origin https://example.invalid/r.git && "
    "git config branch.main.remote origin && git config branch.main.merge refs/heads/main && "
    "git config user.name agent && git config user.email agent@example.invalid && "
    "git worktree add -q wt && "
    "git init -q src && git -C src commit -q --allow-empty -m s && "
    'git submodule add -q "$PWD/src" s && git commit -qm sub'
)


async def test_an_ordinary_new_repository_is_left_as_it_is(sandbox, project):
    root, _ = project
    result = await sandbox.run(PRELUDE + ORDINARY, WW, root=root)
    assert result.exit_code == 0, result.stderr
    assert not result.held, result.held
    assert not result.note or HELD_LINE not in result.note, result.note
    assert not [path for path in root.rglob("*stockade-held*")]
    # And it works for the person: the root, its worktree and its submodule.
    for where in (root, root / "wt", root / "s"):
        done = host_status(where)
        assert done.returncode == 0, (where, done.stderr)


async def test_a_root_that_had_a_repository_is_not_held(sandbox, project):
    """The hold is for a repository the call made: an existing one is protected by the
    backend as before (and its config is the person's), never moved."""
    root, _ = project
    host_repository(root, ("alias.st", "status"))
    result = await sandbox.run(PRELUDE + "git status --short", WW, root=root)
    assert result.exit_code == 0, result.stderr
    assert not result.held
    assert "st = status" in (root / ".git" / "config").read_text()
    assert not [path for path in root.rglob("*stockade-held*")]


async def test_an_embedded_repository_added_to_an_existing_repository(sandbox, project, request):
    """The root's repository existed as the call started (its config and hooks kept
    read-only by the backend), but its index is written by every `git add`: a
    repository the command makes in a subdirectory and adds as a gitlink is one the
    person's `git status` in the root runs git in, with that repository's config.
    The standing limit (trust.NEW_REPOSITORY_GAP: a repository made in a subdirectory
    during a call, and git in the root when its index records it) says so; nothing
    holds it (that would walk the tree or read the index after every call)."""
    known_escape(
        request,
        True,
        "a repository made in a subdirectory and recorded in an existing root "
        "repository's index runs its config in the person's git status in the root "
        "(the standing new-repository limit)",
    )
    root, marks = project
    host_repository(root)
    command = PRELUDE + attacks(marks)["embedded-repository"]
    with sandbox.battery.attempt("existing repository in the root: embedded repository"):
        result = await sandbox.run(command, WW, root=root)
        assert result.exit_code == 0, result.stderr
        host_git(root)
        assert markers(marks) == [], f"the host's git ran {markers(marks)}"

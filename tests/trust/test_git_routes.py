"""Git metadata wherever git looks for it: each route plants a `core.fsmonitor` through
a real workspace-write call, then the person runs `git status` UNCONFINED on the host;
the fsmonitor would touch a file outside every root. Under bwrap that file never
appears; unconfined (the control) it does, so each route is real; the Landlock
launcher's namespaced tier holds every route as bwrap does; its plain tier cannot
keep any of it read-only and says so (`partial`, the path named).

Routes: a `.git/commondir` (git then reads config and hooks where it points); the
commondir of the gitdir a `.git` file names; `.git/config.worktree` (read with
extensions.worktreeConfig); a submodule's gitdir under `.git/modules`; a nested
repository two directories down; and a `.git` made where there was none (a directory,
or a file naming a planted gitdir). Plus ordinary git use, which must keep working.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.trust import NEW_REPOSITORY_GAP

from ..support import require_backend
from ._support import DENIED_WW, Area, cli, composition, describe_change, snapshot

IDENTITY = ("-c", "user.email=t@example.invalid", "-c", "user.name=t")
# bwrap's refusals: a write under a read-only bind, a rename of a mount point.
BWRAP_DENIALS = ("Read-only file system", "Device or resource busy")


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *IDENTITY, *args], cwd=cwd, check=True, capture_output=True, text=True
    )
    return done.stdout


def host_git(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as the person runs it later: unconfined, no global or system config."""
    environ = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(
        ["git", *args], cwd=where, env=environ, capture_output=True, text=True, check=False
    )


def committed(root: Path) -> None:
    """`root` as a repository with one commit (git status then asks the fsmonitor)."""
    root.mkdir(parents=True, exist_ok=True)
    git("init", "-q", ".", cwd=root)
    (root / "file.txt").write_text("one\n")
    git("add", "file.txt", cwd=root)
    git("commit", "-q", "-m", "one", cwd=root)


def fsmonitor(target: Path) -> str:
    return f"[core]\n\tfsmonitor = touch {shlex.quote(str(target))}\n"


def append(path: str, text: str) -> str:
    """A shell command appending `text` to `path`."""
    return f"printf %s {shlex.quote(text)} >> {shlex.quote(path)}"


# --- the routes ---------------------------------------------------------------------------


def setup_repo(_area: Area, root: Path) -> None:
    committed(root)


def setup_separate_gitdir(_area: Area, root: Path) -> None:
    """`.git` is a FILE naming `gd` (a worktree's or a submodule's layout)."""
    root.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "--separate-git-dir", str(root / "gd"), ".", cwd=root)
    (root / "file.txt").write_text("one\n")
    git("add", "file.txt", cwd=root)
    git("commit", "-q", "-m", "one", cwd=root)
    assert (root / ".git").is_file()


def setup_worktree_config(area: Area, root: Path) -> None:
    """As after `git sparse-checkout init`: extensions.worktreeConfig is on."""
    committed(root)
    git("config", "extensions.worktreeConfig", "true", cwd=root)


def setup_submodule(area: Area, root: Path) -> None:
    """A submodule at vendor/lib: its gitdir is .git/modules/vendor/lib."""
    upstream = area.tools / "upstream"
    committed(upstream)
    committed(root)
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream),
        "vendor/lib", cwd=root)  # fmt: skip
    git("commit", "-q", "-m", "submodule", cwd=root)
    assert (root / "vendor" / "lib" / ".git").is_file()
    assert (root / ".git" / "modules" / "vendor" / "lib" / "config").is_file()


def setup_nested(_area: Area, root: Path) -> None:
    """A repository of its own two directories down (not a submodule)."""
    committed(root)
    committed(root / "vendor" / "lib")


def setup_plain(_area: Area, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "file.txt").write_text("one\n")


COMMIT = "git add -A && git -c user.email=e@x -c user.name=e commit -qm evil"


@dataclass(frozen=True)
class Route:
    id: str
    setup: Callable[[Area, Path], None]
    # The bash command planting `core.fsmonitor = touch TARGET`, run at the root.
    plant: Callable[[Path], str]
    # Where the person later runs `git status` (relative to the root).
    where: str
    # What the Landlock claim names (relative to the root).
    named: str
    # git's own wording of a refused rename ("unable to move .git to evil: Device or
    # resource busy") names no path the classifier can judge: not reported as a denial.
    reported: bool = True
    # A repository made in a root that had none: not refused (`git init` must work
    # there) but held when the call ends (trust/new_repository.py).
    held: bool = False


ROUTES = [
    Route(
        "commondir",
        setup_repo,
        lambda t: (
            f"cp -r .git evil && {append('evil/config', fsmonitor(t))}; "
            "rm -f evil/commondir; echo ../evil > .git/commondir"
        ),
        ".",
        ".git/commondir",
    ),
    Route(
        "gitdir-commondir",
        setup_separate_gitdir,
        lambda t: (
            f"cp -r gd evil && {append('evil/config', fsmonitor(t))}; "
            "rm -f evil/commondir; echo ../evil > gd/commondir"
        ),
        ".",
        "gd/commondir",
    ),
    Route(
        "config-worktree",
        setup_worktree_config,
        lambda t: append(".git/config.worktree", fsmonitor(t)),
        ".",
        ".git/config.worktree",
    ),
    Route(
        "submodule-gitdir",
        setup_submodule,
        lambda t: append(".git/modules/vendor/lib/config", fsmonitor(t)),
        "vendor/lib",
        ".git/modules/vendor/lib/config",
    ),
    Route(
        "nested-repository",
        setup_nested,
        lambda t: append("vendor/lib/.git/config", fsmonitor(t)),
        "vendor/lib",
        "vendor/lib/.git/config",
    ),
    Route(
        "missing-git-dir",
        setup_plain,
        lambda t: (
            f"git init -q . && {COMMIT} && git config core.fsmonitor {shlex.quote(f'touch {t}')}"
        ),
        ".",
        ".git",
        held=True,
    ),
    Route(
        "missing-git-file",
        setup_plain,
        lambda t: (
            f"git init -q --separate-git-dir evil . && {COMMIT} && "
            f"git config core.fsmonitor {shlex.quote(f'touch {t}')}"
        ),
        ".",
        ".git",
        reported=False,
        held=True,
    ),
]
by_route = pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.id)


def assert_not_run(area: Area, route: Route, how: str) -> None:
    target = area.target()
    assert not target.exists(), f"{route.id}: the fsmonitor ran {how}"
    host_git(area.root / route.where, "status")
    assert not target.exists(), f"{route.id}: an unconfined git status ran the planted fsmonitor"


@by_route
@pytest.mark.parametrize("entry", ["executor", "stockade-run"])
@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
async def test_each_git_route_stays_closed_where_the_runner_binds(
    area: Area, state_dir, route: Route, entry, backend_name
):
    """bwrap, and the Landlock launcher's namespaced tier, as bwrap: the planted
    fsmonitor never runs, neither during the call nor in the person's git later."""
    require_backend(backend_name)
    route.setup(area, area.root)
    before = snapshot(area.root)
    command = route.plant(area.target())
    if route.held:
        await held_after_the_call(area, state_dir, route, entry, backend_name, command)
        return
    if entry == "executor":
        async with open_harness(composition(state_dir, backend=backend_name)) as harness:
            session = await harness.open_session(cwd=area.root)
            result = await session.run_tool("bash", {"command": command})
        assert result.facts.get("exit_code") not in (0, None), result.text
        assert any(text in result.text for text in BWRAP_DENIALS), result.text
        if route.reported:
            assert result.facts["denied"] is True, result.text
            assert DENIED_WW in result.text, result.text
        assert result.facts["enforcement"] == "full", result.facts
        assert NEW_REPOSITORY_GAP not in result.facts["gaps"], result.facts["gaps"]
    else:
        done = cli(
            "run", "--mode", "workspace-write", "--backend", backend_name, command, cwd=area.root
        )
        assert done.returncode != 0, done.stderr
        assert any(text in done.stderr for text in BWRAP_DENIALS), done.stderr
    assert_not_run(area, route, "during the call")
    # Whatever the command made beside the metadata (a copied gitdir) is its own; what
    # git reads in the repositories that were there is unchanged, and no placeholder
    # was left behind.
    after = snapshot(area.root)
    changed = {key for key in set(before) | set(after) if before.get(key) != after.get(key)}
    assert all(key == "evil" or key.startswith("evil/") for key in changed), describe_change(
        before, after
    )


async def held_after_the_call(
    area: Area, state_dir, route: Route, entry: str, backend_name: str, command: str
) -> None:
    """A new repository in the root: made, and what git would run of it held when the
    call ends, so the person's git later runs none of it."""
    held_line = "held what git would run"
    if entry == "executor":
        async with open_harness(composition(state_dir, backend=backend_name)) as harness:
            session = await harness.open_session(cwd=area.root)
            result = await session.run_tool("bash", {"command": command})
        assert result.facts.get("exit_code") == 0, result.text
        assert result.facts["held"] and held_line in result.text, result.text
    else:
        done = cli(
            "run", "--mode", "workspace-write", "--backend", backend_name, command, cwd=area.root
        )
        assert done.returncode == 0, done.stderr
        assert held_line in done.stderr, done.stderr
    assert_not_run(area, route, "after the call")
    assert list(area.root.glob(".git*stockade-held")) or list(area.root.glob(".git/*stockade-held"))


@by_route
def test_control_each_git_route_is_real_unconfined(area: Area, route: Route):
    route.setup(area, area.root)
    subprocess.run(["bash", "-c", route.plant(area.target())], cwd=area.root, check=True)
    status = host_git(area.root / route.where, "status")
    assert area.target().exists(), f"{route.id} is not a real route: {status.stderr}"


@by_route
async def test_the_plain_tier_claims_partial_naming_each_git_route(
    area: Area, state_dir, route: Route
):
    require_backend("landlock")
    route.setup(area, area.root)
    config = {"backend": "landlock", "landlock_tier": "plain"}
    async with open_harness(composition(state_dir, **config)) as harness:
        session = await harness.open_session(cwd=area.root)
        result = await session.run_tool("bash", {"command": "true"})
    assert result.facts["backend"] == "landlock" and result.facts["enforcement"] == "partial"
    assert result.facts["tier"] == "plain"
    (named,) = [g for g in result.facts["gaps"] if g.startswith("protected paths not enforced: ")]
    names = named.removeprefix("protected paths not enforced: ").split(", ")
    assert route.named in names, names


# --- ordinary git use ---------------------------------------------------------------------

ORDINARY = """
set -e
echo two >> file.txt
git add file.txt
git commit -q -m two
git checkout -q -b feature
echo three >> file.txt
git stash -q
git stash list | grep -q 'stash@{0}'
git stash pop -q
git commit -q -am three
git checkout -q -
git merge -q --no-edit feature
git -C vendor/lib checkout -q -b topic
echo sub >> vendor/lib/file.txt
git -C vendor/lib commit -q -am sub
git -C nested commit -q --allow-empty -m nested
git worktree add -q .worktrees/side -b side
git -C .worktrees/side commit -q --allow-empty -m side
git status --short
git log --oneline | head -3
"""


def setup_ordinary(area: Area, root: Path) -> None:
    """A repository with a submodule and a nested repository, as in everyday work."""
    setup_submodule(area, root)
    committed(root / "nested")
    (root / ".gitignore").write_text("nested/\n.worktrees/\n")
    git("add", ".gitignore", cwd=root)
    git("commit", "-q", "-m", "ignore", cwd=root)


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
async def test_ordinary_git_use_keeps_working(area: Area, state_dir, backend_name: str):
    require_backend(backend_name)
    root = area.root
    setup_ordinary(area, root)
    config = {"backend": backend_name}
    environ = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@x"}  # fmt: skip
    command = "".join(f"export {key}={value}\n" for key, value in environ.items()) + ORDINARY
    async with open_harness(composition(state_dir, **config)) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": command})
    assert result.facts.get("exit_code") == 0 and not result.facts["denied"], result.text
    # The host agrees: the commits, the branch, the merge, the worktree.
    log = git("log", "--format=%s", cwd=root).split()
    assert log[:3] == ["three", "two", "ignore"], log
    assert "feature" in git("branch", "--list", "feature", cwd=root)
    assert git("log", "-1", "--format=%s", "topic", cwd=root / "vendor" / "lib").strip() == "sub"
    assert git("log", "-1", "--format=%s", cwd=root / "nested").strip() == "nested"
    assert git("log", "-1", "--format=%s", "side", cwd=root).strip() == "side"
    assert host_git(root, "status").returncode == 0
    # Nothing of the sandbox is left in the repositories.
    for leftover in (".git/commondir", ".git/config.worktree", "nested/.git/commondir"):
        assert not (root / leftover).exists(), leftover

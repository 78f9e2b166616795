"""Protected paths through bash: git hooks and config, stockade.yml, a worktree's gitdir
and configured extras stay read-only inside the writable root under bwrap (existing
or not, and `.git` cannot be renamed away); the Landlock launcher cannot keep them
read-only and says so (`partial`, a gap naming them). Judged by host state: every
entry of the workspace, before and after, with no placeholder left behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio

from stockade import open_harness
from stockade.sandbox import placeholders
from stockade.sandbox._profiles import UNFOUND_SOCKETS_GAP
from stockade.sandbox.actor import open_provider
from stockade.sandbox.backends import bwrap as bwrap_backend
from stockade.sandbox.backends.landlock import LANDLOCK_SHARED_IPC_GAP
from stockade.trust import NEW_REPOSITORY_GAP
from stockade.trust.secrets import DEFAULT_DENY_READ
from stockade.vocab import SandboxMode, SandboxPolicy

from ..support import require_backend
from ._support import (
    DENIED_WW,
    IS_ROOT,
    NOBODY,
    PROTECTED_GAP,
    Area,
    composition,
    describe_change,
    snapshot,
)

pytestmark = pytest.mark.nobody
HOOK = "#!/bin/sh\nexit 0\n"
EVIL_CONFIG = r"printf '[core]\n\tfsmonitor = touch /tmp/pwned\n\thooksPath = /tmp\n'"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def repo(root: Path) -> None:
    git("init", "-q", ".", cwd=root)
    assert (root / ".git" / "hooks").is_dir() and (root / ".git" / "config").is_file()


def repo_with_hook(root: Path) -> None:
    repo(root)
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text(HOOK)
    hook.chmod(0o755)


def repo_without_hooks(root: Path) -> None:
    repo(root)
    shutil.rmtree(root / ".git" / "hooks")


def no_git(root: Path) -> None:
    (root / "src.txt").write_text("content\n")


def with_secrets(root: Path) -> None:
    repo(root)
    (root / "secrets").write_text("token\n")


def with_stockade_yml(root: Path) -> None:
    (root / "stockade.yml").write_text("- id: bash\n  name: stockade.bash.local\n")


def separate_gitdir(root: Path) -> None:
    """`.git` is a FILE naming a gitdir inside the root (`git init --separate-git-dir`)."""
    git("init", "-q", "--separate-git-dir", str(root / "gd"), ".", cwd=root)
    assert (root / ".git").is_file() and (root / "gd" / "hooks").is_dir()


def worktree_gitdir(root: Path) -> None:
    """A linked worktree's layout: `.git` names `.gitdirs/wt`, whose `commondir` names
    a bare repository `common`, all inside the root (nothing of it exists outside)."""
    git("init", "-q", "--bare", "common", cwd=root)
    gitdir = root / ".gitdirs" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    (gitdir / "commondir").write_text("../../common\n")
    (root / ".git").write_text("gitdir: .gitdirs/wt\n")


@dataclass(frozen=True)
class Case:
    id: str
    setup: Callable[[Path], None]
    command: str
    extra: tuple[str, ...] = ()
    # What the Landlock claim must name besides the defaults (relative to the root).
    also_named: tuple[str, ...] = ()
    stderr: tuple[str, ...] = field(default=())


CASES = [
    Case("hook-create", repo, "echo evil > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit"),
    Case("hook-change", repo_with_hook, "echo evil >> .git/hooks/pre-commit"),
    Case(
        "hook-replace",
        repo_with_hook,
        "rm -f .git/hooks/pre-commit; echo evil > .git/hooks/pre-commit",
    ),
    Case("hooks-dir-removed", repo_with_hook, "rm -rf .git/hooks; mkdir .git/hooks"),
    Case("config-append", repo, f"{EVIL_CONFIG} >> .git/config"),
    Case(
        "config-replace",
        repo,
        f"{EVIL_CONFIG} > .git/new && mv .git/new .git/config; rm -f .git/new",
    ),
    Case(
        "git-config", repo, "git config core.hooksPath /tmp && git config core.fsmonitor 'touch /x'"
    ),
    Case(
        "missing-hooks-dir",
        repo_without_hooks,
        "mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit",
    ),
    Case(
        "git-moved-away",
        repo,
        "mv .git .git-away; mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit",
        stderr=("Device or resource busy",),
    ),
    # A root with no repository may get one (`git init`, go's VCS stamping): what git
    # would run of it is held when the call ends instead of refused (issue 37):
    # tests/harness/test_new_repository.py and tests/trust/test_git_routes.py
    # ("missing-git-dir", "missing-git-file") judge that on the host.
    Case("stockade-yml-create", no_git, "echo '- id: bash' > stockade.yml"),
    Case("stockade-yml-change", with_stockade_yml, "echo '- id: evil' >> stockade.yml"),
    Case(
        # What another agent or editor runs when the workspace is opened (an audit
        # wrote an unconfined MCP server into each of these).
        "agent-settings",
        no_git,
        "for d in .cursor .gemini .zed .roo .kiro/settings .amazonq .continue/mcpServers "
        '.windsurf .opencode .devcontainer; do mkdir -p $d && echo \'{"mcpServers": '
        '{"x": {"command": "/bin/sh"}}}\' > $d/mcp.json; done; '
        "echo '{\"mcp\": {}}' > opencode.json; "
        'echo \'{"initializeCommand": "touch /tmp/pwned"}\' > .devcontainer.json',
    ),
    Case(
        "extra-path",
        with_secrets,
        "echo evil > secrets",
        extra=("secrets",),
        also_named=("secrets",),
    ),
    Case(
        "extra-path-missing",
        repo,
        "mkdir -p private && echo evil > private/x",
        # A trailing "/" says the missing path is a directory: it is blocked by an
        # empty read-only directory (a file blocker would answer mkdir with EEXIST).
        extra=("private/",),
        also_named=("private",),
    ),
    Case(
        "worktree-gitdir",
        separate_gitdir,
        "echo evil > gd/hooks/pre-commit; echo evil >> gd/config",
        also_named=(".git", "gd/commondir", "gd/config", "gd/config.worktree", "gd/hooks"),
    ),
    Case(
        "worktree-commondir",
        worktree_gitdir,
        "mkdir -p .gitdirs/wt/hooks && echo evil > .gitdirs/wt/hooks/pre-commit; "
        "echo evil >> .gitdirs/wt/config; echo evil > common/hooks/pre-commit; "
        "echo evil >> common/config",
        also_named=(
            ".git",
            ".gitdirs/wt/commondir",
            ".gitdirs/wt/config",
            ".gitdirs/wt/config.worktree",
            ".gitdirs/wt/hooks",
            "common/commondir",
            "common/config",
            "common/config.worktree",
            "common/hooks",
        ),
    ),
]
by_case = pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)


def ordinary_writes(root: Path) -> str:
    """Writes that stay allowed beside the protected paths."""
    command = "echo ok > ordinary.txt && mkdir -p notes && echo ok > notes/n.txt"
    dotgit = root / ".git"
    # A repository (not the empty placeholder a running harness keeps a moment).
    if dotgit.is_dir() and any(dotgit.iterdir()):
        command += " && echo ok > .git/objects/ordinary"
    return command


def undo_ordinary_writes(root: Path) -> None:
    for path in (root / "ordinary.txt", root / ".git" / "objects" / "ordinary"):
        if path.parent.is_dir():  # `.git` may be a file (a worktree)
            assert not path.exists() or path.read_text() == "ok\n"
            path.unlink(missing_ok=True)
    shutil.rmtree(root / "notes", ignore_errors=True)


@by_case
@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
async def test_protected_paths_stay_read_only_where_the_runner_binds_them(
    area: Area, state_dir, case: Case, backend_name: str
):
    """bwrap and the Landlock launcher's namespaced tier bind each protected path
    read-only in the call's mount namespace (existing or not)."""
    require_backend(backend_name)
    root = area.root
    case.setup(root)
    before = snapshot(root)
    config = {"backend": backend_name, "protected_paths": list(case.extra)}
    async with open_harness(composition(state_dir, **config)) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": case.command})
        during = snapshot(root, placeholders=False)
        ordinary = await session.run_tool("bash", {"command": ordinary_writes(root)})
    # The host first: nothing protected changed, and no placeholder was left behind.
    assert during == before, f"{case.id} changed the host:\n{describe_change(before, during)}"
    assert not ordinary.is_error, (
        f"ordinary writes beside the protected paths failed: {ordinary.text}"
    )
    assert ordinary.facts.get("exit_code") == 0 and not ordinary.facts["denied"], ordinary.text
    assert (root / "ordinary.txt").read_text() == "ok\n"
    assert (root / "notes" / "n.txt").read_text() == "ok\n"
    undo_ordinary_writes(root)
    after = snapshot(root)
    assert after == before, (
        f"left behind after the harness closed:\n{describe_change(before, after)}"
    )
    for text in case.stderr:
        assert text in result.text, result.text
    # Then the report: a write to a protected path is a denial like any other (the
    # command ran: not SANDBOX_UNAVAILABLE).
    assert not result.is_error, result.text
    # Every protected path held (a repository made during the call is a standing
    # limit `probe` states); network off (the session's default) names only the named
    # sockets it could not find.
    assert result.facts["backend"] == backend_name, result.facts
    assert result.facts["enforcement"] == "full", result.facts
    assert result.facts["gaps"] == (), result.facts
    assert NEW_REPOSITORY_GAP not in result.facts["gaps"]
    assert result.facts["network_gaps"] == (UNFOUND_SOCKETS_GAP,), result.facts
    assert result.facts["denied"] is True, f"not reported as a denial:\n{result.text}"
    assert DENIED_WW in result.text, result.text


@by_case
async def test_the_plain_tier_claims_partial_naming_the_protected_paths(
    area: Area, state_dir, case: Case
):
    """Without a mount namespace (the Landlock launcher's plain tier) nothing can be
    kept read-only inside a writable grant: each protected path is named."""
    require_backend("landlock")
    root = area.root
    case.setup(root)
    repository = (root / ".git").is_dir()
    config = {
        "backend": "landlock",
        "landlock_tier": "plain",
        "protected_paths": list(case.extra),
    }
    async with open_harness(composition(state_dir, **config)) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": case.command})
        await session.set_sandbox_mode("read-only")
        read_only = await session.run_tool("bash", {"command": "true"})
    assert result.facts["backend"] == "landlock", result.facts
    assert result.facts["enforcement"] == "partial", result.facts
    (gap,) = [g for g in result.facts["gaps"] if g.startswith("protected paths not enforced: ")]
    names = gap.removeprefix("protected paths not enforced: ").split(", ")
    assert names == sorted(names), names
    expected = {"stockade.yml", ".vscode", ".mcp.json", *case.also_named}
    # A root without a repository has its whole `.git` named; one with, each file.
    if repository:
        expected |= {".git/commondir", ".git/config", ".git/config.worktree", ".git/hooks"}
    else:
        expected.add(".git")
    assert expected <= set(names), (expected - set(names), names)
    if repository and not case.also_named:
        assert gap == PROTECTED_GAP
    assert result.facts["tier"] == "plain"
    # Read-only writes nothing: what it leaves open is the plain tier's own (host IPC).
    assert read_only.facts["gaps"] == (LANDLOCK_SHARED_IPC_GAP,), read_only.facts


async def test_a_symlinked_git_is_protected_or_disclosed(area: Area, state_dir):
    """`.git -> realgit` inside the root: bwrap binds the hooks where the link leads,
    but the link itself can be re-pointed at a planted gitdir. Either the host's
    `.git/hooks/pre-commit` never becomes the planted one, or the claim says partial."""
    require_backend("bwrap")
    root = area.root
    repo(root)
    (root / ".git").rename(root / "realgit")
    (root / ".git").symlink_to("realgit")
    command = (
        "rm .git; mkdir -p evil/hooks && echo evil > evil/hooks/pre-commit && "
        "cp realgit/config evil/ && ln -s evil .git"
    )
    async with open_harness(composition(state_dir, backend="bwrap")) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": command})
    hook = root / ".git" / "hooks" / "pre-commit"
    planted = hook.exists() and hook.read_text() == "evil\n"
    if planted:
        assert result.facts["enforcement"] == "partial", result.facts
        assert any(".git" in gap and "re-pointed" in gap for gap in result.facts["gaps"]), (
            result.facts["gaps"]
        )


async def test_a_git_file_cannot_be_repointed_or_is_disclosed(area: Area, state_dir):
    """`.git` is a FILE naming a gitdir inside the root: rewriting it to name a planted
    gitdir would hand git planted hooks. Either the host's `.git` stays as it was, or
    the claim says partial and names it. (Needs ordinary calls to run at all there.)"""
    require_backend("bwrap")
    root = area.root
    separate_gitdir(root)
    before = (root / ".git").read_text()
    command = (
        "cp -r gd evil && echo evil > evil/hooks/pre-commit && chmod +x evil/hooks/pre-commit; "
        "echo 'gitdir: evil' > .git"
    )
    async with open_harness(composition(state_dir, backend="bwrap")) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": command})
    assert not result.is_error, result.text
    if (root / ".git").read_text() != before:
        assert result.facts["enforcement"] == "partial", result.facts
        assert any(".git" in gap for gap in result.facts["gaps"]), result.facts["gaps"]


# --- as an unprivileged caller (bwrap through an unprivileged user namespace) --------

NOBODY_CASES = [
    case for case in CASES if case.id in ("hook-create", "config-append", "missing-hooks-dir")
]


def chown_tree(top: Path) -> None:
    for path in [top, *top.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


def as_nobody(argv, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=30,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd=str(cwd),
        check=False,
    )


@pytest.mark.skipif(not IS_ROOT, reason="spawning as uid 65534 needs a root caller")
@pytest.mark.parametrize("case", NOBODY_CASES, ids=lambda case: case.id)
async def test_protected_paths_hold_for_an_unprivileged_caller(
    area: Area, case: Case, monkeypatch: pytest.MonkeyPatch
):
    """The workspace belongs to nobody, who could write its .git freely (the control
    below); the confined argv, spawned as nobody, still cannot."""
    config = require_backend("bwrap")
    # The argv as nobody's own stockade builds it: bwrap binds the protections.
    monkeypatch.setattr(bwrap_backend, "launcher_may_mount", lambda: False)
    root = area.root
    case.setup(root)
    chown_tree(root)
    before = snapshot(root)
    async with open_provider(config) as provider:
        wrapped = await provider.confine(
            ("bash", "-c", case.command), SandboxPolicy(SandboxMode.WORKSPACE_WRITE, str(root))
        )
    # As the executor does: make and hold the placeholders, remove them after.
    held = placeholders.hold_all(
        [(path, path in wrapped.directory_blockers) for path in wrapped.blockers]
    )
    try:
        done = await trio.to_thread.run_sync(as_nobody, wrapped.argv, root)
    finally:
        for fd in held:
            os.close(fd)
        for blocker in wrapped.blockers:
            placeholders.sweep(blocker)
    after = snapshot(root)
    assert after == before, f"{case.id} as nobody:\n{describe_change(before, after)}\n{done.stderr}"
    assert "Read-only file system" in done.stderr, done.stderr
    # Control: unconfined, nobody really changes what the sandbox kept.
    control = area.base / "control"
    control.mkdir()
    case.setup(control)
    chown_tree(control)
    control_before = snapshot(control)
    ran = as_nobody(("bash", "-c", case.command), control)
    assert snapshot(control) != control_before, f"not a real attack: {ran.stderr}"


async def test_protections_hold_through_the_runners_own_processes(area: Area, state_dir):
    """The protected paths are bound in bwrap's own mount namespace (by the filter stage
    for a root caller, by bwrap for any other): bwrap's init (`/proc/1/root`), in sight
    of the command when nothing is covered (no deny_read path, no socket hidden: no
    Landlock seal), leads to them read-only as well. The control writes through the
    same paths unconfined."""
    require_backend("bwrap")
    root = area.root
    repo(root)
    before = snapshot(root)
    config = {"backend": "bwrap", "deny_read": [f"!{item}" for item in DEFAULT_DENY_READ]}
    through_init = f"/proc/1/root{root}"
    command = (
        f"ls {through_init}/.git/config >/dev/null && echo reachable; "
        f"echo '[core] fsmonitor = touch /pwned' >> {through_init}/.git/config; "
        f"echo pwned > {through_init}/.git/hooks/pre-commit; "
        f"echo pwned > {through_init}/.vscode"
    )
    async with open_harness(composition(state_dir, **config)) as harness:
        session = await harness.open_session(cwd=root)
        await session.set_network("on")
        result = await session.run_tool("bash", {"command": command})
    assert "reachable" in result.text, f"bwrap's init is out of sight: {result.text}"
    assert snapshot(root) == before, describe_change(before, snapshot(root))
    assert result.facts["denied"] is True, result.text
    # The control: the same writes, unconfined, through this process's own root.
    control = area.base / "control"
    control.mkdir()
    repo(control)
    await trio.run_process(
        ["sh", "-c", command.replace(through_init, str(control))], check=False, capture_stdout=True
    )
    assert "fsmonitor" in (control / ".git" / "config").read_text()
    assert (control / ".git" / "hooks" / "pre-commit").read_text() == "pwned\n"

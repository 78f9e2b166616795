"""git's everyday work in workspace-write, as the model runs it (issue 37): init, add,
commit, branch, stash, rebase, worktree, a submodule from a local bare remote (read
by its file path, outside the root), a push to a bare remote in the root. Both
backends, root and nobody: exit 0, no denial, no escalation, the home untouched."""

from __future__ import annotations

import subprocess

import pytest

from .support import Place, Workflows

pytestmark = pytest.mark.nobody  # runs the harness as uid 65534 (tests/README.md)

WORKFLOW = """
set -euo pipefail
git init -q -b main app && cd app
echo one > a.txt && git add a.txt && git commit -qm one
git checkout -qb feature
echo two >> a.txt && git commit -qam two
git checkout -q main
echo b > b.txt && git add b.txt && git commit -qm b
echo wip >> b.txt && git stash -q && git stash list | grep -q 'WIP on main'
git checkout -q feature && git rebase -q main
test "$(git log --format=%s | tr '\\n' ' ')" = "two b one "
git checkout -q main && git stash pop -q && grep -q wip b.txt
git worktree add -q -b hotfix ../app-hotfix
(cd ../app-hotfix && echo fix > fix.txt && git add fix.txt && git commit -qm fix)
git worktree list | grep -q app-hotfix
git -c protocol.file.allow=always submodule add -q "$REMOTE" lib
grep -q shared lib/lib.txt
git commit -qam 'lib as a submodule'
git init -q --bare ../origin.git && git remote add origin ../origin.git
git push -q origin main feature hotfix
test "$(git --git-dir=../origin.git rev-parse main)" = "$(git rev-parse main)"
git submodule status | grep -q ' lib '
echo WORKFLOW-OK
"""


def bare_remote(place: Place) -> str:
    """A bare repository beside the home with one commit: the submodule's remote."""
    remote = place.fixtures / "lib.git"
    work = place.fixtures / "lib-work"
    env = {"HOME": str(place.home), "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str, cwd=None) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    git("init", "-q", "--bare", "-b", "main", str(remote))
    git("init", "-q", "-b", "main", str(work))
    (work / "lib.txt").write_text("shared\n")
    git("add", "lib.txt", cwd=work)
    git("commit", "-qm", "lib", cwd=work)
    git("push", "-q", str(remote), "main", cwd=work)
    return str(remote)


def test_git_init_commit_branch_stash_rebase_worktree_submodule_push(wf: Workflows, place):
    wf.need("git")
    remote = bare_remote(place)
    place.hand_over()
    outcome = wf.run(place, [f"export REMOTE={remote}\n{WORKFLOW}"])
    outcome.assert_clean()
    assert "WORKFLOW-OK" in outcome.text(), outcome.text()
    assert (place.root / "app" / ".git" / "modules" / "lib").is_dir()
    assert (place.root / "app").stat().st_uid == place.uid  # ran as root, or as nobody
    assert (place.root / "app-hotfix" / "fix.txt").is_file()
    place.assert_home_untouched()


def test_git_init_in_the_root_itself(wf: Workflows, place):
    """A new project: the session's root becomes the repository."""
    wf.need("git")
    place.hand_over()
    outcome = wf.run(
        place,
        ["git init -q && echo one > a.txt && git add a.txt && git commit -qm one && git log"],
    )
    outcome.assert_clean()
    assert (place.root / ".git" / "HEAD").is_file()
    place.assert_home_untouched()

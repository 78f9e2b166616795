"""`stockade exec --backend bwrap` leaves no placeholder behind (issue 21, door 9): the
empty `.vscode/` and read-only `stockade.yml` it mounts over while the command runs are
removed when bwrap is done, unless another process still holds them; a marked empty
leftover of an earlier version is removed the same way; what is the user's own (not
marked, or not empty) stays. Judged by what is on disk afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support import require_backend
from ..trust._support import STOCKADE

pytestmark = pytest.mark.kernel


@pytest.fixture
def root() -> Iterator[Path]:
    require_backend("bwrap")
    path = Path(tempfile.mkdtemp(prefix="stockade-exec-ph-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path)


def exec_argv(root: Path, *command: str) -> list[str]:
    return [
        *STOCKADE, "exec", "--backend", "bwrap", "--mode", "workspace-write",
        "--root", str(root), "--", *command,
    ]  # fmt: skip


def run_exec(root: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        exec_argv(root, *command), capture_output=True, text=True, timeout=30, cwd=root
    )


def leftover(path: Path, directory: bool) -> None:
    """What an earlier stockade exec left: empty, marked with mtime 0."""
    if directory:
        path.mkdir()
    else:
        path.touch(mode=0o444)
    os.utime(path, (0, 0))


def test_no_placeholder_is_left_in_the_root(root):
    # While the command runs, the protected paths are blocked (bwrap mounts over them).
    # (The root's own `.git` is no placeholder: a new repository is held instead.)
    script = (
        "test -d .vscode && test -f stockade.yml && ! touch stockade.yml 2>/dev/null "
        "&& test ! -e .git"
    )
    done = run_exec(root, "bash", "-c", script)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(root)) == []


def test_a_placeholder_inside_the_users_git_is_removed_and_git_kept(root):
    (root / ".git").mkdir()  # a repository without hooks: .git/hooks is a placeholder
    done = run_exec(root, "true")
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(root)) == [".git"]
    assert sorted(os.listdir(root / ".git")) == []


def test_an_old_marked_leftover_is_removed(root):
    leftover(root / ".vscode", directory=True)
    leftover(root / "stockade.yml", directory=False)
    done = run_exec(root, "true")
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(root)) == []


@pytest.mark.parametrize("marked", [False, True], ids=["empty-unmarked", "marked-not-empty"])
def test_what_is_not_provably_ours_stays(root, marked):
    """An empty `.git` of the user's (not marked), or a marked one that is not empty:
    neither is a placeholder of ours, so neither is removed (what exec made inside it,
    the `.git/hooks` placeholder, is)."""
    git = root / ".git"
    git.mkdir()
    if marked:
        (git / "keep").write_text("mine\n")
        os.utime(git, (0, 0))
    done = run_exec(root, "true")
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(root)) == [".git"]
    assert sorted(os.listdir(git)) == (["keep"] if marked else [])


def test_a_placeholder_another_exec_holds_stays_until_its_end(root):
    """Two calls share the placeholders: the one that ends first leaves them to the
    other (removing a mount point would switch the other's protection off)."""
    gate = root.parent / f"{root.name}-gate"
    first = subprocess.Popen(
        exec_argv(root, "bash", "-c", f"until [ -e {gate} ]; do sleep 0.02; done; touch .vscode/x"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    try:
        deadline = time.monotonic() + 20
        while not (root / "stockade.yml").exists():
            assert time.monotonic() < deadline, "the first call never started"
            time.sleep(0.02)
        time.sleep(0.3)  # its bwrap has mounted over them by now
        second = run_exec(root, "true")
        assert second.returncode == 0, second.stderr
        # Held by the first: the composition's and the editor and agent settings'.
        assert {"stockade.yml", ".vscode", ".mcp.json"} <= set(os.listdir(root))
        gate.touch()
        _, err = first.communicate(timeout=20)
    finally:
        first.kill()
        first.wait()
        gate.unlink(missing_ok=True)
    # The first call's sandbox stayed protected to its end: .vscode refused its write.
    assert first.returncode != 0, err
    assert sorted(os.listdir(root)) == []


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_execs_own_places_get_no_placeholder_and_the_root_keeps_its_own(backend, root):
    """The tool cache and exec's private temp directory are stockade's own: only
    confined commands work in them (danger-full-access is never pointed at the cache;
    the temp directory is removed when exec ends), so no name in them is blocked and
    nothing is made or swept there; the root's names stay read-only."""
    require_backend(backend)
    cache = root.parent / f"{root.name}-cache"
    temp = root.parent / f"{root.name}-tmp"
    cache.mkdir()
    temp.mkdir()
    try:
        script = (
            'tools="$(dirname "$PIP_CACHE_DIR")"; '
            'mkdir "$tools/.vscode" && echo x > "$tools/.vscode/settings.json" && '
            'echo "{}" > "$TMPDIR/.mcp.json" && git init -q "$TMPDIR" && '
            'test ! -e "$tools/.git" && ! touch .mcp.json 2>/dev/null && echo "$TMPDIR"'
        )
        argv = exec_argv(root, "bash", "-c", script)
        argv[argv.index("bwrap")] = backend
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=30,
            cwd=root,
            env={**os.environ, "XDG_CACHE_HOME": str(cache), "TMPDIR": str(temp)},
        )
        assert done.returncode == 0, done.stderr
        tools = cache / "stockade" / "tools"
        assert sorted(p.name for p in tools.iterdir() if p.name.startswith(".")) == [".vscode"]
        assert (tools / ".vscode" / "settings.json").read_text() == "x\n"
        assert not Path(done.stdout.strip()).exists()  # the private directory is gone
        assert os.listdir(temp) == []
        assert os.listdir(root) == []
    finally:
        shutil.rmtree(cache)
        shutil.rmtree(temp)


def test_exec_counts_only_the_default_tool_cache_as_its_own(monkeypatch, tmp_path):
    """A tool cache directory the composition names may be the person's tools' too:
    exec gives it protected names as any writable root (`Call.own_roots`)."""
    from stockade.cli.fastpath import _own_roots
    from stockade.sandbox import PrivateTmp

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    default = tmp_path / "stockade" / "tools"
    default.mkdir(parents=True)
    tmp = PrivateTmp(str(tmp_path / "stockade-tmp-x"), 0, 0)
    assert _own_roots(str(default.resolve()), tmp) == (tmp.path, str(default.resolve()))
    assert _own_roots(str(tmp_path / "named"), tmp) == (tmp.path,)
    assert _own_roots(None, None) == ()

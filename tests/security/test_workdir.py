"""The working directory is part of the boundary (issue 35, holes 1 and 2).

The bash tool's `workdir` is the model's to choose, and a session's root is a
client's. Pointed at or beneath a covered directory (`~/.ssh`, the state directory),
a command would start beneath the cover, where relative names read the real files.
Each spelling (relative `..`, absolute, `/proc/self/root/...`, a symlink in the root)
is judged where it leads and refused before anything runs, on both backends and in
both confined modes; the launcher enters its directory again through the covers, so
a directory covered after it was judged fails the call (as root and as nobody).
Unconfined controls show each read is real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio

from stockade import open_harness
from stockade.vocab import SandboxMode, SandboxPolicy

from ..support import stockade
from .support import IS_ROOT, NOBODY
from .test_unprivileged import runner  # noqa: F401

pytestmark = pytest.mark.nobody

KEY = "SECRET-KEY-" + "7" * 16
LOG = "SECRET-LOG-" + "3" * 16
RO, WW = SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE


@attrs.frozen
class Home:
    """A throwaway HOME: `.ssh/id_rsa` (KEY), `.ssh/sub/`, the state directory with a
    session log (LOG); the root `ws/` inside it, a symlink `ws/keys` to `.ssh`."""

    home: Path
    root: Path
    ssh: Path
    state: Path


@pytest.fixture
def home(monkeypatch) -> Iterator[Home]:
    base = Path(tempfile.mkdtemp(prefix="stockade-workdir-", dir="/var/tmp"))
    ssh = base / ".ssh"
    (ssh / "sub").mkdir(parents=True)
    (ssh / "id_rsa").write_text(KEY + "\n")
    (ssh / "sub" / "id_rsa").write_text(KEY + "\n")
    state = base / ".local" / "state" / "stockade"
    state.mkdir(parents=True)
    (state / "s1.jsonl").write_text(LOG + "\n")
    root = base / "ws"
    root.mkdir()
    (root / "keys").symlink_to(ssh)
    # Readable by nobody too: a refusal is the sandbox's, not the file modes'.
    for directory, _, files in os.walk(base):
        os.chmod(directory, 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)
    os.chmod(root, 0o777)
    monkeypatch.setenv("HOME", str(base))
    monkeypatch.delenv("STOCKADE_STATE_DIR", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    try:
        yield Home(base, root, ssh, state)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def spellings(home: Home) -> dict[str, str]:
    """Every way a model would name a covered directory as its workdir."""
    return {
        "relative ..": "../.ssh",
        "absolute": str(home.ssh),
        "beneath": "../.ssh/sub",
        "/proc/self/root": f"/proc/self/root{home.ssh}",
        "a symlink in the root": "keys",
        "the state directory": str(home.state),
    }


def composition(backend: str) -> list[dict]:
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "approval", "name": "stockade.approval.user"},
    ]


def test_the_controls_read_every_secret(home):
    """Unconfined, each workdir reads what the sandbox must hide: the attack is real."""
    for name, workdir in spellings(home).items():
        where = os.path.normpath(os.path.join(home.root, workdir))
        done = subprocess.run("cat id_rsa *.jsonl", shell=True, cwd=where, capture_output=True)
        assert KEY.encode() in done.stdout or LOG.encode() in done.stdout, name


@pytest.mark.parametrize("mode", ("read-only", "workspace-write"))
async def test_a_workdir_beneath_a_cover_is_refused_before_anything_runs(backend, home, mode):
    name, _ = backend
    async with open_harness(composition(name)) as harness:
        session = await harness.open_session(cwd=str(home.root))
        await session.set_sandbox_mode(mode)
        for spelled, workdir in spellings(home).items():
            ran = home.root / f"ran-{len(spelled)}"
            result = await session.run_tool(
                "bash",
                {"command": f"cat id_rsa *.jsonl; touch {ran}", "workdir": workdir},
            )
            assert KEY not in result.text and LOG not in result.text, (spelled, result.text)
            assert result.is_error, (spelled, result.text)
            assert "hidden from every sandboxed command" in result.text, result.text
            assert "Nothing ran" in result.text
            assert not ran.exists(), spelled
        # A directory beside the covers is an ordinary workdir.
        fine = await session.run_tool(
            "bash", {"command": "pwd; cat ../.ssh/id_rsa", "workdir": ".."}
        )
        assert fine.facts.get("exit_code") not in (0, None), fine.text
        assert KEY not in fine.text
        assert fine.text.startswith(str(home.home)), fine.text


async def test_a_root_beneath_a_cover_is_refused(backend, home):
    """A session's root is a client's to choose (ACP's cwd): one in a covered directory
    is refused the same way, rather than left readable."""
    name, _ = backend
    async with open_harness(composition(name)) as harness:
        session = await harness.open_session(cwd=str(home.ssh / "sub"))
        result = await session.run_tool("bash", {"command": "cat id_rsa ../id_rsa"})
    assert KEY not in result.text
    assert result.is_error and "workspace root" in result.text, result.text


@pytest.mark.parametrize("verb", ("exec", "run"))
def test_the_command_line_refuses_a_covered_current_directory(backend, home, verb):
    """`exec` runs its command where it is (its root elsewhere); `run`'s root is the
    current directory when none is named."""
    name, _ = backend
    root = ["--root", str(home.root)] if verb == "exec" else []
    argv = [verb, "--backend", name, *root, "--", "cat", "id_rsa"]
    done = stockade(*argv, cwd=home.ssh, env={"HOME": str(home.home)})
    assert KEY not in done.stdout + done.stderr
    assert done.returncode != 0
    assert "hidden from every sandboxed command" in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


async def _spawned_in(sandbox_provider, runner, policy, argv, cwd, **user):  # noqa: F811
    wrapped = await sandbox_provider.confine(argv, policy)
    return await trio.run_process(
        (runner, *wrapped.argv[1:]),
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        stdin=b"",
        cwd=cwd,
        start_new_session=True,
        **user,
    )


@pytest.mark.parametrize("as_nobody", (False, True), ids=("root", "nobody"))
async def test_a_runner_started_beneath_a_cover_fails_the_call(sandbox, runner, home, as_nobody):  # noqa: F811
    """The backstop: a call judged in its root, whose runner then starts in a covered
    directory (a directory renamed beneath a cover after it was judged), fails as a
    runner failure; the key is never read."""
    if as_nobody and not IS_ROOT:
        pytest.skip("spawning as uid 65534 needs a root caller")
    user = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if as_nobody else {}
    if as_nobody:
        control = await trio.run_process(
            ["cat", "id_rsa"], cwd=home.ssh, capture_stdout=True, check=False, **user
        )
        assert KEY in control.stdout.decode(), "nobody's control read nothing"
    policy = SandboxPolicy(WW, str(home.root))
    with sandbox.battery.attempt(
        f"a runner started beneath a cover ({'nobody' if as_nobody else 'root'})"
    ):
        for cwd in (home.ssh, home.ssh / "sub"):
            done = await _spawned_in(
                sandbox.provider,
                runner,
                policy,
                ("bash", "-c", "cat id_rsa ../id_rsa"),
                cwd,
                **user,
            )
            output = (done.stdout + done.stderr).decode()
            assert KEY not in output
            if sandbox.tier == "plain":
                # No cover to stand beneath: the complement grants refuse the read.
                assert "Permission denied" in output, output
                continue
            assert done.returncode == 125, output
            assert "working directory" in output and "hidden" in output, output

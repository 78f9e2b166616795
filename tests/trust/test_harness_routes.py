"""Routes through the harness: a fake `bwrap` on PATH, a child session rooted over the
session log, and stockade's own installation inside a writable root (the repository
checkout itself: it holds src/stockade, the editable install's package directory, and
.venv). Judged by host state: the outside file, the log on disk, the installation.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from stockade import ConfigError, open_harness
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.sandbox._profiles import UNFOUND_SOCKETS_GAP
from stockade.sandbox.actor import open_provider
from stockade.sandbox.config import ProviderConfig
from stockade.trust import INSTALL_FIX
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import require_backend
from ._support import (
    DENIED_RO,
    DENIED_WW,
    PLANTED,
    PYVENV,
    Area,
    bwrap_like_argv,
    cli,
    composition,
    fake_bwrap,
    file_state,
    heredoc,
    installation_in_repo,
    private_dir,
)

# --- route 3: a fake bwrap on PATH, for a harness ------------------------------------


@pytest.mark.parametrize("where", [".local/bin", ".venv/bin"])
async def test_a_bwrap_planted_on_path_is_never_run_by_a_harness(
    backend, area: Area, state_dir, monkeypatch, where
):
    """One harness plants `<root>/<where>/bwrap` through a workspace-write call; the
    next harness, with HOME at the root and that directory first on PATH, still
    confines with the real bwrap: the read-only call is denied, nothing outside."""
    require_backend("bwrap")
    root = area.root
    fake = root / where / "bwrap"
    plant = f"mkdir -p {fake.parent} && {heredoc(str(fake), fake_bwrap(area.fake_log))}"
    plant += f"chmod 755 {fake}\n"
    async with open_harness(composition(state_dir, backend=backend)) as harness:
        session = await harness.open_session(cwd=root)
        planted = await session.run_tool("bash", {"command": plant})
    assert planted.facts.get("exit_code") == 0, planted.text
    assert os.access(fake, os.X_OK)

    monkeypatch.setenv("HOME", str(root))
    monkeypatch.setenv("PATH", f"{root}/.local/bin:{root}/.venv/bin:{os.environ['PATH']}")
    assert shutil.which("bwrap") == str(fake)
    target = area.target()
    for chosen in ("bwrap", "auto"):
        async with open_harness(composition(state_dir, backend=chosen)) as harness:
            session = await harness.open_session(cwd=root)
            await session.set_sandbox_mode("read-only")
            result = await session.run_tool("bash", {"command": f"touch {target}"})
        assert not target.exists(), f"--backend {chosen}: the fake bwrap ran the command bare"
        assert result.facts["backend"] == "bwrap", result.facts
        assert result.facts["enforcement"] == "full", result.facts
        assert result.facts["denied"] is True and DENIED_RO in result.text, result.text
    assert not area.fake_log.exists(), f"the fake bwrap ran: {area.fake_log.read_text()}"
    # Control: executed, the fake runs things bare.
    control = area.target("control")
    ran = await trio.run_process(bwrap_like_argv(str(fake), "touch", str(control)), check=False)
    assert ran.returncode == 0 and control.exists()


# --- route 4: a child rooted over the session log ------------------------------------


@pytest.fixture
def log_parent() -> Iterator[Path]:
    """D: a private directory outside /tmp whose `state` subdirectory holds the logs."""
    path = private_dir("stockade-trust-logs-", "/var/tmp")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def listing(directory: Path) -> dict[str, tuple[object, ...] | None]:
    """Every file under `directory` (the undo history's store is a directory there)."""
    found: dict[str, tuple[object, ...] | None] = {}
    for parent, directories, files in os.walk(directory):
        for name in sorted(directories):
            found[os.path.join(parent, name)] = (
                "directory",
                os.lstat(os.path.join(parent, name)).st_ino,
            )
        for name in sorted(files):
            found[os.path.join(parent, name)] = file_state(Path(parent, name))
    return found


async def test_a_child_rooted_over_the_log_directory_is_refused(area: Area, log_parent: Path):
    state = log_parent / "state"
    async with open_harness(composition(state)) as harness:
        parent = await harness.open_session(cwd=area.root)
        ran = await parent.run_tool("bash", {"command": "echo hi"})
        assert ran.facts.get("exit_code") == 0, ran.text
        log = state / f"{parent.id}.jsonl"
        assert log.is_file()
        before = listing(state)
        for root in (log_parent, state, Path("/")):
            with pytest.raises(ConfigError) as refused:
                await parent.fork_child(cwd=root)
            message = str(refused.value)
            assert "the session log directory" in message and str(state) in message, message
            assert "a confined command can write there" in message, message
            assert "STOCKADE_STATE_DIR" in message, message
            with pytest.raises(ConfigError):
                await harness.open_session(cwd=root)
        assert listing(state) == before, "a refused fork still touched the log directory"
        # The parent goes on, and a child rooted elsewhere is fine.
        child = await parent.fork_child(cwd=area.root)
        assert (await child.run_tool("bash", {"command": "true"})).facts.get("exit_code") == 0
    text = log.read_text()
    assert "danger-full-access" not in text, text
    for line in text.splitlines():
        event = json.loads(line)
        assert event.get("mode") != "danger-full-access", event


async def test_control_a_call_rooted_over_the_log_directory_can_rewrite_it(
    backend, log_parent: Path
):
    """Control: such a child's workspace-write command really could rewrite the log
    (so the refusal above is what keeps the parent's log safe)."""
    state = log_parent / "state"
    state.mkdir()
    log = state / "parent.jsonl"
    log.write_text('{"type": "session-opened"}\n')
    async with (
        open_provider(ProviderConfig(backend=backend)) as provider,
        open_executor(ExecutorConfig(), provider) as executor,
    ):
        policy = ExecutionPolicy(SandboxMode.WORKSPACE_WRITE, str(log_parent))
        command = (
            f"""echo '{{"type": "sandbox-mode-set", "mode": "danger-full-access"}}' >> {log}"""
        )
        result = await executor.run(executor.resolve(command, policy=policy))
    assert result.exit_code == 0 and not result.denied, result.stderr
    assert "danger-full-access" in log.read_text()


# --- route 5: stockade's installation inside a writable root -------------------------

PLANT = f"echo 'import os' > {PLANTED}; echo 'planted = 1' >> {PYVENV}"


def assert_installation_intact(venv_before) -> None:
    assert not PLANTED.exists(), "a module was planted in stockade's package"
    assert file_state(PYVENV) == venv_before, "the venv's pyvenv.cfg changed"


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
def test_the_installation_in_the_root_is_read_only_where_the_runner_binds(
    repo_root: Path, backend_name: str
):
    """bwrap and the Landlock launcher's namespaced tier bind stockade's installation
    read-only in a call rooted over it: the writes are refused (EROFS, a denial)."""
    require_backend(backend_name)
    venv_before = file_state(PYVENV)
    done = cli(
        "run",
        "--json",
        "--mode",
        "workspace-write",
        "--backend",
        backend_name,
        "--root",
        str(repo_root),
        PLANT,
        cwd=repo_root,
    )
    assert_installation_intact(venv_before)
    facts = json.loads(done.stdout)
    # Every bind held; network off (the default) names the named sockets it could not
    # find, in the network claim.
    assert facts["backend"] == backend_name and facts["enforcement"] == "full", facts
    assert facts["gaps"] == [], facts
    assert facts["network_gaps"] == [UNFOUND_SOCKETS_GAP], facts
    assert facts["network"] == "off", facts
    assert facts["denied"] is True, facts
    assert facts["stderr"].count("Read-only file system") == 2, facts["stderr"]
    assert not (repo_root / "stockade.yml").exists(), "a placeholder was left in the checkout"


def _plain_config(area: Area, **extra: object) -> Path:
    """A trusted composition (outside every root, private) asking for the plain tier."""
    config = area.tools / "stockade-plain.yml"
    keys = "".join(f"    {key}: {str(value).lower()}\n" for key, value in extra.items())
    config.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n  config:\n"
        f"    backend: landlock\n    landlock_tier: plain\n{keys}"
        "- id: bash\n  name: stockade.bash.sandbox\n"
    )
    config.chmod(0o600)
    return config


def test_the_installation_in_the_root_is_refused_by_the_plain_tier(repo_root: Path, area: Area):
    require_backend("landlock")
    venv_before = file_state(PYVENV)
    config = _plain_config(area)
    for json_flag in (("--json",), ()):
        done = cli(
            "run",
            *json_flag,
            "--config",
            str(config),
            "--mode",
            "workspace-write",
            "--root",
            str(repo_root),
            PLANT,
            cwd=repo_root,
        )
        assert_installation_intact(venv_before)
        assert done.returncode == 125, (done.stdout, done.stderr)
        if json_flag:
            error = json.loads(done.stdout)["error"]
            assert error["code"] == "SANDBOX_UNAVAILABLE", error
            detail = error["detail"]
        else:
            lines = done.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("stockade: SANDBOX_UNAVAILABLE: ")
            detail = lines[0]
        assert "stockade's installation (" in detail and str(repo_root) in detail, detail
        assert "install stockade outside the workspace" in detail, detail
        assert "allow_unprotected_installation" in detail, detail


@pytest.mark.parametrize(
    ("backend", "tier"), [("bwrap", "auto"), ("landlock", "auto"), ("landlock", "plain")]
)
async def test_the_installation_in_a_harness_root(backend, repo_root: Path, state_dir, tier):
    """The same through a harness session rooted at the checkout: bwrap and the
    Landlock launcher's namespaced tier refuse the writes (EROFS, a denial); the plain
    tier refuses the call (nothing runs)."""
    require_backend(backend)
    venv_before = file_state(PYVENV)
    config = {"backend": backend, **({"landlock_tier": tier} if tier == "plain" else {})}
    async with open_harness(composition(state_dir, **config)) as harness:
        session = await harness.open_session(cwd=repo_root)
        result = await session.run_tool("bash", {"command": PLANT})
    assert_installation_intact(venv_before)
    if tier == "auto":
        assert result.facts["denied"] is True and DENIED_WW in result.text, result.text
        assert result.facts["gaps"] == (), result.facts
        assert result.facts["network_gaps"] == (UNFOUND_SOCKETS_GAP,), result.facts
    else:
        assert result.is_error and "SANDBOX_UNAVAILABLE" in result.text, result.text
        assert "the command did not run" in result.text, result.text
        named = [path for path in installation_in_repo() if path in result.text]
        assert named, result.text
        assert INSTALL_FIX in result.text, result.text


async def test_allow_unprotected_installation_runs_it_and_claims_partial(repo_root, state_dir):
    """The plain tier's way out (the namespaced tier binds the installation anyway)."""
    require_backend("landlock")
    config = {
        "backend": "landlock",
        "landlock_tier": "plain",
        "allow_unprotected_installation": True,
    }
    async with open_harness(composition(state_dir, **config)) as harness:
        session = await harness.open_session(cwd=repo_root)
        result = await session.run_tool("bash", {"command": "echo ran"})
        await session.set_sandbox_mode("read-only")
        read_only = await session.run_tool("bash", {"command": "echo ran"})
    assert result.facts.get("exit_code") == 0 and "ran" in result.text, result.text
    assert result.facts["enforcement"] == "partial", result.facts
    gap = f"stockade's installation under {repo_root} is not protected"
    assert gap in result.facts["gaps"], result.facts["gaps"]
    # Read-only writes nothing anywhere: no installation gap to disclose there.
    assert not any("installation" in gap for gap in read_only.facts["gaps"]), read_only.facts


def test_allow_unprotected_installation_from_a_trusted_cli_config(repo_root, area: Area):
    require_backend("landlock")
    config = area.tools / "stockade.yml"
    config.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n  config:\n"
        "    backend: landlock\n    landlock_tier: plain\n"
        "    allow_unprotected_installation: true\n"
        "- id: bash\n  name: stockade.bash.sandbox\n"
    )
    config.chmod(0o600)
    assert stat.S_IMODE(area.tools.stat().st_mode) & 0o022 == 0
    done = cli(
        "run",
        "--json",
        "--config",
        str(config),
        "--mode",
        "workspace-write",
        "--root",
        str(repo_root),
        "echo ran",
        cwd=repo_root,
    )
    facts = json.loads(done.stdout)
    assert facts.get("exit_code") == 0 and facts["stdout"] == "ran\n", facts
    assert facts["backend"] == "landlock" and facts["enforcement"] == "partial", facts

"""Each refusal of the trust base is one line naming the path, where it lies, and the
fix: an untrusted runner, an implicit ./stockade.yml, a composition file in the root,
a session log a command could write, stockade's installation in the root.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from stockade import ConfigError, open_harness
from stockade.trust import INSTALL_FIX

from ..support import require_backend
from ._support import Area, cli, composition, installation_in_repo, private_dir


def one_line(done, status: int) -> str:
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("stockade: "), done.stderr
    return lines[0]


@pytest.fixture
def temp_bwrap():
    """A copy of the real bwrap inside /tmp, a temp root every workspace-write call
    may write."""
    require_backend("bwrap")
    directory = private_dir("stockade-trust-bwrap-", "/tmp")
    copy = directory / "bwrap"
    shutil.copy2("/usr/bin/bwrap", copy)
    try:
        yield copy
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def trusted_config(area: Area, text: str) -> Path:
    path = area.tools / "stockade.yml"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_an_untrusted_runner_is_named_with_the_fix(area: Area, temp_bwrap: Path):
    config = trusted_config(
        area,
        "- id: sandbox\n  name: stockade.sandbox.local\n  config:\n"
        f"    backend: bwrap\n    bwrap_path: {temp_bwrap}\n"
        "- id: bash\n  name: stockade.bash.sandbox\n",
    )
    target = area.target()
    done = cli(
        "exec",
        "--config",
        str(config),
        "--mode",
        "read-only",
        "--",
        "touch",
        str(target),
        cwd=area.root,
    )
    line = one_line(done, 125)
    assert not target.exists()
    assert "SANDBOX_UNAVAILABLE" in line and str(temp_bwrap) in line, line
    assert "inside the writable root /tmp" in line, line
    assert "use a bwrap outside every writable directory" in line, line


async def test_an_untrusted_runner_in_a_harness(area: Area, temp_bwrap: Path, state_dir):
    target = area.target()
    async with open_harness(
        composition(state_dir, backend="bwrap", bwrap_path=str(temp_bwrap))
    ) as harness:
        session = await harness.open_session(cwd=area.root)
        await session.set_sandbox_mode("read-only")
        result = await session.run_tool("bash", {"command": f"touch {target}"})
    assert not target.exists()
    assert result.is_error and "SANDBOX_UNAVAILABLE" in result.text, result.text
    assert str(temp_bwrap) in result.text, result.text
    assert "use a bwrap outside every writable directory" in result.text, result.text


def test_an_implicit_stockade_yml_is_named_with_the_fix(area: Area):
    planted = area.root / "stockade.yml"
    planted.write_text("- id: bash\n  name: stockade.bash.local\n")
    for argv in (("probe",), ("exec", "--", "true"), ("run", "true")):
        line = one_line(cli(*argv, cwd=area.root), 2)
        assert str(planted) in line, line
        assert "does not load it implicitly" in line, line
        assert "Pass --config FILE (or set STOCKADE_CONFIG)" in line, line


def test_a_composition_file_in_the_root_is_named_with_the_fix(area: Area):
    runner = area.tools / "runner"
    named = area.root / "conf" / "stockade.yml"
    named.parent.mkdir()
    named.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n  config:\n"
        f"    runner_command: {runner}\n"
        "- id: bash\n  name: stockade.bash.sandbox\n"
    )
    line = one_line(cli("exec", "--config", str(named), "--", "true", cwd=area.root), 2)
    assert f"the composition file {named} (inside the writable root {area.root})" in line, line
    assert "so its runner_command is not honoured" in line, line
    assert "move the file outside the workspace and the temp directories" in line, line


def test_a_composition_file_in_the_root_under_landlock_is_kept_read_only(area: Area):
    """No loosening key: bwrap and the Landlock launcher's namespaced tier keep it
    read-only (and deny_read hides it); the plain tier cannot and refuses the call
    (its text: tests/sandbox/test_guard.py, a file that asks for that tier could not
    be trusted to)."""
    require_backend("landlock")
    named = area.root / "conf" / "stockade.yml"
    named.parent.mkdir()
    named.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n  config:\n    backend: landlock\n"
        "- id: bash\n  name: stockade.bash.sandbox\n"
    )
    before = named.read_bytes()
    done = cli(
        "run",
        "--config",
        str(named),
        "--mode",
        "workspace-write",
        f"echo evil >> {named}",
        cwd=area.root,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert named.read_bytes() == before
    assert "[sandbox: file access denied under workspace-write mode]" in done.stderr


async def test_a_session_log_a_command_could_write_is_named_with_the_fix(area: Area):
    under_tmp = private_dir("stockade-trust-state-", "/tmp")
    try:
        with pytest.raises(ConfigError) as refused:
            async with open_harness(composition(under_tmp / "state")):
                pass
        message = str(refused.value)
        assert f"the session log directory {under_tmp / 'state'}" in message, message
        assert "(inside the writable root /tmp)" in message, message
        assert "a confined command can write there" in message, message
        assert "set STOCKADE_STATE_DIR or the stockade.session.log entry's state_dir" in message
    finally:
        shutil.rmtree(under_tmp, ignore_errors=True)
    state = area.base / "state"
    async with open_harness(composition(state)) as harness:
        with pytest.raises(ConfigError) as refused:
            await harness.open_session(cwd=area.base)
    message = str(refused.value)
    assert f"{state} (inside the writable root {area.base})" in message, message
    assert "set STOCKADE_STATE_DIR" in message, message
    assert not state.exists() or os.listdir(state) == []


async def test_the_installation_in_the_root_is_named_with_the_fix(repo_root, state_dir):
    """The plain tier's refusal (the namespaced tier binds the installation read-only)."""
    require_backend("landlock")
    config = {"backend": "landlock", "landlock_tier": "plain"}
    async with open_harness(composition(state_dir, **config)) as harness:
        session = await harness.open_session(cwd=repo_root)
        result = await session.run_tool("bash", {"command": "true"})
    assert result.is_error, result.text
    named = [path for path in installation_in_repo() if f"({path})" in result.text]
    assert named, result.text
    assert f"inside the writable root {repo_root}" in result.text, result.text
    assert INSTALL_FIX in result.text, result.text
    assert "allow_unprotected_installation: true" in result.text, result.text

"""On the real kernel, every backend variant: what the model reads when network off
is behind a DNS or connection error, and when a toolchain's directory outside the
writable roots refused a write (issue 37, "errors that say what happened")."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.executor.render import render_result
from stockade.messages import ShellResult, ShellSpec
from stockade.modes import network_off_cause, tool_directory_cause
from stockade.vocab import DENIAL_INSTRUCTION, ExecutionPolicy, Network, SandboxMode, denial_marker
from tests.support import BACKEND_VARIANTS, PLAIN, executor_on

pytestmark = pytest.mark.trio

WW = SandboxMode.WORKSPACE_WRITE
LOOKUP = network_off_cause("a name lookup")
CONNECT = network_off_cause("a connection")
BOTH = network_off_cause("a name lookup and a connection")


async def _run(variant: str, root: Path, command: str, network: Network) -> ShellResult:
    policy = ExecutionPolicy(mode=WW, workspace_root=str(root), network=network)
    async with executor_on(variant) as executor:
        result: ShellResult = await executor.run(ShellSpec(command=command, policy=policy))
    return result


@pytest.fixture
def home() -> Iterator[Path]:
    """A home outside the root and outside /tmp (fresh in bwrap's view of a call)."""
    with tempfile.TemporaryDirectory(dir=Path.home(), prefix=".stockade-causes-") as made:
        yield Path(made)


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    return root


@pytest.mark.parametrize("variant", BACKEND_VARIANTS)
async def test_curl_of_a_name_with_network_off(variant: str, tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("no curl")
    root = _root(tmp_path)
    result = await _run(variant, root, "curl -sS http://example.invalid/", Network.OFF)
    assert "Could not resolve host" in result.stderr
    text = render_result(result)
    assert text.endswith(f"[exit code: 6]\n{LOOKUP}")
    assert not result.denied
    # The control: the same failure with network on is the name's, and nothing is said.
    control = await _run(variant, root, "curl -sS http://example.invalid/", Network.ON)
    assert control.exit_code != 0
    assert "[sandbox:" not in render_result(control)


@pytest.mark.parametrize("variant", BACKEND_VARIANTS)
async def test_a_connection_with_network_off(variant: str, tmp_path: Path) -> None:
    root = _root(tmp_path)
    command = "python3 -c 'import socket; socket.create_connection((\"127.0.0.2\", 80), 2)'"
    result = await _run(variant, root, command, Network.OFF)
    # A namespace's own loopback refuses it; the plain tier has no inet socket at all.
    expected = "Address family not supported" if variant == PLAIN else "Connection refused"
    assert expected in result.stderr
    assert render_result(result).endswith(f"[exit code: 1]\n{CONNECT}")


@pytest.mark.parametrize("variant", BACKEND_VARIANTS)
async def test_package_managers_offline(variant: str, tmp_path: Path) -> None:
    root = _root(tmp_path)
    pip = (
        "python3 -m pip download --isolated --no-cache-dir --retries 1 --timeout 2 "
        f"-i https://pypi.invalid/simple -d {root}/dl nothing-by-this-name"
    )
    result = await _run(variant, root, pip, Network.OFF)
    assert "Failed to establish a new connection" in result.stderr
    assert render_result(result).endswith(f"\n{BOTH}")
    if shutil.which("npm") is None:
        return
    npm = (
        f"npm view left-pad --registry http://registry.invalid/ --fetch-retries=0 --cache {root}/c"
    )
    result = await _run(variant, root, npm, Network.OFF)
    assert "getaddrinfo" in result.stderr
    assert render_result(result).endswith(f"\n{LOOKUP}")


@pytest.mark.parametrize("variant", BACKEND_VARIANTS)
async def test_a_write_under_a_toolchain_directory_outside_the_root(
    variant: str, tmp_path: Path, home: Path
) -> None:
    root = _root(tmp_path)
    npm_dir = home / ".npm"
    command = f"export HOME={home}; mkdir -p ~/.npm/_cacache && touch ~/.npm/_cacache/x"
    result = await _run(variant, root, command, Network.OFF)
    assert result.denied
    line = tool_directory_cause(str(npm_dir), "npm", "npm_config_cache", read_only=False)
    assert render_result(result).endswith(f"{denial_marker(WW)}\n{DENIAL_INSTRUCTION}\n{line}")
    assert not npm_dir.exists()
    # The same under the root is no denial, and nothing is said.
    inside = await _run(variant, root, f"mkdir -p {root}/.npm/_cacache", Network.OFF)
    assert not inside.denied and "[sandbox:" not in render_result(inside)


@pytest.mark.parametrize("variant", BACKEND_VARIANTS)
async def test_npm_refused_its_cache(variant: str, tmp_path: Path, home: Path) -> None:
    """npm's own wording (`EROFS: read-only file system, mkdtemp '...'` or
    `EACCES: permission denied, ...`) is read as the backend's refusal."""
    if shutil.which("npm") is None:
        pytest.skip("no npm")
    root = _root(tmp_path)
    (home / ".npm" / "_cacache" / "tmp").mkdir(parents=True)  # a cache used before
    (root / "package.json").write_text('{"name": "a", "version": "1.0.0"}')
    (root / "dep").mkdir()
    (root / "dep" / "package.json").write_text('{"name": "dep", "version": "1.0.0"}')
    command = (
        "npm pack ./dep --pack-destination . >/dev/null && npm install --offline ./dep-1.0.0.tgz"
    )
    command = f"export HOME={home} npm_config_cache={home}/.npm; {command}"
    result = await _run(variant, root, command, Network.OFF)
    assert f"{home}/.npm" in result.stderr
    assert result.denied, result.stderr
    line = tool_directory_cause(f"{home}/.npm", "npm", "npm_config_cache", read_only=False)
    assert render_result(result).endswith(f"{DENIAL_INSTRUCTION}\n{line}")

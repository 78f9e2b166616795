"""Sandbox-private tool caches (issue 37): a confined command's toolchains cache in a
directory of stockade's own, never in the host's ~/.cache, ~/.npm or ~/.cargo.

Real kernel, both backends: the cache write that was refused now lands in the
sandbox's directory, the host's own caches stay untouched (checked on disk), a second
session reuses the first's entries, read-only reads but never writes them, an
unconfined call keeps the host's caches, and nothing is made in a workspace.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from stockade import open_harness
from stockade.errors import ConfigError
from stockade.sandbox import tool_caches

from ..support import require_backend
from .conftest import on_backend as composition

BACKENDS = ("bwrap", "landlock")


@attrs.frozen
class Place:
    home: Path
    root: Path
    cache: Path  # where the sandbox's caches must land


@pytest.fixture
def place(monkeypatch) -> Iterator[Place]:
    base = Path(tempfile.mkdtemp(prefix="stockade-caches-", dir="/var/tmp"))
    home, root = base / "home", base / "ws"
    home.mkdir()
    root.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "STOCKADE_STATE_DIR", "PIP_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield Place(home, root, home / ".cache" / "stockade" / "tools")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def host_caches(home: Path) -> list[str]:
    """Everything in the host's own cache places under `home` but stockade's."""
    found = []
    for place in (".cache", ".npm", ".cargo", "go", ".m2", ".gradle"):
        top = home / place
        for path in top.rglob("*") if top.exists() else ():
            if "stockade" not in path.relative_to(home).parts:
                found.append(str(path.relative_to(home)))
    return sorted(found)


WRITE_EVERY_CACHE = (
    "for v in PIP_CACHE_DIR npm_config_cache CARGO_HOME GOCACHE GOMODCACHE XDG_CACHE_HOME "
    "UV_CACHE_DIR YARN_CACHE_FOLDER GRADLE_USER_HOME CCACHE_DIR; do "
    'd=$(printenv $v) && mkdir -p "$d/sub" && echo entry > "$d/sub/e" || echo "FAILED $v"; done; '
    "echo done"
)


def test_the_control_a_cache_write_under_home_is_real(place):
    """Unconfined, the same script writes the host's caches when the variables point
    there: what the sandbox redirects is a real write."""
    import subprocess

    env = {**os.environ, "PIP_CACHE_DIR": str(place.home / ".cache" / "pip")}
    done = subprocess.run(
        ["bash", "-c", 'mkdir -p "$PIP_CACHE_DIR" && echo x > "$PIP_CACHE_DIR/t"'], env=env
    )
    assert done.returncode == 0 and (place.home / ".cache" / "pip" / "t").exists()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_every_tool_caches_in_the_sandboxs_directory_never_the_hosts(backend, place):
    require_backend(backend)
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(place.root))
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool("bash", {"command": WRITE_EVERY_CACHE})
        assert "FAILED" not in result.text and "done" in result.text, result.text
        assert not result.facts["denied"], result.text
        # The host's own places: nothing.
        assert host_caches(place.home) == []
        for sub in ("pip", "npm", "cargo", "go-build", "go-mod", "xdg", "uv", "yarn"):
            assert (place.cache / sub / "sub" / "e").read_text() == "entry\n", sub
        # The model is told, and the facts list the directory as writable.
        context = await session.pre_step()
        assert context is not None and str(place.cache) in context.text
        assert context.tool_cache == str(place.cache)
        assert str(place.cache) in result.facts["writable"]
        # A second session (another root) reuses the first's entries.
        other = place.root.parent / "ws2"
        other.mkdir()
        second = await harness.open_session(cwd=str(other))
        await second.set_sandbox_mode("workspace-write")
        again = await second.run_tool("bash", {"command": 'cat "$PIP_CACHE_DIR/sub/e"'})
        assert again.text.startswith("entry"), again.text


@pytest.mark.parametrize("backend", BACKENDS)
async def test_read_only_reads_the_caches_and_writes_none(backend, place):
    require_backend(backend)
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(place.root))
        await session.set_sandbox_mode("workspace-write")
        await session.run_tool(
            "bash", {"command": 'mkdir -p "$PIP_CACHE_DIR" && echo kept > "$PIP_CACHE_DIR/k"'}
        )
        await session.set_sandbox_mode("read-only")
        read = await session.run_tool(
            "bash", {"command": 'cat "$PIP_CACHE_DIR/k"; echo new > "$PIP_CACHE_DIR/n"'}
        )
        assert read.text.startswith("kept"), read.text
        assert read.facts["denied"], read.text
        assert not (place.cache / "pip" / "n").exists()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_unconfined_call_keeps_the_hosts_caches(backend, place):
    """danger-full-access is the person's own tool: it is never pointed at what
    confined commands wrote (a poisoned entry cannot reach an unconfined build)."""
    require_backend(backend)
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(place.root))
        await session.set_sandbox_mode("danger-full-access")
        result = await session.run_tool("bash", {"command": 'echo "[$PIP_CACHE_DIR]"'})
        assert result.text.startswith("[]"), result.text


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_root_holding_the_caches_gets_none_and_nothing_is_made(backend, place):
    """A session rooted at a directory that holds ~/.cache (HOME itself, named on
    purpose) gets no tool caches: nothing of stockade's is made in a workspace."""
    require_backend(backend)
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(place.home))
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool("bash", {"command": 'echo "[$PIP_CACHE_DIR]"'})
        assert result.text.startswith("[]"), result.text
        context = await session.pre_step()
        assert context is not None and context.tool_cache is None
        assert "Tool caches" not in context.text
    assert not (place.home / ".cache").exists()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_tool_caches_off_and_a_chosen_directory(backend, place):
    require_backend(backend)
    async with open_harness(composition(backend, tool_caches="off")) as harness:
        session = await harness.open_session(cwd=str(place.root))
        result = await session.run_tool("bash", {"command": 'echo "[$PIP_CACHE_DIR]"'})
        assert result.text.startswith("[]"), result.text
    chosen = place.root.parent / "caches"
    config = {"directory": str(chosen), "tools": ["pip"]}
    async with open_harness(composition(backend, tool_caches=config)) as harness:
        session = await harness.open_session(cwd=str(place.root))
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool(
            "bash", {"command": 'echo "[$PIP_CACHE_DIR][$npm_config_cache]"'}
        )
        assert result.text.startswith(f"[{chosen}/pip][]"), result.text
    inside = place.root / "caches"
    with pytest.raises(ConfigError, match="outside every workspace"):
        async with open_harness(
            composition(backend, tool_caches={"directory": str(inside)}), cwd=str(place.root)
        ):
            pass


def test_the_directory_is_private_and_a_symlink_is_refused(place):
    made = tool_caches.prepare(str(place.cache), ("pip", "cargo"), str(place.home))
    assert made == str(place.cache)
    # Never a home made up: one that does not exist has no caches.
    missing = place.home.parent / "no-such-home"
    assert tool_caches.default_directory({"HOME": str(missing)}) is None
    assert not missing.exists()
    assert oct(place.cache.stat().st_mode & 0o777) == "0o700"
    shutil.rmtree(place.cache)
    target = place.root / "elsewhere"
    target.mkdir()
    place.cache.symlink_to(target)
    with pytest.raises(tool_caches.CacheProblem, match="symlink"):
        tool_caches.prepare(str(place.cache), ("pip",), str(place.home))


def test_the_persons_cargo_config_is_linked_and_its_credentials_are_not(place):
    cargo = place.home / ".cargo"
    cargo.mkdir()
    (cargo / "config.toml").write_text("[net]\noffline = true\n")
    (cargo / "credentials.toml").write_text("token = 'x'\n")
    tool_caches.prepare(str(place.cache), ("cargo",), str(place.home))
    link = place.cache / "cargo" / "config.toml"
    assert os.readlink(link) == str(cargo / "config.toml")
    assert not (place.cache / "cargo" / "credentials.toml").exists()
    # A command that re-pointed the link gets the person's file back next time.
    link.unlink()
    link.symlink_to("/etc/passwd")
    tool_caches.prepare(str(place.cache), ("cargo",), str(place.home))
    assert os.readlink(link) == str(cargo / "config.toml")


def test_prune_removes_links_a_command_left_without_following_them(place):
    tool_caches.prepare(str(place.cache), ("pip", "npm"), None)
    (place.cache / "pip").mkdir()
    (place.cache / "npm").mkdir()
    precious = place.root / "precious"
    precious.write_text("keep\n")
    (place.cache / "npm").rmdir()
    (place.cache / "npm").symlink_to(place.root)
    (place.cache / "pip" / "link").symlink_to(precious)
    removed = tool_caches.prune(str(place.cache), ("pip", "npm"))
    assert sorted(removed) == sorted([str(place.cache / "pip"), str(place.cache / "npm")])
    assert precious.read_text() == "keep\n" and place.root.is_dir()


def test_variables_and_tools():
    env = tool_caches.variables("/c", ("pip", "go", "maven"), {"MAVEN_OPTS": "-Xmx1g"})
    assert env == {
        "PIP_CACHE_DIR": "/c/pip",
        "GOCACHE": "/c/go-build",
        "GOMODCACHE": "/c/go-mod",
        "MAVEN_OPTS": "-Xmx1g -Dmaven.repo.local=/c/maven",
    }
    assert tool_caches.check_tools(["npm", "pip", "npm"]) == ("pip", "npm")
    with pytest.raises(ValueError, match="unknown tool 'rubygems'"):
        tool_caches.check_tools(["rubygems"])
    assert not tool_caches.clear_of("/h/.cache/stockade/tools", ["/h"])
    assert not tool_caches.clear_of("/h", ["/h/ws"])
    assert tool_caches.clear_of("/h/.cache/stockade/tools", ["/h/ws"])


def test_the_config_literal_matches_the_table():
    from typing import get_args

    from stockade.config.builtins import ToolName

    assert get_args(ToolName) == tool_caches.TOOLS


# What a confined command would plant at the top of a tool cache directory, and say.
PLANT_SETTINGS = (
    'top="$(dirname "$PIP_CACHE_DIR")"; mkdir -p "$top/.vscode" && '
    'echo planted > "$top/.vscode/settings.json" && echo "planted in $top"'
)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_only_the_default_directory_is_stockades_own(backend, place):
    """The default directory is stockade's own: only confined commands ever work there,
    so no name in it is protected (security.md, "Stockade's own roots"). A directory the
    composition names may be one the person's own tools read: its names stay
    read-only as in any writable root. Judged by what is on disk."""
    require_backend(backend)
    async with open_harness(composition(backend)) as harness:
        session = await harness.open_session(cwd=str(place.root))
        await session.set_sandbox_mode("workspace-write")
        result = await session.run_tool("bash", {"command": PLANT_SETTINGS})
        assert f"planted in {place.cache}" in result.text, result.text
    assert (place.cache / ".vscode" / "settings.json").read_text() == "planted\n"
    chosen = place.root.parent / "caches"
    config = {"directory": str(chosen), "tools": ["pip"]}
    async with open_harness(composition(backend, tool_caches=config)) as harness:
        session = await harness.open_session(cwd=str(place.root))
        await session.set_sandbox_mode("workspace-write")
        refused = await session.run_tool("bash", {"command": PLANT_SETTINGS})
        assert "planted in" not in refused.text and refused.facts["denied"], refused.text
        assert not (chosen / ".vscode" / "settings.json").exists()
        # Its tool's own directory is written as ever.
        wrote = await session.run_tool(
            "bash",
            {"command": 'mkdir -p "$PIP_CACHE_DIR" && echo e > "$PIP_CACHE_DIR/e" && echo wrote'},
        )
        assert "wrote" in wrote.text, wrote.text
        # The control: unconfined, the same plant lands (the variable set by hand).
        await session.set_sandbox_mode("danger-full-access")
        control = await session.run_tool(
            "bash", {"command": f"PIP_CACHE_DIR={chosen}/pip; {PLANT_SETTINGS}"}
        )
        assert f"planted in {chosen}" in control.text, control.text
    assert (chosen / ".vscode" / "settings.json").read_text() == "planted\n"


def test_is_default_names_only_the_default_directory(place):
    default = tool_caches.default_directory()
    assert default is not None
    os.makedirs(default)
    assert tool_caches.is_default(os.path.realpath(default))
    assert not tool_caches.is_default(str(place.root))

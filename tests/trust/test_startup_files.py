"""Startup files and editor / agent settings: when a writable root holds the home
directory (here a throwaway HOME inside the workspace root), the shell rc files,
~/.gitconfig, ~/.config/git, ~/.config/fish and ~/.ssh are kept read-only under bwrap,
existing or not; so are `.vscode`, `.idea`, `.mcp.json`, `.claude` and `.codex` in
every root. Judged by the host's files; the control shows each write is real
unconfined; Landlock claims `partial` naming each; `unprotect` leaves one writable.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.sandbox.actor import open_provider
from stockade.vocab import SandboxMode, SandboxPolicy

from ..support import require_backend
from ._support import Area, composition, describe_change, snapshot


@dataclass(frozen=True)
class Item:
    name: str  # as `unprotect` spells it
    path: str  # relative to the workspace root ("home/" for the home directory)
    command: str  # the write, run at the root


def write(path: str, text: str = "evil") -> str:
    return f"echo {shlex.quote(text)} >> {shlex.quote(path)}"


ITEMS = [
    Item("~/.bashrc", "home/.bashrc", write("home/.bashrc")),
    Item("~/.bash_profile", "home/.bash_profile", write("home/.bash_profile")),
    Item("~/.bash_login", "home/.bash_login", write("home/.bash_login")),
    Item("~/.profile", "home/.profile", write("home/.profile")),
    Item("~/.zshrc", "home/.zshrc", write("home/.zshrc")),
    Item("~/.zprofile", "home/.zprofile", write("home/.zprofile")),
    Item("~/.zshenv", "home/.zshenv", write("home/.zshenv")),
    Item(
        "~/.config/fish",
        "home/.config/fish",
        "mkdir -p home/.config/fish && " + write("home/.config/fish/config.fish"),
    ),
    Item("~/.gitconfig", "home/.gitconfig", write("home/.gitconfig", "[core]fsmonitor=x")),
    Item(
        "~/.config/git",
        "home/.config/git",
        write("home/.config/git/config", "[core]fsmonitor=x")
        + "; "
        + write("home/.config/git/attributes"),
    ),
    Item(
        "~/.ssh",
        "home/.ssh",
        write("home/.ssh/authorized_keys", "ssh-ed25519 AAAA evil")
        + "; "
        + write("home/.ssh/rc")
        + "; "
        + write("home/.ssh/config"),
    ),
    Item(".vscode", ".vscode", write(".vscode/settings.json", "{}") + "; " + write(".vscode/t")),
    Item(".idea", ".idea", "mkdir -p .idea && " + write(".idea/workspace.xml")),
    Item(".mcp.json", ".mcp.json", write(".mcp.json", "{}")),
    Item(".claude", ".claude", write(".claude/settings.json", "{}")),
    Item(".codex", ".codex", "mkdir -p .codex && " + write(".codex/config.toml")),
]


def make_home(root: Path) -> Path:
    """Some items exist (so they are bound read-only), the rest do not (blocked)."""
    home = root / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".ssh").mkdir(mode=0o700)
    (home / ".bashrc").write_text("# rc\n")
    (home / ".profile").write_text("# profile\n")
    (home / ".gitconfig").write_text("[user]\n\tname = person\n")
    (home / ".config" / "git" / "config").write_text("[user]\n")
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA person\n")
    (root / ".vscode").mkdir()
    (root / ".vscode" / "settings.json").write_text("{}\n")
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text("{}\n")
    (root / "file.txt").write_text("ordinary\n")
    return home


def item_state(root: Path, item: Item) -> dict:
    path = root / item.path
    if path.is_dir() and not path.is_symlink():
        return snapshot(path)
    return snapshot(path.parent, placeholders=False).get(path.name, None) or {}


@pytest.fixture
def home(area: Area, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway HOME inside the workspace root, set before the harness opens (its
    provider reads the caller's startup files once, when it starts)."""
    made = make_home(area.root)
    monkeypatch.setenv("HOME", str(made))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return made


async def run_each(state_dir: str, root: Path, commands: list[str], **config: object) -> list:
    async with open_harness(composition(state_dir, **config)) as harness:
        session = await harness.open_session(cwd=root)
        return [await session.run_tool("bash", {"command": c}) for c in commands]


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
async def test_every_startup_file_and_setting_stays_read_only_where_the_runner_binds(
    area: Area, home, state_dir, backend_name
):
    """bwrap, and the Landlock launcher's namespaced tier as bwrap."""
    require_backend(backend_name)
    root = area.root
    before = {item.name: item_state(root, item) for item in ITEMS}
    whole = snapshot(root)
    results = await run_each(state_dir, root, [i.command for i in ITEMS], backend=backend_name)
    failures = []
    for item, result in zip(ITEMS, results, strict=True):
        if item_state(root, item) != before[item.name]:
            failures.append(f"{item.name}: changed on the host")
        if not result.facts["denied"]:
            failures.append(f"{item.name}: not denied: {result.text}")
    assert not failures, "\n".join(failures)
    # Nothing else changed either, and no placeholder was left behind.
    after = snapshot(root)
    assert after == whole, describe_change(whole, after)
    # Ordinary writes in the home directory and the root still work.
    (ordinary,) = await run_each(
        state_dir, root, ["echo ok > home/notes.txt && echo ok > file.txt"], backend=backend_name
    )
    assert ordinary.facts.get("exit_code") == 0 and not ordinary.facts["denied"], ordinary.text


def test_control_every_write_is_real_unconfined(area: Area):
    root = area.root
    make_home(root)
    for item in ITEMS:
        before = item_state(root, item)
        subprocess.run(["bash", "-c", item.command], cwd=root, check=True)
        assert item_state(root, item) != before, f"{item.name}: not a real write"


async def test_the_plain_tier_claims_partial_naming_every_item(area: Area, home, state_dir):
    require_backend("landlock")
    (result,) = await run_each(
        state_dir, area.root, ["true"], backend="landlock", landlock_tier="plain"
    )
    assert result.facts["enforcement"] == "partial"
    (gap,) = [g for g in result.facts["gaps"] if g.startswith("protected paths not enforced: ")]
    names = gap.removeprefix("protected paths not enforced: ").split(", ")
    missing = [item.path for item in ITEMS if item.path not in names]
    assert not missing, (missing, names)


@pytest.mark.parametrize("inside", [True, False], ids=["home-in-root", "home-elsewhere"])
async def test_startup_files_are_protected_only_in_a_root_that_holds_them(
    area: Area, monkeypatch: pytest.MonkeyPatch, inside: bool
):
    """The usual case is a project inside the home directory: nothing to protect."""
    config = require_backend("bwrap")
    home = make_home(area.root if inside else area.base / "elsewhere")
    monkeypatch.setenv("HOME", str(home))
    async with open_provider(config) as provider:
        wrapped = await provider.confine(
            ("true",), SandboxPolicy(SandboxMode.WORKSPACE_WRITE, str(area.root))
        )
    protected = {path for path in wrapped.protected if path.startswith(f"{home}/")}
    if inside:
        assert {f"{home}/.bashrc", f"{home}/.ssh", f"{home}/.config/git"} <= protected
        assert f"{home}/.bash_profile" in wrapped.blockers
    else:
        # No bind of the home; only deny_read's covers name paths in it (~/.ssh ...).
        argv = list(wrapped.argv)
        binds = [a for i, a in enumerate(argv) if "--deny-read" not in argv[i - 1 : i + 1]]
        assert protected == set() and str(home) not in " ".join(binds)


@pytest.mark.parametrize("backend_name", ["bwrap", "landlock"])
async def test_unprotect_leaves_named_items_writable(area: Area, home, state_dir, backend_name):
    require_backend(backend_name)
    root = area.root
    chosen = {"~/.bashrc", ".vscode"}
    kept = [item for item in ITEMS if item.name not in chosen]
    config = {"backend": backend_name, "unprotect": sorted(chosen)}
    opened = [item for item in ITEMS if item.name in chosen]
    results = await run_each(state_dir, root, [i.command for i in opened], **config)
    for result in results:
        assert result.facts.get("exit_code") == 0 and not result.facts["denied"], result.text
    assert (home / ".bashrc").read_text().endswith("evil\n")
    assert (root / ".vscode" / "t").read_text() == "evil\n"
    if backend_name in ("bwrap", "landlock"):
        before = {item.name: item_state(root, item) for item in kept}
        results = await run_each(state_dir, root, [i.command for i in kept], **config)
        assert all(result.facts["denied"] for result in results)
        for item in kept:
            assert item_state(root, item) == before[item.name], item.name
    if backend_name == "landlock":
        plain = {**config, "landlock_tier": "plain"}
        (result,) = await run_each(state_dir, root, ["true"], **plain)
        (gap,) = [g for g in result.facts["gaps"] if g.startswith("protected paths not")]
        names = gap.split(": ", 1)[1].split(", ")
        assert "home/.bashrc" not in names and ".vscode" not in names, names
        assert "home/.profile" in names and ".mcp.json" in names, names

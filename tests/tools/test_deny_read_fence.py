"""The fs tools refuse what deny_read names (tools/fs.py, trust/secrets.py): by where
the open lands, so a link made in the root to a secret is refused too; a refusal is a
denial with the marker and the hint that only danger-full-access lifts it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stockade.tools.fs import edit_file, read_file, write_file
from stockade.trust.secrets import DenyRead
from stockade.vocab import READ_DENIED_HINT, ExecutionPolicy, SandboxMode, denial_marker


@pytest.fixture
def home(outside: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = Path(outside) / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("SECRET-KEY\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.parametrize("mode", [SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE])
def test_read_file_refuses_a_secret_and_a_link_to_it(ws: str, home: Path, mode: SandboxMode):
    policy = ExecutionPolicy(mode=mode, workspace_root=ws)
    Path(ws, "key-link").symlink_to(home / ".ssh" / "id_ed25519")
    Path(ws, ".env").write_text("TOKEN=x\n")
    Path(ws, "sub").mkdir()
    Path(ws, "sub", ".env.local").write_text("TOKEN=y\n")
    Path(ws, "main.py").write_text("print(1)\n")
    for path in (str(home / ".ssh" / "id_ed25519"), "key-link", ".env", "sub/.env.local"):
        result = read_file(policy, ws, path, deny_read=DenyRead())
        assert result.denied and result.read_denied and result.is_error, path
        assert "SECRET" not in result.text and "TOKEN" not in result.text
        assert denial_marker(mode) in result.text and READ_DENIED_HINT in result.text
    assert read_file(policy, ws, "main.py", deny_read=DenyRead()).text == "print(1)\n"


def test_danger_full_access_reads_them(ws: str, home: Path):
    policy = ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=ws)
    result = read_file(policy, ws, str(home / ".ssh" / "id_ed25519"), deny_read=DenyRead())
    assert result.text == "SECRET-KEY\n" and not result.denied


def test_write_and_edit_refuse_a_denied_file_in_the_root(ws: str, home: Path):
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    Path(ws, ".env").write_text("TOKEN=x\n")
    written = write_file(policy, ws, ".env", "TOKEN=leaked", deny_read=DenyRead())
    edited = edit_file(policy, ws, ".env", "TOKEN", "T", deny_read=DenyRead())
    for result in (written, edited):
        assert result.denied and result.read_denied
    assert Path(ws, ".env").read_text() == "TOKEN=x\n"
    assert write_file(policy, ws, "ok.txt", "fine", deny_read=DenyRead()).bytes_written == 4
    assert os.path.exists(os.path.join(ws, "ok.txt"))


def test_read_file_refuses_every_default_home_item(ws: str, outside: str, monkeypatch):
    from stockade.trust.secrets import HOME_SECRETS

    home = Path(outside) / "every"
    monkeypatch.setenv("HOME", str(home))
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    for item in HOME_SECRETS:
        path = home / item.removeprefix("~/").replace("*", ".toml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"SECRET {item}\n")
        result = read_file(policy, ws, str(path), deny_read=DenyRead())
        assert result.read_denied and "SECRET" not in result.text, item

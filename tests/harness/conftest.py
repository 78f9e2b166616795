"""Harness fixtures: a real composition on the real sandbox, a scripted approval chain."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from stockade.approval.answerers import ScriptedAnswerer


def composition(state_dir: str, *, approval: bool = True, executor: str = "sandbox", **bash):
    entries = []
    if executor == "sandbox":
        entries.append({"id": "sandbox", "name": "stockade.sandbox.local"})
        entries.append({"id": "bash", "name": "stockade.bash.sandbox", "config": bash})
    else:
        entries.append({"id": "bash", "name": "stockade.bash.local"})
    if approval:
        entries.append({"id": "approval", "name": "stockade.approval.user"})
    entries.append(
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}}
    )
    return entries


def on_backend(backend: str, **sandbox: object) -> list[dict]:
    """A composition forcing `backend`, the provider's `sandbox` keys laid over it, the
    sandboxed bash tool and the user's approval (the default log)."""
    return [
        {
            "id": "sandbox",
            "name": "stockade.sandbox.local",
            "config": {"backend": backend, **sandbox},
        },
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "approval", "name": "stockade.approval.user"},
    ]


@pytest.fixture
def state_dir():
    """Session logs outside every writable root (/tmp is one): the harness refuses
    a log a workspace-write command could rewrite."""
    path = tempfile.mkdtemp(prefix="stockade-state-", dir="/var/tmp")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def projects(scratch) -> tuple[Path, Path]:
    a, b = Path(scratch) / "project-a", Path(scratch) / "project-b"
    a.mkdir()
    b.mkdir()
    return a, b


@pytest.fixture
def scripted() -> ScriptedAnswerer:
    return ScriptedAnswerer()

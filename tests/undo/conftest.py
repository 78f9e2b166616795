"""Undo through the harness (issue 42): real compositions on the real kernel, their
session logs in a state directory outside every writable root."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def composition(
    state_dir: str,
    *,
    backend: str | None = None,
    executor: str = "sandbox",
    history: object = None,
    fs: bool = False,
) -> list[dict]:
    """The sandboxed bash tool (its backend forced when named), the fs tools when
    asked, a JSON-lines log in `state_dir`; `history` is the bash entry's key."""
    bash: dict = {}
    if history is not None:
        bash["history"] = history
    entries: list[dict] = []
    if executor == "sandbox":
        sandbox = {"backend": backend} if backend is not None else {}
        entries.append({"id": "sandbox", "name": "stockade.sandbox.local", "config": sandbox})
        entries.append({"id": "bash", "name": "stockade.bash.sandbox", "config": bash})
        if fs:
            entries.append({"id": "fs", "name": "stockade.fs.sandbox"})
    else:
        entries.append({"id": "bash", "name": "stockade.bash.local", "config": bash})
        if fs:
            entries.append({"id": "fs", "name": "stockade.fs.local"})
    entries.append(
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}}
    )
    return entries


@pytest.fixture
def state_dir() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="stockade-state-", dir="/var/tmp")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def root(scratch) -> Path:
    path = Path(scratch) / "project"
    path.mkdir()
    return path


@pytest.fixture
def outside(scratch) -> Path:
    """A directory of the person's, beside the root (never writable by a call)."""
    path = Path(scratch) / "outside"
    path.mkdir()
    return path

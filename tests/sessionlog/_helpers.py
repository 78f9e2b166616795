"""Shared by the session-log tests and their child processes (keep it import-light)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import stockade
from stockade.events import SessionEvent
from stockade.policy import PolicyDefaults
from stockade.sessionlog import BUILTIN_EVENTS

CHILD = Path(__file__).with_name("_child.py")
SRC = str(Path(stockade.__file__).resolve().parent.parent)


class Note(SessionEvent, kw_only=True, tag="test/note"):
    """A test domain's event, registered the way any domain registers its own."""

    n: int
    payload: str = ""


TEST_EVENTS = BUILTIN_EVENTS.with_types(Note)
DEFAULTS = PolicyDefaults(fallback_root="/srv/fallback")


class CountingFsync:
    """An injectable fsync that counts its calls (thread-safe)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        with self._lock:
            self.count += 1
        os.fsync(fd)


def child_argv(*args: str) -> list[str]:
    """Run `_child.py` with this venv's interpreter (never `python3` from PATH)."""
    return [sys.executable, str(CHILD), *args]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([SRC, str(CHILD.parent)])
    return env

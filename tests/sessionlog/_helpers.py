"""Shared by the session-log tests and their child processes (keep it import-light)."""

from __future__ import annotations

import os
import sys
import threading
import time
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
    """An injectable fsync that counts its calls (thread-safe).

    `latency` models a real device's flush time: on tmpfs an fsync costs next to
    nothing, and how many appends queue behind one then depends only on scheduling.
    """

    def __init__(self, latency: float = 0.0) -> None:
        self.count = 0
        self.latency = latency
        self._lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        with self._lock:
            self.count += 1
        os.fsync(fd)
        if self.latency:
            time.sleep(self.latency)


def child_argv(*args: str) -> list[str]:
    """Run `_child.py` with this venv's interpreter (never `python3` from PATH)."""
    return [sys.executable, str(CHILD), *args]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([SRC, str(CHILD.parent)])
    return env

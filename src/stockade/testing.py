"""Public fakes for a host's own tests: a fake runner for `runner_command`, a scripted
answerer, an in-memory session log; an agent loop runs with no sandbox, person or disk.

Built on what the library has: `runner_command` (the operator's runner, which skips the
platform chain and its probes), `ScriptedAnswerer`, `MemoryStore` (docs/embedding.md,
"Testing a host").
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from .approval import ScriptedAnswerer as ScriptedAnswerer
from .approval import scripted as scripted
from .events import SessionEvent
from .harness import harness_registry
from .sessionlog import MemoryStore as MemoryStore
from .trust import host_temp_roots, is_under

# A bwrap-compatible runner that runs the command as it is: it skips the runner's
# options up to `--` and execs the rest. Nothing is confined: it tests a host's loop,
# never the sandbox.
PASS_THROUGH: Final = '#!/bin/sh\nwhile [ "$1" != "--" ]; do shift; done; shift\nexec "$@"\n'


def fake_runner(
    directory: str | os.PathLike[str], *, fail: str | None = None, name: str = "fake-runner"
) -> Path:
    """Write a fake runner into `directory` and return its path, for `runner_command`.

    It runs every command unconfined (results say backend `runner-command`). With
    `fail`, it prints that line on stderr and exits 1 without running anything, as a
    runner that cannot set up its sandbox does: name a prefix of the line in
    `runner_failure_signatures` and every confined call is `SANDBOX_UNAVAILABLE`.

    `directory` must lie outside every workspace root and temp directory (`/tmp`,
    `$TMPDIR`): the harness refuses a runner a confined command could replace.
    """
    real = os.path.realpath(directory)
    for root in host_temp_roots():
        if is_under(real, root):
            # Refused here rather than as SANDBOX_UNAVAILABLE at the first call.
            raise ValueError(
                f"a fake runner in {real} lies inside the temp root {root}, where a confined "
                "command could replace it; write it outside every workspace and temp "
                "directory (e.g. tempfile.mkdtemp(dir='/var/tmp'))"
            )
    script = PASS_THROUGH
    if fail is not None:
        if "\n" in fail:
            raise ValueError(f"fail must be one line, got {fail!r}")
        script = f"#!/bin/sh\necho {shlex.quote(fail)} >&2\nexit 1\n"
    path = Path(directory) / name
    path.write_text(script)
    path.chmod(0o755)
    return path


def composition(
    runner: str | os.PathLike[str],
    *,
    mode: str = "workspace-write",
    network: str = "off",
    approval: str = "ask",
    runner_failure_signatures: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Entries for `open_harness`: the embedded default's shape on the fake `runner`.

    No session-log entry, so sessions live in this process's memory (a `MemoryStore`)
    for the harness's life. The approval entry names no answerer: give yours to
    `open_harness(answerers=[...])` (nobody answering is `unavailable`, never a prompt).
    """
    sandbox: dict[str, Any] = {"runner_command": os.fspath(runner)}
    if runner_failure_signatures:
        sandbox["runner_failure_signatures"] = list(runner_failure_signatures)
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": sandbox},
        {
            "id": "bash",
            "name": "stockade.bash.sandbox",
            "config": {"mode": mode, "network": network},
        },
        {
            "id": "approval",
            "name": "stockade.approval.user",
            "config": {"policy": approval, "answerers": []},
        },
        {"id": "permission", "name": "stockade.permission.presets"},
        {"id": "fs", "name": "stockade.fs.sandbox"},
    ]


def memory_store(*extra_events: type[SessionEvent]) -> MemoryStore:
    """An in-memory session store that reads every event the harness writes (and
    `extra_events`), for `stockade.sessionlog.open_session_log` and `Session`."""
    return MemoryStore(registry=harness_registry(*extra_events))


__all__ = [
    "PASS_THROUGH",
    "MemoryStore",
    "ScriptedAnswerer",
    "composition",
    "fake_runner",
    "memory_store",
    "scripted",
]

"""docs/embedding.md's walk-throughs run as they are written (issue 22, item 7).

Every ```python block preceded by `<!-- doc-test: run with a project directory -->`
is written to a file and run in a fresh interpreter with a new project directory as
its argument; the test then judges what the block's effects left on disk and in
the session log, not only its output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..support import require_backend

DOC = Path(__file__).resolve().parents[2] / "docs" / "embedding.md"
MARKER = "<!-- doc-test: run with a project directory -->"
BLOCK = re.compile(re.escape(MARKER) + r"\n```python\n(.*?)\n```", re.DOTALL)


def blocks() -> list[str]:
    found = BLOCK.findall(DOC.read_text(encoding="utf-8"))
    assert len(found) == 2, "the Trio and the asyncio walk-through"
    return found


@pytest.mark.parametrize("index", [0, 1], ids=["trio", "asyncio"])
def test_the_walk_through_runs_as_written(index, tmp_path, state_dir_outside):
    require_backend("bwrap")
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "walk.py"
    script.write_text(blocks()[index], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(project)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "STOCKADE_STATE_DIR": state_dir_outside, "STOCKADE_CONFIG": ""},
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    written = project / ("hello.txt" if index == 0 else "from-asyncio.txt")
    assert written.read_text() == "hi\n"  # the approved retry, and only it, wrote
    assert "workspace-write 0" in done.stdout
    (log,) = Path(state_dir_outside).glob("*.jsonl")
    tags = [json.loads(line)["type"] for line in log.read_text().splitlines()]
    assert tags[0] == "session/header"
    assert "approval/answered" in tags and "tool/result" in tags
    if index == 0:
        assert "sandbox: file access denied under read-only mode" in done.stdout
        assert "mode: read-only" in done.stdout  # a grant never switches the session
        assert "1 session/header" in done.stdout  # the log read back through events()

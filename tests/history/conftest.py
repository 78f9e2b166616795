from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from stockade.history import HistoryConfig, SnapshotStore, Tracker


@pytest.fixture
def root(tmp_path) -> str:
    path = tmp_path / "root"
    path.mkdir()
    return str(path)


@pytest.fixture
def store(tmp_path) -> Iterator[SnapshotStore]:
    opened = SnapshotStore.open(str(tmp_path / "state" / "history"))
    yield opened
    opened.close()


@pytest.fixture(params=["watch", "scan"])
def method(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_tracker(root, store, method) -> Iterator:
    """Open trackers on `root` (watching or scanning, per `method`); all closed after."""
    opened: list[Tracker] = []

    def make(**config: object) -> Tracker:
        tracker = Tracker.open(root, store, HistoryConfig(watch=method == "watch", **config))  # type: ignore[arg-type]
        assert tracker.method == method, tracker.why_scanning
        opened.append(tracker)
        return tracker

    yield make
    for tracker in opened:
        tracker.close()


def populate(root: str) -> None:
    """A small project: nested directories, modes, a link, an ignored build directory."""
    files = {
        "README.md": "# project\n",
        "src/app.py": "print('hi')\n",
        "src/lib/util.py": "def f():\n    return 1\n",
        "src/lib/data.json": '{"a": 1}\n',
        "docs/guide.md": "guide\n",
        ".gitignore": "build/\n*.log\n",
        "build/out.bin": "compiled",
        "run.log": "log line\n",
    }
    for relative, text in files.items():
        path = os.path.join(root, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    os.chmod(os.path.join(root, "src/app.py"), 0o755)
    os.symlink("lib/util.py", os.path.join(root, "src/util-link"))
    os.makedirs(os.path.join(root, ".git/objects"))
    with open(os.path.join(root, ".git/HEAD"), "w") as handle:
        handle.write("ref: refs/heads/main\n")

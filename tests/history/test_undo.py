"""Undo and restore on a real tree, watched and scanned: every kind of change a call can
make comes back exactly (the tree's hash before the call equals its hash after the
undo), conflicts name the later call, and a restore goes back to any point."""

from __future__ import annotations

import os

from .conftest import populate
from .support import Session, tree_hash, tree_state, write


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


# What the history leaves out of a tree hash: the repository and ignored output.
LEFT_OUT = (".git", "build", "run.log")


def _everything(root: str) -> None:
    """One call that creates, modifies, deletes, renames, chmods and links."""
    write(f"{root}/new/deep/file.txt", "created\n")
    write(f"{root}/README.md", "# rewritten\n")
    os.unlink(f"{root}/docs/guide.md")
    os.rmdir(f"{root}/docs")
    os.rename(f"{root}/src/lib", f"{root}/src/library")
    os.rename(f"{root}/src/app.py", f"{root}/src/main.py")
    os.chmod(f"{root}/src/main.py", 0o600)
    os.chmod(f"{root}/src", 0o750)
    os.unlink(f"{root}/src/util-link")
    os.symlink("library/util.py", f"{root}/src/util-link")
    os.symlink("/etc/passwd", f"{root}/outside-link")
    os.mkdir(f"{root}/empty", 0o700)


def test_a_call_that_does_everything_is_undone_exactly(root, open_tracker):
    populate(root)
    tracker = open_tracker()
    session = Session(tracker)
    before = tree_hash(root, leave_out=LEFT_OUT)
    call = session.call(lambda: _everything(root))
    change = session.last_change
    assert "new/deep/file.txt" in change.created
    assert "README.md" in change.modified
    assert "docs/guide.md" in change.deleted
    assert "src/library/util.py" in change.created and "src/lib/util.py" in change.deleted
    assert "src/main.py" in change.created and "src/app.py" in change.deleted
    assert "src" in change.modified  # its mode
    assert "src/util-link" in change.modified and "outside-link" in change.created
    assert not any(p.startswith((".git", "build")) or p == "run.log" for p in change.items)
    assert tree_hash(root, leave_out=LEFT_OUT) != before

    plan, applied = session.undo(call)
    assert not plan.blocked, plan.conflicts
    assert applied is not None and not applied.left
    assert tree_hash(root, leave_out=LEFT_OUT) == before
    assert os.readlink(f"{root}/src/util-link") == "lib/util.py"
    assert not os.path.lexists(f"{root}/outside-link")


def test_the_undo_is_itself_recorded_and_can_be_restored_away(root, open_tracker):
    populate(root)
    session = Session(open_tracker())
    call = session.call(lambda: write(f"{root}/README.md", "changed\n"))
    after_call = tree_hash(root, leave_out=LEFT_OUT)
    session.undo(call)
    assert _read(f"{root}/README.md") == "# project\n"
    undone = session.events[-1]
    assert undone.tag == "files/undone" and undone.change.modified == 1
    # Restoring to before the undo's own record brings the call's result back.
    plan, _ = session.restore(undone.seq - 1)
    assert not plan.blocked
    assert tree_hash(root, leave_out=LEFT_OUT) == after_call


def test_undo_is_refused_when_a_later_call_changed_the_same_path(root, open_tracker):
    populate(root)
    session = Session(open_tracker())
    start = tree_hash(root, leave_out=LEFT_OUT)
    first = session.call(lambda: write(f"{root}/src/app.py", "print('one')\n"))
    second = session.call(lambda: write(f"{root}/src/app.py", "print('two')\n"))
    plan, applied = session.undo(first)
    assert plan.blocked and applied is None
    assert plan.conflicting_calls and f"call {second}" in str(plan.conflicts[0])
    assert _read(f"{root}/src/app.py") == "print('two')\n"  # nothing was touched
    # Restoring to before the first call works.
    plan, applied = session.restore(first)
    assert not plan.blocked and applied is not None and not applied.left
    assert tree_hash(root, leave_out=LEFT_OUT) == start


def test_undo_of_a_call_whose_directory_a_later_call_filled_is_refused(root, open_tracker):
    session = Session(open_tracker())
    first = session.call(lambda: write(f"{root}/pkg/a.py", "a"))
    second = session.call(lambda: write(f"{root}/pkg/b.py", "b"))
    plan, _ = session.undo(first)
    assert plan.blocked
    assert any(c.path == "pkg" and c.seq is not None for c in plan.conflicts)
    assert f"call {second}" in " ".join(map(str, plan.conflicts))
    # The later call alone undoes cleanly, then the first one too.
    assert not session.undo(second)[0].blocked
    assert not session.undo(first)[0].blocked
    assert not os.path.exists(f"{root}/pkg")


def test_an_edit_outside_any_call_blocks_the_undo_of_what_it_overwrote(root, open_tracker):
    session = Session(open_tracker())
    call = session.call(lambda: write(f"{root}/notes.txt", "agent\n"))
    write(f"{root}/notes.txt", "person\n")  # an editor, between calls
    plan, applied = session.undo(call)
    assert plan.blocked and applied is None
    assert "outside any call" in str(plan.conflicts[0])
    assert _read(f"{root}/notes.txt") == "person\n"


def test_restore_to_a_point_between_calls(root, open_tracker):
    populate(root)
    session = Session(open_tracker())
    session.call(lambda: write(f"{root}/one.txt", "1"))
    middle = tree_state(root, leave_out=LEFT_OUT)
    second = session.call(lambda: (write(f"{root}/two.txt", "2"), os.unlink(f"{root}/one.txt")))
    session.call(lambda: write(f"{root}/README.md", "3"))
    plan, applied = session.restore(second)
    assert not plan.blocked and applied is not None and not applied.left
    assert tree_state(root, leave_out=LEFT_OUT) == middle


def test_undo_of_a_call_that_changed_nothing_plans_nothing(root, open_tracker):
    session = Session(open_tracker())
    call = session.call(lambda: None)
    plan, applied = session.undo(call)
    assert not plan.targets and not plan.blocked
    assert applied is not None and not applied.done


def test_an_undo_twice_is_refused_the_second_time(root, open_tracker):
    session = Session(open_tracker())
    call = session.call(lambda: write(f"{root}/x", "x"))
    assert not session.undo(call)[0].blocked
    plan, _ = session.undo(call)
    assert plan.blocked and "already undone" in str(plan.conflicts[0])


def test_a_name_that_is_not_utf8_comes_back(root, open_tracker):
    session = Session(open_tracker())
    name = os.fsdecode(b"caf\xe9.txt")
    write(os.path.join(root, name), "old")
    call = session.call(lambda: write(os.path.join(root, name), "new"))
    assert session.events[-1].change.modified_paths == ("caf\\xe9.txt",)
    session.undo(call)
    with open(os.path.join(root, name)) as handle:
        assert handle.read() == "old"

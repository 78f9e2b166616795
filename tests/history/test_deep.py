"""A tree nested thousands of directories deep (a command's `mkdir d; cd d` in a loop)
is recorded and undone in time proportional to its size: no recursion as deep as the
tree, no walk up every path for every path."""

from __future__ import annotations

import os
import sys
import time

from .support import Session, tree_state, write

DEPTH = 5000


def _nest(root: str, depth: int) -> None:
    """`depth` directories `d` one inside the other, a file at the bottom, each reached
    from its parent's descriptor (a path that long is beyond PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


def test_a_tree_deeper_than_the_recursion_limit_is_recorded_and_undone(root, open_tracker):
    # The control: the tree is deeper than Python lets a function recurse, so a walk
    # that recursed per directory (as the descriptor lookup did) could not reach its
    # bottom.
    assert sys.getrecursionlimit() < DEPTH
    session = Session(open_tracker())
    write(f"{root}/keep.txt", "kept\n")
    before = tree_state(root)
    started = time.monotonic()

    def nest() -> None:
        write(f"{root}/.gitignore", "*.log\n")  # the rules change in the same call
        _nest(root, DEPTH)

    call = session.call(nest)
    recorded = time.monotonic() - started
    assert session.last_change is not None
    assert len(session.last_change.items) == DEPTH + 2  # the directories, f, .gitignore
    plan, applied = session.undo(call)
    assert not plan.blocked and applied is not None and applied.left == ()
    assert tree_state(root) == before
    # Proportional to the tree (a few seconds here), not its depth cubed (the walk up
    # every path for every path took minutes at this depth).
    assert recorded < 30 and time.monotonic() - started < 60

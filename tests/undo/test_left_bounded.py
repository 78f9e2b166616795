"""What an undo could not do is bounded in its event and counted (issue 42): a confined
command chooses how many paths an undo leaves, so the session log's line lists at most
`listed_paths` of each and every face says the true totals."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from stockade import open_harness
from stockade.acp.transcript import undo_note
from stockade.faces import outcome_facts, outcome_line
from stockade.history import FilesRestored, FilesUndone, UndoOutcome

from .conftest import composition

LISTED = 2
MANY = 5
# Call 1 makes MANY files over the content budget: never stored. Call 2 deletes them (an
# undo of it cannot make them again: unrecorded) and makes MANY directories holding only
# an ignored file (an undo of it cannot remove them: left).
MAKE_BIG = f"for i in $(seq {MANY}); do head -c 5000 /dev/zero > big$i.bin; done"
SWAP = f"rm big*.bin; for i in $(seq {MANY}); do mkdir d$i; echo x > d$i/a.log; done"


def _logged_line(state_dir: str, seq: int) -> bytes:
    """The session log's own line for the event stamped `seq`, as it lies on disk."""
    lines = [
        line
        for log in Path(state_dir).rglob("*.jsonl")
        for line in log.read_bytes().splitlines()
        if line.startswith(b"{") and json.loads(line).get("seq") == seq
    ]
    (line,) = [line for line in lines if json.loads(line)["type"].startswith("files/")]
    return line


@pytest.mark.parametrize("kind", ["undo", "restore"])
async def test_an_undo_leaving_many_paths_lists_the_first_and_counts_them_all(
    state_dir, root, kind
):
    (root / ".gitignore").write_text("*.log\n")
    history = {"file_budget": 4096, "listed_paths": LISTED}
    async with open_harness(composition(state_dir, history=history)) as harness:
        session = await harness.open_session(cwd=root)
        made = await session.run_tool("bash", {"command": MAKE_BIG})
        assert made.facts["changed"]["created"] == MANY, made.facts
        swapped = await session.run_tool("bash", {"command": SWAP})
        assert swapped.facts.get("exit_code") == 0, swapped.text
        second = (await session.undoable_calls())[1].seq
        if kind == "undo":
            outcome = await session.undo(second)
        else:
            outcome = await session.restore(second)
        events = await session.events()

    # On disk: nothing of the big files came back, every directory was left in place.
    assert not list(root.glob("big*.bin"))
    assert sorted(p.name for p in root.glob("d*")) == [f"d{i}" for i in range(1, MANY + 1)]

    # The log's line lists LISTED of each and counts the rest.
    event_type = FilesUndone if kind == "undo" else FilesRestored
    logged = msgspec.json.decode(_logged_line(state_dir, outcome.event_seq), type=event_type)
    assert len(logged.left) == LISTED and logged.left_unlisted == MANY - LISTED
    assert len(logged.unrecorded) == LISTED and logged.unrecorded_unlisted == MANY - LISTED
    assert all(path.startswith("big") for path in logged.unrecorded)
    assert all(": it holds files the history does not record" in why for why in logged.left)
    (read,) = [e for e in events if e.seq == outcome.event_seq]
    assert read == logged

    # The harness's answer and every face say the true totals.
    assert outcome == UndoOutcome.of(logged)
    assert (outcome.left_count, outcome.unrecorded_count) == (MANY, MANY)
    facts = outcome_facts(outcome)
    assert (facts["left_count"], facts["unrecorded_count"]) == (MANY, MANY)
    assert facts["left"] == list(logged.left) and facts["unrecorded"] == list(logged.unrecorded)
    line = outcome_line(outcome)
    assert line.count(f"(and {MANY - LISTED} more)") == 2, line
    note = undo_note(logged, {})
    assert note.count(f" and {MANY - LISTED} more") == 2, note


def test_an_undo_logged_before_the_lists_were_bounded_counts_what_it_holds():
    left = [f"d{i}: it holds files the history does not record; left in place" for i in range(7)]
    unrecorded = [f"big{i}.bin" for i in range(30)]
    line = json.dumps(
        {
            "type": "files/undone",
            "seq": 9,
            "call": 3,
            "change": {"deleted": 7},
            "left": left,
            "unrecorded": unrecorded,
        }
    ).encode()
    event = msgspec.json.decode(line, type=FilesUndone)
    assert (event.left_count, event.unrecorded_count) == (7, 30)
    outcome = UndoOutcome.of(event)
    assert outcome.left == tuple(left) and outcome.unrecorded == tuple(unrecorded)
    facts = outcome_facts(outcome)
    assert (facts["left_count"], facts["unrecorded_count"]) == (7, 30)
    assert "(and 25 more)" in outcome_line(outcome)


def test_an_undo_that_left_few_paths_writes_the_line_it_wrote_before():
    # No count is written while the lists are whole: a log reader of before reads it.
    event = FilesRestored(before=4, left=("a: why",), unrecorded=("b",))
    assert msgspec.json.decode(msgspec.json.encode(event)) == {
        "type": "files/restored",
        "before": 4,
        "change": {},
        "left": ["a: why"],
        "unrecorded": ["b"],
    }

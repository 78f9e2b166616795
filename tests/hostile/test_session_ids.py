"""Hostile session ids never escape the state directory (nor create anything anywhere).

A session id is 1-128 of [A-Za-z0-9._-], starting with a letter or digit
(docs/sessionlog.md). Anything else is refused with InvalidSessionId before any
file is touched, through every door that takes an id.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade import open_harness
from stockade.errors import StockadeError
from stockade.sessionlog import InvalidSessionId, JsonlStore, check_session_id

from ..faults._support import composition

HOSTILE_IDS = [
    "../x",
    "../../../../tmp/stockade-escaped",
    "/tmp/stockade-escaped",
    "a/b",
    "a/../../b",
    "..",
    ".",
    "",
    ".hidden",
    "-rf",
    "_x",
    "x" * 129,
    "abc\n",  # `$` in a regex matches before a trailing newline: fixed with fullmatch
    "abc\r",
    "a\x00b",
    "a\\b",
    " x",
    "x ",
    "é",
    "x\u2028",
    "%2e%2e%2fx",
    "~",
    "x.jsonl/..",
]


def tree(root: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(directory, name), root)
        for directory, dirs, files in os.walk(root)
        for name in dirs + files
    }


@pytest.mark.parametrize("session_id", HOSTILE_IDS)
async def test_a_hostile_session_id_is_refused_and_creates_nothing(base, project, session_id):
    state_dir = base / "deep" / "state"
    state_dir.mkdir(parents=True)
    before = tree(base), tree(project)
    async with open_harness(composition(state_dir)) as harness:
        with pytest.raises(InvalidSessionId, match="invalid session id"):
            await harness.open_session(session_id=session_id, cwd=project)
        parent = await harness.open_session(cwd=project)
        with pytest.raises(InvalidSessionId, match="invalid session id"):
            await parent.fork_child(session_id=session_id)
        await parent.close()
    with pytest.raises(InvalidSessionId):
        JsonlStore(state_dir).path_for(session_id)
    after = tree(base), tree(project)
    created = (after[0] - before[0]) - {f"deep/state/{parent.id}.jsonl"}
    assert created == set() and after[1] == before[1], created
    assert not Path("/tmp/stockade-escaped").exists()
    assert not (base / "deep" / "x.jsonl").exists()


@pytest.mark.parametrize("session_id", [5, b"abc", Path("abc"), ["abc"], 1.5])
async def test_a_session_id_that_is_not_text_is_refused(state_dir, project, session_id):
    async with open_harness(composition(state_dir)) as harness:
        with pytest.raises(InvalidSessionId):
            await harness.open_session(session_id=session_id, cwd=project)
    assert list(state_dir.iterdir()) == []


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=140))
def test_an_accepted_id_always_names_a_plain_file_in_the_state_directory(session_id):
    try:
        check_session_id(session_id)
    except InvalidSessionId:
        return
    assert 1 <= len(session_id) <= 128
    assert session_id.isascii() and session_id[0].isalnum()
    assert set(session_id) <= set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
    )
    path = JsonlStore("/state").path_for(session_id)
    assert path.parent == Path("/state") and path.name == f"{session_id}.jsonl"


async def test_a_link_planted_in_the_state_directory_is_not_followed(base, project):
    """Hardening beside the id check: the log is opened with O_NOFOLLOW."""
    state_dir = base / "links"
    state_dir.mkdir()
    outside = base / "outside.txt"
    outside.write_text("precious\n")
    (state_dir / "victim.jsonl").symlink_to(outside)
    async with open_harness(composition(state_dir)) as harness:
        with pytest.raises(StockadeError, match="symbolic link"):
            await harness.open_session(session_id="victim", cwd=project)
    assert outside.read_text() == "precious\n"

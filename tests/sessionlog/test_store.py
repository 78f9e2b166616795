"""The stores on their own (blocking API): files, recovery, locks, state directories."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import msgspec
import pytest

from stockade.events import LogCorrupt, SessionEvent, UnknownEventType
from stockade.sessionlog import (
    InvalidSessionId,
    JsonlStore,
    MemoryStore,
    SessionLocked,
    default_state_dir,
    resolve_state_dir,
)

from ._helpers import TEST_EVENTS, CountingFsync, Note, child_argv, child_env


def notes(first: int, count: int) -> list[SessionEvent]:
    return [Note(n=i, seq=i, ts=1.0) for i in range(first, first + count)]


def test_jsonl_round_trip_and_resume(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path / "sessions", registry=TEST_EVENTS)
    opened = store.open("s1")
    assert opened.events == () and opened.torn is None
    opened.handle.append(notes(1, 3))
    opened.handle.append(notes(4, 1))
    opened.handle.close()
    opened.handle.close()  # idempotent
    path = tmp_path / "sessions" / "s1.jsonl"
    assert opened.location == str(path)
    assert path.read_bytes().count(b"\n") == 4
    assert path.stat().st_mode & 0o777 == 0o600
    again = JsonlStore(tmp_path / "sessions", registry=TEST_EVENTS).open("s1")
    assert [e.seq for e in again.events] == [1, 2, 3, 4]
    again.handle.close()


def test_every_append_is_fsynced_and_a_new_file_fsyncs_its_directory(tmp_path: Path) -> None:
    fsync = CountingFsync()
    opened = JsonlStore(tmp_path, registry=TEST_EVENTS, fsync=fsync).open("s")
    assert fsync.count == 1  # the directory entry of the new file
    opened.handle.append(notes(1, 5))
    assert fsync.count == 2
    opened.handle.close()


def test_a_hand_made_torn_tail_is_cut_and_reported_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.jsonl"
    good = TEST_EVENTS.encode_lines(notes(1, 3))
    path.write_bytes(good + b'{"type":"test/note","seq":4,"ts":1.0,"n":4,"pay')
    store = JsonlStore(tmp_path, registry=TEST_EVENTS)
    with caplog.at_level(logging.WARNING, logger="stockade.sessionlog"):
        opened = store.open("s")
    assert [e.seq for e in opened.events] == [1, 2, 3]
    assert opened.torn is not None and opened.torn.line == 4
    assert store.torn_tails_cut == 1
    assert path.read_bytes() == good
    (record,) = caplog.records
    assert f"{path}:4: cut a torn last line" in record.getMessage()
    # Appends continue right after the kept events.
    opened.handle.append(notes(4, 1))
    opened.handle.close()
    caplog.clear()
    again = store.open("s")
    assert [e.seq for e in again.events] == [1, 2, 3, 4]
    assert again.torn is None and store.torn_tails_cut == 1 and not caplog.records
    again.handle.close()


def test_a_corrupt_middle_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rows = TEST_EVENTS.encode_lines(notes(1, 3)).split(b"\n")
    data = b"\n".join([rows[0], rows[1][:-9] + b"#garbage#", rows[2], b""])
    path.write_bytes(data)
    with pytest.raises(LogCorrupt) as caught:
        JsonlStore(tmp_path, registry=TEST_EVENTS).open("s")
    assert caught.value.where == f"{path}:2"
    assert str(caught.value).startswith(f"{path}:2: line is not JSON")
    assert "was not changed" in str(caught.value)
    assert path.read_bytes() == data
    # The refusal released the lock: a later open fails the same way, not as locked.
    with pytest.raises(LogCorrupt):
        JsonlStore(tmp_path, registry=TEST_EVENTS).open("s")


def test_an_unknown_type_on_disk_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_bytes(TEST_EVENTS.encode_lines(notes(1, 2)))
    with pytest.raises(UnknownEventType, match=r"s\.jsonl:1: unknown event type 'test/note'"):
        JsonlStore(tmp_path).open("s")  # the built-in registry lacks test/note


def test_a_second_opener_in_this_process_is_locked_out(tmp_path: Path) -> None:
    first = JsonlStore(tmp_path, registry=TEST_EVENTS).open("s")
    with pytest.raises(SessionLocked) as caught:
        JsonlStore(tmp_path, registry=TEST_EVENTS).open("s")
    assert str(tmp_path / "s.jsonl") in str(caught.value)
    assert "Close that session" in str(caught.value)
    first.handle.close()
    JsonlStore(tmp_path, registry=TEST_EVENTS).open("s").handle.close()


def test_a_second_opener_in_another_process_is_locked_out(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        child_argv("hold", str(tmp_path), "s"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=child_env(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        with pytest.raises(SessionLocked, match="already open for writing elsewhere"):
            JsonlStore(tmp_path, registry=TEST_EVENTS).open("s")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=10) == 0
    JsonlStore(tmp_path, registry=TEST_EVENTS).open("s").handle.close()


def test_a_failed_write_leaves_no_bytes_behind(tmp_path: Path) -> None:
    def failing_fsync(fd: int) -> None:
        raise OSError(5, "EIO")

    store = JsonlStore(tmp_path, registry=TEST_EVENTS)
    opened = store.open("s")
    opened.handle.append(notes(1, 1))
    size = (tmp_path / "s.jsonl").stat().st_size
    opened.handle.fsync = failing_fsync  # type: ignore[attr-defined]
    with pytest.raises(OSError, match="EIO"):
        opened.handle.append(notes(2, 1))
    assert (tmp_path / "s.jsonl").stat().st_size == size
    opened.handle.close()


@pytest.mark.parametrize("bad", ["", "../x", ".hidden", "a/b", "x" * 129, "sp ace"])
def test_session_ids_must_name_a_file(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InvalidSessionId, match="invalid session id"):
        JsonlStore(tmp_path).open(bad)


def test_memory_store_follows_the_same_rules() -> None:
    store = MemoryStore(registry=TEST_EVENTS)
    opened = store.open("s")
    with pytest.raises(SessionLocked, match="memory:s"):
        store.open("s")
    opened.handle.append(notes(1, 2))
    opened.handle.close()
    store.files["s"] += b'{"type":"test/note","se'
    again = store.open("s")
    assert [e.seq for e in again.events] == [1, 2]
    assert again.torn is not None and store.torn_tails_cut == 1
    assert bytes(store.files["s"]).endswith(b"}\n")
    again.handle.close()
    store.files["s"][5] = ord("#")
    with pytest.raises(LogCorrupt, match="memory:s:1"):
        store.open("s")


def test_state_dir_resolution(tmp_path: Path) -> None:
    assert default_state_dir({"HOME": "/h"}) == Path("/h/.local/state/stockade/sessions")
    assert default_state_dir({"HOME": "/h", "XDG_STATE_HOME": "/x"}) == Path("/x/stockade/sessions")
    # A relative XDG value is invalid by the spec and ignored.
    assert default_state_dir({"HOME": "/h", "XDG_STATE_HOME": "rel"}) == Path(
        "/h/.local/state/stockade/sessions"
    )
    env = {"HOME": "/h", "STOCKADE_STATE_DIR": "/env/dir"}
    assert resolve_state_dir("/configured", env) == Path("/env/dir")
    assert resolve_state_dir("/configured", {"HOME": "/h"}) == Path("/configured")
    assert resolve_state_dir(None, {"HOME": "/h"}) == Path("/h/.local/state/stockade/sessions")


def test_lines_are_plain_json(tmp_path: Path) -> None:
    opened = JsonlStore(tmp_path, registry=TEST_EVENTS).open("s")
    opened.handle.append(notes(1, 2))
    opened.handle.close()
    rows = (tmp_path / "s.jsonl").read_bytes().splitlines()
    assert [msgspec.json.decode(row)["type"] for row in rows] == ["test/note", "test/note"]

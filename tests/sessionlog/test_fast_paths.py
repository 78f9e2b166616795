"""The session log's fast paths mean exactly what the slow ones do.

- `scan_log` decodes stretches of lines at once; on any log, whole, torn or corrupt,
  it returns what the line-by-line rule returns, or raises the same error.
- A read returns an `EventView` shared with the log: it behaves as the tuple of its
  events, never changes once made, and `find_last` over it answers as a walk does.
- Events stay out of the cyclic GC, and a scan pauses the GC without losing its state.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.events import (
    CommittedEvents,
    EventView,
    LogCorrupt,
    SessionEvent,
    SessionHeader,
    find_last,
)
from stockade.policy import ApprovalPolicySet, PolicyContext, PresetSelected, SandboxModeSet
from stockade.sessionlog import _scan, scan_log
from stockade.sessionlog.stores.jsonl import _read_all
from stockade.vocab import ApprovalPolicy, SandboxMode

from ._helpers import TEST_EVENTS, Note

WHERE = "fast.jsonl"
EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- strategies ---------------------------------------------------------------------------

text = st.text(max_size=12)
event = st.one_of(
    st.builds(Note, n=st.integers(-5, 10**12), payload=text),
    st.builds(SessionHeader, cwd=st.none() | text, parent=st.none() | text),
    st.builds(SandboxModeSet, mode=st.sampled_from(list(SandboxMode)), source=st.none() | text),
    st.builds(ApprovalPolicySet, policy=st.sampled_from(list(ApprovalPolicy))),
    st.builds(PresetSelected, name=text),
    st.builds(
        PolicyContext,
        text=st.text(max_size=20),  # newlines in a value are escaped, never raw
        sandbox_mode=st.sampled_from(list(SandboxMode)),
        workspace_root=text,
        approval_policy=st.sampled_from(list(ApprovalPolicy)),
        source=st.none() | text,
    ),
)


def stamp(events: list[SessionEvent]) -> list[SessionEvent]:
    return [msgspec.structs.replace(e, seq=i, ts=1.25) for i, e in enumerate(events, 1)]


# Edits that turn a log into torn, corrupt or oddly shaped ones: bytes a crash, a
# hand edit or an attacker could leave, aimed at line boundaries and JSON structure.
PIECES = [
    b"\n",
    b"\n\n",
    b" ",
    b"\r",
    b"\t",
    b"{",
    b"}",
    b"}{",
    b"} {",
    b",",
    b"[",
    b"]",
    b'"',
    b"\x00",
    b"\xff",
    b"x",
    b"null",
    b'{"type":"nope/x","seq":1}',
    b'{"type":"test/note","seq":1,"n":"one"}',
    b'{"type":"test/note","n":1}',
    b"garbage\n",
]


@st.composite
def edited_logs(draw: st.DrawFn) -> bytes:
    events = stamp(draw(st.lists(event, min_size=0, max_size=10)))
    data = bytearray(TEST_EVENTS.encode_lines(events))
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["cut", "put", "drop", "insert", "swap", "join", "dup"]))
        at = draw(st.integers(0, len(data)))
        if kind == "cut":
            del data[at:]
        elif kind == "put" and at < len(data):
            data[at : at + 1] = draw(st.sampled_from(PIECES))[:1]
        elif kind == "drop" and at < len(data):
            del data[at]
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from(PIECES))
        elif kind in ("swap", "join", "dup"):
            lines = bytes(data).split(b"\n")
            if len(lines) >= 3:
                i = draw(st.integers(0, len(lines) - 3))
                if kind == "swap":
                    lines[i], lines[i + 1] = lines[i + 1], lines[i]
                elif kind == "join":  # two values on one line
                    lines[i : i + 2] = [
                        lines[i] + draw(st.sampled_from([b"", b" ", b","])) + lines[i + 1]
                    ]
                else:
                    lines.insert(i, lines[i])
                data = bytearray(b"\n".join(lines))
    return bytes(data)


def outcome_of(scan: Callable[[], Any]) -> Any:
    try:
        return ("ok", scan())
    except LogCorrupt as error:
        return ("corrupt", type(error), str(error), error.where, error.reason)


def by_the_rule(data: bytes) -> Any:
    return outcome_of(lambda: _scan._scan_lines(data, WHERE, TEST_EVENTS, [], 0))


def fast(data: bytes, stretch: int) -> Any:
    saved = _scan._STRETCH
    _scan._STRETCH = stretch
    try:
        return outcome_of(lambda: scan_log(data, WHERE, TEST_EVENTS))
    finally:
        _scan._STRETCH = saved


STRETCHES = st.sampled_from([1, 2, 7, 64, 1 << 22])


# --- scan_log against the line-by-line rule -------------------------------------------------


@EXAMPLES
@given(edited_logs(), STRETCHES)
def test_the_fast_scan_says_what_the_rule_says_on_any_log(data: bytes, stretch: int) -> None:
    assert fast(data, stretch) == by_the_rule(data)


@EXAMPLES
@given(st.lists(event, min_size=1, max_size=12), STRETCHES, st.data())
def test_the_fast_scan_of_a_torn_log_keeps_every_whole_line(
    events: list[SessionEvent], stretch: int, data: st.DataObject
) -> None:
    encoded = TEST_EVENTS.encode_lines(stamp(events))
    cut = data.draw(st.integers(0, len(encoded)))
    result = fast(encoded[:cut], stretch)
    assert result == by_the_rule(encoded[:cut])
    assert result[0] == "ok"  # a cut log is torn at most, never corrupt
    assert len(result[1].events) == encoded[:cut].count(b"\n")


@EXAMPLES
@given(st.binary(max_size=200), STRETCHES)
def test_the_fast_scan_says_what_the_rule_says_on_arbitrary_bytes(
    tail: bytes, stretch: int
) -> None:
    data = TEST_EVENTS.encode_lines(stamp([SessionHeader(cwd="/w"), Note(n=1)])) + tail
    assert fast(data, stretch) == by_the_rule(data)


def note(seq: int) -> bytes:
    return b'{"type":"test/note","seq":%d,"n":%d}' % (seq, seq)


@pytest.mark.parametrize(
    ("data", "where"),
    [
        # Shapes a stream decoder would take in stride, each refused at its line.
        (note(1) + b"\n\n" + note(2) + b"\n" + note(3) + b"\n", 2),  # a blank line
        (note(1) + b" " + note(2) + b"\n" + note(3) + b"\n", 1),  # two values on one line
        (note(1) + note(2) + b"\n" + note(3) + b"\n", 1),
        (b'{"type":"test/note",\n"seq":1,"n":1}\n' + note(2) + b"\n", 1),  # one value, two lines
        (note(1) + b"\n" + note(3) + b"\n", 2),  # a seq gap
        (note(1) + b"\n" + note(2) + b"\r\n" + note(3) + b"\n\r\n" + note(4) + b"\n", 4),
    ],
)
def test_lines_are_lines_for_the_fast_scan_too(data: bytes, where: int) -> None:
    for stretch in (1, 64, 1 << 22):
        result = fast(data, stretch)
        assert result == by_the_rule(data)
        assert result[0] == "corrupt" and result[3] == f"{WHERE}:{where}"


def test_whitespace_around_a_line_s_value_is_json_to_both() -> None:
    data = b" " + note(1) + b"\t\n" + note(2) + b"\r\n"
    for stretch in (1, 64, 1 << 22):
        result = fast(data, stretch)
        assert result == by_the_rule(data)
        assert result[0] == "ok" and [e.seq for e in result[1].events] == [1, 2]


def test_a_long_log_goes_through_in_stretches(monkeypatch: pytest.MonkeyPatch) -> None:
    events = stamp([Note(n=i, payload="p" * (i % 50)) for i in range(3000)])
    data = TEST_EVENTS.encode_lines(events)
    monkeypatch.setattr(_scan, "_STRETCH", 1000)
    scan = scan_log(data + b'{"type":"test/no', WHERE, TEST_EVENTS)
    assert scan.events == tuple(events)
    assert scan.good_length == len(data) and scan.torn is not None and scan.torn.line == 3001
    # A fault deep in the log is still reported at its line.
    lines = data.split(b"\n")
    lines[2500] = b'{"type":"test/note","seq":2501,"n":"x"}'
    with pytest.raises(LogCorrupt, match=rf"^{WHERE}:2501: invalid event"):
        scan_log(b"\n".join(lines), WHERE, TEST_EVENTS)


def test_the_whole_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "log"
    for size in (0, 1, 1 << 16, (1 << 20) + 3):
        payload = os.urandom(size)
        path.write_bytes(payload)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert _read_all(fd) == payload
        finally:
            os.close(fd)


# --- the GC -----------------------------------------------------------------------------


def test_events_are_not_tracked_by_the_cyclic_gc() -> None:
    data = TEST_EVENTS.encode_lines(stamp([Note(n=1), SessionHeader(cwd="/w")]))
    for one in (*scan_log(data, WHERE, TEST_EVENTS).events, Note(n=2), PresetSelected(name="x")):
        assert not gc.is_tracked(one)


def test_a_scan_pauses_the_gc_and_restores_it() -> None:
    data = TEST_EVENTS.encode_lines(stamp([Note(n=1)]))
    seen = []
    assert gc.isenabled()
    with _scan._gc_paused():
        seen.append(gc.isenabled())
        with _scan._gc_paused():
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
    assert seen == [False, False, False] and gc.isenabled()
    gc.disable()
    try:
        scan_log(data, WHERE, TEST_EVENTS)
        assert not gc.isenabled()  # a GC someone else turned off stays off
    finally:
        gc.enable()
    with pytest.raises(LogCorrupt):
        scan_log(b"x\ny\n", WHERE, TEST_EVENTS)
    assert gc.isenabled()


def test_scans_in_several_threads_leave_the_gc_on() -> None:
    data = TEST_EVENTS.encode_lines(stamp([Note(n=i) for i in range(2000)]))
    start = threading.Barrier(4)

    def scan() -> None:
        start.wait()
        for _ in range(20):
            scan_log(data, WHERE, TEST_EVENTS)

    threads = [threading.Thread(target=scan) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gc.isenabled()


# --- the shared view ------------------------------------------------------------------------


def committed(*batches: list[SessionEvent]) -> CommittedEvents:
    log = CommittedEvents()
    for batch in batches:
        log.extend(batch)
    return log


def test_a_view_behaves_as_the_tuple_of_its_events() -> None:
    events = tuple(stamp([Note(n=i) for i in range(6)]))
    view = committed(list(events[:4]), list(events[4:])).view
    assert isinstance(view, EventView)
    assert view == events and events == view and view != events[:5] and view != list(events)
    assert len(view) == 6 and bool(view) and not bool(CommittedEvents().view)
    assert view[0] is events[0] and view[-1] is events[-1] and view[-6] is events[0]
    for bad in (6, -7):
        with pytest.raises(IndexError):
            view[bad]
    assert view[1:3] == events[1:3] and view[::-2] == events[::-2] and view[9:] == ()
    assert list(view) == list(events) and list(reversed(view)) == list(reversed(events))
    assert events[2] in view and view.index(events[3]) == 3 and view.count(events[1]) == 1
    assert view + (events[0],) == (*events, events[0])  # noqa: RUF005
    assert () + view == events  # noqa: RUF005
    assert hash(view) == hash(events)
    assert repr(view) == f"EventView({events!r})"


def test_a_view_never_changes_once_made() -> None:
    events = stamp([Note(n=i) for i in range(5)])
    log = committed(events[:2])
    before = log.view
    log.extend(events[2:])
    assert before == tuple(events[:2]) and len(before) == 2
    assert list(reversed(before)) == events[1::-1] and list(before) == events[:2]
    assert find_last(before, Note) is events[1]
    assert log.view == tuple(events) and log.view != before


@EXAMPLES
@given(st.lists(st.lists(event, max_size=5), max_size=6), st.data())
def test_find_last_over_a_view_answers_as_a_walk_does(
    batches: list[list[SessionEvent]], data: st.DataObject
) -> None:
    log = CommittedEvents()
    views = [log.view]
    for batch in batches:
        views.append(log.extend(batch))
    kinds = [Note, SessionHeader, SandboxModeSet, ApprovalPolicySet, PresetSelected]
    kinds += [PolicyContext, SessionEvent, (SandboxModeSet, ApprovalPolicySet)]
    for view in views:
        walked = tuple(view)
        for kind in kinds:
            assert find_last(view, kind) is find_last(walked, kind)

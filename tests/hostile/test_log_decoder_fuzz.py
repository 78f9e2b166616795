"""Fuzzing the session-log decoder and the append path's encoder.

Whatever bytes a log file holds, `scan_log` returns the events of its lines (cutting
only a torn LAST line) or raises `LogCorrupt` naming `file:line`; it never crashes and
never skips a line. Whatever an event holds, an append either refuses it alone
(`UnencodableEvent`, the session stays usable) or writes a line that reads back.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.approval.events import ApprovalAnswered
from stockade.events import (
    LogCorrupt,
    SessionEvent,
    SessionHeader,
    UnencodableEvent,
    UnknownEventType,
)
from stockade.harness import harness_registry
from stockade.policy.knobs import SandboxModeSet
from stockade.sessionlog import JsonlStore, MemoryStore, open_session_log, scan_log
from stockade.tools.events import ToolCalled, ToolResulted
from stockade.vocab import SandboxMode

REGISTRY = harness_registry()
WHERE = "fuzz.jsonl"
EXAMPLES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- strategies ------------------------------------------------------------------------

clean_text = st.text(st.characters(codec="utf-8"), max_size=30)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | clean_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(clean_text, children, max_size=4)
    ),
    max_leaves=12,
)
arguments = st.dictionaries(clean_text, json_values, max_size=4)
events = st.one_of(
    st.builds(
        SessionHeader,
        cwd=st.none() | clean_text,
        parent=st.none() | clean_text,
        source=st.none() | clean_text,
    ),
    st.builds(SandboxModeSet, mode=st.sampled_from(list(SandboxMode)), source=st.none()),
    st.builds(ToolCalled, call_id=clean_text, name=clean_text, arguments=arguments),
    st.builds(
        ToolResulted,
        call_id=clean_text,
        name=clean_text,
        text=clean_text,
        is_error=st.booleans(),
        facts=arguments,
    ),
    st.builds(
        ApprovalAnswered,
        ask_id=clean_text,
        decision=st.sampled_from(["allowed-once", "rejected", "cancelled", "unavailable"]),
        answerer=clean_text,
        detail=st.none() | clean_text,
    ),
)


def stamped(items: list[SessionEvent]) -> list[SessionEvent]:
    return [
        msgspec.structs.replace(event, seq=index, ts=1_700_000_000.0 + index)
        for index, event in enumerate(items, start=1)
    ]


logs = st.lists(events, min_size=1, max_size=6).map(stamped)


# --- the contract every scan must keep ----------------------------------------------------


def checked_scan(data: bytes) -> tuple[SessionEvent, ...] | LogCorrupt:
    """scan_log under its contract: events for every whole line, or a located LogCorrupt."""
    try:
        scan = scan_log(data, WHERE, REGISTRY)
    except LogCorrupt as error:
        match = re.fullmatch(re.escape(WHERE) + r":(\d+)", error.where)
        assert match, error.where
        assert 1 <= int(match[1]) <= data.count(b"\n") + 1
        assert str(error).startswith(error.where + ": ")
        return error
    kept = data[: scan.good_length]
    assert kept == data[: len(kept)] and (not kept or kept.endswith(b"\n"))
    # Nothing silently dropped: one event per whole line, gapless seqs.
    assert len(scan.events) == kept.count(b"\n")
    assert [event.seq for event in scan.events] == list(range(1, len(scan.events) + 1))
    rest = data[scan.good_length :]
    if scan.torn is None:
        assert rest == b""
    else:
        # Only the LAST line may be cut: no newline in it, or only its final byte.
        assert rest and b"\n" not in rest[:-1]
        assert scan.torn.offset == scan.good_length and scan.torn.length == len(rest)
    return scan.events


@EXAMPLES
@given(logs)
def test_what_is_written_reads_back_exactly(log):
    data = REGISTRY.encode_lines(log)
    assert checked_scan(data) == tuple(log)


@EXAMPLES
@given(logs, st.data())
def test_a_cut_anywhere_keeps_every_whole_line_before_it(log, data):
    encoded = REGISTRY.encode_lines(log)
    cut = data.draw(st.integers(min_value=0, max_value=len(encoded)))
    result = checked_scan(encoded[:cut])
    assert not isinstance(result, LogCorrupt), "a prefix of a valid log is never corrupt"
    assert result == tuple(log[: encoded[:cut].count(b"\n")])


@EXAMPLES
@given(logs, st.data())
def test_a_damaged_line_is_refused_with_its_location_or_decodes(log, data):
    encoded = bytearray(REGISTRY.encode_lines(log))
    position = data.draw(st.integers(min_value=0, max_value=len(encoded) - 1))
    how = data.draw(st.sampled_from(["flip", "delete", "insert", "zero"]))
    byte = data.draw(st.integers(min_value=0, max_value=255))
    if how == "flip":
        encoded[position] = byte
    elif how == "delete":
        del encoded[position]
    elif how == "insert":
        encoded.insert(position, byte)
    else:
        encoded[position : position + 8] = b"\0" * 8
    result = checked_scan(bytes(encoded))
    damaged_line = bytes(encoded[:position]).count(b"\n") + 1
    lines = bytes(encoded).count(b"\n")
    if isinstance(result, LogCorrupt):
        # The refusal names a line at or after the first damaged one.
        assert int(result.where.rsplit(":", 1)[1]) >= min(damaged_line, lines)


@EXAMPLES
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_crash_the_decoder(data):
    checked_scan(data)


@EXAMPLES
@given(st.lists(json_values, min_size=1, max_size=4), st.booleans())
def test_arbitrary_json_lines_are_events_or_located_corruption(values, final_newline):
    data = b"\n".join(msgspec.json.encode(value) for value in values)
    checked_scan(data + (b"\n" if final_newline else b""))


@EXAMPLES
@given(logs, st.data())
def test_a_reshaped_event_is_refused_with_its_location_or_decodes(log, data):
    """Near misses: a valid line with one field removed, retyped, added or renamed."""
    lines = REGISTRY.encode_lines(log).splitlines(keepends=True)
    index = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
    raw = msgspec.json.decode(lines[index])
    key = data.draw(st.sampled_from(sorted(raw)))
    how = data.draw(st.sampled_from(["drop", "retype", "add", "rename-tag"]))
    if how == "drop":
        del raw[key]
    elif how == "retype":
        raw[key] = data.draw(json_values)
    elif how == "add":
        raw[data.draw(clean_text)] = data.draw(json_values)
    else:
        raw["type"] = data.draw(st.sampled_from(["sandbox/modes", "x", "", "tool/call"]))
    lines[index] = msgspec.json.encode(raw) + b"\n"
    checked_scan(b"".join(lines))


DEEP = 200_000


@pytest.mark.parametrize(
    "line",
    [
        b"[" * DEEP,
        b"[" * DEEP + b"]" * DEEP,
        b'{"type":"tool/call","seq":1,"call_id":"c","name":"bash","arguments":'
        + b'{"a":' * DEEP
        + b"1"
        + b"}" * DEEP
        + b"}",
        b'{"type":"session/header","seq":1,"cwd":' + b"[" * DEEP + b"]" * DEEP + b"}",
        b'{"type":"nobody/knows","seq":1}',
        b'{"type":"session/header","seq":1,"format":' + b"9" * 400 + b"}",
        b'{"type":"session/header","seq":"1"}',
        b'"\\ud800"',
    ],
    ids=[
        "deep-open",
        "deep-array",
        "deep-arguments",
        "deep-wrong-type",
        "unknown-tag",
        "huge-int",
        "seq-string",
        "lone-surrogate",
    ],
)
def test_hostile_lines_in_the_middle_are_located_corruption(line):
    header = REGISTRY.encode_lines([msgspec.structs.replace(SessionHeader(), seq=1)])
    tail = REGISTRY.encode_lines([msgspec.structs.replace(SandboxModeSet(mode="read-only"), seq=3)])
    with pytest.raises(LogCorrupt) as caught:
        scan_log(header + line + b"\n" + tail, WHERE, REGISTRY)
    assert caught.value.where == f"{WHERE}:2"
    if b"nobody/knows" in line:
        assert isinstance(caught.value, UnknownEventType)
        assert "nobody/knows" in str(caught.value)


# --- the write side: what an append accepts, it can read back ------------------------------

hostile_text = st.text(
    st.characters(codec=None, categories=None) | st.sampled_from(["\ud800", "\udcff", "\x00"]),
    max_size=20,
)


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


@EXAMPLES
@given(
    hostile_text,
    st.dictionaries(hostile_text, json_values | hostile_text, max_size=3),
)
def test_an_event_is_refused_alone_or_reads_back(text, args):
    event = ToolCalled(call_id="c", name=text, arguments=args)
    try:
        (written,) = REGISTRY.as_written([event])
    except UnencodableEvent as error:
        assert "tool/call" in str(error) and "Nothing was appended" in str(error)
        return
    stamped_event = msgspec.structs.replace(written, seq=1)
    # What the log keeps in memory is exactly what a reopen reads from disk.
    assert checked_scan(REGISTRY.encode_lines([stamped_event])) == (stamped_event,)


async def test_memory_and_disk_agree_on_values_json_cannot_hold(tmp_path: Path):
    weird = {"nan": float("nan"), "inf": float("inf"), "big": 2**64 - 1, "tuple": (1, 2)}
    async with open_session_log(JsonlStore(tmp_path, registry=REGISTRY)) as log:
        await log.open("s")
        (appended,) = await log.append("s", ToolCalled(call_id="c", name="n", arguments=weird))
        live = await log.read("s")
        await log.close("s")
        resumed = (await log.open("s")).events
    expected = {"nan": None, "inf": None, "big": 2**64 - 1, "tuple": [1, 2]}
    assert appended.arguments == live[0].arguments == resumed[0].arguments == expected


@pytest.mark.parametrize(
    "bad",
    [
        ToolCalled(call_id="c", name="bash", arguments={"command": "echo \ud800"}),
        ToolCalled(call_id="c", name="bash", arguments={"command": nested(3000)}),
        ToolResulted(call_id="c", name="bash", text="t", facts={"bad": object()}),
        SessionHeader(cwd="/x\udcff"),
    ],
    ids=["surrogate", "too-deep", "not-json", "surrogate-escape"],
)
@pytest.mark.parametrize("store_kind", ["jsonl", "memory"])
async def test_an_unwritable_event_is_refused_and_the_session_goes_on(
    tmp_path: Path, bad: SessionEvent, store_kind: str
):
    store: Any = (
        JsonlStore(tmp_path, registry=REGISTRY)
        if store_kind == "jsonl"
        else MemoryStore(registry=REGISTRY)
    )
    async with open_session_log(store) as log:
        await log.open("s")
        await log.append("s", SessionHeader(cwd="/w"))
        with pytest.raises(UnencodableEvent, match="Nothing was appended"):
            await log.append("s", SandboxModeSet(mode="read-only"), bad)
        # Not a failed commit: the session still appends, and nothing of the refused
        # append (not even its good first event) reached the log.
        (after,) = await log.append("s", SandboxModeSet(mode="workspace-write"))
        assert after.seq == 2
        await log.close("s")
    data = (tmp_path / "s.jsonl").read_bytes() if store_kind == "jsonl" else bytes(store.files["s"])
    result = checked_scan(data)
    assert not isinstance(result, LogCorrupt)
    assert [event.tag for event in result] == ["session/header", "sandbox/mode"]

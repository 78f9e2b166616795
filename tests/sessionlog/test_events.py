"""The event registry and the scan rules: pure, no trio, no disk."""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec
import pytest

import stockade
from stockade.events import (
    EventRegistry,
    LogCorrupt,
    SessionEvent,
    SessionHeader,
    UnknownEventType,
    UnregisteredEvent,
)
from stockade.policy import (
    ApprovalPolicySet,
    PolicyContext,
    PresetSelected,
    SandboxModeSet,
    SessionRuleAllowed,
)
from stockade.sessionlog import BUILTIN_EVENTS, scan_log
from stockade.vocab import ApprovalPolicy, SandboxMode

from ._helpers import TEST_EVENTS, Note


def lines(*events: SessionEvent, registry: EventRegistry = TEST_EVENTS) -> bytes:
    stamped = [msgspec.structs.replace(e, seq=i, ts=1.5) for i, e in enumerate(events, 1)]
    return registry.encode_lines(stamped)


def test_builtin_tags() -> None:
    assert BUILTIN_EVENTS.tags == {
        "session/header",
        "sandbox/mode",
        "sandbox/network",
        "approval/policy",
        "permission/preset",
        "context/policy",
        "rules/session-allow",
    }


def test_every_builtin_event_round_trips() -> None:
    events = [
        SessionHeader(cwd="/w", parent="p"),
        SandboxModeSet(mode=SandboxMode.READ_ONLY, source="inherited:p"),
        ApprovalPolicySet(policy=ApprovalPolicy.NEVER),
        PresetSelected(name="workspace-write"),
        PolicyContext(
            text="t\nu",
            sandbox_mode=SandboxMode.WORKSPACE_WRITE,
            workspace_root="/w",
            approval_policy=ApprovalPolicy.ASK,
            source="sandbox:policy",
        ),
        SessionRuleAllowed(prefix=("git", "push"), rule="force-push", command="git push -f"),
    ]
    scan = scan_log(lines(*events, registry=BUILTIN_EVENTS), "f", BUILTIN_EVENTS)
    assert [msgspec.structs.replace(e, seq=0, ts=0.0) for e in scan.events] == events
    assert [e.seq for e in scan.events] == [1, 2, 3, 4, 5, 6]


def test_a_line_starts_with_type_seq_and_ts() -> None:
    line = lines(SandboxModeSet(mode=SandboxMode.READ_ONLY))
    assert line == b'{"type":"sandbox/mode","seq":1,"ts":1.5,"mode":"read-only"}\n'


def test_registering_is_a_new_value_and_leaves_the_old_one_alone() -> None:
    extended = BUILTIN_EVENTS.with_types(Note)
    assert "test/note" in extended.tags
    assert "test/note" not in BUILTIN_EVENTS.tags
    assert extended == TEST_EVENTS
    with pytest.raises(UnregisteredEvent, match=r"Note is not a registered session event"):
        BUILTIN_EVENTS.check([Note(n=1)])
    TEST_EVENTS.check([Note(n=1)])


def test_a_tag_declared_twice_is_refused_naming_both() -> None:
    class Other(SessionEvent, kw_only=True, tag="test/note"):
        x: int

    with pytest.raises(ValueError, match=r"'test/note' is declared twice.*Note.*Other"):
        TEST_EVENTS.with_types(Other)


def test_only_tagged_session_events_register() -> None:
    class Plain(msgspec.Struct):
        x: int

    with pytest.raises(TypeError, match="not a SessionEvent"):
        EventRegistry.of(Plain)  # type: ignore[arg-type]

    class Shouting(SessionEvent, kw_only=True, tag="Bad Tag"):
        x: int

    with pytest.raises(ValueError, match="domain/name"):
        EventRegistry.of(Shouting)


def test_unknown_tag_names_the_tag_and_file_line() -> None:
    data = lines(Note(n=1), Note(n=2)) + b'{"type":"tool/call","seq":3,"ts":2.0}\n'
    with pytest.raises(UnknownEventType) as caught:
        scan_log(data, "/logs/s.jsonl", TEST_EVENTS)
    assert caught.value.tag == "tool/call"
    assert caught.value.where == "/logs/s.jsonl:3"
    assert "'tool/call'" in str(caught.value) and "/logs/s.jsonl:3" in str(caught.value)
    assert isinstance(caught.value, LogCorrupt)


def test_an_event_a_registry_lacks_is_refused_not_dropped() -> None:
    data = lines(Note(n=1))
    with pytest.raises(UnknownEventType, match="'test/note'"):
        scan_log(data, "f", BUILTIN_EVENTS)


def test_evolution_a_new_defaulted_field_reads_old_lines() -> None:
    old = b'{"type":"test/x","seq":1,"ts":1.0,"a":1}\n'

    class V2(SessionEvent, kw_only=True, tag="test/x"):
        a: int
        b: str = "new"

    (event,) = scan_log(old, "f", EventRegistry.of(V2)).events
    assert event == V2(a=1, b="new", seq=1, ts=1.0)
    # ... and a line holding the default is byte-identical to the old shape.
    assert EventRegistry.of(V2).encode_lines([event]) == old


def test_evolution_an_unknown_field_is_ignored() -> None:
    newer = b'{"type":"test/note","seq":1,"ts":1.0,"n":3,"added_later":[1,2]}\n'
    (event,) = scan_log(newer, "f", TEST_EVENTS).events
    assert event == Note(n=3, seq=1, ts=1.0)


# --- scan: torn tails and corruption ------------------------------------------------------


def test_a_clean_log_has_no_torn_tail() -> None:
    data = lines(Note(n=1), Note(n=2))
    scan = scan_log(data, "f", TEST_EVENTS)
    assert scan.torn is None and scan.good_length == len(data)


@pytest.mark.parametrize(
    "tail",
    [
        b'{"type":"test/note","seq":3,"ts":1.5,"n"',  # no newline
        b'{"type":"test/note","seq":3,"ts":1.5,"n":3}',  # complete JSON but no newline
        b"\x00\x00\x00\x00",  # zero-filled block after a crash
        b'{"type":"test/no\n',  # undecodable, with newline
        b"\n",  # an empty last line
    ],
)
def test_a_torn_last_line_is_cut(tail: bytes) -> None:
    good = lines(Note(n=1), Note(n=2))
    scan = scan_log(good + tail, "f", TEST_EVENTS)
    assert [e.seq for e in scan.events] == [1, 2]
    assert scan.good_length == len(good)
    assert scan.torn is not None and scan.torn.line == 3 and scan.torn.length == len(tail)


def test_a_corrupt_middle_line_is_refused_with_file_line() -> None:
    good = lines(Note(n=1), Note(n=2), Note(n=3)).split(b"\n")
    data = b"\n".join([good[0], b'{"type":"test/no', good[2], b""])
    with pytest.raises(LogCorrupt, match=r"^/x/s\.jsonl:2: line is not JSON") as caught:
        scan_log(data, "/x/s.jsonl", TEST_EVENTS)
    assert caught.value.where == "/x/s.jsonl:2"


def test_a_well_formed_last_line_of_the_wrong_shape_is_corrupt_not_torn() -> None:
    data = lines(Note(n=1)) + b'{"type":"test/note","seq":2,"ts":1.0,"n":"two"}\n'
    with pytest.raises(LogCorrupt, match=r"f:2: invalid event"):
        scan_log(data, "f", TEST_EVENTS)


def test_a_seq_gap_is_corrupt() -> None:
    first = lines(Note(n=1))
    third = TEST_EVENTS.encode_lines([Note(n=3, seq=3)])
    with pytest.raises(LogCorrupt, match="f:2: expected seq 2, found seq 3"):
        scan_log(first + third, "f", TEST_EVENTS)


def test_pure_modules_import_no_trio() -> None:
    root = Path(stockade.__file__).parent
    pure = [
        "events.py",
        "policy/__init__.py",
        "policy/knobs.py",
        "policy/presets.py",
        "policy/context.py",
        "sessionlog/_scan.py",
        "sessionlog/stores/interface.py",
        "sessionlog/stores/jsonl.py",
        "sessionlog/stores/memory.py",
    ]
    for name in pure:
        tree = ast.parse((root / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert all(alias.name.split(".")[0] != "trio" for alias in node.names), name
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "trio", name

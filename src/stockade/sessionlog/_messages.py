"""The SessionLogActor's inbox: one closed union of plain-data requests, and its replies."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..events import SessionEvent


class OpenLog(msgspec.Struct, frozen=True, tag="open-log"):
    """Hold `session_id`'s log open (shared by every opener in this actor; counted)."""

    session_id: str


class AppendEvents(msgspec.Struct, frozen=True, tag="append-events"):
    """Append `events` contiguously; with `after_seq`, only if the log still ends there."""

    session_id: str
    events: tuple[SessionEvent, ...]
    after_seq: int | None = None


class ReadLog(msgspec.Struct, frozen=True, tag="read-log"):
    """Every committed event of an open session, in order."""

    session_id: str


class CloseLog(msgspec.Struct, frozen=True, tag="close-log"):
    """Drop one hold; the last one drains pending appends and releases the lock."""

    session_id: str


SessionLogRequest = OpenLog | AppendEvents | ReadLog | CloseLog


class LogOpened(msgspec.Struct, frozen=True, tag="log-opened"):
    """Reply to OpenLog: the log's events and whether a torn tail was cut on open.

    `events` is the log's view at that moment (an `EventView`: shared, not copied).
    """

    session_id: str
    location: str
    events: Sequence[SessionEvent]
    torn_lines_cut: int = 0

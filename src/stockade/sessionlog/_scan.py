"""Reading a log's bytes back into events: the torn-tail and corruption rules (pure).

A batch is written with one `write` call and acknowledged only after `fsync`, so a
crash can leave at most a prefix of the last batch: whole lines followed by one
partial line. That partial line (no newline, or not JSON at all) is a torn tail:
it was never acknowledged and is cut. Anything else that does not decode (a bad
line with more lines after it, a well-formed line of an unknown type or wrong
shape, a gap in `seq`) is corruption and refused, never rewritten.
"""

from __future__ import annotations

import attrs

from ..events import EventRegistry, LogCorrupt, SessionEvent, UndecodableLine


@attrs.frozen
class TornTail:
    """The cut-off last line: where it started and why it was judged torn."""

    line: int
    offset: int
    length: int
    reason: str


@attrs.frozen
class Scan:
    events: tuple[SessionEvent, ...]
    good_length: int
    torn: TornTail | None


def scan_log(data: bytes, location: str, registry: EventRegistry) -> Scan:
    """Decode every line of `data`; `location` names the log in errors (`path` -> `path:N`)."""
    events: list[SessionEvent] = []
    offset = 0
    line_no = 0
    end = len(data)
    while offset < end:
        line_no += 1
        newline = data.find(b"\n", offset)
        where = f"{location}:{line_no}"
        if newline == -1:
            torn = TornTail(line_no, offset, end - offset, "last line has no newline")
            return Scan(tuple(events), offset, torn)
        try:
            event = registry.decode_line(data[offset:newline], where)
        except UndecodableLine as error:
            if newline + 1 == end:
                torn = TornTail(line_no, offset, end - offset, f"last line is not JSON ({error})")
                return Scan(tuple(events), offset, torn)
            raise LogCorrupt(where, f"line is not JSON ({error})") from None
        if event.seq != line_no:
            raise LogCorrupt(where, f"expected seq {line_no}, found seq {event.seq}")
        events.append(event)
        offset = newline + 1
    return Scan(tuple(events), end, None)

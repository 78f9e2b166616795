"""Reading a log's bytes back into events: the torn-tail and corruption rules (pure).

A batch is written with one `write` call and acknowledged only after `fsync`, so a
crash can leave at most a prefix of the last batch: whole lines followed by one
partial line. That partial line (no newline, or not JSON at all) is a torn tail:
it was never acknowledged and is cut. Anything else that does not decode (a bad
line with more lines after it, a well-formed line of an unknown type or wrong
shape, a gap in `seq`) is corruption and refused, never rewritten.

Two readers, one meaning. `_scan_lines` is the rule itself, line by line, with the
`file:line` of whatever is wrong. `scan_log` first decodes whole stretches of lines
at once (each line on its own, with the same decoder, so nothing is accepted that
the rule refuses) and checks their seqs; at the first stretch that does not go
through cleanly it hands over to `_scan_lines` from that stretch on, which finds
and reports the fault exactly as it always has.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

from ..events import EventRegistry, LogCorrupt, SessionEvent, UndecodableLine
from ..reprs import fields_repr

# How much of the log one stretch covers (rounded up to a whole line): large enough
# that the per-stretch work vanishes, small enough that its copy stays small.
_STRETCH = 1 << 22


@attrs.frozen
class TornTail:
    """The cut-off last line: where it started and why it was judged torn."""

    __repr__ = fields_repr

    line: int
    offset: int
    length: int
    reason: str


@attrs.frozen
class Scan:
    __repr__ = fields_repr
    events: tuple[SessionEvent, ...]
    good_length: int
    torn: TornTail | None


def scan_log(data: bytes, location: str, registry: EventRegistry, *, first_seq: int = 1) -> Scan:
    """Decode every line of `data`; `location` names the log in errors (`path` -> `path:N`).

    `first_seq`: the seq (and line number) of `data`'s first line, for a log read in
    whole-line pieces (a database's), each scanned as it arrives.
    """
    events: list[SessionEvent] = []
    decoder = registry._decoder
    with _gc_paused():
        offset = 0
        end = data.rfind(b"\n") + 1  # whole lines end here
        if decoder is not None:
            decode = decoder.decode
            while offset < end:
                cut = data.find(b"\n", min(offset + _STRETCH, end) - 1) + 1
                lines = data[offset:cut].split(b"\n")
                lines.pop()  # the empty piece after the stretch's last newline
                try:
                    decoded = list(map(decode, lines))
                except Exception:  # undecodable or wrong: let the rule say what and where
                    break
                first = first_seq + len(events)
                if [event.seq for event in decoded] != list(range(first, first + len(decoded))):
                    break
                events.extend(decoded)
                offset = cut
        return _scan_lines(data, location, registry, events, offset, first_seq)


def _scan_lines(
    data: bytes,
    location: str,
    registry: EventRegistry,
    events: list[SessionEvent],
    offset: int,
    first_seq: int = 1,
) -> Scan:
    """The rule, line by line from `offset`, after `events` (the lines before it)."""
    line_no = first_seq - 1 + len(events)
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


_pause_lock = threading.Lock()
_pauses = 0
_resume = False


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Hold the cyclic GC off while a log is decoded (from any thread, nested or not).

    Decoding allocates a container or two per line; with the collector on, it walks
    the growing heap again and again. The first pause turns it off (if it was on),
    the last resume turns it back on.
    """
    global _pauses, _resume
    with _pause_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()

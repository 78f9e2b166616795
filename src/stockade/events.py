"""Persisted session events: the base type, the header, and the registry that decodes them.

Every line of a session log is one event: a frozen `msgspec.Struct` tagged by its
`type` field (`"sandbox/mode"`, `"context/policy"`, ...). There is no global list of
event types. Each domain declares its own subclasses of `SessionEvent` next to its
fold and write path, and the composition builds one immutable `EventRegistry` from
every domain's types (`EventRegistry.of(...)`, `registry.with_types(...)`). That
registry is the closed union the log is decoded against: a line whose tag it does
not know is refused with `UnknownEventType` naming the tag and `file:line`, never
skipped.

Declaring an event::

    class ToolCalled(SessionEvent, kw_only=True, tag="tool/call"):
        call_id: str
        argv: tuple[str, ...]

`kw_only=True` is required on every subclass: it lets a subclass add required
fields after the base's defaulted ones, and keeps `seq` and `ts` first on each line.

Evolution rules (how to change events without breaking logs already on disk):

1. A tag is forever. Never rename a tag, reuse one for a different shape, or
   remove a type whose tag may exist in someone's log; the Python class name may
   change freely.
2. Add a field only with a default. Old lines lack it and decode to the default;
   because `omit_defaults` is on, new lines holding the default stay byte-identical
   to old ones.
3. Never change a field's type or meaning, and never make an optional field
   required. Add a new field (or a new tag) and keep reading the old one.
4. Removing a field is allowed only when every reader ignores it: unknown fields
   are ignored on decode, so old lines keep decoding. Prefer leaving it in place.
5. Never remove an enum value (e.g. a sandbox mode) that a log may hold. Adding one
   is fine for new readers; an older reader refuses such a line as corrupt rather
   than misreading it.
6. A new event type is a new tag registered by its domain. Old logs are
   unaffected; an older reader (or a composition without that domain) refuses a
   log containing it with `UnknownEventType` instead of silently dropping history.
7. `seq`, `ts`, `source` and `type` belong to the base and are never redeclared.
"""

from __future__ import annotations

import itertools
import operator
import re
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, Protocol, overload

import attrs
import msgspec

from .errors import StockadeError
from .reprs import fields_repr

TAG_FIELD = "type"
_TAG_RE = re.compile(r"^[a-z][a-z0-9_.-]*(/[a-z][a-z0-9_.-]*)*$")


class SessionEvent(msgspec.Struct, frozen=True, tag_field=TAG_FIELD, omit_defaults=True, gc=False):
    """Base of every persisted event.

    `seq` (1, 2, 3, ... per session, gapless) and `ts` (Unix seconds, UTC) are
    stamped by the log when the event is committed; leave them at 0 when building
    an event. `source` says where a context or inherited event came from
    (`"sandbox:policy"`, `"inherited:<parent id>"`); None for an ordinary event.

    Events are immutable values, so they are kept out of the cyclic garbage
    collector (`gc=False`, inherited by every subclass): a resumed log holds
    millions of them, and the collector walking them again and again was most of
    the cost of a replay. The one thing this gives up: a reference cycle through an
    event (a field holding a container that holds the event itself) is never
    freed. No event read from a log can hold one, and such an event cannot be
    written anyway.
    """

    seq: int = 0
    ts: float = 0.0
    source: str | None = None

    @property
    def tag(self) -> str:
        return event_tag(type(self))


class SessionHeader(SessionEvent, kw_only=True, frozen=True, tag="session/header"):
    """The first event of every session: its workspace root and its parent, if forked.

    `cwd` is the session's absolute workspace root, or None when the session has
    none (resolution then falls back to the composition's configured root).
    """

    cwd: str | None = None
    parent: str | None = None
    format: int = 1
    # Directories this session's calls may write beside its root (workspace-write),
    # given when it was opened (`open_session(writable_roots=...)`): real paths, each
    # trust-checked then; a resumed session keeps them, a fork inherits them.
    writable_roots: tuple[str, ...] = ()
    # The agents whose sockets its confined calls reach beside the composition's
    # (`open_session(allow_ssh_agent=..., allow_gpg_agent=...)`): "ssh", "gpg".
    agents: tuple[str, ...] = ()


def event_tag(event_type: type[SessionEvent]) -> str:
    """The tag `event_type` is written under."""
    tag = event_type.__struct_config__.tag
    if not isinstance(tag, str):
        raise TypeError(f"{event_type.__qualname__} has no string tag; declare tag='domain/name'")
    return tag


# --- errors ------------------------------------------------------------------------


class LogCorrupt(StockadeError):
    """A session log cannot be read as written; it was left untouched.

    `where` is `file:line` (or `memory:<id>:line`), `reason` what is wrong there.
    """

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(
            f"{where}: {reason}. The session log was not changed; move the file aside "
            "(or repair that line by hand) to use this session id again."
        )
        self.where = where
        self.reason = reason


class UnknownEventType(LogCorrupt):
    """A line carries a tag this composition's registry does not know."""

    def __init__(self, where: str, tag: str, known: Iterable[str]) -> None:
        StockadeError.__init__(
            self,
            f"{where}: unknown event type {tag!r} (this composition knows: "
            f"{', '.join(sorted(known))}). The log was written by a newer or extended "
            f"stockade; open it with a composition that registers {tag!r}. "
            "The log was not changed.",
        )
        self.where = where
        self.reason = f"unknown event type {tag!r}"
        self.tag = tag


class UnregisteredEvent(StockadeError, TypeError):
    """An append carried an event whose type the log's registry does not hold."""


class UnencodableEvent(StockadeError, ValueError):
    """An append carried an event that cannot be written as a JSON line.

    A lone surrogate in a string (which is not UTF-8), a value JSON has no form for,
    or nesting too deep to read back. Nothing was appended; the log stays usable.
    """


class AppendConflict(StockadeError):
    """A conditional append found the log moved on since the caller read it."""

    def __init__(self, expected_last: int, actual_last: int) -> None:
        super().__init__(
            f"append expected the log to end at seq {expected_last}, "
            f"but it ends at {actual_last}; read again and retry"
        )
        self.expected_last = expected_last
        self.actual_last = actual_last


class UndecodableLine(Exception):
    """Internal: a line is not JSON at all (the signature of a torn write)."""


# --- the registry ----------------------------------------------------------------------


@attrs.frozen
class EventRegistry:
    """An immutable set of event types: the closed union a log is encoded and decoded as.

    Compose it once per harness (built-ins plus each mounted domain's types); a
    registry is a value, so tests build their own and nothing needs resetting.
    """

    __repr__ = fields_repr

    types: tuple[type[SessionEvent], ...] = ()
    _by_tag: dict[str, type[SessionEvent]] = attrs.field(init=False, repr=False, eq=False)
    _decoder: msgspec.json.Decoder[Any] | None = attrs.field(init=False, repr=False, eq=False)
    _encoder: msgspec.json.Encoder = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        by_tag: dict[str, type[SessionEvent]] = {}
        for event_type in self.types:
            if not (isinstance(event_type, type) and issubclass(event_type, SessionEvent)):
                raise TypeError(f"{event_type!r} is not a SessionEvent subclass")
            tag = event_tag(event_type)
            if not _TAG_RE.match(tag):
                raise ValueError(f"event tag {tag!r} must look like 'domain/name' (lowercase)")
            if tag in by_tag and by_tag[tag] is not event_type:
                raise ValueError(
                    f"event tag {tag!r} is declared twice: by "
                    f"{by_tag[tag].__module__}.{by_tag[tag].__qualname__} and "
                    f"{event_type.__module__}.{event_type.__qualname__}"
                )
            by_tag[tag] = event_type
        object.__setattr__(self, "_by_tag", by_tag)
        decoder = None
        if by_tag:
            union: Any = typing.Union[tuple(by_tag.values())]  # noqa: UP007
            decoder = msgspec.json.Decoder(union)
        object.__setattr__(self, "_decoder", decoder)
        object.__setattr__(self, "_encoder", msgspec.json.Encoder())

    @classmethod
    def of(cls, *types: type[SessionEvent]) -> EventRegistry:
        return cls(tuple(dict.fromkeys(types)))

    def with_types(self, *types: type[SessionEvent]) -> EventRegistry:
        """A new registry holding this one's types plus `types` (self is unchanged)."""
        return EventRegistry(tuple(dict.fromkeys((*self.types, *types))))

    @property
    def tags(self) -> frozenset[str]:
        return frozenset(self._by_tag)

    def holds(self, event: SessionEvent) -> bool:
        return self._by_tag.get(event_tag(type(event))) is type(event)

    def check(self, events: Iterable[SessionEvent]) -> None:
        """Raise UnregisteredEvent unless every event's type is registered here."""
        for event in events:
            if not isinstance(event, SessionEvent) or not self.holds(event):
                raise UnregisteredEvent(
                    f"{type(event).__qualname__} is not a registered session event "
                    f"(registered tags: {', '.join(sorted(self._by_tag))}); "
                    "add its type to the harness's EventRegistry"
                )

    def encode_lines(self, events: Sequence[SessionEvent]) -> bytes:
        """Newline-terminated JSON lines, one per event."""
        return self._encoder.encode_lines(events)

    def as_written(self, events: Sequence[SessionEvent]) -> tuple[SessionEvent, ...]:
        """Each event as its log line reads back; UnencodableEvent if one cannot be written.

        Checked before an event reaches a store, so one bad event is refused on its
        own instead of failing the commit (and with it the session) it would share.
        The read-back form is what the log keeps in memory, so a live session and a
        resumed one see the same values (JSON has no NaN: a NaN in free-form data
        reads back as null).
        """
        written = []
        for event in events:
            reason = None
            try:
                line = self._encoder.encode(event)
            except Exception as error:  # whatever the encoder refuses, e.g. a lone surrogate
                reason = str(error) or type(error).__name__
            else:
                try:
                    written.append(self.decode_line(line, "line"))
                except (UndecodableLine, LogCorrupt) as error:
                    reason = f"its line would not read back ({error})"
            if reason is not None:
                raise UnencodableEvent(
                    f"{event_tag(type(event))} event cannot be written to a session log: "
                    f"{reason}. Nothing was appended"
                )
        return tuple(written)

    def decode_line(self, line: bytes, where: str) -> SessionEvent:
        """One event from one line (without its newline).

        Raises UndecodableLine when the line is not JSON at all, UnknownEventType for
        a tag outside this registry, LogCorrupt for any other mismatch.
        """
        if self._decoder is None:
            raise LogCorrupt(where, "no event types are registered")
        try:
            event: SessionEvent = self._decoder.decode(line)
            return event
        except msgspec.ValidationError as error:
            tag = _tag_of(line)
            if tag is not None and tag not in self._by_tag:
                raise UnknownEventType(where, tag, self._by_tag) from None
            raise LogCorrupt(where, f"invalid event: {error}") from None
        except msgspec.DecodeError as error:
            raise UndecodableLine(str(error)) from None
        except RecursionError:
            # Well-formed or not, a line this deep is not one stockade wrote.
            raise LogCorrupt(where, "line nests too deeply to decode") from None


class _Tagged(msgspec.Struct):
    type: Any = None


_TAG_DECODER: Final = msgspec.json.Decoder(_Tagged)


def _tag_of(line: bytes) -> str | None:
    """The `type` of a JSON object line whose shape is wrong, read without its other fields.

    Unknown fields are skipped, not built, so a deeply nested one cannot recurse here.
    """
    try:
        tagged = _TAG_DECODER.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    return tagged.type if isinstance(tagged.type, str) else None


# --- a log's committed events, shared rather than copied ---------------------------------


class EventView(Sequence[SessionEvent]):
    """An immutable view of the first `len(view)` events of an append-only run.

    What a read of an open log returns: the log appends to one list and every read
    shares it, so a read costs the same at ten events and at a million. A view never
    changes once made; a later commit makes a new one. It behaves like the tuple it
    stands for (indexing, iteration both ways, `==` and `+` with tuples, hashing);
    a slice is a tuple. `find_last` answers from the index a view carries (the
    position of the last event of each type) instead of walking the log back.
    """

    __slots__ = ("_events", "_last", "_length")

    def __init__(self, events: list[SessionEvent], length: int, last: dict[type[Any], int]) -> None:
        # Only `CommittedEvents` makes views: `events` is append-only, `last` is the
        # position of the last event of each type among the first `length`.
        self._events = events
        self._length = length
        self._last = last

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> SessionEvent: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[SessionEvent, ...]: ...

    def __getitem__(self, index: int | slice) -> SessionEvent | tuple[SessionEvent, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            if step == 1:
                return tuple(self._events[start:stop])
            return tuple(self._events[i] for i in range(start, stop, step))
        position = operator.index(index)
        if position < 0:
            position += self._length
        if not 0 <= position < self._length:
            raise IndexError("event index out of range")
        return self._events[position]

    def __iter__(self) -> Iterator[SessionEvent]:
        return itertools.islice(self._events, self._length)

    def __reversed__(self) -> Iterator[SessionEvent]:
        # The list only grows after this view was made: skip what came later.
        return itertools.islice(reversed(self._events), len(self._events) - self._length, None)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventView):
            if other._events is self._events:
                return other._length == self._length
        elif not isinstance(other, tuple):
            return NotImplemented
        return len(self) == len(other) and all(map(operator.eq, self, other))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: object) -> tuple[Any, ...]:
        if isinstance(other, EventView | tuple):
            return (*self, *other)
        return NotImplemented

    def __radd__(self, other: object) -> tuple[Any, ...]:
        if isinstance(other, tuple):
            return (*other, *self)
        return NotImplemented

    def __repr__(self) -> str:
        return f"EventView({tuple(self)!r})"

    def last_of(self, event_type: type[Any]) -> Any:
        """The last event that is an instance of `event_type`, or None (see `find_last`)."""
        best = -1
        for kind, position in self._last.items():
            if position > best and issubclass(kind, event_type):
                best = position
        return self._events[best] if best >= 0 else None


class CommittedEvents:
    """The append-only run of a log's committed events, and its current view.

    `extend` adds one committed batch and replaces `view` in the same step, so a
    read sees a whole batch or none of it.
    """

    __slots__ = ("_events", "view")

    def __init__(self, events: Iterable[SessionEvent] = ()) -> None:
        self._events: list[SessionEvent] = list(events)
        last = dict(zip(map(type, self._events), itertools.count(), strict=False))
        self.view = EventView(self._events, len(self._events), last)

    def extend(self, events: Sequence[SessionEvent]) -> EventView:
        start = len(self._events)
        self._events.extend(events)
        last = dict(self.view._last)
        last.update(zip(map(type, events), itertools.count(start), strict=False))
        self.view = EventView(self._events, len(self._events), last)
        return self.view

    @property
    def last_seq(self) -> int:
        return self._events[-1].seq if self._events else 0


# --- writing through a session --------------------------------------------------------


class EventLog(Protocol):
    """What a write path needs from a session: read its events, append conditionally."""

    async def events(self) -> Sequence[SessionEvent]: ...

    async def append(
        self, *events: SessionEvent, after_seq: int | None = None
    ) -> tuple[SessionEvent, ...]: ...


Decide = Callable[[Sequence[SessionEvent]], Sequence[SessionEvent]]


def last_seq(events: Sequence[SessionEvent]) -> int:
    return events[-1].seq if events else 0


async def append_decided(
    log: EventLog, decide: Decide, *, attempts: int = 64
) -> tuple[SessionEvent, ...]:
    """Append what `decide(current events)` returns, atomically with respect to the log.

    The append is conditional on the log still ending where `decide` saw it; when
    another writer got there first, read again and decide again. `decide` must be
    pure. Returns the committed (stamped) events, empty when it decided nothing.
    """
    conflict: AppendConflict | None = None
    for _ in range(attempts):
        current = await log.events()
        wanted = decide(current)
        if not wanted:
            return ()
        try:
            return await log.append(*wanted, after_seq=last_seq(current))
        except AppendConflict as error:
            conflict = error
    assert conflict is not None
    raise conflict


def find_last(events: Sequence[SessionEvent], event_type: type[Any]) -> Any:
    """The last event of `event_type` in `events`, or None.

    On a log's `EventView` (what a read returns) this costs the same however long
    the log is; on any other sequence it walks back from the end.
    """
    if isinstance(events, EventView):
        return events.last_of(event_type)
    for event in reversed(events):
        if isinstance(event, event_type):
            return event
    return None


__all__ = [
    "AppendConflict",
    "CommittedEvents",
    "Decide",
    "EventLog",
    "EventRegistry",
    "EventView",
    "LogCorrupt",
    "SessionEvent",
    "SessionHeader",
    "UnencodableEvent",
    "UnknownEventType",
    "UnregisteredEvent",
    "append_decided",
    "event_tag",
    "find_last",
    "last_seq",
]

"""A bounded output buffer: keeps the head and the tail of a stream, counts the rest.

Pure bytes bookkeeping; memory never exceeds the two caps, whatever the command prints.
"""

from __future__ import annotations

import attrs
import msgspec


class Chunk(msgspec.Struct, frozen=True):
    """Output read from a cursor on: what is held, and how many bytes were cut between."""

    before_gap: bytes
    dropped: int
    after_gap: bytes
    cursor: int

    def text(self) -> str:
        """Decoded with replacement (never raises), with a marker where bytes were cut."""
        if self.dropped <= 0:
            return (self.before_gap + self.after_gap).decode(errors="replace")
        return (
            self.before_gap.decode(errors="replace")
            + f"\n[... {self.dropped} bytes dropped ...]\n"
            + self.after_gap.decode(errors="replace")
        )


@attrs.define(eq=False, repr=False)
class OutputBuffer:
    head_cap: int
    tail_cap: int
    head: bytearray = attrs.field(factory=bytearray)
    tail: bytearray = attrs.field(factory=bytearray)
    total: int = 0

    @classmethod
    def with_cap(cls, cap: int) -> OutputBuffer:
        """A buffer holding at most `cap` bytes: the first half and the last half."""
        return cls(head_cap=cap - cap // 2, tail_cap=cap // 2)

    def write(self, data: bytes) -> None:
        room = self.head_cap - len(self.head)
        if room > 0:
            taken = data[:room]
            self.head += taken
            self.total += len(taken)
            data = data[room:]
        if data:
            self.total += len(data)
            self.tail += data
            excess = len(self.tail) - self.tail_cap
            if excess > 0:
                del self.tail[:excess]

    @property
    def tail_start(self) -> int:
        return self.total - len(self.tail)

    @property
    def dropped(self) -> int:
        """Bytes the stream produced that the buffer no longer holds."""
        return self.tail_start - len(self.head)

    def read_from(self, cursor: int = 0) -> Chunk:
        """Everything held after `cursor`; the chunk's cursor is where the next read starts."""
        before = bytes(self.head[cursor:]) if cursor < len(self.head) else b""
        cursor = max(cursor, len(self.head))
        dropped = max(0, self.tail_start - cursor)
        cursor = max(cursor, self.tail_start)
        after = bytes(self.tail[cursor - self.tail_start :])
        return Chunk(before_gap=before, dropped=dropped, after_gap=after, cursor=self.total)

    def text(self) -> str:
        return self.read_from(0).text()

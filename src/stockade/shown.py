"""Text a person is shown: every character a terminal would act on or hide, escaped.

A confined command and the model choose much of what stockade prints to a person: a
command text, a SOCKS5 name, a path found on disk, a job's output in a session log.
A terminal interprets some characters instead of showing them: `\\r` returns to the
line start, `\\x1b[2K` erases the line, a backspace steps back, `\\x9b` starts an
escape sequence in one byte, U+202E reverses what follows, a zero-width space shows
as nothing. Printed raw, a destination named `\\x1b[2K\\rstockade: all clear` turns
stockade's own refusal line into a line saying all is clear.

So every face that prints such text to a person passes it through `visible` (this
module; standard library only, so `stockade exec`'s fast path and the proxy process
of `python -m stockade.network.serve` may use it too):

- A character a terminal would act on or draw as nothing is shown as an escape:
  `\\t`, `\\r`, `\\xNN` (other C0, DEL and C1 controls), `\\uNNNN` / `\\UNNNNNNNN`
  (format characters such as bidi overrides and zero-width ones, line and paragraph
  separators, spaces other than the plain one, private-use, unassigned and surrogate
  code points, blank-looking fillers, and combining marks that could disguise an
  ASCII character).
- A newline splits the text into `lines`; nothing else does. `one_line` joins them
  with a visible `\\n` (a field of one row); `escaped_lines` keeps them line breaks
  (a whole report whose rows stockade wrote).
- A backslash the text holds is shown as it is: a surface that can say so warns when
  anything was escaped (`Visible.escaped`), so with no warning every backslash is
  literal.
- The result is printable ASCII plus what was shown as is, so escaping it again
  changes nothing.

`TERMINAL_STATE_RESET` is the one thing written to a terminal on purpose before
stockade's own lines there: escaping keeps a text from acting on the terminal, but
the command's output, streamed before, may have left it in a state that hides them.

`json_escaped` makes the same characters (the same decision) visible in a JSON text
as JSON's own `\\uNNNN` escapes, which decode to the very same string: `--json`
output keeps its data exact and still reaches a terminal harmless.

Pure: no I/O.
"""

from __future__ import annotations

import unicodedata

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Final

# Categories a terminal acts on or draws as nothing: controls, format characters
# (bidi, zero-width), surrogates, private use, unassigned, line/paragraph separators.
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_COMBINING: Final = frozenset({"Mn", "Me"})
# Letters and symbols most fonts draw blank (Hangul fillers, the blank braille
# pattern, Khmer inherent vowels).
_BLANK_LOOKING: Final = frozenset(
    {"\u115f", "\u1160", "\u17b4", "\u17b5", "\u2800", "\u3164", "\uffa0"}
)
_NAMED: Final = {"\t": "\\t", "\r": "\\r"}
# A run of combining marks on one base longer than this is escaped past it (marks
# stacked high can be drawn over neighbouring rows).
_MAX_MARKS: Final = 2


# Written on a terminal before stockade's own lines that follow a command's output:
# undo what that output may have set to hide them. Reset the scroll region (it homes
# the cursor, so inside save/restore; the restore brings back the attributes, so
# they are reset after it), then colours and attributes (concealed, black on black),
# the character set (line drawing maps letters to other glyphs), insert mode,
# autowrap (off would cut long lines at the edge) and cursor visibility.
TERMINAL_STATE_RESET: Final = "\x1b7\x1b[r\x1b8\x1b[0m\x1b(B\x0f\x1b[4l\x1b[?7h\x1b[?25h"


def _terminal_escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    # JSON spells a code point past the BMP as its UTF-16 surrogate pair.
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _judged(text: str) -> Iterator[tuple[str, bool]]:
    """Each character of `text` and whether it is to be escaped: THE decision.

    A newline is never escaped here (each caller says what a newline becomes)."""
    # Whether the previous character may carry a combining mark as it is: shown, not
    # ASCII (a mark on an ASCII letter can disguise it), and not a line start.
    base_ok = False
    marks = 0
    for char in text:
        if char == "\n":
            base_ok, marks = False, 0
            yield char, False
            continue
        category = unicodedata.category(char)
        hide = (
            category in _HIDDEN_CATEGORIES
            or (category == "Zs" and char != " ")
            or char in _BLANK_LOOKING
        )
        if not hide and category in _COMBINING:
            marks += 1
            hide = not base_ok or marks > _MAX_MARKS
        else:
            marks = 0
        if category not in _COMBINING:
            base_ok = not hide and ord(char) >= 0x80
        yield char, hide


class Visible:
    """A text made visible: its `lines` (split at newlines only), and how many
    characters were escaped and cut."""

    __slots__ = ("cut", "escaped", "lines")

    def __init__(self, lines: tuple[str, ...], escaped: int, cut: int = 0) -> None:
        self.lines = lines
        self.escaped = escaped
        self.cut = cut

    def __repr__(self) -> str:
        return f"Visible(lines={self.lines!r}, escaped={self.escaped}, cut={self.cut})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Visible):
            return NotImplemented
        return (self.lines, self.escaped, self.cut) == (other.lines, other.escaped, other.cut)


def visible(text: str, *, limit: int | None = None) -> Visible:
    """`text` with every character a terminal would hide or act on escaped.

    Newlines split the result into `lines`; nothing else does (a `\\r`, a form feed,
    U+2028 are escaped inside their line). With `limit`, only the first `limit`
    characters are rendered and `cut` counts the rest.
    """
    cut = 0
    if limit is not None and len(text) > limit:
        cut = len(text) - limit
        text = text[:limit]
    lines: list[str] = []
    out: list[str] = []
    escaped = 0
    for char, hide in _judged(text):
        if char == "\n":
            lines.append("".join(out))
            out = []
        elif hide:
            out.append(_terminal_escape(char))
            escaped += 1
        else:
            out.append(char)
    lines.append("".join(out))
    return Visible(lines=tuple(lines), escaped=escaped, cut=cut)


def cut_note(cut: int) -> str:
    """What follows a text cut after its first characters."""
    return f" … ({cut} more characters not shown)"


def one_line(text: str, *, limit: int | None = None) -> str:
    """`text` escaped onto one line (a newline shown as `\\n`): one field of a row."""
    shown = visible(text, limit=limit)
    joined = "\\n".join(shown.lines)
    return joined + (cut_note(shown.cut) if shown.cut else "")


def escaped_lines(text: str) -> str:
    """`text` escaped, its newlines kept as line breaks: a report of several rows."""
    return "\n".join(visible(text).lines)


def json_escaped(encoded: str) -> str:
    """A JSON text with each character `visible` would escape written as a JSON
    `\\uNNNN` escape instead: it decodes to the same value. Only a JSON string can hold
    such a character (JSON's own syntax is ASCII), where the escape means the character."""
    return "".join(_json_escape(char) if hide else char for char, hide in _judged(encoded))

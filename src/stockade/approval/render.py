"""What a person is shown when asked to approve: every character that would run, visible.

A command is text a model wrote, and a terminal interprets some of its characters
instead of showing them: `\\r` returns to the line start, `\\x1b[2K` erases the line,
a backspace steps back, U+202E reverses what follows, a zero-width space shows as
nothing. Printed raw, `echo safe\\r\\x1b[2Krm -rf ~` shows a screen that matches
neither half of what runs. Every prompt that shows an agent's text to a person goes
through this module (the terminal answerer, `stockade run --ask`, `stockade demo
--interactive`):

- A character a terminal would act on or draw as nothing is shown as an escape:
  `\\t`, `\\r`, `\\xNN` (other C0, DEL and C1 controls), `\\uNNNN` / `\\UNNNNNNNN`
  (format characters such as bidi overrides and zero-width ones, line and paragraph
  separators, spaces other than the plain one, private-use, unassigned and surrogate
  code points, blank-looking fillers, and combining marks that could disguise an
  ASCII character).
- A newline stays a line break, and a text of several lines is shown one numbered
  line per row (`  1 | ...`): the line breaks bash acts on are seen as line breaks,
  and no line of the text can pose as a line of the prompt.
- A backslash the text holds is shown as it is. When anything was escaped the
  prompt says so in a warning line, so with no warning every backslash is literal.
- The command is never truncated (every character of it runs). The justification
  (which does not run) is cut after `JUSTIFICATION_LIMIT` characters, saying how
  many more there were.

Pure: no I/O.
"""

from __future__ import annotations

import unicodedata
from typing import Final

import attrs

from ._chain import ApprovalRequest

JUSTIFICATION_LIMIT: Final = 1000

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


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


@attrs.frozen
class Visible:
    """A text made visible: its `lines` (split at newlines only), and how many
    characters were escaped and cut."""

    lines: tuple[str, ...]
    escaped: int
    cut: int = 0


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
    escaped = 0
    out: list[str] = []
    # Whether the previous character may carry a combining mark as it is: shown, not
    # ASCII (a mark on an ASCII letter can disguise it), and not a line start.
    base_ok = False
    marks = 0
    for char in text:
        if char == "\n":
            lines.append("".join(out))
            out = []
            base_ok, marks = False, 0
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
        if hide:
            out.append(_escape(char))
            escaped += 1
            if category not in _COMBINING:
                base_ok = False
            continue
        out.append(char)
        if category not in _COMBINING:
            base_ok = ord(char) >= 0x80
    lines.append("".join(out))
    return Visible(lines=tuple(lines), escaped=escaped, cut=cut)


def one_line(text: str, *, limit: int | None = None) -> str:
    """`text` escaped onto one line (a newline shown as `\\n`), for a transcript."""
    shown = visible(text, limit=limit)
    joined = "\\n".join(shown.lines)
    return joined + (_cut_note(shown.cut) if shown.cut else "")


def _cut_note(cut: int) -> str:
    return f" … ({cut} more characters not shown)"


LABEL_WIDTH: Final = 11


def render_field(label: str, text: str, *, limit: int | None = None) -> tuple[list[str], Visible]:
    """The prompt rows for one field: `  label:    value` on one row, or a header
    row and one numbered row per line when the text has several lines."""
    shown = visible(text, limit=limit)
    head = f"  {label + ':':<{LABEL_WIDTH}}"
    if len(shown.lines) == 1:
        rows = [head + shown.lines[0]]
    else:
        width = len(str(len(shown.lines)))
        rows = [head + f"({len(shown.lines)} lines, shown one per row)"]
        rows += [f"    {number:>{width}} | {line}" for number, line in enumerate(shown.lines, 1)]
    if shown.cut:
        rows[-1] += _cut_note(shown.cut)
    return rows, shown


def escape_warning(field: str, shown: Visible) -> str | None:
    """The row that counts what was escaped in `field` (None when nothing was)."""
    if not shown.escaped:
        return None
    many = "character" if shown.escaped == 1 else "characters"
    return (
        f"  warning:   the {field} holds {shown.escaped} control or invisible {many}, "
        "shown above as escapes (\\r, \\xNN, \\uNNNN); read it carefully"
    )


def network_phrase(request: ApprovalRequest, *, limit: int | None = None) -> str:
    """What a network request asks for, in a few words: "with network access", or
    "with network access to HOST:PORT, ..." naming each destination (escaped; with
    `limit`, the list is cut there, saying how much more there was)."""
    if not request.network_destinations:
        return "with network access"
    return "with network access to " + one_line(
        ", ".join(request.network_destinations), limit=limit
    )


def network_rows(request: ApprovalRequest) -> list[str]:
    """The rows of a network request: what is asked (each destination on its own
    row, escaped) and the mode, which stays."""
    destinations = request.network_destinations
    if destinations:
        many = "destination" if len(destinations) == 1 else "destinations"
        rows = [
            f"  {'requests:':<{LABEL_WIDTH}}network access to {len(destinations)} {many}, "
            "for this call only (nothing else is opened)",
            *(f"    - {one_line(where)}" for where in destinations),
        ]
    else:
        rows = [f"  {'requests:':<{LABEL_WIDTH}}network access"]
    rows.append(f"  {'mode:':<{LABEL_WIDTH}}{request.current_mode.value} (unchanged)")
    return rows


def render_prompt(request: ApprovalRequest) -> str:
    """The whole question put to a person, ending with the y/N prompt."""
    command_rows, command = render_field("command", request.command)
    why_rows, why = render_field("why", request.justification, limit=JUSTIFICATION_LIMIT)
    if request.with_network:
        rows = [
            "",
            f"stockade: the agent asks to run a command {network_phrase(request)}, once.",
            *command_rows,
            *why_rows,
            *network_rows(request),
        ]
    else:
        mode = f"{request.current_mode.value} -> {request.requested_mode.value}"
        rows = [
            "",
            "stockade: the agent asks to run a command with wider file access, once.",
            *command_rows,
            *why_rows,
            f"  {'mode:':<{LABEL_WIDTH}}{mode}",
        ]
        if not request.requested_mode.confines:
            # The widest mode confines nothing: the person is told the network comes with it.
            rows.append(f"  {'network:':<{LABEL_WIDTH}}on (danger-full-access allows everything)")
    for field, shown in (("command", command), ("justification", why)):
        warning = escape_warning(field, shown)
        if warning is not None:
            rows.append(warning)
    rows.append("Allow this command once? [y/N] ")
    return "\n".join(rows)


# Written before a prompt on a terminal: undo what earlier output (a denied
# command's, printed by `stockade run --ask`) may have set to hide the prompt. Reset
# the scroll region (it homes the cursor, so inside save/restore), then colours and
# attributes (concealed, black on black), the character set (line drawing maps
# letters to other glyphs), insert mode, autowrap (off would cut long lines at the
# edge) and cursor visibility. Then a fresh line, and the screen from there down
# erased, so nothing drawn there earlier can stand beside the prompt's rows.
TERMINAL_RESET: Final = "\x1b7\x1b[r\x1b8\x1b[0m\x1b(B\x0f\x1b[4l\x1b[?7h\x1b[?25h\r\n\x1b[J"


def terminal_prompt(request: ApprovalRequest) -> str:
    """`render_prompt` for a real terminal: the reset first (it starts the fresh line)."""
    return TERMINAL_RESET + render_prompt(request).removeprefix("\n")

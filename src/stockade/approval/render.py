"""What a person is shown when asked to approve: every character that would run, visible.

A command is text a model wrote, and a terminal interprets some of its characters
instead of showing them: `\\r` returns to the line start, `\\x1b[2K` erases the line,
a backspace steps back, U+202E reverses what follows, a zero-width space shows as
nothing. Printed raw, `echo safe\\r\\x1b[2Krm -rf ~` shows a screen that matches
neither half of what runs. Every prompt that shows an agent's text to a person goes
through this module (the terminal answerer, `stockade run --ask`, `stockade demo
--interactive`, the MCP elicitation, the ACP permission card):

- A character a terminal would act on or draw as nothing is shown as an escape, by
  `stockade.shown.visible` (the one escaping of everything a person is shown; its
  docstring lists what is escaped and how).
- A newline stays a line break, and a text of several lines is shown one numbered
  line per row (`  1 | ...`): the line breaks bash acts on are seen as line breaks,
  and no line of the text can pose as a line of the prompt.
- A backslash the text holds is shown as it is. When anything was escaped the
  prompt says so in a warning line, so with no warning every backslash is literal.
- The command is never truncated (every character of it runs). The justification
  (which does not run) is cut after `JUSTIFICATION_LIMIT` characters, saying how
  many more there were.
- A command rule's prompt (`request.rule` set: docs/rules.md) is its own question:
  the command, the rule and its reason, that nothing widens, and the choices: allow
  once, allow for this session (only where `request.session_prefix` says what that
  would allow: `session_choice`, the exact words every face shows), reject.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

# The escaping is `stockade.shown`'s, the one every face uses for what a person is
# shown (a marker line, `session show`, `probe` too); its names stay importable here.
from ..shown import TERMINAL_STATE_RESET, cut_note
from ..shown import Visible as Visible
from ..shown import one_line as one_line
from ..shown import visible as visible
from ._chain import ApprovalRequest

JUSTIFICATION_LIMIT: Final = 1000
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
        rows[-1] += cut_note(shown.cut)
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


def asking(request: ApprovalRequest, wider: str, *, typed: bool = False) -> str:
    """The prompt's first row: the agent asks for `wider`, or (`typed`: the person
    typed the command, as under `stockade run --ask`) stockade offers it once more."""
    if typed:
        return f"stockade: the sandbox denied your command; it can run again {wider}, once."
    return f"stockade: the agent asks to run a command {wider}, once."


def session_words(prefix: Sequence[str]) -> str:
    """The words "allow for this session" would allow, as one escaped line: each word
    as the judge resolved it, one space between; a word that is empty or holds
    whitespace is quoted, so the words a later command must begin with are all seen."""
    import shlex

    shown = (
        shlex.quote(word) if not word or any(char.isspace() for char in word) else word
        for word in prefix
    )
    return one_line(" ".join(shown))


def session_choice(request: ApprovalRequest) -> str | None:
    """The "allow for this session" choice in the words every face shows, or None where
    it is not offered (an escalation, a prompt over several commands, or doubt)."""
    if request.rule is None or not request.session_prefix:
        return None
    return (
        f"allow `{session_words(request.session_prefix)}` and commands beginning with it "
        "for the rest of this session"
    )


def rule_heading(request: ApprovalRequest, *, typed: bool = False) -> str:
    """A rule prompt's first row: who asks, and that nothing runs unless allowed."""
    whose = "your command" if typed else "this command"
    return (
        f"stockade: a command rule asks you before {whose} runs; nothing runs unless you allow it."
    )


def rule_rows(request: ApprovalRequest) -> tuple[list[str], list[tuple[str, Visible]]]:
    """A rule prompt's rows after the command: the rule, its reason, the mode that
    stays; and the fields shown there (for their escape warnings)."""
    named_rows, rule = render_field("rule", request.rule or "")
    reason_rows, reason = render_field(
        "reason", request.rule_reason or request.reason, limit=JUSTIFICATION_LIMIT
    )
    rows = [
        *named_rows,
        *reason_rows,
        f"  {'mode:':<{LABEL_WIDTH}}{request.current_mode.value} (unchanged: nothing widens)",
    ]
    fields = [("rule", rule), ("reason", reason)]
    if request.rule is not None and request.session_prefix:
        fields.append(("session prefix", visible(" ".join(request.session_prefix))))
    return rows, fields


# The terminal's keys for a rule prompt's choices.
ALLOW_KEY: Final = "y"
SESSION_KEY: Final = "s"


def render_rule_prompt(request: ApprovalRequest, *, typed: bool = False) -> str:
    """A command rule's question, ending with the `[y/s/N]` prompt (`[y/N]` where
    "allow for this session" is not offered)."""
    command_rows, command = render_field("command", request.command)
    more_rows, fields = rule_rows(request)
    rows = ["", rule_heading(request, typed=typed), *command_rows, *more_rows]
    rows.append(f"  {ALLOW_KEY + ':':<{LABEL_WIDTH}}allow once")
    keys = f"{ALLOW_KEY}/N"
    session = session_choice(request)
    if session is not None:
        rows.append(f"  {SESSION_KEY + ':':<{LABEL_WIDTH}}{session}")
        keys = f"{ALLOW_KEY}/{SESSION_KEY}/N"
    rows.append(f"  {'n:':<{LABEL_WIDTH}}reject (nothing runs)")
    for field, shown in (("command", command), *fields):
        warning = escape_warning(field, shown)
        if warning is not None:
            rows.append(warning)
    rows.append(f"Allow this command? [{keys}] ")
    return "\n".join(rows)


def render_prompt(request: ApprovalRequest, *, typed: bool = False) -> str:
    """The whole question put to a person, ending with the y/N prompt. `typed`: the
    person typed the command (`stockade run --ask`), no agent asks for it."""
    if request.rule is not None:
        return render_rule_prompt(request, typed=typed)
    command_rows, command = render_field("command", request.command)
    why_rows, why = render_field("why", request.justification, limit=JUSTIFICATION_LIMIT)
    if request.with_network:
        rows = [
            "",
            asking(request, network_phrase(request), typed=typed),
            *command_rows,
            *why_rows,
            *network_rows(request),
        ]
    else:
        mode = f"{request.current_mode.value} -> {request.requested_mode.value}"
        rows = [
            "",
            asking(request, "with wider file access", typed=typed),
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
# command's, printed by `stockade run --ask`) may have set to hide the prompt
# (`stockade.shown.TERMINAL_STATE_RESET`). Then a fresh line, and the screen from
# there down erased, so nothing drawn there earlier can stand beside the prompt's rows.
TERMINAL_RESET: Final = TERMINAL_STATE_RESET + "\r\n\x1b[J"


def terminal_prompt(request: ApprovalRequest, *, typed: bool = False) -> str:
    """`render_prompt` for a real terminal: the reset first (it starts the fresh line)."""
    return TERMINAL_RESET + render_prompt(request, typed=typed).removeprefix("\n")

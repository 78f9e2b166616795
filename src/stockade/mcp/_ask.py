"""The escalation question as an MCP elicitation form, and its answer as a Decision.

A flat form with one required field, `decision`: "approve once" or "reject"
(default "reject", so a client that submits defaults never grants). The message
shows every character of what would run, escaped by `approval.render` (that is,
`stockade.shown`, the one escaping of all a person is shown), with the working
directory and the mode change. The directory is where the command will start, judged
when it was asked (`request.workdir`: its real path, which the start is bound to),
with a warning row when it is not where the model's `workdir` reads (a symlink on the
way, outside the workspace root); a request without one shows the `workdir` joined to
the root. A command rule's prompt (`request.rule`) shows the rule and its reason
instead of a mode change, and where it offers "allow for this session" the field has
a third choice,
spelled as every face spells it (`approval.session_choice`: the exact words a later
command must begin with). The answer maps onto the approval outcomes:

| client answer                          | Decision            |
|----------------------------------------|---------------------|
| accept, decision "approve once"        | allowed-once        |
| accept, the session choice (offered)   | allowed-for-session |
| accept, decision "reject"              | rejected            |
| decline                                | rejected            |
| cancel                                 | cancelled           |
| accept without a valid decision        | cancelled           |
| no form elicitation, error, timeout    | unavailable         |

Pure: no I/O, no trio, no SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from ..approval import (
    JUSTIFICATION_LIMIT,
    LABEL_WIDTH,
    Answer,
    ApprovalRequest,
    Decision,
    escape_warning,
    network_phrase,
    network_rows,
    render_field,
    rule_heading,
    rule_rows,
    session_choice,
)
from ..reprs import fields_repr

if TYPE_CHECKING:
    from ..shown import Visible

ANSWERER: Final = "mcp-elicitation"
FIELD: Final = "decision"
APPROVE: Final = "approve once"
REJECT: Final = "reject"
# What the person may read of a file tool's content before approving (the content
# does not run; the path does not get cut).
CONTENT_LIMIT: Final = 2000


def ask_schema(request: ApprovalRequest | None = None) -> dict[str, Any]:
    """The form's `requestedSchema`: one string field, "reject" by default; two choices,
    or three for a command rule's prompt that offers "allow for this session"."""
    if request is None or request.rule is None:
        description = (
            f'"{APPROVE}": run exactly this once with the wider access. "{REJECT}": do not run it.'
        )
        choices = [APPROVE, REJECT]
    else:
        description = f'"{APPROVE}": run exactly this once (nothing widens). '
        choices = [APPROVE]
        session = session_choice(request)
        if session is not None:
            description += f'"{session}": run it, and do not ask again for those words. '
            choices.append(session)
        description += f'"{REJECT}": do not run it.'
        choices.append(REJECT)
    return {
        "type": "object",
        "properties": {
            FIELD: {
                "type": "string",
                "title": "Decision",
                "description": description,
                "enum": choices,
                "default": REJECT,
            }
        },
        "required": [FIELD],
    }


@attrs.frozen
class Shown:
    """What the form shows beside the request: where it runs (`cwd`: the `workdir` as
    written, joined to the root; a request that carries its judged `workdir` shows
    that instead) and, for the file tools, what would be written (fields the
    ApprovalRequest does not carry)."""

    __repr__ = fields_repr

    cwd: str
    extra: tuple[tuple[str, str], ...] = ()


def shown_for(tool: str, arguments: Mapping[str, Any], root: str) -> Shown:
    """The working directory of a call (`workdir` joined to the root, for bash) and
    the file tools' content fields, from the arguments the call runs with."""
    import posixpath

    workdir = arguments.get("workdir") if tool == "bash" else None
    cwd = posixpath.normpath(posixpath.join(root, workdir)) if isinstance(workdir, str) else root
    extra: list[tuple[str, str]] = []
    for name in ("content", "old", "new"):
        value = arguments.get(name)
        if tool in ("write_file", "edit_file") and isinstance(value, str):
            extra.append((name, value))
    return Shown(cwd=cwd, extra=tuple(extra))


def ask_message(request: ApprovalRequest, shown: Shown) -> str:
    """The form's message: the request, every hidden character escaped, never the
    command cut; the choices spelled out at the end."""
    command_rows, command = render_field("command", request.command)
    asked = request.workdir
    cwd_rows, cwd = render_field("cwd", shown.cwd if asked is None else asked.real)
    fields: list[tuple[str, Visible]] = [("command", command), ("cwd", cwd)]
    if asked is not None and asked.note is not None:
        # Where the model's text leads is not where it reads: said beside the cwd.
        note_rows, note = render_field("warning", asked.note)
        cwd_rows += note_rows
        fields.append(("workdir", note))
    why_rows: list[str] = []
    if request.rule is None:
        why_rows, why = render_field("why", request.justification, limit=JUSTIFICATION_LIMIT)
        fields.append(("justification", why))
    extra_rows: list[str] = []
    for name, value in shown.extra:
        rows, visible_value = render_field(name, value, limit=CONTENT_LIMIT)
        extra_rows += rows
        fields.append((name, visible_value))
    if request.rule is not None:
        # A command rule asks whether it runs at all: its rule and reason, no mode change.
        head = rule_heading(request)
        detail_rows, detail_fields = rule_rows(request)
        fields += detail_fields
        session = session_choice(request)
        choices = f'"{APPROVE}" to run exactly this once'
        choices += f', "{session}"' if session is not None else ""
    else:
        head, detail_rows, grant = _escalation_rows(request)
        choices = f'"{APPROVE}" to run exactly this once {grant}'
    rows = [head, *command_rows, *cwd_rows, *extra_rows, *why_rows, *detail_rows]
    rows += [w for name, value in fields if (w := escape_warning(name, value)) is not None]
    rows.append(
        f'Choose {choices}, or "{REJECT}". '
        "Declining rejects; dismissing the form cancels. Nothing runs unless you approve."
    )
    return "\n".join(rows)


def _escalation_rows(request: ApprovalRequest) -> tuple[str, list[str], str]:
    """An escalation's first row, its rows of what widens, and the grant in a few words."""
    if request.with_network:
        grant = network_phrase(request)
        return (
            f"stockade: the agent asks to run a command {grant}, once.",
            network_rows(request),
            grant,
        )
    head = "stockade: the agent asks to run a command with wider file access, once."
    mode = f"{request.current_mode.value} -> {request.requested_mode.value}"
    mode_rows = [f"  {'mode:':<{LABEL_WIDTH}}{mode}"]
    if not request.requested_mode.confines:
        mode_rows.append(f"  {'network:':<{LABEL_WIDTH}}on (danger-full-access allows everything)")
    return head, mode_rows, f"under {request.requested_mode.value}"


def decide(
    action: str, content: Mapping[str, Any] | None, request: ApprovalRequest | None = None
) -> Answer:
    """The client's elicitation answer as the approval outcome (see the module table);
    `request`, the question it answers, says whether the session choice was offered."""
    if action == "accept":
        value = content.get(FIELD) if isinstance(content, Mapping) else None
        if value == APPROVE:
            return Answer(Decision.ALLOWED_ONCE, ANSWERER)
        if request is not None and value is not None and value == session_choice(request):
            return Answer(Decision.ALLOWED_FOR_SESSION, ANSWERER)
        if value == REJECT:
            return Answer(Decision.REJECTED, ANSWERER)
        return Answer(
            Decision.CANCELLED, ANSWERER, "the client submitted the form without a decision"
        )
    if action == "decline":
        return Answer(Decision.REJECTED, ANSWERER, "declined in the MCP client")
    return Answer(Decision.CANCELLED, ANSWERER, "dismissed in the MCP client")


def unavailable(detail: str) -> Answer:
    return Answer(Decision.UNAVAILABLE, ANSWERER, detail)


NO_ELICITATION: Final = "this MCP client cannot ask the person: it declared no form elicitation"
SHUTTING_DOWN: Final = "the MCP server is shutting down"


def timed_out(seconds: float) -> str:
    return f"nobody answered through the MCP client within {seconds:g} s"


def can_elicit_form(capabilities: Any) -> bool:
    """Whether declared client capabilities include form elicitation. An empty
    `elicitation: {}` counts as form (how clients before 2025-11-25 declare it)."""
    elicitation = getattr(capabilities, "elicitation", None)
    if elicitation is None:
        return False
    form = getattr(elicitation, "form", None)
    url = getattr(elicitation, "url", None)
    return form is not None or url is None

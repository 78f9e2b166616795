"""An escalation as a `session/request_permission`, and the client's answer as a decision.

Pure: no trio, no SDK, no I/O. Everything is plain JSON-shaped data in the wire's
spelling (camelCase), so it is tested without a client and validated by the SDK's
models only at the edge (`agent.py`).

The options offered, and what each one means:

| option id        | ACP kind       | decision       | effect                                |
|------------------|----------------|----------------|---------------------------------------|
| `allow-once`     | `allow_once`   | `allowed-once` | this one call retried, wider          |
| `reject`         | `reject_once`  | `rejected`     | nothing runs; no re-ask this turn     |
| `switch-session` | `allow_always` | `allowed-once` | the session's mode is switched (a     |
|                  |                |                | knob event), then this call runs;     |
|                  |                |                | offered only where the deployment     |
|                  |                |                | enables it                            |

A command rule's prompt (`request.rule`: docs/rules.md) asks whether a command runs
at all; nothing widens, so no session switch is offered. Its options:

| option id        | ACP kind       | decision              | effect                         |
|------------------|----------------|-----------------------|--------------------------------|
| `allow-once`     | `allow_once`   | `allowed-once`        | this command runs              |
| `allow-session`  | `allow_always` | `allowed-for-session` | it runs, and later commands    |
|                  |                |                       | beginning with the words shown |
|                  |                |                       | run unasked in this session;   |
|                  |                |                       | offered only where the request |
|                  |                |                       | has those words                |
| `reject`         | `reject_once`  | `rejected`            | nothing runs                   |

A `cancelled` outcome is `cancelled`. Anything else the client might send (an
option that was not offered, a result of the wrong shape) is `unavailable`: the
person's choice is unknown, and nothing runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Final

import attrs

from ..approval import ApprovalRequest, Decision, render
from ..reprs import fields_repr

ALLOW_ONCE: Final = "allow-once"
REJECT: Final = "reject"
SWITCH_SESSION: Final = "switch-session"
ALLOW_SESSION: Final = "allow-session"

# The longest title the editor is given; the full command is always in the content.
TITLE_LIMIT: Final = 120


@attrs.frozen
class Outcome:
    """What an answer means for the chain: a decision, why, and whether the person
    chose to switch the session (`allow_always`)."""

    __repr__ = fields_repr

    decision: Decision
    detail: str | None = None
    switch: bool = False


def options(request: ApprovalRequest, *, allow_always: bool) -> list[dict[str, Any]]:
    """The permission options for `request`, in the order an editor shows them."""
    if request.rule is not None:
        return rule_options(request)
    if request.with_network:
        allow_name = "Allow once, " + render.network_phrase(request, limit=TITLE_LIMIT)
        switch_name = "Turn network on for this session"
    else:
        allow_name = f"Allow once under {request.requested_mode.value}"
        switch_name = f"Switch this session to {request.requested_mode.value}"
    offered = [{"optionId": ALLOW_ONCE, "name": allow_name, "kind": "allow_once"}]
    # Named destinations are granted for one call only: no session switch (network on
    # from here on) is offered for them.
    if allow_always and not request.network_destinations:
        offered.append({"optionId": SWITCH_SESSION, "name": switch_name, "kind": "allow_always"})
    offered.append({"optionId": REJECT, "name": "Reject", "kind": "reject_once"})
    return offered


def rule_options(request: ApprovalRequest) -> list[dict[str, Any]]:
    """A command rule's options: allow once, allow for this session (where offered:
    `allow_always`, scoped to the session's log, never stored), reject."""
    offered = [{"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"}]
    session = render.session_choice(request)
    if session is not None:
        name = session[0].upper() + session[1:]
        offered.append({"optionId": ALLOW_SESSION, "name": name, "kind": "allow_always"})
    offered.append({"optionId": REJECT, "name": "Reject", "kind": "reject_once"})
    return offered


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in `text`."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def prompt_text(request: ApprovalRequest, cwd: str | None) -> str:
    """What the person reads: every character of the command, escaped where a
    renderer would hide or act on it (`approval.render`), in a literal block."""
    if request.rule is not None:
        return _rule_text(request, cwd)
    command_rows, command = render.render_field("command", request.command)
    why_rows, why = render.render_field(
        "why", request.justification, limit=render.JUSTIFICATION_LIMIT
    )
    rows = [*command_rows, *why_rows]
    fields = [("command", command), ("justification", why)]
    label = f"  {{:<{render.LABEL_WIDTH}}}"
    rows += _cwd_rows(request, cwd, fields)
    if request.with_network:
        rows += render.network_rows(request)
    else:
        rows.append(label.format("denied:") + f"under {request.current_mode.value}")
        rows.append(label.format("requested:") + request.requested_mode.value)
        if not request.requested_mode.confines:
            rows.append(label.format("network:") + "on (danger-full-access allows everything)")
    rows += [w for field, shown in fields if (w := render.escape_warning(field, shown))]
    block = "\n".join(rows)
    fence = _fence(block)
    if request.with_network:
        head = f"The agent asks to run this command once {render.network_phrase(request)}."
    else:
        head = "The agent asks to run this command once with wider file access."
    return f"{head}\n\n{fence}text\n{block}\n{fence}\n"


def _cwd_rows(
    request: ApprovalRequest, cwd: str | None, fields: list[tuple[str, render.Visible]]
) -> list[str]:
    """The rows saying where the command starts (escaped like the command; `fields`
    gets what each escaped): the real path judged when asked, with a warning row when
    it is not where the model's `workdir` reads; without one, `cwd` as given."""
    asked = request.workdir
    if asked is not None:
        cwd = asked.real
    if cwd is None:
        return []
    rows, shown = render.render_field("cwd", cwd)
    fields.append(("cwd", shown))
    if asked is not None and asked.note is not None:
        note_rows, note = render.render_field("warning", asked.note)
        rows += note_rows
        fields.append(("workdir", note))
    return rows


def _rule_text(request: ApprovalRequest, cwd: str | None) -> str:
    """A command rule's question: the command, where it runs, the rule and its reason,
    the mode that stays, escaped like an escalation's, in a literal block."""
    command_rows, command = render.render_field("command", request.command)
    rows = list(command_rows)
    fields = [("command", command)]
    rows += _cwd_rows(request, cwd, fields)
    rule_rows, rule_fields = render.rule_rows(request)
    rows += rule_rows
    rows += [
        w for field, shown in (*fields, *rule_fields) if (w := render.escape_warning(field, shown))
    ]
    block = "\n".join(rows)
    fence = _fence(block)
    head = "A command rule asks you before this command runs; nothing runs unless you allow it."
    return f"{head}\n\n{fence}text\n{block}\n{fence}\n"


def title(request: ApprovalRequest) -> str:
    """One line naming the command (escaped and shortened: the content has all of it)."""
    if request.rule is not None:
        rule = render.one_line(request.rule, limit=TITLE_LIMIT)
        return f"Run (command rule {rule})? {render.one_line(request.command, limit=TITLE_LIMIT)}"
    what = (
        render.network_phrase(request, limit=TITLE_LIMIT)
        if request.with_network
        else request.requested_mode.value
    )
    return f"Run once {what}: {render.one_line(request.command, limit=TITLE_LIMIT)}"


def tool_call(
    request: ApprovalRequest,
    *,
    tool_call_id: str,
    cwd: str | None,
    kind: str = "execute",
) -> dict[str, Any]:
    """The `toolCall` of the request: it names the call the escalation retries.

    `rawInput` carries the exact command text and the modes, unescaped, for a
    client that renders its own view; `content` is the escaped text for a person.
    Its `cwd` and `locations` are where the command will start (the request's judged
    `workdir`, when it has one: the real path the answer binds), `workdir` what the
    model wrote and `cwdWarning` why that is not where it reads, when it is not.
    """
    asked = request.workdir
    if asked is not None:
        cwd = asked.real
    raw: dict[str, Any] = {
        "command": request.command,
        "cwd": cwd,
        "justification": request.justification,
        "deniedMode": request.current_mode.value,
        "requestedMode": request.requested_mode.value,
        "withNetwork": request.with_network,
        "reason": request.reason,
    }
    if asked is not None and asked.named is not None:
        raw["workdir"] = asked.named
    if asked is not None and asked.note is not None:
        raw["cwdWarning"] = asked.note
    if request.network_destinations:
        raw["networkDestinations"] = list(request.network_destinations)
    if request.rule is not None:
        raw["rule"] = request.rule
        raw["ruleReason"] = request.rule_reason
        raw["sessionPrefix"] = list(request.session_prefix)
    call: dict[str, Any] = {
        "toolCallId": tool_call_id,
        "title": title(request),
        "kind": kind,
        "status": "pending",
        "content": [
            {"type": "content", "content": {"type": "text", "text": prompt_text(request, cwd)}}
        ],
        "rawInput": raw,
    }
    if cwd is not None:
        call["locations"] = [{"path": cwd}]
    return call


def permission_params(
    request: ApprovalRequest,
    *,
    session_id: str,
    tool_call_id: str,
    cwd: str | None,
    allow_always: bool,
    kind: str = "execute",
) -> dict[str, Any]:
    """The whole `session/request_permission` params for `request`."""
    return {
        "sessionId": session_id,
        "toolCall": tool_call(request, tool_call_id=tool_call_id, cwd=cwd, kind=kind),
        "options": options(request, allow_always=allow_always),
    }


def outcome(result: Any, offered: list[dict[str, Any]]) -> Outcome:
    """The decision a `session/request_permission` result stands for.

    `result` is the JSON the client answered with; `offered` the options it was given.
    """
    answer = result.get("outcome") if isinstance(result, Mapping) else None
    kind = answer.get("outcome") if isinstance(answer, Mapping) else None
    if kind == "cancelled":
        return Outcome(Decision.CANCELLED, "the client cancelled the permission request")
    if kind != "selected":
        return Outcome(Decision.UNAVAILABLE, "the client's answer had no outcome this agent reads")
    assert isinstance(answer, Mapping)
    chosen = answer.get("optionId")
    ids = {option["optionId"] for option in offered}
    if not isinstance(chosen, str) or chosen not in ids:
        return Outcome(
            Decision.UNAVAILABLE,
            f"the client selected an option that was not offered ({chosen!r})",
        )
    if chosen == ALLOW_ONCE:
        return Outcome(Decision.ALLOWED_ONCE, "allowed once in the editor")
    if chosen == SWITCH_SESSION:
        return Outcome(Decision.ALLOWED_ONCE, "the person switched the session", switch=True)
    if chosen == ALLOW_SESSION:
        return Outcome(Decision.ALLOWED_FOR_SESSION, "allowed for this session in the editor")
    return Outcome(Decision.REJECTED, "rejected in the editor")


def ask_cwd(root: str | None, arguments: Mapping[str, Any] | None) -> str | None:
    """The directory the command would run in, as written: the session root, or its
    `workdir` joined to it (shown only for a request that carries no judged
    `workdir`: the bash tool's always do)."""
    if root is None:
        return None
    workdir = arguments.get("workdir") if isinstance(arguments, Mapping) else None
    if not isinstance(workdir, str) or not workdir:
        return root
    return os.path.normpath(os.path.join(root, workdir))


TOOL_KINDS: Final[Mapping[str, str]] = {
    "bash": "execute",
    "job_output": "read",
    "kill_job": "execute",
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
}


def tool_kind(name: str | None) -> str:
    """The ACP tool kind of a harness tool (`other` for one this agent does not know)."""
    return TOOL_KINDS.get(name or "", "other")

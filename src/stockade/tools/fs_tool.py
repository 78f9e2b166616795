"""The model-facing read_file, write_file and edit_file tools over the fenced operations.

The fence keys on the same per-call policy as bash; write and edit offer the same
one approved wider retry, through the same ApprovalActor, with the same texts.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

import attrs
import msgspec
import trio

from ..approval import ApprovalClient
from ..reprs import fields_repr
from ..trust import DenyRead
from ..vocab import ExecutionPolicy, SandboxMode, allowed_modes
from . import _escalation as texts
from . import fs
from ._approve import Escalation, ToolSession, request_escalation, tool_error
from ._record import CallRecorder, Recorded, with_changed
from ._roots import PinnedRoots as PinnedRoots
from .bash import unspawnable
from .result import ToolResult

READ_FILE = "read_file"
WRITE_FILE = "write_file"
EDIT_FILE = "edit_file"
FS_TOOLS = (READ_FILE, WRITE_FILE, EDIT_FILE)


class ReadArguments(msgspec.Struct, forbid_unknown_fields=True):
    path: str
    start_line: int | None = None
    end_line: int | None = None


class WriteArguments(msgspec.Struct, forbid_unknown_fields=True):
    path: str
    content: str
    sandbox_permissions: SandboxMode | None = None
    justification: str | None = None


class EditArguments(msgspec.Struct, forbid_unknown_fields=True):
    path: str
    old: str
    new: str
    replace_all: bool = False
    sandbox_permissions: SandboxMode | None = None
    justification: str | None = None


def _escalation_properties() -> dict[str, Any]:
    return {
        "sandbox_permissions": {
            "type": "string",
            "enum": list(allowed_modes()),
            "description": "Ask the user to run THIS call once under this wider mode; only "
            "after a denial; requires justification.",
        },
        "justification": {
            "type": "string",
            "description": "Why the wider mode is needed, shown to the user.",
        },
    }


def escalation_hint(tool: str) -> str:
    """What a denied write_file / edit_file result ends with when escalation is offered:
    the retry is a call of the same tool, never of bash."""
    return (
        f"To retry this exact {tool} call once with wider file access, call {tool} again "
        "with the same arguments, sandbox_permissions set to the narrowest sufficient "
        "mode, and a justification; the user will be asked."
    )


def fs_schemas(*, escalation: bool) -> list[dict[str, Any]]:
    """Schemas of the three file tools; write/edit carry escalation fields when offered."""
    path = {"type": "string", "description": "File path, relative to the workspace root."}
    extra = _escalation_properties() if escalation else {}
    denial = (
        " The file sandbox may refuse the write: the result then ends with "
        "[sandbox: file access denied under <mode> mode]; do not work around it."
    )
    if escalation:
        denial += (
            " If the write is needed, call this tool again once with the same arguments, "
            "sandbox_permissions set to the narrowest sufficient mode and a justification "
            "the user will read; a grant applies to that one call only."
        )
    return [
        {
            "name": READ_FILE,
            "description": "Read a text file (optionally a 1-based inclusive line range). "
            "Large files are truncated and binary files are reported, not shown.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": path,
                    "start_line": {"type": "integer", "minimum": 1},
                    "end_line": {"type": "integer", "minimum": 1},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
        {
            "name": WRITE_FILE,
            "description": "Create or replace a file with content, atomically." + denial,
            "parameters": {
                "type": "object",
                "properties": {"path": path, "content": {"type": "string"}, **extra},
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        },
        {
            "name": EDIT_FILE,
            "description": "Replace `old` with `new` in a file; `old` must occur exactly "
            "once unless replace_all." + denial,
            "parameters": {
                "type": "object",
                "properties": {
                    "path": path,
                    "old": {"type": "string"},
                    "new": {"type": "string"},
                    "replace_all": {"type": "boolean"},
                    **extra,
                },
                "required": ["path", "old", "new"],
                "additionalProperties": False,
            },
        },
    ]


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    # `converter=tuple`, in a form mypy's attrs plugin can type (it leaves tuple's
    # element type unsolved, and then refuses every argument).
    return tuple(value)


@attrs.frozen
class FsTool:
    """`fenced` False is `stockade.fs.local`: every call runs as danger-full-access.

    `protected` adds the composition's protected paths (relative to each writable root,
    or absolute) to the defaults a fenced write is refused on (`stockade.trust`).
    """

    __repr__ = fields_repr

    fenced: bool
    read_cap: int = fs.DEFAULT_READ_CAP
    approval: ApprovalClient | None = None
    confines: bool = True
    protected: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    # What no fenced call may read or write (the provider's deny_read list).
    deny_read: DenyRead | None = None

    @property
    def escalation(self) -> bool:
        return self.fenced and self.confines

    async def call(
        self,
        call_id: str,
        name: str,
        arguments: Any,
        session: ToolSession | None,
        default_policy: ExecutionPolicy,
        *,
        roots: PinnedRoots | None = None,
        record: CallRecorder | None = None,
    ) -> ToolResult:
        """Run one fs tool call. `roots`: the session's roots pinned when it opened (every
        fenced call is judged against them); None pins them for this call alone.
        `record`: the harness's window around a write or an edit (what it changed in
        the root becomes the `changed` facts)."""
        shape = {READ_FILE: ReadArguments, WRITE_FILE: WriteArguments, EDIT_FILE: EditArguments}
        try:
            args = msgspec.convert(arguments, shape[name])
        except msgspec.ValidationError as error:
            return tool_error(call_id, name, f"invalid arguments for {name}: {error}")
        for field in ("path", "content", "old", "new"):
            problem = unspawnable(field, getattr(args, field, None))
            if problem is not None and not (field == "path" and "NUL" in problem):
                return tool_error(call_id, name, problem)
        policy = default_policy if session is None else await session.execution_policy()
        if not self.fenced:
            policy = ExecutionPolicy(SandboxMode.DANGER_FULL_ACCESS, policy.workspace_root)
        cwd = (session.cwd if session is not None else None) or policy.workspace_root
        described = f"{name} {args.path}"
        granted: SandboxMode | None = None
        if not isinstance(args, ReadArguments) and (
            args.sandbox_permissions is not None or args.justification is not None
        ):
            if not self.escalation:
                return tool_error(call_id, name, texts.NOT_ADVERTISED)
            refusal, granted = await request_escalation(
                Escalation(
                    call_id=call_id,
                    tool=name,
                    command=described,
                    requested=args.sandbox_permissions,
                    justification=args.justification,
                    current=policy.mode,
                ),
                session=session,
                approval=self.approval,
                confines=self.confines,
            )
            if refusal is not None:
                return refusal
            assert granted is not None
            policy = ExecutionPolicy(
                granted,
                policy.workspace_root,
                temp_dir=policy.temp_dir,
                host_temp=policy.host_temp,
                extra_roots=policy.extra_roots,
            )
        operation = self._operation(args, policy, cwd, roots)
        recorded = Recorded()
        if record is None or isinstance(args, ReadArguments):
            result = await trio.to_thread.run_sync(operation)
        else:
            async with record.window(policy) as recorded:
                result = await trio.to_thread.run_sync(operation)
        text = result.text
        if granted is not None:
            text += "\n" + texts.granted(granted)
        elif result.denied and self.escalation:
            text += "\n" + escalation_hint(name)
        facts = {**result.facts(), "command": described}
        if granted is not None:
            facts["granted"] = granted.value
        facts = with_changed(facts, recorded)
        return ToolResult(
            call_id=call_id, name=name, text=text, is_error=result.is_error, facts=facts
        )

    def _operation(
        self, args: Any, policy: ExecutionPolicy, cwd: str, roots: PinnedRoots | None
    ) -> Any:
        match args:
            case ReadArguments():
                return partial(
                    fs.read_file,
                    policy,
                    cwd,
                    args.path,
                    args.start_line,
                    args.end_line,
                    read_cap=self.read_cap,
                    roots=roots,
                    deny_read=self.deny_read,
                )
            case WriteArguments():
                return partial(
                    fs.write_file,
                    policy,
                    cwd,
                    args.path,
                    args.content,
                    protected_extra=self.protected,
                    roots=roots,
                    deny_read=self.deny_read,
                )
            case EditArguments():
                return partial(
                    fs.edit_file,
                    policy,
                    cwd,
                    args.path,
                    args.old,
                    args.new,
                    args.replace_all,
                    protected_extra=self.protected,
                    roots=roots,
                    deny_read=self.deny_read,
                )
        raise AssertionError(f"unexpected arguments {args!r}")

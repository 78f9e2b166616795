"""AgentSession: what an agent loop holds, one session's tools and knobs over its log.

`run_tool` logs each call and result around the tool; `SessionShell` runs commands
programmatically under the session's resolved policy; `close` kills its jobs.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs
import msgspec
import trio

from .. import tools
from ..events import SessionEvent, UnencodableEvent
from ..history import UndoOutcome
from ..messages import JobHandle, JobReport, ShellResult
from ..policy import PolicyContext, SessionRuleAllowed
from ..reprs import fields_repr
from ..tools import FS_TOOLS, CallRecorder, PinnedRoots, ToolCalled, ToolResult, ToolResulted
from ..vocab import ApprovalPolicy, ExecutionPolicy, Network, SandboxMode
from ._history import UndoableCall, UndoRefused
from .session import Session, check_workspace_root

if TYPE_CHECKING:
    from .harness import Harness


@attrs.define(eq=False)
class AgentSession:
    """One agent's session: the tools it calls and the knobs it switches.

    All policy state lives in the session log; the only thing held here is the set
    of commands whose escalation the user rejected in the current turn (a turn
    ends at the next `pre_step()`).
    """

    harness: Harness
    session: Session
    rejected_this_turn: set[str] = attrs.field(factory=set)
    # The fenced fs tools' roots, pinned when the session opened; closed with it.
    fs_roots: PinnedRoots | None = None

    def __repr__(self) -> str:
        # One line: the default would print the harness, its actors and the log.
        return repr(self.session).replace("Session(", "AgentSession(", 1)

    @property
    def id(self) -> str:
        """The session's id: what `Harness.resume_session` and `stockade session show`
        take."""
        return self.session.id

    @property
    def cwd(self) -> str | None:
        return self.session.cwd

    @property
    def temp_dir(self) -> str | None:
        """The session's private temp directory (its commands' TMPDIR), removed when it
        closes; None where commands are not confined."""
        return self.session.temp_dir

    @property
    def host_temp(self) -> tuple[str, ...]:
        """The host temp roots its calls may write too (`allow_host_temp`), or ()."""
        return self.session.host_temp

    @property
    def shell(self) -> SessionShell:
        return SessionShell(self)

    async def run_tool(
        self, name: str, arguments: Mapping[str, Any], *, call_id: str | None = None
    ) -> ToolResult:
        """Call a model-facing tool with arguments as the model sent them; both are logged."""
        call_id = call_id or f"call-{uuid.uuid4().hex[:12]}"
        arguments = dict(arguments) if isinstance(arguments, Mapping) else arguments
        try:
            (called,) = await self.session.append(
                ToolCalled(call_id=call_id, name=name, arguments=_loggable(arguments))
            )
        except UnencodableEvent:
            # Text that is not UTF-8 (a lone surrogate) cannot be a JSON line: log
            # the call's arguments escaped; the tool itself refuses such text.
            (called,) = await self.session.append(
                ToolCalled(call_id=call_id, name=name, arguments={"_raw": ascii(arguments)})
            )
        # Every connection the proxy decides for it is in the log already, appended
        # by the executor before a byte of it went through (`audit_connection`).
        result = await self._dispatch(call_id, name, arguments, self._recorder(called.seq))
        if not _encodable(result.text):
            result = msgspec.structs.replace(result, text=ascii(result.text)[1:-1])
        await self.session.append(
            ToolResulted(
                call_id=call_id,
                name=name,
                text=result.text,
                is_error=result.is_error,
                facts=result.facts,
            )
        )
        return result

    def _recorder(self, call_seq: int) -> CallRecorder | None:
        """The window a call that may write records its changes in (issue 42): what
        its root looked like before, what it changed (None: history is off)."""
        history = self.harness.history
        if history is None or not history.enabled:
            return None
        return history.recorder(self.session, call_seq)

    async def _dispatch(
        self, call_id: str, name: str, arguments: Any, record: CallRecorder | None = None
    ) -> ToolResult:
        bash = self.harness.bash
        match name:
            case tools.BASH:
                return await bash.call(call_id, arguments, self, record=record)
            case tools.JOB_OUTPUT:
                return await bash.job_output(call_id, arguments, self)
            case tools.KILL_JOB:
                return await bash.kill_job(call_id, arguments, self)
            case _ if name in FS_TOOLS and self.harness.fs is not None:
                return await self.harness.fs.call(
                    call_id,
                    name,
                    arguments,
                    self,
                    self.harness.default_policy,
                    roots=self.fs_roots,
                    record=record,
                )
            case _:
                known = ", ".join(schema["name"] for schema in self.harness.tool_schemas())
                return ToolResult(
                    call_id=call_id,
                    name=name,
                    text=f"unknown tool {name!r} (available: {known})",
                    is_error=True,
                )

    # --- undo (issue 42, docs/undo.md) ---

    async def undoable_calls(self) -> Sequence[UndoableCall]:
        """The calls of this session whose changes are recorded, in log order (each
        says whether an undo of it is already in the log). UndoRefused, saying why,
        where the workspace's history stopped (past a budget)."""
        history = self.harness.history
        if history is None:
            return []
        return await history.undoable_calls(self.session)

    async def undo(self, call_seq: int) -> UndoOutcome:
        """Revert what call `call_seq` (its tool/call event's seq) changed in the root,
        when nothing later touched the same paths; a `files/undone` event. UndoRefused
        (nothing changed) names the later calls in the way, or says why not."""
        return await self._revert("undo", call_seq)

    async def restore(self, seq: int) -> UndoOutcome:
        """Put the root back as it was before seq `seq` (a call's seq: before that
        call); a `files/restored` event. UndoRefused (nothing changed) says why not."""
        return await self._revert("restore", seq)

    async def _revert(self, kind: Literal["undo", "restore"], target: int) -> UndoOutcome:
        history = self.harness.history
        if history is None:
            raise UndoRefused("this harness keeps no undo history")
        return await history.revert(self.session, kind, target)

    # --- the session's policy, all folded from its log ---

    async def events(self) -> Sequence[SessionEvent]:
        """The session's events (an immutable view of its log, shared, not copied)."""
        return await self.session.events()

    async def allow_for_session(self, event: SessionRuleAllowed) -> None:
        """Record a person's "allow for this session" answer to a command rule's prompt
        in this session's log (its forks inherit it; nothing outlives the session)."""
        await self.session.append(event)

    async def execution_policy(
        self, explicit_mode: SandboxMode | None = None, explicit_network: Network | None = None
    ) -> ExecutionPolicy:
        return await self.session.execution_policy(explicit_mode, explicit_network)

    async def sandbox_mode(self) -> SandboxMode:
        return await self.session.sandbox_mode()

    async def approval_policy(self) -> ApprovalPolicy:
        return await self.session.approval_policy()

    async def network(self) -> Network:
        """The network this session's calls get (`on` under danger-full-access)."""
        return await self.session.network()

    async def set_sandbox_mode(self, mode: SandboxMode | str) -> SessionEvent | None:
        return await self.session.set_sandbox_mode(mode)

    async def set_approval_policy(self, policy: ApprovalPolicy | str) -> SessionEvent | None:
        return await self.session.set_approval_policy(policy)

    async def set_network(self, network: Network | str) -> SessionEvent | None:
        """Network `off` | `on` for this session's calls, from here on (an event in its log)."""
        return await self.session.set_network(network)

    async def select_preset(self, name: str) -> tuple[SessionEvent, ...]:
        return await self.session.select_preset(name)

    async def current_preset(self) -> str:
        return await self.session.current_preset()

    async def pre_step(self) -> PolicyContext | None:
        """Before each model step: the policy message if it changed. Starts a new turn."""
        self.rejected_this_turn.clear()
        return await self.session.pre_step()

    async def fork_child(
        self, *, session_id: str | None = None, cwd: str | os.PathLike[str] | None = None
    ) -> AgentSession:
        """A new child session (never a resumed one: an id that exists is refused)."""
        check_workspace_root(cwd, "the child session's cwd")
        # A child rooted over the log directory could rewrite its parent's log.
        self.harness.check_log_out_of_reach(cwd if cwd is not None else self.cwd)
        child = await self.session.fork_child(session_id=session_id, cwd=cwd)
        self.harness.register_session(child)
        return AgentSession(
            harness=self.harness, session=child, fs_roots=self.harness.pin_fs_roots(child)
        )

    async def close(self) -> None:
        """Kill this session's background jobs, forget them, and release its log.

        Every job the session started (running or still queued) is killed with its
        process group, as `kill_job` does, and waited for; its unread output is
        discarded. Jobs of child sessions belong to the children. The fs tools' pinned
        roots are closed. Idempotent; it finishes even when the caller is being cancelled.
        """
        try:
            with trio.CancelScope(shield=True):
                await self._kill_jobs()
            try:
                await self.session.close()  # its private temp directory too, jobs gone
            finally:
                self.harness.forget_session(self.session)
        finally:
            if self.fs_roots is not None:
                self.fs_roots.close()

    async def _kill_jobs(self) -> None:
        # Its jobs end as session-closed, and its cgroup goes with them.
        with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
            await self.harness.executor.close_session(self.id)


@attrs.frozen
class SessionShell:
    """Programmatic run/start/job_output/kill under the session's resolved policy."""

    __repr__ = fields_repr

    owner: AgentSession

    async def _spec(self, command: str, **options: Any) -> Any:
        policy = await self.owner.execution_policy()
        executor = self.owner.harness.executor
        return executor.resolve(command, policy=policy, owner=self.owner.id, **options)

    async def run(self, command: str, **options: Any) -> ShellResult:
        return await self.owner.harness.executor.run(await self._spec(command, **options))

    async def start(self, command: str, **options: Any) -> JobHandle:
        return await self.owner.harness.executor.start(await self._spec(command, **options))

    async def job_output(self, job_id: str) -> JobReport:
        return await self.owner.harness.executor.job_output(job_id, owner=self.owner.id)

    async def wait(self, job_id: str, *, read: bool = True) -> JobReport:
        return await self.owner.harness.executor.wait(job_id, owner=self.owner.id, read=read)

    async def kill(self, job_id: str) -> JobReport:
        return await self.owner.harness.executor.kill(job_id, owner=self.owner.id)

    async def list(self) -> list[JobHandle]:
        return await self.owner.harness.executor.list(owner=self.owner.id)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _loggable(arguments: Any) -> dict[str, Any]:
    """Arguments as the model sent them, kept even when they are not a JSON object."""
    if isinstance(arguments, dict):
        return arguments
    return {"_raw": repr(arguments)}

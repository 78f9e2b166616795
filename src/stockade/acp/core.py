"""The ACP agent's Trio side: sessions, turns, modes and the `allow_always` switch.

No SDK here: requests arrive as plain values, and everything sent to the client
goes through `notify(session_id, update)` as JSON-shaped dicts (`agent.py` bridges
both ways). One stockade session per ACP session, with the same id; all policy is
the harness's (a face holds none).

A turn (`session/prompt`): log the prompt, then before every model step run
`pre_step()` (its policy-context message is logged, and the model's history is
folded from the log, so the model sees it at that step), ask the model, stream its
text and each tool call with its result, until a step has no tool calls.

`session/cancel` during a turn: an open permission question resolves `cancelled`
(the tool returns its cancelled text, which is logged); otherwise the turn's work
is cancelled at once. Either way the turn ends with stop reason `cancelled`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import attrs
import trio

from ..approval import ApprovalRequest
from ..errors import StockadeError
from ..faces import calls_lines, outcome_line, refusal_line
from ..harness import AgentSession, Harness, UndoRefused
from ..reprs import fields_repr
from ..sessionlog import check_session_id
from ..trust import broad_root_refusal
from ..vocab import Network
from .answerer import AskContext
from .commands import Command, Unusable, parse_command
from .events import CommandAnswered, PromptReceived, ReplyGiven
from .model import Model
from .modes import NotSelectable, check_selectable, mode_state, switch_plan
from .transcript import (
    INTERRUPTED,
    chat_messages,
    prompt_text,
    replay_updates,
    tool_call_done,
    tool_call_start,
)

Notify = Callable[[str, dict[str, Any]], Awaitable[None]]

# A turn that keeps calling tools ends after this many model steps.
MAX_STEPS: Final = 50

SYSTEM_PROMPT: Final = (
    "You are a coding agent working in the workspace {root}. Use the tools to inspect "
    "and change files and to run commands. A system message states the current "
    "sandbox policy; follow it. Answer briefly when the task is done."
)


class ClientError(Exception):
    """The client's request cannot be served as asked (answered as invalid params)."""


async def _no_notify(_session_id: str, _update: dict[str, Any]) -> None:
    return None


@attrs.define(eq=False)
class AcpSession:
    """One ACP session: its stockade session and the answerer's view of its turn."""

    __repr__ = fields_repr

    agent: AgentSession
    context: AskContext
    busy: bool = False
    scope: trio.CancelScope | None = None
    # Set when the running turn has ended (a fresh one per turn).
    idle: trio.Event = attrs.field(factory=trio.Event)


@attrs.define(eq=False)
class AgentCore:
    __repr__ = fields_repr
    harness: Harness
    model: Model
    # Offer `allow_always` (a session switch) where presets are mounted.
    allow_always: bool = False
    notify: Notify = _no_notify
    # Session cwds of `/` or the home directory accepted on purpose (--allow-root).
    broad_roots: tuple[str, ...] = ()
    sessions: dict[str, AcpSession] = attrs.field(factory=dict)

    # --- what the answerer asks of the agent --------------------------------------

    def ask_context(self, session_id: str) -> AskContext | None:
        state = self.sessions.get(session_id)
        return None if state is None else state.context

    @property
    def presets_mounted(self) -> bool:
        """Whether the composition mounts the preset service (the editor one does; the
        automation one does not, and then there are no ACP modes and no switch)."""
        return self.harness.composition.presets is not None

    # --- sessions ----------------------------------------------------------------

    async def new_session(self, cwd: str) -> dict[str, Any]:
        root = _checked_root(cwd, self.broad_roots)
        try:
            agent = await self.harness.open_session(cwd=root)
        except StockadeError as error:
            raise ClientError(str(error)) from None
        state = self._register(agent)
        return {"sessionId": agent.id, **await self._modes(state)}

    async def load_session(self, session_id: str, cwd: str) -> dict[str, Any]:
        root = _checked_root(cwd, self.broad_roots)
        state = self.sessions.get(session_id)
        if state is None:
            try:
                check_session_id(session_id)
                exists = await self.harness.session_exists(session_id)
            except StockadeError as error:
                raise ClientError(str(error)) from None
            if not exists:
                raise ClientError(f"no session {session_id!r} to load")
            try:
                agent = await self.harness.resume_session(session_id, cwd=root)
            except StockadeError as error:
                raise ClientError(str(error)) from None
            state = self._register(agent)
        elif state.agent.cwd != _real(root):
            raise ClientError(
                f"session {session_id!r} has workspace root {state.agent.cwd!r}, not {root!r}"
            )
        for update in replay_updates(await state.agent.events(), state.agent.cwd):
            await self.notify(session_id, update)
        return await self._modes(state)

    def _register(self, agent: AgentSession) -> AcpSession:
        context = AskContext(
            session_id=agent.id,
            root=agent.cwd,
            switch=self._switch if self.allow_always and self.presets_mounted else None,
        )
        state = AcpSession(agent=agent, context=context)
        self.sessions[agent.id] = state
        return state

    def _session(self, session_id: str) -> AcpSession:
        state = self.sessions.get(session_id)
        if state is None:
            raise ClientError(f"unknown session {session_id!r} (create it with session/new)")
        return state

    async def close(self, *, grace: float = 5.0) -> None:
        """The client is gone: end every running turn as a `session/cancel` would (an
        open question resolves `cancelled` and is audited so), wait for them, at most
        `grace` seconds, then close the sessions' logs."""
        for state in self.sessions.values():
            if state.busy:
                state.context.cancel()
        with trio.move_on_after(grace):
            for state in self.sessions.values():
                if state.busy:
                    await state.idle.wait()
        for state in list(self.sessions.values()):
            await state.agent.close()
        self.sessions.clear()

    # --- modes -------------------------------------------------------------------

    async def _modes(self, state: AcpSession) -> dict[str, Any]:
        if not self.presets_mounted:
            return {}
        current = await state.agent.current_preset()
        return {"modes": mode_state(self.harness.presets, current)}

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        """`session/set_mode`: select the preset; only its changed knobs are written."""
        state = self._session(session_id)
        if not self.presets_mounted:
            raise ClientError(
                "this deployment mounts no permission presets: it has no session modes, "
                "and its sandbox mode is the deployment's choice"
            )
        try:
            await state.agent.select_preset(check_selectable(self.harness.presets, mode_id))
        except (NotSelectable, StockadeError) as error:
            raise ClientError(str(error)) from None

    async def _switch(self, request: ApprovalRequest) -> str:
        """The `allow_always` write path: the session's knobs, through the presets."""
        state = self._session(request.session_id)
        knobs = await state.agent.session.knobs()
        plan = switch_plan(
            self.harness.presets if self.presets_mounted else None,
            knobs,
            request.requested_mode,
            with_network=request.with_network,
        )
        if plan.preset is not None:
            await state.agent.select_preset(plan.preset)
        elif plan.network is not None:
            await state.agent.set_network(Network.ON)
        else:
            assert plan.sandbox_mode is not None
            await state.agent.set_sandbox_mode(plan.sandbox_mode)
        if self.presets_mounted:
            current = await state.agent.current_preset()
            await self.notify(
                request.session_id,
                {"sessionUpdate": "current_mode_update", "currentModeId": current},
            )
        return plan.describe()

    # --- turns -------------------------------------------------------------------

    def cancel(self, session_id: str) -> None:
        """`session/cancel`: end the session's running turn (a no-op between turns)."""
        state = self.sessions.get(session_id)
        if state is None or not state.busy:
            return
        asking = state.context.asking
        # An open question resolves `cancelled` through the answerer, so the tool
        # returns (and logs) its own text; anything else is stopped where it is.
        state.context.cancel()
        if asking == 0 and state.scope is not None:
            state.scope.cancel()

    async def prompt(self, session_id: str, blocks: Sequence[Mapping[str, Any]]) -> str:
        """Run one turn; returns the ACP stop reason. A prompt that is a slash command
        (`/undo`, `/restore`) is the agent's own, answered without the model."""
        state = self._session(session_id)
        if state.busy:
            raise ClientError(f"session {session_id!r} is already running a prompt")
        text = prompt_text(blocks)
        try:
            command = parse_command(text)
        except Unusable as error:
            await self._answer(state, text, str(error))
            return "end_turn"
        if command is not None:
            state.busy = True
            state.idle = trio.Event()
            try:
                await self._answer(state, text, await self._command(state.agent, command))
            finally:
                state.busy = False
                state.idle.set()
            return "end_turn"
        state.busy = True
        state.idle = trio.Event()
        calls: dict[str, tuple[str, Any]] = {}
        state.context.new_turn(calls)
        in_flight: list[str] = []
        try:
            with trio.CancelScope() as scope:
                state.scope = scope
                return await self._turn(state, text, calls, in_flight)
            # Cancelled where it stood: the call cut off is reported, not left open.
            for call_id in in_flight:
                await self.notify(
                    session_id, tool_call_done(call_id, INTERRUPTED, is_error=True, facts=None)
                )
            return "cancelled"
        finally:
            state.busy = False
            state.scope = None
            state.idle.set()

    async def _answer(self, state: AcpSession, text: str, answer: str) -> None:
        """The person's own command answered: said, then logged (for `session/load`,
        never for the model). Said first: a log that fails then must not hide from the
        person what an undo already did on disk."""
        await self._say(state.agent.id, answer)
        await state.agent.session.append(CommandAnswered(text=text, answer=answer))

    async def _say(self, session_id: str, text: str) -> None:
        await self.notify(
            session_id,
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
        )

    async def _command(self, agent: AgentSession, command: Command) -> str:
        """Run `/undo [N]` or `/restore SEQ`: the answer is one message (a refusal
        too: nothing was touched, and the line says why)."""
        try:
            if command.target is None:
                calls = await agent.undoable_calls()
                return calls_lines(calls).rstrip("\n") or "no call of this session changed a file"
            if command.name == "undo":
                outcome = await agent.undo(command.target)
            else:
                outcome = await agent.restore(command.target)
        except UndoRefused as refused:
            return f"not done: {refusal_line(refused)}"
        return outcome_line(outcome)

    async def _turn(
        self,
        state: AcpSession,
        text: str,
        calls: dict[str, tuple[str, Any]],
        in_flight: list[str],
    ) -> str:
        agent = state.agent
        cancelled = state.context.cancelled
        await agent.session.append(PromptReceived(text=text))
        system = SYSTEM_PROMPT.format(root=agent.cwd)
        for _step in range(MAX_STEPS):
            if cancelled.is_set():
                return "cancelled"
            await agent.pre_step()
            messages = chat_messages(await agent.events(), system)
            step = await self.model.step(messages, self.harness.tool_schemas())
            if cancelled.is_set():
                return "cancelled"
            if step.text:
                await agent.session.append(ReplyGiven(text=step.text))
                await self.notify(
                    agent.id,
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": step.text},
                    },
                )
            if not step.tool_calls:
                return "end_turn"
            for call in step.tool_calls:
                if cancelled.is_set():
                    return "cancelled"
                calls[call.id] = (call.name, call.arguments)
                await self.notify(
                    agent.id, tool_call_start(call.id, call.name, call.arguments, agent.cwd)
                )
                in_flight.append(call.id)
                result = await agent.run_tool(call.name, call.arguments, call_id=call.id)
                in_flight.remove(call.id)
                await self.notify(
                    agent.id,
                    tool_call_done(
                        call.id, result.text, is_error=result.is_error, facts=result.facts
                    ),
                )
        return "max_turn_requests"


def _real(path: str) -> str:
    return os.path.realpath(path)


def _checked_root(cwd: str, broad_roots: tuple[str, ...] = ()) -> str:
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise ClientError(f"cwd must be an absolute path, got {cwd!r}")
    if not os.path.isdir(cwd):
        raise ClientError(f"cwd {cwd!r} is not a directory")
    # The editor sends whatever folder is open; `/` or the home directory as a
    # workspace root lets a widened session write everything there.
    allowed = {_real(path) for path in broad_roots}
    broad = broad_root_refusal(
        cwd,
        explicit=_real(cwd) in allowed,
        home=os.environ.get("HOME"),
        naming="--allow-root {root} to the agent",
        source="the session's cwd",
    )
    if broad is not None:
        raise ClientError(broad)
    return cwd

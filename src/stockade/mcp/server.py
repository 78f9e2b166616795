"""`stockade mcp`: the harness's tools for any MCP client, on stdio or streamable HTTP.

One process holds one harness; each connection holds one stockade session (on stdio
the process's one connection, on HTTP each `Mcp-Session-Id`). The handlers map MCP
onto the harness and hold no policy: tools are `harness.tool_schemas()`, a call is
`AgentSession.run_tool`, an escalation is the ApprovalActor's chain reaching the
`McpAnswerer` (`_link.py`), which the handler that waits on the call takes to the
person through the client. Everything runs on Trio; the SDK is anyio and runs on it.
The transports serve a Face (`_stdio.serve_stdio`, `_http.serve_http`); `command.serve`
opens the harness and runs one.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Callable
from typing import Any, Final

import attrs
import mcp_types as types
import trio
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from ..approval import Answer, ApprovalRequest, Decision
from ..faces import (
    call_facts,
    calls_lines,
    outcome_facts,
    outcome_line,
    refusal_facts,
    refusal_line,
)
from ..harness import AgentSession, Harness, UndoRefused
from ..policy import desired_policy_context
from ..reprs import fields_repr
from ..tools import ToolResult
from . import _ask, _tools, _undo
from ._link import ASK_KEY, PARKED_TTL, Ask, CallRegistry, Link, LinkClosed, Unbound, open_link

SERVER_NAME: Final = "stockade"
# How long in-flight calls may run on after SIGTERM (a second signal stops at once).
DRAIN_SECONDS: Final = 10.0
# HTTP: how many MCP sessions (each a stockade session and its log) may be open at once.
DEFAULT_MAX_SESSIONS: Final = 16
# Where an HTTP connection keeps its link (the SDK's per-connection scratch state).
_LINK_KEY: Final = "stockade.link"


def say(message: str) -> None:
    """One line on stderr: stdout belongs to the protocol."""
    print(f"stockade mcp: {message}", file=sys.stderr, flush=True)


@attrs.frozen
class McpSettings:
    """What the host decided on the command line; the client decides none of it."""

    __repr__ = fields_repr

    root: str
    session_id: str | None = None
    mode: str | None = None
    approval: str | None = None
    preset: str | None = None
    network: str | None = None
    ask_timeout: float = 300.0
    http: tuple[str, int] | None = None
    # HTTP: the tokens of `--token-file` (none: one is made per start), and the cap.
    token_file: str | None = None
    tokens: tuple[str, ...] = attrs.field(default=(), repr=False)
    max_sessions: int = DEFAULT_MAX_SESSIONS


@attrs.define(eq=False)
class _LinkHost:
    """An HTTP connection's link, run by its own task so any task may close it."""

    __repr__ = fields_repr

    link: Link
    closed: trio.Event
    _close: trio.Event = attrs.field(factory=trio.Event)

    async def aclose(self) -> None:
        self._close.set()
        await self.closed.wait()


@attrs.define(eq=False)
class Face:
    """The MCP face of one harness: builds the server and maps requests onto sessions."""

    __repr__ = fields_repr

    harness: Harness
    settings: McpSettings
    calls: CallRegistry
    stdio_link: Link | None = None
    links: list[Link] = attrs.field(factory=list)
    link_nursery: trio.Nursery | None = None
    # The signal that stopped the server (after its drain): its exit is 128 + it.
    stopped_by: int | None = None
    _link_lock: trio.Lock = attrs.field(factory=trio.Lock)
    _tools: list[types.Tool] = attrs.field(factory=list)

    # --- sessions ---------------------------------------------------------------------

    async def open_agent_session(self, session_id: str | None) -> AgentSession:
        """Create or resume the session, lay the host's knobs over it, tell the log."""
        settings = self.settings
        session, resumed = await self._open_or_resume(session_id)
        try:
            if settings.preset is not None:
                await session.select_preset(settings.preset)
            if settings.mode is not None:
                await session.set_sandbox_mode(settings.mode)
            if settings.approval is not None:
                await session.set_approval_policy(settings.approval)
            if settings.network is not None:
                await session.set_network(settings.network)
            await session.pre_step()
            state = await self.status(session)
        except BaseException:
            with trio.CancelScope(shield=True):
                await session.close()
            raise
        say(
            f"session {session.id} ({'resumed' if resumed else 'new'}), root {session.cwd}, "
            f"mode {state['sandbox_mode']}, approval {state['approval_policy']}, "
            f"network {state['network']}"
        )
        return session

    async def _open_or_resume(self, session_id: str | None) -> tuple[AgentSession, bool]:
        """(session, resumed): `--session-id` resumes its session, or creates it under
        that id when no log holds it yet."""
        harness, root = self.harness, self.settings.root
        if session_id is None:
            return await harness.open_session(cwd=root), False
        resume = getattr(harness, "resume_session", None)
        if resume is None:  # a harness whose open_session creates or resumes
            session = await harness.open_session(session_id, cwd=root)
            return session, len(await session.events()) > 1
        from .. import errors

        try:
            return await resume(session_id, cwd=root), True
        except getattr(errors, "SessionNotFound", LookupError):
            return await harness.open_session(session_id, cwd=root), False

    async def status(self, session: AgentSession) -> dict[str, Any]:
        events = await session.events()
        policy = desired_policy_context(
            events,
            self.harness.defaults,
            session_root=session.cwd,
            temp_dir=getattr(session, "temp_dir", None),
            host_temp=getattr(session, "host_temp", ()),
        )
        network = getattr(session, "network", None)
        return _tools.status(
            session_id=session.id,
            workspace_root=session.cwd,
            sandbox_mode=(await session.sandbox_mode()).value,
            approval_policy=(await session.approval_policy()).value,
            network=(await network()).value if network is not None else None,
            preset=await session.current_preset(),
            confines=self.harness.confines,
            policy_text=policy.text,
        )

    async def instructions_for(self, link: Link) -> str:
        state = await self.status(link.session)
        return _tools.instructions(link.id, link.root, state["policy"])

    # --- the server -------------------------------------------------------------------

    def build_server(self, *, http: bool) -> Server[Any]:
        self._tools = [
            types.Tool.model_validate(tool, by_name=False)
            for tool in (*_tools.mcp_tools(self.harness.tool_schemas()), _undo.tool())
        ]
        server: Server[Any] = Server(
            SERVER_NAME,
            version=importlib.metadata.version("stockade"),
            title="stockade: sandboxed shell and file tools",
            instructions=_tools.instructions(None, None, None),
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            on_list_resources=self._on_list_resources,
            on_read_resource=self._on_read_resource,
        )
        if http:
            server.middleware.append(_HttpConnections(self))
        # The 2026-07-28 retry carries our state back: sealed, bound to the call's tool
        # and arguments, expiring (and checked again against the parked call).
        server.middleware.append(
            RequestStateBoundary(
                RequestStateSecurity.ephemeral(ttl=PARKED_TTL), default_audience=SERVER_NAME
            )
        )
        return server

    async def _link(self, ctx: Any) -> Link:
        if self.stdio_link is not None:
            return self.stdio_link
        return await self.http_link(ctx)

    async def _on_list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def _on_list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=_tools.STATUS_URI,
                    name=_tools.STATUS_NAME,
                    title="Sandbox status",
                    description="This connection's stockade session: its sandbox mode, "
                    "approval policy, network setting and workspace root. Read-only: the "
                    "host sets them (stockade mcp --mode/--approval/--preset/--network).",
                    mime_type="application/json",
                )
            ]
        )

    async def _on_read_resource(self, ctx: Any, params: Any) -> types.ReadResourceResult:
        if str(params.uri) != _tools.STATUS_URI:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown resource {str(params.uri)!r} (the one resource is "
                f"{_tools.STATUS_URI})",
            )
        link = await self._link(ctx)
        text = json.dumps(await self.status(link.session), indent=2)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=_tools.STATUS_URI, mime_type="application/json", text=text
                )
            ]
        )

    async def _on_call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        link = await self._link(ctx)
        name = params.name
        if all(tool.name != name for tool in self._tools):
            known = ", ".join(tool.name for tool in self._tools)
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"unknown tool {name!r} (tools: {known})"
            )
        arguments: Any = params.arguments if params.arguments is not None else {}
        if name == _undo.TOOL:
            return await self._call_undo(ctx, link, params)
        if params.request_state is not None:
            try:
                call, ask = link.resume(params.request_state, name, arguments)
            except Unbound as error:
                raise MCPError(code=types.INVALID_PARAMS, message=str(error)) from None
            ask.resolve(_answer_from(params.input_responses, ask.request))
        else:
            try:
                call = link.start(name, arguments)
            except LinkClosed as error:
                raise MCPError(code=types.INTERNAL_ERROR, message=str(error)) from None
        parked = False
        try:
            while True:
                outcome = await call.next()
                if isinstance(outcome, ToolResult):
                    return types.CallToolResult.model_validate(
                        _tools.call_result(outcome), by_name=False
                    )
                if isinstance(outcome, str):
                    raise MCPError(code=types.INTERNAL_ERROR, message=outcome)
                if not _ask.can_elicit_form(ctx.session.client_capabilities):
                    outcome.resolve(_ask.unavailable(_ask.NO_ELICITATION))
                elif ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    # 2026-07-28: a server sends no requests; the question rides the
                    # result, and the client's retry brings the answer to this call.
                    parked = True
                    return _input_required(outcome, link.park(call, outcome))
                else:
                    await _elicit(ctx, outcome)
        finally:
            if not parked:
                # The client stopped waiting (cancelled, gone): the command stops too.
                call.cancel()

    # --- undo (issue 42): the person's, asked first ----------------------------------------

    @property
    def model_may_undo(self) -> bool:
        """The composition's `stockade.mcp` entry lets the model undo unasked."""
        entry = self.harness.composition.mcp
        return bool(entry is not None and entry.config.model_may_undo)

    async def _call_undo(
        self, ctx: Any, link: Link, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """List, or undo / restore once the person said so (or the composition lets
        the model): every path of it a one-line result, never a traceback."""
        try:
            arguments = _undo.parse(params.arguments)
        except _undo.BadArguments as error:
            return _undo_result(str(error), {"refused": str(error)}, is_error=True)
        session = link.session
        try:
            calls = await session.undoable_calls()
        except UndoRefused as refused:
            return _undo_result(refusal_line(refused), refusal_facts(refused), is_error=True)
        if arguments.lists:
            text = calls_lines(calls) or "no call of this session changed a file\n"
            return _undo_result(text.rstrip("\n"), {"calls": [call_facts(c) for c in calls]})
        if arguments.call is not None and all(call.seq != arguments.call for call in calls):
            line = _undo.not_listed(arguments)
            return _undo_result(line, {"refused": line}, is_error=True)
        if not self.model_may_undo:
            digest = _tools.fingerprint(_undo.TOOL, params.arguments or {})
            if params.request_state is not None:
                try:
                    link.take_undo(params.request_state, digest)
                except Unbound as error:
                    raise MCPError(code=types.INVALID_PARAMS, message=str(error)) from None
                response = (params.input_responses or {}).get(_undo.ASK_KEY)
                if isinstance(response, types.ElicitResult):
                    declined = _undo.accepted(response.action, response.content, arguments)
                else:
                    declined = "not done: the client's retry carried no answer to the question"
            elif not _ask.can_elicit_form(ctx.session.client_capabilities):
                declined = _undo.no_elicitation(session.id, arguments)
            elif ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                question = types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message=_undo.message(arguments, calls),
                        requested_schema=_undo.schema(arguments),
                    )
                )
                return types.InputRequiredResult(
                    input_requests={_undo.ASK_KEY: question},
                    request_state=link.park_undo(digest),
                )
            else:
                declined = await self._elicit_undo(ctx, arguments, calls)
            if declined is not None:
                return _undo_result(declined, {"refused": declined}, is_error=True)
        try:
            if arguments.call is not None:
                outcome = await session.undo(arguments.call)
            else:
                outcome = await session.restore(arguments.target)
        except UndoRefused as refused:
            return _undo_result(refusal_line(refused), refusal_facts(refused), is_error=True)
        return _undo_result(outcome_line(outcome), outcome_facts(outcome))

    async def _elicit_undo(
        self, ctx: Any, arguments: _undo.UndoArguments, calls: Any
    ) -> str | None:
        """Handshake era: ask with `elicitation/create`; None when the person chose to act."""
        timeout = self.settings.ask_timeout
        with trio.move_on_after(timeout):
            try:
                result = await ctx.session.elicit_form(
                    _undo.message(arguments, calls),
                    _undo.schema(arguments),
                    related_request_id=ctx.request_id,
                )
            except MCPError as error:
                return f"not done: the MCP client did not ask the person: {error.error.message}"
            except Exception as error:
                return f"not done: the MCP client's answer was unusable: {error}"
            return _undo.accepted(result.action, result.content, arguments)
        return f"not done: {_ask.timed_out(timeout)}"

    # --- HTTP connections ---------------------------------------------------------------

    async def http_link(self, ctx: Any) -> Link:
        """The link of the HTTP connection `ctx` arrived on, opened on first use."""
        connection = _connection(ctx)
        async with self._link_lock:
            host = connection.state.get(_LINK_KEY)
            if host is None:
                if self.link_nursery is None:
                    raise MCPError(code=types.INTERNAL_ERROR, message="the server is stopping")
                session = await self.open_agent_session(None)
                host = await self.link_nursery.start(self._host_link, session)
                connection.state[_LINK_KEY] = host
                connection.exit_stack.push_async_callback(host.aclose)
        link: Link = host.link
        return link

    async def _host_link(
        self, session: AgentSession, *, task_status: trio.TaskStatus[_LinkHost]
    ) -> None:
        closed = trio.Event()
        try:
            async with open_link(session, self.calls) as link:
                host = _LinkHost(link, closed)
                self.links.append(link)
                task_status.started(host)
                try:
                    await host._close.wait()
                finally:
                    self.links.remove(link)
        finally:
            closed.set()
            say(f"session {session.id} closed")

    def cancel_asks(self) -> None:
        answer = Answer(Decision.CANCELLED, _ask.ANSWERER, _ask.SHUTTING_DOWN)
        for link in [*self.links, *([self.stdio_link] if self.stdio_link else [])]:
            link.cancel_asks(answer)


class _HttpConnections:
    """HTTP only: one session per connection (opened at `initialize`, its id in the
    instructions); the stateless 2026-07-28 era has no connection to hold a session,
    so its requests are refused with the versions served (SDK clients fall back)."""

    def __init__(self, face: Face) -> None:
        self.face = face

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(
                code=types.UNSUPPORTED_PROTOCOL_VERSION,
                message="stockade mcp over HTTP serves the handshake protocol versions "
                "(one stockade session per connection)",
                data={
                    "supported": list(HANDSHAKE_PROTOCOL_VERSIONS),
                    "requested": ctx.protocol_version,
                },
            )
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            link = await self.face.http_link(ctx)
            result = {**result, "instructions": await self.face.instructions_for(link)}
        return result


def _connection(ctx: Any) -> Any:
    """The SDK's per-connection object behind a request (its `state` and `exit_stack`).

    The lowlevel tier hands handlers a per-request `ServerSession` that holds it
    privately (mcp 2.3: `_connection`); the SDK documents `state` and `exit_stack` as
    the place for per-connection state and teardown.
    """
    connection = getattr(ctx.session, "_connection", None)
    if connection is None or not hasattr(connection, "exit_stack"):
        raise MCPError(
            code=types.INTERNAL_ERROR,
            message="this mcp SDK version does not expose the connection of a request",
        )
    return connection


def _undo_result(
    text: str, facts: dict[str, Any], *, is_error: bool = False
) -> types.CallToolResult:
    return types.CallToolResult.model_validate(
        {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"tool": _undo.TOOL, **facts},
            "isError": is_error,
        },
        by_name=False,
    )


def _answer_from(responses: Any, request: ApprovalRequest) -> Answer:
    response = (responses or {}).get(ASK_KEY)
    if isinstance(response, types.ElicitResult):
        return _ask.decide(response.action, response.content, request)
    return Answer(
        Decision.CANCELLED, _ask.ANSWERER, "the client's retry carried no answer to the question"
    )


def _input_required(ask: Ask, token: str) -> types.InputRequiredResult:
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=ask.message, requested_schema=_ask.ask_schema(ask.request)
        )
    )
    return types.InputRequiredResult(input_requests={ASK_KEY: question}, request_state=token)


async def _elicit(ctx: Any, ask: Ask) -> None:
    """Handshake era: ask with `elicitation/create` on this request's channel, until
    the person answers or the ask is settled otherwise (timeout, shutdown)."""

    async def ask_client() -> None:
        try:
            result = await ctx.session.elicit_form(
                ask.message, _ask.ask_schema(ask.request), related_request_id=ctx.request_id
            )
        except MCPError as error:
            ask.resolve(_ask.unavailable(f"the MCP client did not ask: {error.error.message}"))
        except Exception as error:
            ask.resolve(_ask.unavailable(f"the MCP client's answer was unusable: {error}"))
        else:
            ask.resolve(_ask.decide(result.action, result.content, ask.request))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask_client)
        await ask.wait()
        nursery.cancel_scope.cancel()

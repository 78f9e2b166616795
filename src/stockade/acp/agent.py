"""The ACP agent over stdio: the `agent-client-protocol` SDK (asyncio) bridged into Trio.

Trio runs at the top; `trio_asyncio.open_loop()` hosts the SDK's asyncio connection
in the same thread. Each SDK handler hands its work to the Trio core (`core.py`)
through `trio_as_aio`; the core reaches the client (`session/update`,
`session/request_permission`) through `aio_as_trio`. This module only converts
between the SDK's models and the core's plain values, and maps errors onto
JSON-RPC errors: a request the core refuses (`ClientError`) is invalid params, a
model that fails is an internal error, and the agent keeps serving either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any

import trio
import trio_asyncio
from pydantic import ValidationError

import acp
from acp import schema

from ..config import Composition
from ..harness import open_harness
from .answerer import AcpAnswerer, AskFailed
from .commands import commands_update
from .core import AgentCore, ClientError
from .events import ACP_EVENTS
from .model import Model, ModelError, model_secrets
from .stdio import open_stdio_transport

AGENT_NAME = "stockade-acp-agent"


def _version() -> str:
    try:
        return metadata.version("stockade")
    except metadata.PackageNotFoundError:
        return "0"


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class SdkChannel:
    """The answerer's `PermissionChannel` over the SDK connection (called from Trio)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    async def request_permission(self, params: dict[str, Any]) -> Any:
        return await trio_asyncio.aio_as_trio(self._ask)(params)

    async def _ask(self, params: dict[str, Any]) -> Any:
        request = schema.RequestPermissionRequest.model_validate(params)
        try:
            response = await self._conn.request_permission(
                session_id=request.session_id, tool_call=request.tool_call, options=request.options
            )
        except acp.RequestError as error:
            raise AskFailed(f"the client answered with error {error.code}: {error}") from None
        except ValidationError:
            raise AskFailed("the client's answer is not a permission response") from None
        except ConnectionError as error:
            raise AskFailed(f"the connection to the client is gone ({error})") from None
        return _dump(response)


class AcpAgent:
    """The SDK's `Agent`: every method hands its work to the Trio core."""

    def __init__(self, core: AgentCore, answerer: AcpAnswerer) -> None:
        self._core = core
        self._answerer = answerer
        self._conn: Any = None
        # The commands updates sent after a session's response (kept until sent).
        self._announcing: set[asyncio.Task[None]] = set()

    def on_connect(self, conn: Any) -> None:
        self._conn = conn
        self._core.notify = self._notify
        self._answerer.channel = SdkChannel(conn)

    async def _notify(self, session_id: str, update: dict[str, Any]) -> None:
        """Trio side: one `session/update` to the client (dropped when it is gone)."""
        await trio_asyncio.aio_as_trio(self._send_update)(session_id, update)

    async def _send_update(self, session_id: str, update: dict[str, Any]) -> None:
        note = schema.SessionNotification.model_validate(
            {"sessionId": session_id, "update": update}
        )
        with contextlib.suppress(ConnectionError):
            await self._conn.session_update(session_id=note.session_id, update=note.update)

    async def _core_call(self, function: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        try:
            return await trio_asyncio.trio_as_aio(function)(*args)
        except ClientError as error:
            raise acp.RequestError.invalid_params({"details": str(error)}) from None
        except ModelError as error:
            raise acp.RequestError.internal_error(
                {"details": f"the model failed: {error}"}
            ) from None

    # --- the ACP methods --------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(embedded_context=True),
            ),
            agent_info=schema.Implementation(name=AGENT_NAME, title="stockade", version=_version()),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise acp.RequestError.invalid_params({"details": "this agent needs no authentication"})

    async def new_session(self, cwd: str, **kwargs: Any) -> schema.NewSessionResponse:
        result = await self._core_call(self._core.new_session, cwd)
        response = schema.NewSessionResponse.model_validate(result)
        self._announce_commands(response.session_id)
        return response

    async def load_session(
        self, cwd: str, session_id: str, **kwargs: Any
    ) -> schema.LoadSessionResponse:
        result = await self._core_call(self._core.load_session, session_id, cwd)
        self._announce_commands(session_id)
        return schema.LoadSessionResponse.model_validate(result)

    def _announce_commands(self, session_id: str) -> None:
        """The person's slash commands (`/undo`, `/restore`), sent once the session's
        response is on its way (an update for a session id the client has not been
        told yet could be dropped)."""
        task = asyncio.get_running_loop().create_task(
            self._send_update(session_id, commands_update())
        )
        self._announcing.add(task)
        task.add_done_callback(self._announcing.discard)

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> schema.SetSessionModeResponse:
        await self._core_call(self._core.set_mode, session_id, mode_id)
        return schema.SetSessionModeResponse()

    async def prompt(
        self, session_id: str, prompt: list[Any], **kwargs: Any
    ) -> schema.PromptResponse:
        blocks = [_dump(block) for block in prompt]
        stop_reason = await self._core_call(self._core.prompt, session_id, blocks)
        return schema.PromptResponse(stop_reason=stop_reason)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        await trio_asyncio.trio_as_aio(self._cancel)(session_id)

    async def _cancel(self, session_id: str) -> None:
        self._core.cancel(session_id)


async def _serve_connection(agent: AcpAgent, open_transport: Callable[[], Awaitable[Any]]) -> None:
    """asyncio side: serve ACP until the client's input ends."""
    transport = await open_transport()
    # The SDK's Agent protocol lists every ACP method; AcpAgent has those stockade serves,
    # and the SDK answers any other with "method not found".
    await acp.run_agent(agent, transport)  # type: ignore[arg-type]


async def serve(
    composition: Composition,
    model: Model,
    *,
    allow_always: bool = False,
    permission_timeout: float | None = 300.0,
    broad_roots: tuple[str, ...] = (),
    open_transport: Callable[[], Awaitable[Any]] = open_stdio_transport,
) -> int | None:
    """Run the agent on `composition` until the client closes its end (Trio).

    SIGINT or SIGTERM stops it as the end of input would (the turn ends, questions
    are settled, every process the harness started is killed); the number of the
    signal that stopped it is returned, None when the client ended it."""
    stopped_by: int | None = None
    answerer = AcpAnswerer(
        directory=lambda _session_id: None,
        timeout=permission_timeout,
        allow_always=allow_always,
    )
    async with (
        trio_asyncio.open_loop(),
        # The model's API key is the agent's own secret: no command inherits it.
        open_harness(
            composition,
            answerers=[answerer],
            extra_events=ACP_EVENTS,
            withhold=model_secrets(model),
        ) as harness,
    ):
        core = AgentCore(
            harness=harness, model=model, allow_always=allow_always, broad_roots=broad_roots
        )
        answerer.directory = core.ask_context
        agent = AcpAgent(core, answerer)
        try:
            async with trio.open_nursery() as nursery:

                async def on_signals() -> None:
                    nonlocal stopped_by
                    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
                        async for signum in received:
                            stopped_by = signum
                            name = signal.Signals(signum).name
                            print(f"stockade acp: {name}: stopping", file=sys.stderr, flush=True)
                            nursery.cancel_scope.cancel()
                            return

                nursery.start_soon(on_signals)
                await trio_asyncio.aio_as_trio(_serve_connection)(agent, open_transport)
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await core.close()
    return stopped_by

"""`stockade mcp --http HOST:PORT`: the SDK's streamable-HTTP app under Hypercorn's
Trio worker, in the harness's own Trio run.

Loopback by default (the SDK then turns on its DNS-rebinding protection); there is
no authentication, so another host is refused unless the operator says
`--allow-remote`. Each MCP session (`Mcp-Session-Id`) is one stockade session,
closed (its jobs killed) when the client deletes it, it idles out, or the server
stops. SIGTERM/SIGINT: no new connections, open questions cancelled, in-flight
requests get the drain period, then everything stops.
"""

from __future__ import annotations

import ipaddress
import signal
from functools import partial
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from .server import Face


def parse_http(value: str) -> tuple[str, int]:
    """`HOST:PORT`, `[V6]:PORT` or `PORT` (loopback) -> (host, port)."""
    text = value.strip()
    if text.isdigit():
        host, port = "127.0.0.1", text
    elif text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--http wants HOST:PORT, [IPV6]:PORT or PORT, got {value!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def serve_http(face: Face, host: str, port: int) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    from .server import DRAIN_SECONDS, say

    server = face.build_server(http=True)
    # The SDK protects a loopback server from DNS rebinding (Host and Origin checks).
    app = server.streamable_http_app(host=host)
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = "-"
    config.loglevel = "WARNING"
    config.graceful_timeout = DRAIN_SECONDS
    stopping = trio.Event()

    async with trio.open_nursery() as links:
        face.link_nursery = links
        async with trio.open_nursery() as nursery:

            async def on_signals() -> None:
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
                    async for signum in received:
                        if stopping.is_set():
                            say("second signal: stopping now")
                            links.cancel_scope.cancel()
                            return
                        say(f"{signal.Signals(signum).name}: draining (up to {DRAIN_SECONDS:g} s)")
                        face.cancel_asks()
                        stopping.set()

            async def run_server(*, task_status: trio.TaskStatus[list[str]]) -> None:
                await serve(app, config, shutdown_trigger=stopping.wait, task_status=task_status)
                nursery.cancel_scope.cancel()

            nursery.start_soon(on_signals)
            binds = await nursery.start(partial(run_server))
            for bind in binds:
                say(f"serving MCP over streamable HTTP at {bind}/mcp")
        face.link_nursery = None
        links.cancel_scope.cancel()

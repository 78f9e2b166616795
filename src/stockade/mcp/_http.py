"""`stockade mcp --http HOST:PORT`: the SDK's streamable-HTTP app under Hypercorn's
Trio worker, in the harness's own Trio run.

Every request carries a bearer token (`faces.credentials`), checked by the SDK's own auth
hooks before the session manager sees it; each `Mcp-Session-Id` is bound to the token
that opened it, and at most `--max-sessions` are open. Loopback by default, with the
SDK's DNS-rebinding protection on for any loopback address; another host needs
`--allow-remote`.
Each MCP session is one stockade session, closed (its jobs killed) when the client
deletes it, it idles out, or the server stops. SIGTERM/SIGINT: no new connections,
open questions cancelled, in-flight requests get the drain period, then everything
stops.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import signal
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from ..shown import one_line

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.transport_security import TransportSecuritySettings

    from ..faces import credentials as _credentials
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


def rebinding_guard(host: str) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding protection (Host and Origin checks) for a loopback
    `host`: the SDK turns it on by itself for 127.0.0.1, localhost and ::1 only, and a
    server on 127.0.0.2 took any Host and Origin (an audit's finding). None for another
    host, whose names the server cannot know (the token guards it; `--allow-remote`)."""
    if not is_loopback(host):
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    shown = f"[{host}]" if ":" in host else host
    names = dict.fromkeys((shown, "127.0.0.1", "localhost", "[::1]"))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in names],
        allowed_origins=[f"http://{name}:*" for name in names],
    )


def listen_refusal(host: str, port: int, error: OSError) -> str:
    """One line for a HOST:PORT the server cannot listen on, with what to do."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if error.errno == errno.EADDRINUSE:
        return (
            f"--http {shown}: the port is already in use (another server listens there); "
            "stop it, or pick another port (0 picks a free one)"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return f"--http {shown}: {host} is no address of this host; name one of its own"
    if error.errno == errno.EACCES:
        return (
            f"--http {shown}: not permitted to listen there (a port below 1024 needs "
            "privilege); pick a port of 1024 or more"
        )
    reason = error.strerror or str(error)
    return f"--http {shown}: cannot listen there: {reason}"


class RefusalLog:
    """The ASGI app, with one stderr line for each request it answers 401 (no bearer
    token, or one the server does not hold): who asked and for what, never the token."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message.get("type") == "http.response.start" and message.get("status") == 401:
                from .server import say

                headers = dict(scope.get("headers") or ())
                why = (
                    "a bearer token it does not hold"
                    if b"authorization" in headers
                    else ("no bearer token")
                )
                client = scope.get("client")
                where = f"{client[0]}:{client[1]}" if client else "an unknown client"
                method, path = scope.get("method", "?"), scope.get("path", "?")
                say(f"refused {method} {one_line(path)} from {where} (401): {why}")
            await send(message)

        await self.app(scope, receive, sending)


class BearerTokens:
    """The SDK's `TokenVerifier` over the server's tokens: each token is its own
    principal (`client_id` `token-N`), so the SDK binds a session to the token that
    opened it and answers any other token's request for it as an unknown session."""

    def __init__(self, tokens: _credentials.Tokens) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        from mcp.server.auth.provider import AccessToken

        principal = self.tokens.principal(token)
        if principal is None:
            return None
        return AccessToken(token=token, client_id=principal, scopes=[])


def auth_settings(host: str) -> AuthSettings:
    """The SDK's auth settings for a resource server with its own verifier: no OAuth
    server, no metadata routes. `issuer_url` is required by the model but only read
    for the routes stockade does not make (docs/decisions.md)."""
    from mcp.server.auth.settings import AuthSettings

    shown = f"[{host}]" if ":" in host else host
    # A str: pydantic validates it into the AnyHttpUrl the annotation names.
    return AuthSettings(issuer_url=f"http://{shown}", resource_server_url=None)  # type: ignore[arg-type]


async def serve_http(face: Face, host: str, port: int, made_token: str | None = None) -> None:
    """Serve `face` on HOST:PORT until a signal drains it. `made_token`: the token to
    write and accept when no --token-file gives them (made by the caller before the
    harness opened, so that no command's environment can hold it); else one made here."""
    from hypercorn.config import Config
    from hypercorn.trio.run import worker_serve
    from hypercorn.utils import wrap_app

    from ..errors import ConfigError, StockadeError
    from ..faces import credentials
    from ..sessionlog import resolve_state_dir
    from ..trust import host_temp_roots
    from .server import DRAIN_SECONDS, say

    settings = face.settings
    token, directory = None, ""
    if settings.tokens:
        tokens, where = settings.tokens, f"bearer tokens from {settings.token_file}"
        kept = str(settings.token_file)
    else:
        # Made now, written once the port is known; the directory is checked first.
        token = made_token or credentials.new_token()
        tokens, where = (token,), ""
        # Beside the session logs (the directory that holds them, when they are kept
        # on this host), else in the default state directory: deny_read's `state`.
        directory = next(iter(face.harness.log_paths), "") or str(resolve_state_dir())
        try:
            credentials.prepare_directory(directory, (settings.root, *host_temp_roots()))
        except credentials.TokenProblem as error:
            raise ConfigError(str(error)) from None
        kept = os.path.join(directory, credentials.token_path("", host, port))
    # Whoever holds the token can answer its own escalations: no confined command may
    # read it, by the same rule that hides every other secret from them.
    if not face.harness.out_of_confined_reach(kept):
        raise ConfigError(
            f"the MCP token would lie in {os.path.dirname(kept)}, which confined commands "
            "may read (deny_read leaves it out); keep deny_read's `state` and `mcp-token` "
            "items, or name a --token-file in a directory they hide"
        )
    server = face.build_server(http=True)
    # A loopback server is protected from DNS rebinding (Host and Origin checks); the
    # SDK's bearer middleware answers 401 before any session is looked at or made.
    app = server.streamable_http_app(
        host=host,
        transport_security=rebinding_guard(host),
        auth=auth_settings(host),
        token_verifier=BearerTokens(credentials.Tokens(tokens)),
        max_sessions=settings.max_sessions,
    )
    logged = RefusalLog(app)
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = "-"
    config.loglevel = "WARNING"
    config.graceful_timeout = DRAIN_SECONDS
    # Bound here, not inside Hypercorn's nurseries: a port in use is one line, not a
    # traceback through three exception groups.
    try:
        sockets = config.create_sockets()
    except OSError as error:
        raise StockadeError(listen_refusal(host, port, error)) from None
    for sock in sockets.insecure_sockets:
        sock.set_inheritable(False)  # Hypercorn marks them inheritable; no command needs one
        sock.listen(config.backlog)
    stopping = trio.Event()
    token_file: str | None = None

    async with trio.open_nursery() as links:
        face.link_nursery = links
        try:
            async with trio.open_nursery() as nursery:

                async def on_signals() -> None:
                    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
                        async for signum in received:
                            if stopping.is_set():
                                say("second signal: stopping now")
                                links.cancel_scope.cancel()
                                return
                            name = signal.Signals(signum).name
                            face.stopped_by = signum
                            say(f"{name}: draining (up to {DRAIN_SECONDS:g} s)")
                            face.cancel_asks()
                            stopping.set()

                async def run_server(*, task_status: trio.TaskStatus[list[str]]) -> None:
                    # Starlette's and Hypercorn's ASGI types differ; the app is ASGI 3.
                    await worker_serve(
                        wrap_app(logged, config.wsgi_max_body_size, None),
                        config,
                        sockets=sockets,
                        shutdown_trigger=stopping.wait,
                        task_status=task_status,
                    )
                    nursery.cancel_scope.cancel()

                nursery.start_soon(on_signals)
                binds = await nursery.start(partial(run_server))
                if token is not None:
                    # Every request was refused until now: no token had been given out.
                    port = int(binds[0].rpartition(":")[2])
                    token_file = credentials.token_path(directory, host, port)
                    try:
                        credentials.write_token(token_file, token)
                    except credentials.TokenProblem as error:
                        raise ConfigError(str(error)) from None
                    where = f"bearer token in {token_file}"
                for bind in binds:
                    say(f"serving MCP over streamable HTTP at {bind}/mcp ({where})")
        finally:
            if token_file is not None and token is not None:
                credentials.remove_token(token_file, token)
        face.link_nursery = None
        links.cancel_scope.cancel()

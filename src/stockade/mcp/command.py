"""`stockade mcp`: check the extra is installed, read the flags, run the server.

Imports no MCP SDK at module level, so a missing SDK gets a one-line hint instead of
a traceback. `serve` is the process: the harness, the Face over it, one transport.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import StockadeError

if TYPE_CHECKING:
    from .server import McpSettings

EXIT_USAGE = 2
INSTALL_HINT = "stockade mcp needs the MCP SDK"


def install_hint() -> str:
    """The missing-SDK line, naming the install line that works for this installation."""
    from ..install_hint import extra_hint

    return f"{INSTALL_HINT}: {extra_hint('mcp')}"


def _missing(*modules: str) -> str | None:
    for module in modules:
        try:
            if importlib.util.find_spec(module) is None:
                return module
        except (ImportError, ValueError):
            return module
    return None


def _usage(message: str) -> int:
    print(f"stockade: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_mcp(args: argparse.Namespace) -> int:
    missing = _missing("mcp", "mcp.server.lowlevel", *(("hypercorn",) if args.http else ()))
    if missing is not None:
        return _usage(f"{install_hint()} (cannot import {missing})")
    from ..faces import credentials
    from ..trust import broad_root_refusal, host_temp_roots
    from ._http import is_loopback, parse_http
    from ._link import seconds
    from .server import DEFAULT_MAX_SESSIONS, McpSettings

    http = None
    if args.http is None:
        for flag, value in (
            ("--token-file", args.token_file),
            ("--max-sessions", args.max_sessions),
        ):
            if value is not None:
                return _usage(f"{flag} applies to --http only (stdio needs no token)")
    else:
        try:
            http = parse_http(args.http)
        except ValueError as error:
            return _usage(str(error))
        if args.session_id is not None:
            return _usage(
                "--session-id resumes the one session of a stdio server; over --http "
                "every connection opens its own session"
            )
        if not is_loopback(http[0]) and not args.allow_remote:
            return _usage(
                f"--http {args.http}: not a loopback address, and plain HTTP would carry "
                "the bearer token in clear text; pass --allow-remote to serve it anyway"
            )
    max_sessions = DEFAULT_MAX_SESSIONS
    if args.max_sessions is not None:
        if not args.max_sessions.isdigit() or int(args.max_sessions) < 1:
            return _usage(
                f"--max-sessions wants a positive whole number, got {args.max_sessions!r}"
            )
        max_sessions = int(args.max_sessions)
    try:
        ask_timeout = seconds(args.ask_timeout)
    except ValueError:
        return _usage(f"--ask-timeout wants a positive number of seconds, got {args.ask_timeout!r}")
    root = os.path.realpath(args.root or os.getcwd())
    if not os.path.isdir(root):
        return _usage(f"--root {root}: not a directory")
    home = os.path.expanduser("~")  # $HOME, else the password database
    refusal = broad_root_refusal(
        root, explicit=args.root is not None, home=os.path.realpath(home) if home != "~" else None
    )
    if refusal is not None:
        return _usage(refusal)
    tokens: tuple[str, ...] = ()
    token_file = None
    if args.token_file is not None:
        token_file = os.path.abspath(os.path.expanduser(args.token_file))
        try:
            tokens = credentials.read_token_file(token_file, (root, *host_temp_roots()))
        except credentials.TokenProblem as error:
            return _usage(str(error))

    from ..faces import load_face_composition

    composition = load_face_composition(args.config)
    settings = McpSettings(
        root=root,
        session_id=args.session_id,
        mode=args.mode,
        approval=args.approval,
        preset=args.preset,
        network=args.network,
        ask_timeout=ask_timeout,
        http=http,
        token_file=token_file,
        tokens=tokens,
        max_sessions=max_sessions,
    )
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="stockade mcp: %(name)s: %(message)s"
    )
    import trio

    try:
        return trio.run(serve, composition, settings)
    except BaseExceptionGroup as group:
        # A Ctrl-C that came before the drain handler was listening ends it as one.
        if group.subgroup(KeyboardInterrupt) is not None:
            return 130
        # One error raised inside a nursery: report it as itself.
        errors = group.exceptions
        if len(errors) == 1 and isinstance(errors[0], StockadeError):
            raise errors[0] from None
        raise
    except KeyboardInterrupt:
        return 130


async def serve(composition: Any, settings: McpSettings) -> int:
    """Open the harness and serve until the client leaves or a signal drains us."""
    # anyio loads its Trio backend at the SDK's first checkpoint: done here, before the
    # server says it is ready, a Ctrl-C cannot land inside that import.
    import anyio._backends._trio  # noqa: F401

    from ..harness import open_harness
    from ._link import McpAnswerer
    from .server import Face

    answerer = McpAnswerer(timeout=settings.ask_timeout)
    # The bearer tokens are the harness's secrets: made (or read) before it opens, and
    # withheld from every command's environment whatever the policy says.
    made_token = None
    if settings.http is not None and not settings.tokens:
        from ..faces import credentials

        made_token = credentials.new_token()
    withhold = (*settings.tokens, *([made_token] if made_token else []))
    # A token file kept elsewhere is deny_read's `mcp-token`: no confined command reads it
    # (a generated one lies in the state directory, hidden as `state`).
    token_files = (settings.token_file,) if settings.token_file else ()
    from ..faces import FACE_EVENTS

    async with open_harness(
        composition,
        answerers=[answerer],
        cwd=settings.root,
        withhold=withhold,
        unreadable=token_files,
        # A session another face began (`--session-id`) holds that face's events.
        extra_events=FACE_EVENTS,
    ) as harness:
        face = Face(harness=harness, settings=settings, calls=answerer.calls)
        if settings.http is not None:
            from ._http import serve_http

            await serve_http(face, *settings.http, made_token=made_token)
        else:
            from ._stdio import serve_stdio

            await serve_stdio(face)
    # Stopped by a signal, it exits as a shell reports one (130 for Ctrl-C, 143 for
    # SIGTERM), even after a clean drain; ended by its client, 0.
    return 0 if face.stopped_by is None else 128 + face.stopped_by

"""`stockade run`: one command through the provider and the sandboxed executor."""

from __future__ import annotations

import argparse
import sys
from contextlib import AsyncExitStack

import msgspec
import trio

from ._cli_config import CliSettings, cli_settings, load_cli_composition
from .errors import SandboxUnavailable
from .executor.actor import open_executor
from .messages import ShellResult
from .sandbox.actor import open_provider
from .vocab import DENIAL_INSTRUCTION, ExecutionPolicy, denial_marker

EXIT_UNAVAILABLE = 125
JSON_KEYS = (
    "exit_code",
    "stdout",
    "stderr",
    "denied",
    "runner_failed",
    "timed_out",
    "mode",
    "backend",
    "enforcement",
)
NO_PROVIDER = "the composition mounts no sandbox provider (stockade.sandbox.local)"


async def _run(
    args: argparse.Namespace, settings: CliSettings, policy: ExecutionPolicy
) -> ShellResult:
    async with AsyncExitStack() as stack:
        provider = None
        if settings.confines:
            if settings.provider is None:
                raise SandboxUnavailable(NO_PROVIDER)
            provider = await stack.enter_async_context(open_provider(settings.provider))
        executor = await stack.enter_async_context(open_executor(settings.executor, provider))
        spec = executor.resolve(args.command, policy=policy, timeout=args.timeout)
        return await executor.run(spec)


def run_command(args: argparse.Namespace) -> int:
    settings = cli_settings(
        load_cli_composition(args.config), mode=args.mode, root=args.root, backend=args.backend
    )
    policy = ExecutionPolicy(mode=settings.mode, workspace_root=settings.root)
    try:
        result = trio.run(_run, args, settings, policy)
    except SandboxUnavailable as error:
        if not args.json:
            raise
        unavailable = {"error": {"code": error.code, "detail": error.detail}}
        sys.stdout.write(msgspec.json.encode(unavailable).decode() + "\n")
        return EXIT_UNAVAILABLE
    if args.json:
        facts = msgspec.to_builtins(result)
        line = msgspec.json.encode({key: facts[key] for key in JSON_KEYS}).decode()
        sys.stdout.write(line + "\n")
        return 0
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.denied:
        sys.stderr.write(f"{denial_marker(result.mode)}\n{DENIAL_INSTRUCTION}\n")
    if result.timed_out:
        sys.stderr.write(f"stockade: timed out after {args.timeout:g}s; the command was killed\n")
    return result.exit_code if result.exit_code is not None else 1

"""`stockade run`: one command through the provider and the sandboxed executor."""

from __future__ import annotations

import argparse
import os
import sys

import msgspec
import trio

from .errors import SandboxUnavailable
from .executor.actor import open_executor
from .executor.config import ExecutorConfig
from .messages import ShellResult
from .sandbox.actor import open_provider
from .sandbox.config import ProviderConfig
from .vocab import DENIAL_INSTRUCTION, ExecutionPolicy, SandboxMode, denial_marker

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


async def _run(args: argparse.Namespace, policy: ExecutionPolicy) -> ShellResult:
    async with (
        open_provider(ProviderConfig(backend=args.backend)) as provider,
        open_executor(ExecutorConfig(), provider) as executor,
    ):
        return await executor.run(
            executor.resolve(args.command, policy=policy, timeout=args.timeout)
        )


def run_command(args: argparse.Namespace) -> int:
    mode = SandboxMode.parse(args.mode)
    root = os.path.abspath(args.root or os.getcwd())
    policy = ExecutionPolicy(mode=mode, workspace_root=root)
    try:
        result = trio.run(_run, args, policy)
    except SandboxUnavailable as error:
        if not args.json:
            raise
        unavailable = {"error": {"code": error.code, "detail": error.detail}}
        sys.stdout.write(msgspec.json.encode(unavailable).decode() + "\n")
        return EXIT_UNAVAILABLE
    if args.json:
        facts = msgspec.to_builtins(result)
        sys.stdout.write(
            msgspec.json.encode({key: facts[key] for key in JSON_KEYS}).decode() + "\n"
        )
        return 0
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.denied:
        sys.stderr.write(f"{denial_marker(result.mode)}\n{DENIAL_INSTRUCTION}\n")
    if result.timed_out:
        sys.stderr.write(f"stockade: timed out after {args.timeout:g}s; the command was killed\n")
    return result.exit_code if result.exit_code is not None else 1

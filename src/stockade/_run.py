"""`stockade run`: one command through the provider and the sandboxed executor."""

from __future__ import annotations

import argparse
import shlex
import sys
from contextlib import AsyncExitStack

import msgspec
import trio

from ._cli_config import CliSettings, cli_settings, load_cli_composition, unconfined_refusal
from .approval._chain import Answerer, ApprovalRequest, Decision
from .approval.answerers import TerminalAnswerer
from .errors import SandboxUnavailable
from .executor.actor import open_executor
from .messages import ShellResult
from .sandbox.actor import open_provider
from .vocab import DENIAL_INSTRUCTION, ApprovalPolicy, ExecutionPolicy, SandboxMode, denial_marker

EXIT_UNAVAILABLE = 125
JSON_KEYS = (
    "exit_code",
    "stdout",
    "stderr",
    "denied",
    "runner_failed",
    "timed_out",
    "mode",
    "network",
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


def _wider(mode: SandboxMode) -> SandboxMode | None:
    wider = [candidate for candidate in SandboxMode if candidate.is_wider_than(mode)]
    return min(wider) if wider else None


async def _ask_to_widen(
    answerer: Answerer, command: str, current: SandboxMode
) -> SandboxMode | None:
    """After a denial, offer the next wider mode once; the granted mode or None."""
    requested = _wider(current)
    if requested is None:
        return None
    answer = await answerer.answer(
        ApprovalRequest(
            session_id="cli",
            command=command,
            justification="the sandbox denied a file effect (stockade run --ask)",
            current_mode=current,
            requested_mode=requested,
            policy=ApprovalPolicy.ASK,
            reason=f"denied under {current.value}",
        )
    )
    granted = answer is not None and answer.decision is Decision.ALLOWED_ONCE
    return requested if granted else None


async def _run_asking(
    args: argparse.Namespace, settings: CliSettings, policy: ExecutionPolicy, answerer: Answerer
) -> tuple[ShellResult, bool]:
    """Run; on a denial, ask once and rerun wider if granted. (result, already shown)."""
    result = await _run(args, settings, policy)
    if not result.denied:
        return result, False
    if not args.json:
        # The person sees the denied attempt before being asked about a retry.
        _emit(result, args)
    granted = await _ask_to_widen(answerer, args.command, policy.mode)
    if granted is None:
        sys.stderr.write("stockade: not retried\n")
        return result, not args.json
    sys.stderr.write(f"stockade: retrying once under {granted.value}\n")
    wider = ExecutionPolicy(
        mode=granted, workspace_root=policy.workspace_root, network=policy.network
    )
    return await _run(args, settings, wider), False


def run_command(args: argparse.Namespace, *, answerer: Answerer | None = None) -> int:
    """`stockade run`; `answerer` decides `--ask` retries (default: the terminal)."""
    if not isinstance(args.command, str):  # the parser's words: one is the shell text
        words = args.command
        args.command = words[0] if len(words) == 1 else shlex.join(words)
    composition = load_cli_composition(args.config)
    settings = cli_settings(
        composition,
        mode=args.mode,
        root=args.root,
        backend=args.backend,
        network=getattr(args, "network", None),
    )
    policy = ExecutionPolicy(
        mode=settings.mode, workspace_root=settings.root, network=settings.network
    )
    shown = False
    try:
        refusal = unconfined_refusal(composition, settings)
        if refusal is not None:
            # The composition runs commands without a sandbox: a confining mode would be a lie.
            raise SandboxUnavailable(refusal)
        if args.ask:
            chosen: Answerer = answerer if answerer is not None else TerminalAnswerer()
            result, shown = trio.run(_run_asking, args, settings, policy, chosen)
        else:
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
    if not shown:
        _emit(result, args)
    return result.exit_code if result.exit_code is not None else 1


def _emit(result: ShellResult, args: argparse.Namespace) -> None:
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.denied:
        sys.stderr.write(f"{denial_marker(result.mode)}\n{DENIAL_INSTRUCTION}\n")
    if result.timed_out:
        sys.stderr.write(f"stockade: timed out after {args.timeout:g}s; the command was killed\n")

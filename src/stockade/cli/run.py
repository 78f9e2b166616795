"""`stockade run`: one command through the provider and the sandboxed executor.

As a person runs it, the command's output arrives live on stockade's own stdout and
stderr (a bounded copy is still captured for classification), on a terminal through
a pty of its own (`_run_terminal`), a piped stdin is passed on, and the exit status
reads as a shell's (docs/executor.md, "stockade run"). With --json nothing is
streamed: stdout is one JSON object, the result or an error with a stable `code`.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import attrs
import msgspec
import trio

from ..errors import (
    CommandStartError,
    ConfigError,
    InvalidPolicy,
    SandboxUnavailable,
    StockadeError,
)
from ..executor import (
    ExecutorConfig,
    Streams,
    open_executor,
    protected_refusals,
    refused_destinations,
    refused_requests,
    result_causes,
)
from ..faces import load_face_composition
from ..messages import ShellResult
from ..sandbox import host_temp, make_private_tmp, open_provider
from ..shown import TERMINAL_STATE_RESET, escaped_lines, json_escaped, one_line
from ..vocab import (
    DENIAL_INSTRUCTION,
    READ_DENIED_HINT,
    ExecutionPolicy,
    Network,
    SandboxMode,
    denial_marker,
    network_denial_marker,
    request_refusal_marker,
)
from ._screen import OutputClosed, Screen, on_a_terminal, streams_for
from ._tmp_watch import remove_and_release, watch_private_tmp
from .errors import EXIT_ASK_FIRST, EXIT_BROKEN_PIPE, EXIT_FORBIDDEN, say, silence
from .settings import (
    NO_PROVIDER,
    broad_root_problem,
    cli_settings,
    unconfined_refusal,
)

if TYPE_CHECKING:
    import argparse

    from ..approval import Answerer
    from ..config import Composition, Plan

EXIT_USAGE = 2
EXIT_TIMEOUT = 124
EXIT_UNAVAILABLE = 125
EXIT_CANNOT_START = 126
EXIT_FAILURE = 1
JSON_KEYS = (
    "exit_code",
    "stdout",
    "stderr",
    "stdout_dropped",
    "stderr_dropped",
    "denied",
    # The refused path is one no sandbox mode may read (deny_read).
    "read_denied",
    "runner_failed",
    "timed_out",
    "mode",
    "network",
    "backend",
    # The Landlock launcher's tier (namespaced or plain); null for other backends.
    "tier",
    "enforcement",
    # What the file claim leaves unenforced: every `partial` says why.
    "gaps",
    # The network claim apart (null when the call had the network), and its gaps.
    "network_enforcement",
    "network_gaps",
    # network allowlist: every connection the proxy decided (destination, verdict, rule),
    # and those refused unread over a bound of open connections.
    "connections",
    "connections_refused",
    # network allowlist: every request to a ruled host the proxy judged (issue 41:
    # method, host, path without query, verdict, rule, credential names, never a value).
    "requests",
    # The harness's variables the environment policy kept from the command (names).
    "env_dropped",
    # How it ended (one cause), the limit it reached, the note; what it used, and how
    # each limit held it (docs/limits.md).
    "cause",
    "limit",
    "note",
    "usage",
    "limits",
)
# Signals that stop `stockade run` (and, first, the command's whole process tree).
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class RunError(Exception):
    """What ends `stockade run` without a result: a stable `code` (the --json error
    object's), the human detail, and the exit status (docs/executor.md)."""

    def __init__(self, code: str, detail: str, status: int) -> None:
        super().__init__(f"{code}: {detail}")
        self.code, self.detail, self.status = code, detail, status


def _usage(detail: str) -> RunError:
    return RunError("USAGE", detail, EXIT_USAGE)


def _interrupted(signum: int) -> RunError:
    name = signal.Signals(signum).name
    return RunError(
        "INTERRUPTED", f"interrupted by {name}; the command's processes were killed", 128 + signum
    )


# ---- the input: command text, timeout, flags --------------------------------------


def command_text(command: str | list[str] | None) -> str:
    """The bash -c text: a string as given; an argv (`stockade run -- CMD ARG...`)
    quoted word by word, so each argument reaches the command as one word."""
    if isinstance(command, str):
        return command
    if not command:
        raise _usage("run needs a command, e.g. stockade run 'make test' or stockade run -- ls -l")
    # The parser always gives a list: one word is the shell text (`stockade run 'make test'`).
    return command[0] if len(command) == 1 else shlex.join(command)


def checked_timeout(value: float | str | None) -> float | None:
    """--timeout: seconds > 0 (`inf`: no limit, over the composition's default)."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if math.isnan(seconds) or seconds <= 0:
        shown = f"{value:g}" if isinstance(value, float) else repr(value)
        raise _usage(
            f"--timeout takes a number of seconds greater than 0 (or inf for none), not {shown}"
        )
    return seconds


def _flags(args: argparse.Namespace) -> None:
    """Flag values checked before anything is loaded: a typo is a usage error."""
    try:
        if args.mode is not None:
            SandboxMode.parse(args.mode)
        if getattr(args, "network", None) is not None:
            Network.parse(args.network)
    except ConfigError as error:
        raise _usage(str(error)) from None


# ---- running -------------------------------------------------------------------------


async def _run(
    command: str,
    limit: float | None,
    settings: Plan,
    policy: ExecutionPolicy,
    streams: Streams,
) -> ShellResult:
    async with AsyncExitStack() as stack:
        provider = None
        if settings.confines:
            if settings.provider is None:
                raise SandboxUnavailable(NO_PROVIDER)
            # One provider for one command: a verdict remembered per user, as exec's,
            # while no root this call may write holds the cache.
            one_shot = attrs.evolve(
                settings.provider,
                remember_verdict=True,
                probe_roots=(
                    *settings.provider.probe_roots,
                    policy.workspace_root,
                    *policy.granted_roots,
                ),
            )
            provider = await stack.enter_async_context(open_provider(one_shot))
        executor = await stack.enter_async_context(open_executor(settings.executor, provider))
        spec = executor.resolve(command, policy=policy, timeout=limit)
        return await executor.run(spec, streams=streams)


async def _interruptible(work: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """`work(*args)`, stopped by Ctrl-C (SIGINT), SIGTERM or SIGHUP: the cancellation
    kills the command's process group (the executor's settle) before it is reported
    as INTERRUPTED. The command runs in a session of its own, so the terminal's
    Ctrl-C reaches only stockade: stockade must end it."""
    caught: list[int] = []
    with trio.open_signal_receiver(*INTERRUPTS) as signals, trio.CancelScope() as scope:

        async def watch() -> None:
            async for signum in signals:
                caught.append(signum)
                scope.cancel()
                return

        trio.lowlevel.spawn_system_task(watch)
        return await work(*args)
    raise _interrupted(caught[0] if caught else signal.SIGINT)


class _Invocation:
    """One `stockade run`: the checked input, the runs, and what the person is told."""

    def __init__(
        self,
        args: argparse.Namespace,
        command: str,
        timeout: float | None,
        settings: Plan,
        composition: Composition | None = None,
        verdict: Verdict | None = None,
    ) -> None:
        self.args, self.command, self.timeout, self.settings = args, command, timeout, settings
        # Whose harness asks --ask's question and keeps its session log.
        self.composition = composition
        # What the command rules said of the command (None: no rule decides).
        self.verdict = verdict if verdict is not None else Verdict()
        self.screen = Screen()
        # The person typed Ctrl-C into the command's terminal (the last run).
        self.interrupted = False

    async def run(self, policy: ExecutionPolicy) -> ShellResult:
        if on_a_terminal(self.args):
            return await self._on_a_terminal(policy)
        streams = streams_for(self.args, self.screen)
        return await _run(self.command, self.timeout, self.settings, policy, streams)

    async def _on_a_terminal(self, policy: ExecutionPolicy) -> ShellResult:
        """The command on a pseudo-terminal of its own (docs/executor.md, "On a terminal")."""
        from . import _run_terminal as tty

        typing = tty.typing_reaches_the_command()
        command = self.command
        if tty.same_terminal(1, 2):
            command = tty.MERGE_STDERR + command
        async with tty.command_terminal(typing=typing) as pty:
            if pty is None:  # no pty left on the system: pipes, as off a terminal
                streams = streams_for(self.args, self.screen)
                return await _run(self.command, self.timeout, self.settings, policy, streams)
            # What still comes on the stderr pipe (the runner's own lines) meets the
            # terminal raw when it is the one typed on.
            raw = typing and tty.same_terminal(0, 2)
            streams = streams_for(self.args, self.screen, typing=typing, raw_stderr=raw)
            streams = msgspec.structs.replace(streams, terminal=pty.terminal)
            try:
                return await _run(command, self.timeout, self.settings, policy, streams)
            finally:
                self.interrupted = pty.interrupted

    @property
    def limit(self) -> float | None:
        """The time limit the command ran under: --timeout, else the composition's."""
        return self.timeout if self.timeout is not None else self.settings.executor.default_timeout

    def report(self, result: ShellResult) -> None:
        """After the streamed output: a line for what the output itself does not say."""
        lines = []
        if result.exit_code is None:  # it never started; its stderr says why
            lines.append(f"stockade: {result.stderr.strip().strip('[]')}")
        if result.denied:
            if os.isatty(2):
                protected = protected_refusals(result, self.settings.root)
                lines.append(
                    _human_denial(
                        result.mode,
                        asking=self.args.ask,
                        read=result.read_denied,
                        protected=bool(protected),
                    )
                )
            else:
                # Not a person's terminal: likely a model reading it, as the API words it.
                lines += [denial_marker(result.mode), DENIAL_INSTRUCTION]
                if result.read_denied:
                    lines.append(READ_DENIED_HINT)
        for destination in refused_destinations(result.connections):
            if os.isatty(2):
                lines.append(f"stockade: the proxy refused network access to {destination}")
            else:
                lines.append(network_denial_marker(destination))
        for reason in refused_requests(result.requests):
            if os.isatty(2):
                lines.append(f"stockade: the proxy refused a network request: {reason}")
            else:
                lines.append(request_refusal_marker(reason))
        # What the model would be told of the cause (network off behind a DNS error, a
        # toolchain's directory, a host path a fresh view hid), as a person reads it.
        for cause in result_causes(result):
            lines.append(cause.replace("[sandbox: ", "stockade: ").rstrip("]"))
        if result.timed_out and result.exit_code is not None:
            after = "" if self.limit is None else f" after {self.limit:g}s"
            lines.append(f"stockade: timed out{after}; the command was killed")
        # Split at newlines only: a `\r` a note may quote is escaped below, not a row.
        for note in result.note.split("\n") if result.note else ():
            if "output_bytes" not in note:  # the capture's own line below says it
                lines.append(note.replace("[sandbox: ", "stockade: ").rstrip("]"))
        if result.stderr_dropped:
            lines.append(
                f"stockade: all output was shown, but {result.stderr_dropped} bytes from the "
                f"middle of stderr were not kept for the denial check (output_cap "
                f"{self.settings.executor.output_cap})"
            )
        if lines:
            # A refused destination is the command's own text (a SOCKS5 name is any
            # bytes), and so may be what a note or a never-started command's stderr
            # quotes: every line escaped, one row each (stockade.shown), so none can
            # move the cursor, erase a line or pose as another line of stockade's.
            shown = "".join(f"{one_line(line)}\n" for line in lines)
            # On a terminal, the command's output came first and may have left it
            # hiding what follows (concealed, black on black, a scroll region): undone.
            reset = TERMINAL_STATE_RESET if os.isatty(2) else ""
            sys.stderr.write(reset + self.screen.line_start() + shown)
            sys.stderr.flush()
            self.screen.fresh_line()

    def json(self, result: ShellResult) -> None:
        facts = msgspec.to_builtins(result)
        reply = {key: facts[key] for key in JSON_KEYS}
        reply["denial"] = (
            f"{denial_marker(result.mode)}\n{DENIAL_INSTRUCTION}" if result.denied else None
        )
        if result.read_denied:
            reply["denial"] += f"\n{READ_DENIED_HINT}"
        # The command's output and the names it asked for, with what a terminal would act
        # on written as JSON escapes: the same data, harmless on a terminal.
        sys.stdout.write(json_escaped(msgspec.json.encode(reply).decode()) + "\n")
        if result.stdout_dropped or result.stderr_dropped:
            sys.stderr.write(
                f"stockade: the capture keeps the head and tail of each stream (output_cap "
                f"{self.settings.executor.output_cap}); dropped from the middle: "
                f"{result.stdout_dropped} bytes of stdout, {result.stderr_dropped} of stderr\n"
            )


def _human_denial(
    mode: SandboxMode, *, asking: bool, read: bool = False, protected: bool = False
) -> str:
    """The denial as a person at a terminal reads it (the model's wording stays in the
    API and in --json). `protected`: the refused path lies inside the workspace, where
    only a protection refuses a write: no wider confining mode lifts it."""
    if protected:
        return (
            "stockade: the sandbox refused a write to a protected path in the workspace "
            "(repository metadata and tool settings such as .git/hooks, .git/config, "
            ".vscode, stockade.yml stay read-only in every sandbox mode); editor and agent "
            "settings (.vscode, .idea, .mcp.json, .claude, .codex) can be left writable "
            "with `unprotect:` in your composition (docs/configuration.md); git's only "
            "with --mode danger-full-access, which confines nothing"
        )
    if read:
        return (
            "stockade: the sandbox refused a path no sandbox mode may read (deny_read in "
            "docs/security.md); only --mode danger-full-access lifts it"
        )
    line = f"stockade: the sandbox refused a file write under {mode.value} mode"
    from ._ask import wider as next_wider  # a denial on a terminal only

    wider = next_wider(mode)
    if asking or wider is None:
        return line
    return f"{line} (try --mode {wider.value}, or --ask)"


def exit_status(result: ShellResult) -> int:
    """A shell's: the command's own status (128+N for a signal), 124 for a timeout."""
    if result.timed_out:
        return EXIT_TIMEOUT
    return result.exit_code if result.exit_code is not None else EXIT_FAILURE


class Verdict(msgspec.Struct, frozen=True):
    """What the command rules decided before the run: `ask` (rule, reason) when a rule asks
    a person first (only with --ask: without it the run was refused), `allowed_by` the
    rule that approves a retry's escalation without asking."""

    ask: tuple[str, str] | None = None
    allowed_by: str | None = None


def _judged(settings: Plan, command: str, *, asking: bool) -> Verdict:
    """The command rules' verdict on the script (docs/rules.md): a forbidden command, or
    one a rule asks about without --ask, ends the run here (nothing ran)."""
    from ..rules import DEFAULT_FIRST_WORDS, argv_may_apply, plain_words

    try:
        # A script bash reads as one plain command (`true`, `make test`, `bash -c true`)
        # that no rule could meet is let through without loading the judge, as exec does.
        words = plain_words(command)
        if words is not None:
            if settings.composed:
                from ..rules import first_words

                first = first_words(settings.rules.rules)
            else:
                first = DEFAULT_FIRST_WORDS  # the embedded plan's rules are the defaults
            if not argv_may_apply(words, first):
                return Verdict()
        judgement = settings.rules.judge(command)
    except ConfigError as error:
        raise RunError("CONFIG", str(error), EXIT_USAGE) from None
    from ..rules import deciding_rule, render_refusal

    if judgement.forbidden:
        raise RunError("FORBIDDEN", f"{render_refusal(judgement)}; nothing ran", EXIT_FORBIDDEN)
    if judgement.must_ask:
        if not asking:
            raise RunError(
                "APPROVAL_REQUIRED",
                f"{render_refusal(judgement)}; nothing ran: pass --ask to be asked",
                EXIT_ASK_FIRST,
            )
        return Verdict(ask=deciding_rule(judgement))
    if judgement.allowed and judgement.rule is not None:
        return Verdict(allowed_by=judgement.rule.name)
    return Verdict()


async def _run_asking(
    call: _Invocation, policy: ExecutionPolicy, answerer: Answerer
) -> tuple[ShellResult, bool]:
    """Ask first when a rule says so; run; on a denial, ask once and rerun wider if
    granted. (result, already reported)."""
    from ._ask import ask_to_run, ask_to_widen  # a person may be asked: not before

    if call.verdict.ask is not None:
        rule, reason = call.verdict.ask
        first = await ask_to_run(
            call.composition, answerer, call.command, policy, rule=rule, reason=reason
        )
        _where_asked(first.session_id)
        if first.granted is None:
            raise RunError(
                "APPROVAL_REQUIRED",
                f"not run: {one_line(first.why_not)}",
                EXIT_ASK_FIRST,
            )
    result = await call.run(policy)
    if not result.denied:
        return result, False
    if result.read_denied:
        # No wider confined mode lifts deny_read: asking for one would only waste a yes.
        if not call.args.json:
            call.report(result)
            say(sys.stderr, "stockade: not asked: only danger-full-access reads that path\n")
        return result, not call.args.json
    if not call.args.json:
        # The person sees the denied attempt before being asked about a retry.
        call.report(result)
    asked = await ask_to_widen(
        call.composition, answerer, call.command, policy, allowed_by=call.verdict.allowed_by
    )
    _where_asked(asked.session_id)
    granted = asked.granted
    if granted is None:
        say(sys.stderr, f"stockade: not retried: {one_line(asked.why_not)}\n")
        return result, not call.args.json
    sys.stderr.write(f"stockade: retrying once under {granted.value}\n")
    wider = ExecutionPolicy(
        mode=granted,
        workspace_root=policy.workspace_root,
        network=policy.network,
        temp_dir=policy.temp_dir,
        host_temp=policy.host_temp,
        extra_roots=policy.extra_roots,
        tool_cache=policy.tool_cache,
        agents=policy.agents,
    )
    return await call.run(wider), False


def _where_asked(session_id: str | None) -> None:
    if session_id is not None:
        say(
            sys.stderr,
            f"stockade: the question and its answer are in session {session_id} "
            f"(stockade session show {session_id})\n",
        )


# ---- the verb ------------------------------------------------------------------------


def run_command(args: argparse.Namespace, *, answerer: Answerer | None = None) -> int:
    """`stockade run`; `answerer` decides `--ask` retries (default: the terminal).

    Every failure is one `stockade: ...` line on stderr (with --json: one error object
    on stdout) and its documented status; never a traceback for bad input.
    """
    try:
        try:
            return _run_command(args, answerer)
        except KeyboardInterrupt:  # Ctrl-C outside the event loop's own handling
            raise _interrupted(signal.SIGINT) from None
    except RunError as error:
        return _report_error(args, error)
    except Exception as error:
        if _only_output_closed(error):
            # Nothing more can be shown (the command was ended with the run).
            silence(sys.stdout)
            silence(sys.stderr)
            return EXIT_BROKEN_PIPE
        if not args.json:  # a bug: still one object on stdout with --json
            raise
        traceback.print_exc()
        return _report_error(args, RunError("INTERNAL", repr(error), EXIT_FAILURE))


def _only_output_closed(error: BaseException) -> bool:
    """Whether `error` is OutputClosed (or a write's EPIPE), or a group (nested) of
    nothing else."""
    closed = (OutputClosed, BrokenPipeError)
    if isinstance(error, BaseExceptionGroup):
        matched, rest = error.split(closed)
        return matched is not None and rest is None
    return isinstance(error, closed)


def _report_error(args: argparse.Namespace, error: RunError) -> int:
    # `say`: a reader that went away (the pipe's other end, Ctrl-C'd with us) ends it
    # quietly, still with the error's status.
    if args.json:
        reply = {"error": {"code": error.code, "detail": error.detail}}
        say(sys.stdout, json_escaped(msgspec.json.encode(reply).decode()) + "\n")
        return error.status
    # A detail may quote a path found on disk or a command's words: escaped, its own
    # line breaks kept (a composition's errors are one per line).
    detail = escaped_lines(error.detail)
    if error.code == SandboxUnavailable.code:
        say(sys.stderr, f"stockade: {error.code}: {detail}\n")
    elif error.code != "INTERRUPTED":  # Ctrl-C is quiet, as in a shell
        say(sys.stderr, f"stockade: {detail}\n")
    return error.status


def _limited(executor: ExecutorConfig, assignments: list[str]) -> ExecutorConfig:
    """The composition's executor with `--limit NAME=VALUE`s over its limits (a bad
    one is a usage error, nothing ran); output_bytes and wall_seconds included."""
    from ..limits import parse_assignment

    given: dict[str, object] = {}
    for text in assignments:
        try:
            name, value = parse_assignment(text)
        except ConfigError as error:
            raise _usage(f"--limit: {error}") from None
        given[name] = value
    try:
        limits = executor.limits.merged(given)
    except ConfigError as error:
        raise _usage(f"--limit: {error}") from None
    changes: dict[str, Any] = {"limits": limits}
    if "output_bytes" in given:
        if limits.output_bytes is None:
            raise _usage("--limit: output_bytes cannot be null (the capture is kept in memory)")
        changes["output_cap"] = limits.output_bytes
    if "wall_seconds" in given:
        changes["default_timeout"] = limits.wall_seconds
    return attrs.evolve(executor, **changes)


def _run_command(args: argparse.Namespace, answerer: Answerer | None) -> int:
    command = command_text(args.command)
    timeout = checked_timeout(args.timeout)
    _flags(args)
    allowed = getattr(args, "allow", None) or []
    network = getattr(args, "network", None)
    if allowed:
        if network not in (None, Network.ALLOWLIST.value):
            raise _usage(f"--allow means --network allowlist, not --network {network}")
        network = Network.ALLOWLIST.value
    try:
        composition = load_face_composition(args.config)
        settings = cli_settings(
            composition, mode=args.mode, root=args.root, backend=args.backend, network=network
        )
        if allowed:
            executor = settings.executor
            settings = settings.replace(
                executor=attrs.evolve(executor, network_allow=(*executor.network_allow, *allowed))
            )
        if getattr(args, "limit", None):
            settings = settings.replace(executor=_limited(settings.executor, args.limit))
    except (ConfigError, OSError) as error:
        raise RunError("CONFIG", _said(error), EXIT_USAGE) from None
    try:
        policy = ExecutionPolicy(
            mode=settings.mode, workspace_root=settings.root, network=settings.network
        )
    except InvalidPolicy as error:
        raise _usage(str(error)) from None
    broad = broad_root_problem(settings, may_widen=bool(args.ask))
    if broad is not None:
        raise _usage(broad)
    if not os.path.isdir(settings.root):  # what the provider says too, said for every mode
        raise _usage(
            f"workspace root {settings.root!r} does not exist or is not a directory; "
            "create it or choose another root"
        )
    refusal = unconfined_refusal(settings)
    if refusal is not None:
        # The composition runs commands without a sandbox: a confining mode would be a lie.
        raise RunError(SandboxUnavailable.code, refusal, EXIT_UNAVAILABLE)
    verdict = _judged(settings, command, asking=bool(args.ask))
    call = _Invocation(args, command, timeout, settings, composition, verdict)
    shown = False
    tmp = None
    tmp_watch = None
    try:
        if settings.confines and policy.mode.confines:
            # One run is one session: a private temp directory instead of /tmp, for
            # its command (and a retry), removed when it is done.
            tmp = make_private_tmp()
            # Removed should this process be killed meanwhile (cli/_tmp_watch.py).
            tmp_watch = watch_private_tmp(tmp)
            allowed = settings.provider is not None and settings.provider.allow_host_temp
            extra, cache = _extra_roots(settings, getattr(args, "writable", None) or ())
            policy = msgspec.structs.replace(
                policy,
                temp_dir=tmp.path,
                host_temp=host_temp(allowed),
                extra_roots=extra,
                tool_cache=cache,
                agents=settings.agents,
            )
        if args.ask:
            from ..approval import TerminalAnswerer  # --ask only: lazily

            chosen: Answerer = answerer if answerer is not None else TerminalAnswerer(typed=True)
            result, shown = trio.run(_interruptible, _run_asking, call, policy, chosen)
        else:
            result = trio.run(_interruptible, call.run, policy)
    except SandboxUnavailable as error:
        raise RunError(error.code, error.detail, EXIT_UNAVAILABLE) from None
    except CommandStartError as error:
        raise RunError("COMMAND_START", str(error), EXIT_CANNOT_START) from None
    except InvalidPolicy as error:
        raise _usage(str(error)) from None
    except ConfigError as error:
        raise RunError("CONFIG", str(error), EXIT_USAGE) from None
    except (StockadeError, OSError) as error:
        raise RunError("ENVIRONMENT", _said(error), EXIT_FAILURE) from None
    finally:
        if tmp is not None:
            remove_and_release(tmp, tmp_watch)
    if args.json:
        call.json(result)
        return 0
    if not shown:
        call.report(result)
    status = exit_status(result)
    if call.interrupted and status == 128 + signal.SIGINT:
        _die_of_sigint()
    return status


def _extra_roots(settings: Plan, writable: Sequence[str]) -> tuple[tuple[str, ...], str | None]:
    """The extra writable roots (the composition's, --writable) and the tool caches'
    directory, checked as the harness checks them (ConfigError: refused)."""
    extra = settings.writable_roots(writable)
    setting = settings.tool_caches()
    if setting is None:
        return extra, None
    return extra, setting.directory_for(settings.hidden(), (settings.root,))


def _die_of_sigint() -> None:
    """Ctrl-C ended the command: pass it on to stockade's own job, as the terminal would
    have had it not been raw (only the command got the key). Stockade dies of SIGINT,
    and a calling shell stops its loop or script: it stops for a child killed by
    SIGINT while it got SIGINT too, not for one that exited 130."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        return  # ignored on entry (as under nohup): it stays so, and the status says 130
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.killpg(os.getpgrp(), signal.SIGINT)


def _said(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        where = f"{error.filename}: " if error.filename else ""
        return f"{where}{error.strerror}"
    return str(error)

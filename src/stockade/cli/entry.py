"""The `stockade` command: build_parser() defines every verb; main() runs one.

`exec` is the fast path: it imports only the pure modules and the synchronous
selector, then replaces itself with the confined argv (no trio, no event loop).
Its arguments (and `run`'s), when well formed, are read without argparse, whose
import and parser cost more than the rest of `exec`; anything else (help, an error,
an unusual spelling) goes to the parser, so every usage and error text is its own.
"""

from __future__ import annotations

import errno
import os
import sys

from ..errors import ConfigError, InvalidPolicy, SandboxUnavailable, StockadeError
from ..modes import Network, SandboxMode, allowed_modes, allowed_networks, network_under
from .errors import EXIT_BROKEN_PIPE, say, silence

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any, NoReturn

    from ..sandbox import PrivateTmp

EXIT_UNAVAILABLE = 125
EXIT_USAGE = 2
BACKENDS = ("auto", "bwrap", "landlock")
MODE_HELP = (
    f"one of {', '.join(allowed_modes())} (default: the composition's, else workspace-write)"
)
NETWORK_HELP = (
    f"{' or '.join(allowed_networks())}: whether the command may use the network (default: "
    "the composition's, else off; danger-full-access is always on)"
)
NO_PROVIDER = "the composition mounts no sandbox provider (stockade.sandbox.local)"
CONFIG_HELP = (
    "a stockade.yml outside the workspace (default: $STOCKADE_CONFIG; a ./stockade.yml "
    "is never loaded implicitly)"
)
STATE_DIR_HELP = (
    "where session logs live (default: $STOCKADE_STATE_DIR, else the composition's, "
    "else $XDG_STATE_HOME/stockade/sessions)"
)
STORE_CONFIG_HELP = (
    "use this composition's log store (a JSON-lines directory or a PostgreSQL "
    "database; default: $STOCKADE_CONFIG)"
)
JSON_ERRORS = (
    "With --json, an error is one object on stdout:\n"
    '  {"error": {"code": CODE, "detail": TEXT}} (the codes: docs/cli.md)'
)


def _fail(message: str, status: int = EXIT_USAGE) -> NoReturn:
    say(sys.stderr, f"stockade: {message}\n")
    raise SystemExit(status)


def _unavailable(detail: str) -> NoReturn:
    _fail(f"{SandboxUnavailable.code}: {detail}", EXIT_UNAVAILABLE)


def version() -> str:
    """The installed distribution's version (importlib.metadata: only for --version)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("stockade")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _help(description: str, exit_codes: str, examples: str) -> dict[str, str]:
    """A verb's description and epilog: what it does, its exit codes, examples."""
    return {
        "description": description.strip(),
        "epilog": f"exit codes:\n{exit_codes.strip(chr(10))}\n\nexamples:\n"
        f"{examples.strip(chr(10))}",
    }


PROBE_HELP = _help(
    """
Report the sandbox backends of this platform: for each, whether it works here (a
functional probe) and why not, what it enforces in each mode, which one a command
gets, and the trust-base checks (installation, state directory, composition).
""",
    """
  0     a backend is usable
  125   none is (SANDBOX_UNAVAILABLE)
  2     usage or configuration error (USAGE, CONFIG)
"""
    + JSON_ERRORS,
    """
  stockade probe
  stockade probe --json --backend landlock
""",
)
EXEC_HELP = _help(
    """
Run ARGV confined, as this very process: stockade selects the backend (a usable
verdict is remembered per user), builds the confined command line and replaces
itself with it (bwrap: runs it as a child and waits). No shell is added, no event
loop runs; output, input and exit status are the command's own. Only descriptors
0-2 and those named by --pass-fd reach ARGV, and nothing ARGV starts outlives it.
danger-full-access runs ARGV unconfined.
""",
    """
  N     the command's own exit status
  125   SANDBOX_UNAVAILABLE: nothing can confine it here; it did not run
  127   ARGV cannot be executed (danger-full-access; confined, the runner says so)
  2     usage or configuration error
""",
    """
  stockade exec -- touch ./notes.txt
  stockade exec --mode read-only -- ls -la
  stockade exec --root ~/project --network on -- make test
""",
)
RUN_HELP = _help(
    """
Run a command with bash -c through the sandboxed executor. One word is the shell
text as written ('make test'); several words (after --) are quoted one by one, so
each reaches the program as one argument. Output streams through; a denied file
effect adds "[sandbox: file access denied under MODE mode]" on stderr. --json
prints the result's facts as one object instead (nothing streamed).
""",
    """
  N     the command's exit status, as a shell reports it (128+N: killed by signal N)
  124   timed out (--timeout); the command was killed
  125   SANDBOX_UNAVAILABLE: nothing can confine it here; it did not run
  126   the command could not be started
  1     the environment failed (ENVIRONMENT, INTERNAL)
  2     usage or configuration error (USAGE, CONFIG)
With --json: 0 and the facts (exit_code among them), or an error object on stdout
with the status above (the codes: docs/cli.md).
""",
    """
  stockade run 'make test'
  stockade run --mode read-only -- grep -rn TODO src
  stockade run --json --timeout 30 'pytest -q'
""",
)
DEMO_HELP = _help(
    """
A scripted agent session on the real sandbox, in a temporary project: a denied
write, an escalation approved (--interactive: by you), a background job, a mode
switch, and the session log replayed as `stockade session show` prints it.
""",
    """
  0     the session ran and its log replays
  1     the log could not be replayed
  125   SANDBOX_UNAVAILABLE: no backend can confine commands here
  2     usage or configuration error
""",
    """
  stockade demo
  stockade demo --interactive
""",
)
MCP_HELP = _help(
    """
An MCP server on stdio (or streamable HTTP): the bash, file and job tools under
the sandbox; escalations are asked through the client. Over HTTP every request
needs the bearer token whose file the server names on stderr. Needs stockade[mcp].
docs/mcp.md
""",
    """
  0     the client ended the session (stdio closed)
  2     usage error: a bad flag, or the MCP SDK is missing (pip install 'stockade[mcp]')
  125   SANDBOX_UNAVAILABLE: no backend can confine commands here
  130   stopped by Ctrl-C (SIGINT), after draining the calls in flight
  143   stopped by SIGTERM, after draining the calls in flight
""",
    """
  stockade mcp --root ~/project
  stockade mcp --http 127.0.0.1:8765 --approval never --mode read-only
  stockade mcp --http 8765 --token-file ~/.config/stockade/mcp.token
""",
)
SESSION_HELP = _help(
    """
Read and tidy the session logs: show one, list them, prune the idle ones. Logs are
found in --state-dir, else $STOCKADE_STATE_DIR, else the state directory of the
composition (--config, $STOCKADE_CONFIG), else $XDG_STATE_HOME/stockade/sessions.
""",
    """
  0     done
  1     a log or the store cannot be read, or a log cannot be removed
  2     usage or configuration error
"""
    + JSON_ERRORS,
    """
  stockade session list
  stockade session show 20261201-200703-787e9e94
  stockade session show 20261201-2007        # a unique prefix of an id
  stockade session prune --older-than 7d --dry-run
""",
)
SHOW_HELP = _help(
    """
Print a session log's events (seq, time, type, source, fields) and the effective
sandbox mode, approval policy, network, workspace root and preset, folded as the
session folds them. Read-only: no lock is taken and a torn tail is reported, not
cut.
""",
    """
  0     shown
  1     the log cannot be read: SESSION_NOT_FOUND, INVALID_SESSION_ID,
        AMBIGUOUS_SESSION_ID, NOT_A_SESSION_LOG, LOG_CORRUPT, STORE_UNAVAILABLE,
        ENVIRONMENT
  2     usage or configuration error (USAGE, CONFIG)
"""
    + JSON_ERRORS,
    """
  stockade session show 20261201-200703-787e9e94
  stockade session show 2026120           # a unique prefix (see session list)
  stockade session show ./logs/20261201-200703-787e9e94.jsonl --json
""",
)
LIST_HELP = _help(
    """
One line per session: its id, last activity (its last append), size on disk,
effective sandbox mode, approval policy and network, whether a session holds it
open now, and its workspace root. Each log is read without a lock.
""",
    """
  0     listed (none is no error)
  1     the store cannot be read (ENVIRONMENT, STORE_UNAVAILABLE)
  2     usage or configuration error (USAGE, CONFIG)
"""
    + JSON_ERRORS,
    """
  stockade session list
  stockade session list --json --state-dir /srv/agents/sessions
""",
)
PRUNE_HELP = _help(
    """
Remove the logs of sessions idle for at least DURATION (no append since), and
never one a session holds open: each log is locked before it is removed, and kept
when that fails. Says what it removed; --dry-run only says what it would remove.
DURATION: a number and a unit (s, m, h, d, w), e.g. 7d, 12h, 1d12h, 0s.
""",
    """
  0     pruned (nothing to prune is no error)
  1     a log could not be removed, or the store cannot be read
  2     usage or configuration error (USAGE: a bad DURATION; CONFIG)
"""
    + JSON_ERRORS,
    """
  stockade session prune --older-than 7d --dry-run
  stockade session prune --older-than 12h --json
""",
)


def _descriptor(word: str) -> int:
    """--pass-fd's value: a descriptor number above the standard three."""
    import argparse

    if not (word.isascii() and word.isdigit()) or int(word) < 3:
        raise argparse.ArgumentTypeError(
            f"{word!r} is not a descriptor above 2 (0, 1 and 2 are always passed)"
        )
    return int(word)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; argument definitions only, so building it imports nothing
    beyond argparse. Usage lines are generated from these definitions."""
    import argparse

    class Parser(argparse.ArgumentParser):
        """Errors as JSON on stdout when the command line asked for --json."""

        json_errors = False

        def error(self, message: str) -> NoReturn:
            if Parser.json_errors:
                from .errors import emit_error

                emit_error("USAGE", f"{message} (see {self.prog} --help)", as_json=True)
                raise SystemExit(EXIT_USAGE)
            super().error(message)

    class Formatter(argparse.RawDescriptionHelpFormatter):
        """Descriptions and epilogs as written; a metavar with spaces (exec's and run's
        command) as written too."""

        def _format_args(self, action: argparse.Action, default_metavar: str) -> str:
            if isinstance(action.metavar, str) and " " in action.metavar:
                return action.metavar
            return super()._format_args(action, default_metavar)

    class Version(argparse.Action):
        """--version, looked up only when asked for."""

        def __init__(self, option_strings: list[str], dest: str, **_: Any) -> None:
            super().__init__(
                option_strings,
                dest=argparse.SUPPRESS,
                default=argparse.SUPPRESS,
                nargs=0,
                help="print stockade's version and exit",
            )

        def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
            sys.stdout.write(f"stockade {version()}\n")
            parser.exit()

    parser = Parser(
        prog="stockade",
        formatter_class=Formatter,
        **_help(
            """
Run an AI agent's shell commands under a kernel-enforced file sandbox (bwrap or
Landlock on Linux). Each verb has its own --help.
""",
            """
  0     success (exec and run: the command's own status)
  2     usage or configuration error (USAGE, CONFIG)
  125   SANDBOX_UNAVAILABLE: nothing can confine the command; it did not run
"""
            + JSON_ERRORS,
            """
  stockade probe
  stockade exec -- touch ./notes.txt
  stockade run 'make test'
  stockade session list
""",
        ),
    )
    parser.add_argument("-V", "--version", action=Version)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")

    def verb(parent: Any, name: str, summary: str, texts: dict[str, str]) -> Any:
        return parent.add_parser(name, help=summary, formatter_class=Formatter, **texts)

    probe = verb(verbs, "probe", "report which sandbox backends work here", PROBE_HELP)
    probe.add_argument("--json", action="store_true", help="one JSON object on stdout")
    probe.add_argument("--backend", default="auto", choices=BACKENDS)
    probe.add_argument("--config", metavar="FILE", help=CONFIG_HELP)

    run_exec = verb(verbs, "exec", "run ARGV confined (no shell added)", EXEC_HELP)
    run_exec.add_argument("--mode", help=MODE_HELP)
    run_exec.add_argument("--network", help=NETWORK_HELP)
    run_exec.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    run_exec.add_argument(
        "--root", metavar="DIR", help="workspace root (default: the current directory)"
    )
    run_exec.add_argument("--backend", default="auto", choices=BACKENDS)
    run_exec.add_argument(
        "--pass-fd",
        action="append",
        type=_descriptor,
        metavar="N",
        help="keep descriptor N (3 or more) open for the command; every other one above 2 "
        "is closed. The command may use it whatever the sandbox allows (repeatable)",
    )
    run_exec.add_argument(
        "argv",
        nargs=argparse.REMAINDER,
        metavar="[--] ARGV ...",
        help="the command and its arguments (-- first when it starts with -)",
    )

    run = verb(verbs, "run", "run COMMAND with bash -c through the sandboxed executor", RUN_HELP)
    run.add_argument("--mode", help=MODE_HELP)
    run.add_argument("--network", help=NETWORK_HELP)
    run.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    run.add_argument(
        "--root", metavar="DIR", help="workspace root (default: the current directory)"
    )
    run.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="seconds before the command is killed"
    )
    run.add_argument("--backend", default="auto", choices=BACKENDS)
    run.add_argument("--json", action="store_true", help="one JSON object on stdout")
    run.add_argument(
        "--ask",
        action="store_true",
        help="on a denial, ask on the terminal to retry once under the next wider mode",
    )
    run.add_argument(
        "command",
        nargs="+",
        metavar="COMMAND [ARG ...]",
        help="one word: the shell text, run as bash -c COMMAND; several (after --): "
        "a command and its arguments, each quoted",
    )

    demo = verb(
        verbs,
        "demo",
        "a scripted agent session on the real sandbox: denial, approval, replay",
        DEMO_HELP,
    )
    demo.add_argument(
        "--interactive", action="store_true", help="answer the escalations yourself (y/N)"
    )
    demo.add_argument(
        "--config", metavar="FILE", help="run it on this composition (e.g. a postgres log)"
    )

    mcp = verb(
        verbs, "mcp", "serve the sandboxed tools to an MCP client (stdio, or --http)", MCP_HELP
    )
    mcp.add_argument(
        "--root", metavar="DIR", help="workspace root (default: the current directory)"
    )
    mcp.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    mcp.add_argument("--session-id", metavar="ID", help="resume (or create) this session")
    mcp.add_argument("--mode", help=MODE_HELP)
    mcp.add_argument("--approval", choices=("ask", "never"), help="the session's approval policy")
    mcp.add_argument("--preset", metavar="NAME", help="select this preset of the composition")
    mcp.add_argument("--network", help=NETWORK_HELP)
    mcp.add_argument(
        "--ask-timeout",
        default="300",
        metavar="SECONDS",
        help="an escalation nobody answers in time is unavailable (default: 300)",
    )
    mcp.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP instead (default host: 127.0.0.1)",
    )
    mcp.add_argument(
        "--allow-remote", action="store_true", help="allow --http on a non-loopback address"
    )
    mcp.add_argument(
        "--token-file",
        metavar="FILE",
        help="--http: accept the bearer tokens in FILE, one a line (default: make one per "
        "start, written 0600 to the state directory)",
    )
    mcp.add_argument(
        "--max-sessions",
        metavar="N",
        help="--http: how many MCP sessions may be open at once (default: 16)",
    )

    acp = verbs.add_parser(
        "acp",
        help="serve an ACP agent on stdio for an editor (stockade acp --help; docs/acp.md)",
        add_help=False,
    )
    # Its options are the agent's own parser's (stockade.acp.main), read there.
    acp.add_argument("agent_args", nargs=argparse.REMAINDER)
    session = verb(verbs, "session", "show, list and prune session logs", SESSION_HELP)
    session_verbs = session.add_subparsers(dest="session_verb", metavar="VERB", required=True)

    def store_options(sub: Any) -> None:
        sub.add_argument("--json", action="store_true", help="one JSON object on stdout")
        sub.add_argument("--state-dir", metavar="DIR", help=STATE_DIR_HELP)
        sub.add_argument("--config", metavar="FILE", help=STORE_CONFIG_HELP)

    show = verb(
        session_verbs, "show", "print a session's events and its effective policy", SHOW_HELP
    )
    show.add_argument("path_or_id", metavar="PATH_OR_ID", help="a .jsonl log file or a session id")
    store_options(show)

    listing = verb(
        session_verbs,
        "list",
        "one line per session: activity, size, mode, approval, network, cwd",
        LIST_HELP,
    )
    store_options(listing)

    prune = verb(
        session_verbs, "prune", "remove the logs of sessions idle for DURATION", PRUNE_HELP
    )
    prune.add_argument(
        "--older-than",
        metavar="DURATION",
        required=True,
        help="remove sessions with no activity for this long (7d, 12h, 30m, 0s)",
    )
    prune.add_argument("--dry-run", action="store_true", help="only say what would be removed")
    store_options(prune)
    return parser


def _probe(args: argparse.Namespace) -> int:
    from ..sandbox._select import select_backend
    from .settings import cli_settings, load_cli_composition

    settings = cli_settings(
        load_cli_composition(args.config), mode=None, root=None, backend=args.backend
    )
    if settings.provider is None:
        raise SandboxUnavailable(NO_PROVIDER)
    selection = select_backend(settings.provider, probe_all=True)
    from ..sandbox._trustcheck import trust_checks
    from ..sessionlog import resolve_state_dir
    from ..trust import host_temp_roots

    trust = trust_checks(
        root=settings.root,
        temp_roots=host_temp_roots(),
        state_dir=str(resolve_state_dir()),
        composition=next(iter(settings.provider.trusted_files), None),
        bwrap_path=settings.provider.bwrap_path,
        protected_extra=settings.provider.protected_paths,
    )
    refused = None
    if selection.backend is not None:
        # What `run` and `exec` would ask before using it, here, in workspace-write.
        from ..sandbox._guard import guard_call
        from ..trust import installation_paths

        backend = selection.backend
        refused = guard_call(
            backend.name,
            SandboxMode.WORKSPACE_WRITE,
            settings.root,
            host_temp_roots(),
            runner=backend.source or backend.runner,
            extra_protected=settings.provider.protected_paths,
            trusted_files=settings.provider.trusted_files,
            installation=installation_paths(),
            allow_unprotected_installation=settings.provider.allow_unprotected_installation,
        ).refusal
    if args.json:
        import msgspec

        from ..messages import ProviderReport

        report = ProviderReport(
            platform=selection.platform,
            chain=selection.chain,
            candidates=selection.candidates,
            selected=selection.backend.name if selection.backend else None,
            detail=None if selection.backend else selection.detail,
            trust=trust,
            refused_here=refused,
        )
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
    else:
        from ..sandbox._report import render_selection, render_trust

        sys.stdout.write(render_selection(selection, refused_here=refused) + render_trust(trust))
    return 0 if selection.backend is not None else EXIT_UNAVAILABLE


def _exec(args: argparse.Namespace) -> NoReturn:
    """The fast path: standard library only unless a stockade.yml is in play."""
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        _fail("exec needs a command after --, e.g. stockade exec -- touch ./x")
    passed = _passed_descriptors(args.pass_fd or ())
    from .settings import (
        broad_root_problem,
        cli_settings,
        load_cli_composition,
        names_a_config,
        unconfined_refusal,
    )

    backend, timeout = args.backend, 10.0
    provider = None
    if names_a_config(args.config):
        composition = load_cli_composition(args.config)
        settings = cli_settings(
            composition, mode=args.mode, root=args.root, backend=backend, network=args.network
        )
        refusal = unconfined_refusal(composition, settings)
        if refusal is not None:
            _unavailable(refusal)
        if settings.mode.confines and settings.provider is None:
            _unavailable(NO_PROVIDER)
        mode, root, provider = settings.mode, settings.root, settings.provider
        network = settings.network
        if provider is not None:
            backend, timeout = provider.backend, provider.probe_timeout
        broad = broad_root_problem(settings)
    else:
        from ..trust import broad_root_refusal

        mode = SandboxMode.parse(args.mode or SandboxMode.WORKSPACE_WRITE.value)
        root = os.path.realpath(args.root or os.getcwd())
        network = Network.parse(args.network or Network.OFF.value)
        broad = None
        if mode is SandboxMode.WORKSPACE_WRITE:
            broad = broad_root_refusal(root, explicit=bool(args.root), home=os.environ.get("HOME"))
    if broad is not None:
        _fail(broad)
    # The resolved values, kept on the namespace: `exec_network(args)` is the network
    # the confined argv is built for.
    args.mode, args.network = mode, network
    if not mode.confines:
        # danger-full-access never touches the provider.
        _execute(argv, runner_is_argv0=False)

    from ..sandbox import Call, confine, guard_rules, remembered_runner
    from ..trust import host_temp_roots, installation_paths, resolve_workspace_root

    root = resolve_workspace_root(root)
    runner = remembered_runner(
        sys.platform,
        backend,
        runner_command=provider.runner_command if provider else None,
        timeout=timeout,
        # The trust base counts the host's temp roots writable whatever this call gets.
        writable_roots=(root, *host_temp_roots()),
        bwrap_path=provider.bwrap_path if provider else None,
    )
    # One exec is one session: a private temp directory instead of /tmp, its TMPDIR,
    # removed when the command is done (read-only could not write it anyway).
    tmp: PrivateTmp | None = None
    temp_roots: tuple[str, ...] = ()
    if mode is SandboxMode.WORKSPACE_WRITE:
        import atexit

        from ..sandbox import host_temp, make_private_tmp, remove_private_tmp

        try:
            tmp = make_private_tmp()
        except OSError as error:
            _unavailable(
                f"cannot make the command's private temp directory: {error}; set TMPDIR "
                "to a directory you may write"
            )
        # Every way out but a signal's passes here (a refusal below, the runner's end);
        # `_execute` removes it itself before ending by the runner's signal.
        atexit.register(remove_private_tmp, tmp)
        temp_roots = (tmp.path, *host_temp(bool(provider and provider.allow_host_temp)))
    confined = confine(
        Call(tuple(argv), mode, root, temp_roots, network),
        runner,
        guard_rules(provider, installation_paths()),
        # This process holds the placeholders bwrap mounts over, for as long as it runs.
        hold=True,
        # The command may inherit this terminal: it must not type into it (TIOCSTI).
        new_session=True,
    )
    held = confined.held
    blockers = [p.path for p in confined.guard.protections if p.kind == "block"] if held else []
    _execute(
        list(confined.argv),
        runner_is_argv0=True,
        held=held,
        passed=passed,
        sweep=blockers,
        # bwrap returns before its PID namespace is gone: wait for it as a child.
        bwrap=runner.backend == "bwrap",
        # The launcher dies with its caller (--die-with-parent): this process waits.
        wait=runner.backend == "landlock",
        tmp=tmp,
    )


def _passed_descriptors(numbers: Sequence[int]) -> tuple[int, ...]:
    """The --pass-fd descriptors, each one this process inherited (open, inheritable)."""
    for fd in numbers:
        try:
            inherited = os.get_inheritable(fd)
        except OSError:
            _fail(f"--pass-fd {fd}: no such open descriptor")
        if not inherited:
            _fail(f"--pass-fd {fd}: not a descriptor this process was given")
    return tuple(dict.fromkeys(numbers))


def _close_on_exec(keep: Sequence[int]) -> None:
    """Every descriptor above 2 but `keep` closes when the runner is executed: a file
    or socket the caller left open (a log outside the root, a connected socket) would
    reach the command past every rule of the sandbox. Marked close-on-exec rather than
    closed, so that nothing of this process (a placeholder lock) loses its own."""
    try:
        found = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every number this process may hold
        found = list(range(3, os.sysconf("SC_OPEN_MAX")))
    for fd in found:
        if fd > 2 and fd not in keep:
            try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
                os.set_inheritable(fd, False)
            except OSError:
                pass  # not open (the listing's own descriptor)


def exec_network(args: argparse.Namespace) -> Network:
    """The network `stockade exec`'s command gets, once `_exec` resolved `args`:
    --network, else the composition's default, else off; `on` under danger-full-access
    (which runs unconfined)."""
    return network_under(SandboxMode.parse(args.mode), Network.parse(args.network))


def _execute(
    argv: list[str],
    *,
    runner_is_argv0: bool,
    held: list[int] | None = None,
    passed: Sequence[int] | None = None,
    sweep: Sequence[str] = (),
    bwrap: bool = False,
    tmp: PrivateTmp | None = None,
    wait: bool = False,
) -> NoReturn:
    """Become `argv`; with `held` (placeholder locks), run it and wait instead, then
    remove the placeholders at `sweep` unless another process still holds them. A
    `bwrap` argv is always run and waited for, until its PID namespace is gone
    (_exec_wait.run_holding): nothing the command started outlives exec. With `tmp`
    (the call's private temp directory, its TMPDIR) it is waited for too, and the
    directory removed afterwards; with `wait`, waited for all the same.

    `passed` None: every descriptor goes with it (danger-full-access: a plain exec).
    Else only 0, 1, 2 and `passed` (--pass-fd) do, which stderr says first: the
    command may use those whatever the sandbox allows."""
    if passed is not None:
        _close_on_exec(passed)
        if passed:
            numbers = " ".join(map(str, passed))
            sys.stderr.write(
                f"stockade: --pass-fd {numbers}: the command may use "
                f"{'this descriptor' if len(passed) == 1 else 'these descriptors'} "
                "whatever the sandbox allows\n"
            )
    sys.stdout.flush()
    sys.stderr.flush()
    done = None
    if tmp is not None:
        from ..sandbox import remove_private_tmp

        def done() -> None:
            remove_private_tmp(tmp)

    try:
        if held or bwrap or wait or done is not None:
            from ._exec_wait import run_holding

            # The private directory is the command's TMPDIR (the runner reads none).
            env = {**os.environ, "TMPDIR": tmp.path} if tmp is not None else None
            run_holding(argv, held or [], sweep, bwrap=bwrap, done=done, env=env)
        os.execvp(argv[0], argv)
    except OSError as error:
        if done is not None:
            done()
        if runner_is_argv0 and error.errno in (errno.ENOENT, errno.EACCES):
            _unavailable(f"cannot start the sandbox runner {argv[0]}: {error.strerror}")
        _fail(f"cannot execute {argv[0]}: {error.strerror}", 127)


# The options `exec` and `run` read on the fast path: option -> destination (True: a
# flag). tests/test_cli_verbs.py holds them to the parser's.
_SHARED_OPTIONS: dict[str, Any] = {
    "--mode": "mode",
    "--network": "network",
    "--config": "config",
    "--root": "root",
    "--backend": "backend",
}
_EXEC_OPTIONS: dict[str, Any] = {**_SHARED_OPTIONS, "--pass-fd": "pass_fd"}
_RUN_OPTIONS: dict[str, Any] = {
    **_SHARED_OPTIONS,
    "--timeout": "timeout",
    "--json": True,
    "--ask": True,
}


def fast_args(words: Sequence[str]) -> Any | None:
    """`exec`'s or `run`'s arguments when they are written the plain way (options, each
    with its value, then the command), read without argparse into what the parser
    would make of them; None for anything else (help, an error, an abbreviation, an
    option after the command, another verb), which the parser then reads."""
    if not words or words[0] not in ("exec", "run"):
        return None
    verb = words[0]
    options = _EXEC_OPTIONS if verb == "exec" else _RUN_OPTIONS
    values: dict[str, Any] = {
        "verb": verb,
        "mode": None,
        "network": None,
        "config": None,
        "root": None,
        "backend": "auto",
    }
    if verb == "run":
        values.update(timeout=None, json=False, ask=False)
    else:
        values["pass_fd"] = None
    index = 1
    while index < len(words):
        word = words[index]
        if word in ("-", "--") or not word.startswith("-"):
            break
        name, has_value, value = word.partition("=")
        dest = options.get(name)
        if dest is None:
            return None
        if dest is True:
            if has_value:
                return None
            values[name[2:]] = True
            index += 1
            continue
        if has_value:
            index += 1
        elif index + 1 < len(words):
            value = words[index + 1]
            index += 2
        else:
            return None
        if not value or value.startswith("-"):
            return None
        if dest == "backend" and value not in BACKENDS:
            return None
        if dest == "timeout":
            try:
                values[dest] = float(value)
            except ValueError:
                return None
            continue
        if dest == "pass_fd":
            if not (value.isascii() and value.isdigit()) or int(value) < 3:
                return None
            values[dest] = [*(values[dest] or ()), int(value)]
            continue
        values[dest] = value
    rest = list(words[index:])
    if verb == "exec":
        values["argv"] = rest  # argparse.REMAINDER: a leading "--" is kept, _exec drops it
    else:
        if rest[:1] == ["--"]:
            rest = rest[1:]
        elif any(word.startswith("-") for word in rest):
            return None
        if not rest:
            return None
        values["command"] = rest
    from types import SimpleNamespace

    return SimpleNamespace(**values)


def _wants_json(words: Sequence[str]) -> bool:
    """--json among the options (not among the words of a command after --)."""
    end = words.index("--") if "--" in words else len(words)
    return "--json" in words[:end]


def _session(args: argparse.Namespace) -> int:
    from ..acp.events import ACP_EVENTS
    from ..harness._harness import harness_registry
    from ..sessionlog._select import show_store

    # Logs hold tool and approval events too, and an ACP session's conversation:
    # decode with every type the shipped faces write.
    registry = harness_registry(*ACP_EVENTS)
    store = show_store(args, registry)
    try:
        match args.session_verb:
            case "show":
                from .session_show import run_show

                return run_show(args, registry=registry, store=store)
            case "list":
                from ..sessionlog.catalog import run_list

                return run_list(args, registry=registry, store=store)
            case _:
                from ..sessionlog.catalog import run_prune

                return run_prune(args, registry=registry, store=store)
    finally:
        if store is not None:
            store.close()


def main(argv: Sequence[str] | None = None) -> int:
    """The `stockade` command; a reader of its output that went away (EPIPE) ends it
    quietly, with the status it had, or 141 (128 + SIGPIPE) as a shell would say."""
    try:
        status = _main(argv)
    except SystemExit as leaving:
        if leaving.code is None or isinstance(leaving.code, int):
            status = leaving.code or 0
        else:
            say(sys.stderr, f"{leaving.code}\n")
            status = 1
    except BrokenPipeError:
        status = EXIT_BROKEN_PIPE
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            silence(stream)
    return status


def _main(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if words[:1] == ["acp"]:
        # The ACP agent keeps one parser of its own (`stockade-acp-agent` is the same).
        from ..acp.main import main as acp_main

        return acp_main(words[1:], prog="stockade acp")
    args = fast_args(words)
    parser = None
    if args is None:
        parser = build_parser()
        type(parser).json_errors = _wants_json(words)
        args = parser.parse_args(words)
    as_json = bool(getattr(args, "json", False))
    try:
        match args.verb:
            case "probe":
                return _probe(args)
            case "exec":
                _exec(args)
            case "session":
                return _session(args)
            case "demo":
                from .demo import run_demo

                return run_demo(interactive=args.interactive, config=args.config)
            case "run":
                from .run import run_command

                return run_command(args)
            case "mcp":
                from ..mcp.command import run_mcp

                return run_mcp(args)
            case _:
                assert parser is not None  # the fast path always names a verb
                parser.print_help()
                return EXIT_USAGE
    except StockadeError as error:
        if isinstance(error, SandboxUnavailable):
            code, detail, status = error.code, error.detail, EXIT_UNAVAILABLE
        elif isinstance(error, ConfigError | InvalidPolicy):
            code = "CONFIG" if isinstance(error, ConfigError) else "USAGE"
            detail, status = str(error), EXIT_USAGE
        else:
            code, detail, status = "ENVIRONMENT", str(error), 1
        if as_json:
            from .errors import emit_error

            emit_error(code, detail, as_json=True)
            return status
        if isinstance(error, SandboxUnavailable):
            _unavailable(detail)
        _fail(detail, status)


if __name__ == "__main__":
    raise SystemExit(main())

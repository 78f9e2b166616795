"""The `stockade` command: `probe` and `exec` (later verbs join here).

`exec` is the fast path: it imports only the pure modules and the synchronous
selector, then replaces itself with the confined argv (no trio, no event loop).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence

from ._modes import Network, SandboxMode, allowed_modes, allowed_networks, network_under
from .errors import SandboxUnavailable, StockadeError

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_UNAVAILABLE = 125
EXIT_USAGE = 2
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


def _fail(message: str, status: int = EXIT_USAGE) -> NoReturn:
    print(f"stockade: {message}", file=sys.stderr)
    raise SystemExit(status)


def _unavailable(detail: str) -> NoReturn:
    _fail(f"{SandboxUnavailable.code}: {detail}", EXIT_UNAVAILABLE)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; argument definitions only, so building it imports nothing."""
    parser = argparse.ArgumentParser(
        prog="stockade",
        description="Run commands under a kernel-enforced file sandbox.",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")

    probe = verbs.add_parser("probe", help="report which sandbox backends work here")
    probe.add_argument("--json", action="store_true", help="one JSON object on stdout")
    probe.add_argument("--backend", default="auto", choices=("auto", "bwrap", "landlock"))
    probe.add_argument("--config", metavar="FILE", help=CONFIG_HELP)

    run_exec = verbs.add_parser(
        "exec",
        help="run ARGV confined (no shell added)",
        usage="stockade exec [--mode MODE] [--network off|on] [--root DIR] [--backend B] "
        "-- ARGV...",
    )
    run_exec.add_argument("--mode", help=MODE_HELP)
    run_exec.add_argument("--network", help=NETWORK_HELP)
    run_exec.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    run_exec.add_argument("--root", help="workspace root (default: the current directory)")
    run_exec.add_argument("--backend", default="auto", choices=("auto", "bwrap", "landlock"))
    run_exec.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the command")

    run = verbs.add_parser("run", help="run COMMAND with bash -c through the sandboxed executor")
    run.add_argument("--mode", help=MODE_HELP)
    run.add_argument("--network", help=NETWORK_HELP)
    run.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    run.add_argument("--root", help="workspace root (default: the current directory)")
    run.add_argument("--timeout", type=float, help="seconds before the command is killed")
    run.add_argument("--backend", default="auto", choices=("auto", "bwrap", "landlock"))
    run.add_argument("--json", action="store_true", help="one JSON object on stdout")
    run.add_argument(
        "--ask",
        action="store_true",
        help="on a denial, ask on the terminal to retry once under the next wider mode",
    )
    run.add_argument("command", help="the shell command, run as bash -c COMMAND")

    demo = verbs.add_parser(
        "demo", help="a scripted agent session on the real sandbox: denial, approval, replay"
    )
    demo.add_argument(
        "--interactive", action="store_true", help="answer the escalations yourself (y/N)"
    )
    demo.add_argument(
        "--config", metavar="FILE", help="run it on this composition (e.g. a postgres log)"
    )

    mcp = verbs.add_parser(
        "mcp",
        help="serve the sandboxed tools to an MCP client (stdio, or --http)",
        description="An MCP server on stdio (or streamable HTTP): the bash, file and job "
        "tools under the sandbox; escalations are asked through the client. Needs "
        "stockade[mcp]. docs/mcp.md",
    )
    mcp.add_argument("--root", help="workspace root (default: the current directory)")
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
        "--http", metavar="HOST:PORT", help="serve streamable HTTP instead (default host: 127.0.0.1)"
    )
    mcp.add_argument(
        "--allow-remote", action="store_true", help="allow --http on a non-loopback address"
    )

    session = verbs.add_parser("session", help="inspect session logs")
    session_verbs = session.add_subparsers(dest="session_verb", metavar="VERB", required=True)
    show = session_verbs.add_parser(
        "show",
        help="print a session's events and its effective policy",
        description="Print a session log's events (seq, time, type, fields) and the "
        "effective sandbox mode, approval policy, network, workspace root and preset.",
    )
    show.add_argument("path_or_id", metavar="PATH_OR_ID", help="a .jsonl log file or a session id")
    show.add_argument("--json", action="store_true", help="one JSON object on stdout")
    show.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where session logs live (default: $STOCKADE_STATE_DIR, else "
        "$XDG_STATE_HOME/stockade/sessions)",
    )
    show.add_argument(
        "--config",
        metavar="FILE",
        help="read the session from this composition's log store (a JSON-lines "
        "directory or a PostgreSQL database; default: $STOCKADE_CONFIG)",
    )
    return parser


def _probe(args: argparse.Namespace) -> int:
    from ._cli_config import cli_settings, load_cli_composition
    from .sandbox._select import select_backend

    settings = cli_settings(
        load_cli_composition(args.config), mode=None, root=None, backend=args.backend
    )
    if settings.provider is None:
        _unavailable(NO_PROVIDER)
    selection = select_backend(settings.provider, probe_all=True)
    from .sandbox._probe import host_temp_roots
    from .sandbox._trustcheck import trust_checks
    from .sessionlog import resolve_state_dir

    trust = trust_checks(
        root=settings.root,
        temp_roots=host_temp_roots(),
        state_dir=str(resolve_state_dir()),
        composition=next(iter(settings.provider.trusted_files), None),
        bwrap_path=settings.provider.bwrap_path,
        protected_extra=settings.provider.protected_paths,
    )
    if args.json:
        import msgspec

        from .messages import ProviderReport

        report = ProviderReport(
            platform=selection.platform,
            chain=selection.chain,
            candidates=selection.candidates,
            selected=selection.backend.name if selection.backend else None,
            detail=None if selection.backend else selection.detail,
            trust=trust,
        )
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
    else:
        from .sandbox._report import render_selection, render_trust

        sys.stdout.write(render_selection(selection) + render_trust(trust))
    return 0 if selection.backend is not None else EXIT_UNAVAILABLE


def _exec(args: argparse.Namespace) -> NoReturn:
    """The fast path: standard library only unless a stockade.yml is in play."""
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        _fail("exec needs a command after --, e.g. stockade exec -- touch ./x")
    from ._cli_config import cli_settings, load_cli_composition, names_a_config, unconfined_refusal

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
    else:
        mode = SandboxMode.parse(args.mode or SandboxMode.WORKSPACE_WRITE.value)
        root = os.path.realpath(args.root or os.getcwd())
        network = Network.parse(args.network or Network.OFF.value)
    # The resolved values, kept on the namespace: `exec_network(args)` is the network
    # the confined argv is built for.
    args.mode, args.network = mode, network
    if not mode.confines:
        # danger-full-access never touches the provider.
        _execute(argv, runner_is_argv0=False)

    from .sandbox._argv import confined_argv
    from .sandbox._guard import guard_call
    from .sandbox._probe import choose, filter_launcher, host_temp_roots, resolve_workspace_root
    from .trust import installation_paths

    root = resolve_workspace_root(root)
    temp_roots = host_temp_roots()
    chosen = choose(
        sys.platform,
        backend,
        runner_command=provider.runner_command if provider else None,
        timeout=timeout,
        remember=True,
        writable_roots=(root, *temp_roots),
        bwrap_path=provider.bwrap_path if provider else None,
    )
    selected = chosen.selected
    if selected is None or selected.runner is None:
        _unavailable(chosen.detail)
    guard = guard_call(
        selected.backend,
        mode,
        root,
        temp_roots,
        runner=selected.runner,
        extra_protected=provider.protected_paths if provider else (),
        trusted_files=provider.trusted_files if provider else (),
        installation=installation_paths(),
        allow_unprotected_installation=bool(provider and provider.allow_unprotected_installation),
    )
    if guard.refusal is not None:
        _unavailable(guard.refusal)
    # The command may inherit this terminal: it must not type into it (TIOCSTI).
    confined = confined_argv(
        selected.backend,
        selected.runner,
        mode,
        root,
        temp_roots,
        argv,
        new_session=True,
        protections=guard.protections,
        # bwrap's filter stage; the Landlock launcher's IPC namespace where it can make one.
        launcher=filter_launcher(),
        private_ipc=selected.ipc == "private",
    )
    _execute(list(confined), runner_is_argv0=True)


def exec_network(args: argparse.Namespace) -> Network:
    """The network `stockade exec`'s command gets, once `_exec` resolved `args`:
    --network, else the composition's default, else off; `on` under danger-full-access
    (which runs unconfined)."""
    return network_under(SandboxMode.parse(args.mode), Network.parse(args.network))


def _execute(argv: list[str], *, runner_is_argv0: bool) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        if runner_is_argv0 and error.errno in (errno.ENOENT, errno.EACCES):
            _unavailable(f"cannot start the sandbox runner {argv[0]}: {error.strerror}")
        _fail(f"cannot execute {argv[0]}: {error.strerror}", 127)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        match args.verb:
            case "probe":
                return _probe(args)
            case "exec":
                _exec(args)
            case "session":
                from .harness import harness_registry
                from .sessionlog._select import show_store
                from .sessionlog.show import run_show

                # Logs hold tool and approval events too: decode with the full registry.
                registry = harness_registry()
                store = show_store(args, registry)
                try:
                    return run_show(args, registry=registry, store=store)
                finally:
                    if store is not None:
                        store.close()
            case "demo":
                from .demo import run_demo

                return run_demo(interactive=args.interactive, config=args.config)
            case "run":
                from ._run import run_command

                return run_command(args)
            case "mcp":
                from .mcp.command import run_mcp

                return run_mcp(args)
            case _:
                parser.print_help()
                return EXIT_USAGE
    except SandboxUnavailable as error:
        _unavailable(error.detail)
    except StockadeError as error:
        _fail(str(error))


if __name__ == "__main__":
    raise SystemExit(main())

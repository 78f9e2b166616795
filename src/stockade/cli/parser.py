"""The command line's grammar: every verb's arguments, and its help (what it does, its
exit codes, examples). Imported only when the fast path (`fastpath.fast_args`) leaves
the words to argparse: help, an error, an unusual spelling, a verb it does not read.
"""

from __future__ import annotations

import argparse
import sys

from ..modes import allowed_modes, allowed_networks
from .errors import EXIT_USAGE
from .fastpath import BACKENDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

MODE_HELP = (
    f"one of {', '.join(allowed_modes())} (default: the composition's, else workspace-write)"
)
NETWORK_HELP = (
    f"{' or '.join(allowed_networks())}: whether the command may use the network (default: "
    "the composition's, else off; danger-full-access is always on)"
)
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


def version() -> str:
    """The installed distribution's version (importlib.metadata: only for --version)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("stockade")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _help(description: str, exit_codes: str, examples: str) -> dict[str, Any]:
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
  2     usage error: a bad flag, or the MCP SDK is missing (the error names the install line)
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
CACHE_HELP = _help(
    """
Confined commands keep their tools' caches (pip, uv, npm, yarn, pnpm, go, cargo,
maven, gradle, ccache, sccache, and $XDG_CACHE_HOME) in a directory of stockade's own,
per user ($XDG_CACHE_HOME/stockade/tools, or the composition's tool_caches
directory), which the host's own tools never read: what a confined command leaves
there reaches only other confined commands. The sessions of a user share it.
""",
    """
  0     done
  1     the cache directory cannot be read or emptied
  2     usage or configuration error
"""
    + JSON_ERRORS,
    """
  stockade cache show
  stockade cache prune npm cargo
""",
)
CACHE_SHOW_HELP = _help(
    "\nPrint the tool caches' directory and the size of each tool's cache in it.\n",
    "\n  0     done\n  2     usage or configuration error\n" + JSON_ERRORS,
    "\n  stockade cache show --json\n",
)
CACHE_PRUNE_HELP = _help(
    "\nEmpty the named tools' caches (every tool's by default); links a command left\n"
    "there are removed as links, never followed.\n",
    "\n  0     done\n  1     a cache cannot be emptied\n  2     usage or configuration error\n"
    + JSON_ERRORS,
    "\n  stockade cache prune pip\n  stockade cache prune --dry-run\n",
)
RULES_HELP = _help(
    """
The command rules in force (docs/rules.md): the composition's rules file, then its
own rules, then the defaults less those it drops. `rules check` judges a command as
`run` and `exec` judge it before it runs; `stockade probe` lists the rules.
""",
    """
  0     done (check: the rules allow the command, or no rule decides)
  121   check: a rule asks a person before the command runs (prompt)
  122   check: a rule forbids the command
  2     usage or configuration error (USAGE, CONFIG: a wrong rule, a rules file
        a confined command could have written)
"""
    + JSON_ERRORS,
    """
  stockade rules check -- 'git push --force origin main'
  stockade rules check --json -- rm -rf /
""",
)
RULES_CHECK_HELP = _help(
    """
Judge a command against the rules in force and print the decision, the rule that
decided it and each simple command as parsed (what it runs once unwrapped, where it
sits), and every doubt; nothing runs. One word is a script, judged as `bash -c WORD`
(as `stockade run 'WORD'` runs it); several words are a command and its arguments,
each one word (as `stockade exec -- CMD ARG...` runs them).
""",
    """
  0     the rules allow the command, or no rule decides (the mode's own rules apply)
  121   a rule asks a person before it runs (prompt), or the script cannot be
        judged exactly while a forbid or prompt rule is in force
  122   a rule forbids it
  2     usage or configuration error (USAGE, CONFIG)
"""
    + JSON_ERRORS,
    """
  stockade rules check -- 'curl -fsSL https://example.com/i.sh | sh'
  stockade rules check --config ~/.config/stockade/stockade.yml -- git push -f
  stockade rules check --json -- 'true; git push origin +main'
""",
)
SESSION_HELP = _help(
    """
Read and tidy the session logs: show one, list them, prune the idle ones, and undo
what a session's calls changed in its workspace. Logs are
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
  stockade session undo 20261201-200703-787e9e94 --call 7
""",
)
UNDO_HELP = _help(
    """
Put back what a session's calls changed in its workspace (docs/undo.md). Alone, list
the calls that changed files: each call's seq, tool, what it did, how many files it
created, modified and deleted, and whether it was undone. --call N undoes call N:
each file it changed gets its state from before it. --to SEQ restores the workspace
to before seq SEQ: every change after it is reverted. Refused, touching nothing,
when a later change (a later call, an edit made since) would be overwritten; the
error names the calls. The undo is logged in the session; a session another process
holds open (an agent still running it) is refused.
""",
    """
  0     listed, or undone / restored
  1     refused: UNDO_REFUSED (a later change would be overwritten), SESSION_LOCKED,
        SESSION_NOT_FOUND, INVALID_SESSION_ID, STORE_UNAVAILABLE, ENVIRONMENT
  125   SANDBOX_UNAVAILABLE: the composition's sandbox cannot start here
  2     usage or configuration error (USAGE, CONFIG)
"""
    + JSON_ERRORS,
    """
  stockade session undo 20261201-200703-787e9e94
  stockade session undo 20261201-200703-787e9e94 --call 7
  stockade session undo 20261201-200703-787e9e94 --to 12 --json
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
    if not (word.isascii() and word.isdigit()) or int(word) < 3:
        raise argparse.ArgumentTypeError(
            f"{word!r} is not a descriptor above 2 (0, 1 and 2 are always passed)"
        )
    return int(word)


def _seq(word: str) -> int:
    """--call's and --to's value: a seq of the session's log (1 or more)."""
    if not (word.isascii() and word.isdigit()) or int(word) < 1:
        raise argparse.ArgumentTypeError(f"{word!r} is not a seq (a whole number, 1 or more)")
    return int(word)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; argument definitions only, so building it imports nothing
    beyond argparse. Usage lines are generated from these definitions."""

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
        "--writable",
        action="append",
        metavar="DIR",
        help="a directory the command may also write in workspace-write, beside the root "
        "(repeatable; trust-checked: never /, a home directory itself, stockade's own "
        "files or a deny_read path)",
    )
    run_exec.add_argument(
        "--allow",
        action="append",
        metavar="HOST[:PORT]",
        help="a destination the command may reach through stockade's proxy (repeatable; "
        "implies --network allowlist; docs/network.md)",
    )
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
    run.add_argument(
        "--allow",
        action="append",
        metavar="HOST[:PORT]",
        help="a destination the command may reach through stockade's proxy (repeatable; "
        "implies --network allowlist; docs/network.md)",
    )
    run.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    run.add_argument(
        "--root", metavar="DIR", help="workspace root (default: the current directory)"
    )
    run.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="seconds before the command is killed"
    )
    run.add_argument(
        "--limit",
        action="append",
        metavar="NAME=VALUE",
        help="a limit for this command over the composition's (repeatable): processes, "
        "memory, cpu_seconds, wall_seconds, output_bytes, file_size, open_files; sizes "
        "take K/M/G, times s/m/h, null is unlimited (docs/limits.md)",
    )
    run.add_argument("--backend", default="auto", choices=BACKENDS)
    run.add_argument(
        "--writable",
        action="append",
        metavar="DIR",
        help="a directory the command may also write in workspace-write, beside the root "
        "(repeatable; trust-checked: never /, a home directory itself, stockade's own "
        "files or a deny_read path)",
    )
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
    session = verb(
        verbs, "session", "show, list and prune session logs; undo a session's calls", SESSION_HELP
    )
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

    undo = verb(
        session_verbs,
        "undo",
        "list a session's undoable calls, undo one (--call N) or restore (--to SEQ)",
        UNDO_HELP,
    )
    undo.add_argument("session_id", metavar="ID", help="the session's id")
    which = undo.add_mutually_exclusive_group()
    which.add_argument(
        "--call", type=_seq, metavar="N", help="undo call N (its seq, as the listing shows)"
    )
    which.add_argument(
        "--to", type=_seq, metavar="SEQ", help="restore the workspace to before seq SEQ"
    )
    store_options(undo)

    rules = verb(verbs, "rules", "judge a command against the command rules", RULES_HELP)
    rules_verbs = rules.add_subparsers(dest="rules_verb", metavar="VERB", required=True)
    check = verb(
        rules_verbs,
        "check",
        "the rules' decision on a command, and each simple command as parsed",
        RULES_CHECK_HELP,
    )
    check.add_argument("--json", action="store_true", help="the verdict as one JSON object")
    check.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    check.add_argument(
        "--root",
        metavar="DIR",
        help="workspace root a rules file must lie outside (default: the current directory)",
    )
    check.add_argument(
        "command",
        nargs="+",
        metavar="[--] CMD ...",
        help="one word: a script, judged as bash -c CMD; several: a command and its "
        "arguments, each one word",
    )

    cache = verb(verbs, "cache", "show or empty the sandbox's private tool caches", CACHE_HELP)
    cache_verbs = cache.add_subparsers(dest="cache_verb", metavar="VERB", required=True)
    cache_show = verb(
        cache_verbs, "show", "where the tool caches are, and each one's size", CACHE_SHOW_HELP
    )
    cache_show.add_argument("--json", action="store_true", help="one JSON object on stdout")
    cache_show.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    cache_prune = verb(cache_verbs, "prune", "empty the tool caches", CACHE_PRUNE_HELP)
    cache_prune.add_argument(
        "tools",
        nargs="*",
        metavar="TOOL",
        help="only these tools' caches (pip, npm, cargo, go, ...; default: every one)",
    )
    cache_prune.add_argument("--dry-run", action="store_true", help="only say what would go")
    cache_prune.add_argument("--json", action="store_true", help="one JSON object on stdout")
    cache_prune.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    return parser


def wants_json(words: Sequence[str]) -> bool:
    """--json among the options (not among the words of a command after --)."""
    end = words.index("--") if "--" in words else len(words)
    return "--json" in words[:end]

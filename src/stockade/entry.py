"""The `stockade` program: `main()` reads the words and runs one verb, handing `mcp`
and `acp` to those faces. It stands above the faces (cli/, mcp/ and acp/ import none of
each other), so it is the one module that launches each of them.

Light on purpose: `exec`'s (and `run`'s) words, when well formed, are read without
argparse (`fastpath.fast_args`), whose import and parser cost more than the rest of
`exec`; anything else (help, an error, an unusual spelling) goes to the parser
(`parser.py`), so every usage and error text is its own. Each verb imports what it
needs when it runs.
"""

from __future__ import annotations

import sys
from functools import partial

from .cli import (
    EXIT_BROKEN_PIPE,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    emit_error,
    ends_as_exec,
    fast_args,
    run_exec,
    say,
    silence,
)
from .errors import ConfigError, InvalidPolicy, SandboxUnavailable, StockadeError

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence


def _session(args: argparse.Namespace) -> Callable[[], int]:
    """`session`'s verb, its modules loaded, not run yet."""
    if args.session_verb == "undo":
        # It opens a harness on the composition and resumes the session: the store is
        # the harness's own.
        from .cli import run_undo

        return partial(run_undo, args)
    from .cli import session_store
    from .faces import FACE_EVENTS
    from .harness import harness_registry

    chosen: Callable[..., int]
    match args.session_verb:
        case "show":
            from .cli import run_show

            chosen = run_show
        case "list":
            from .cli import run_list

            chosen = run_list
        case _:
            from .cli import run_prune

            chosen = run_prune

    def run() -> int:
        # Logs hold tool and approval events too, and an ACP session's conversation:
        # decode with every type the shipped faces write.
        registry = harness_registry(*FACE_EVENTS)
        store = session_store(args, registry)
        try:
            return chosen(args, registry=registry, store=store)
        finally:
            if store is not None:
                store.close()

    return run


def main(argv: Sequence[str] | None = None) -> int:
    """The `stockade` command; a reader of its output that went away (EPIPE) ends it
    quietly, with the status it had, or 141 (128 + SIGPIPE) as a shell would say; a
    Ctrl-C that reached no verb's own handling exits 130."""
    try:
        status = _main(argv)
    except SystemExit as leaving:
        if leaving.code is None or isinstance(leaving.code, int):
            status = leaving.code or 0
        else:
            # A message given to exit may quote a path or a word: escaped (stockade.shown).
            from .shown import escaped_lines

            say(sys.stderr, f"{escaped_lines(str(leaving.code))}\n")
            status = 1
    except BrokenPipeError:
        status = EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        # A Ctrl-C no verb was listening for (while it imports, say): the shell's
        # status for it, and no traceback.
        status = 130
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            silence(stream)
    return status


def console() -> int:
    """The `stockade` console script and `python -m stockade`: `main`, then the heap
    frozen (`gc.freeze`), so that the interpreter's exit does not trace every object
    the command loaded once more before it ends: some 30 ms of a `stockade run`
    (docs/performance.md). What the exit owes still happens (atexit
    hooks, weakref finalizers such as a temporary directory's, flushing, every
    refcounted free); only cycles nothing reaches stay uncollected as the process ends.
    Not `main`'s own doing: a test or an embedder calling `main` keeps its collector.

    A `stockade exec` that waited for its command (`ends_as_exec`) owes none of that
    (its own clean-up is done, stdout and stderr flushed by `main`): it ends at once,
    as the exec it stands in for would have, without the interpreter's teardown.

    The collector is held off while the verb's modules load, too: loading trio, attrs,
    msgspec and stockade's own makes objects by the hundred thousand, and the collector
    traced them all some 60 times over (~4% of a `stockade run`, docs/performance.md).
    What loaded is then frozen and the collector resumes (`_loaded`), before the verb's
    work, so a long `run`, `mcp` or `acp` collects as ever, over what it makes itself.
    `exec` never resumes it: it ends in an exec or `os._exit`, making little on the way."""
    import gc

    gc.disable()
    _HOLDING_COLLECTOR.append(True)
    _OWN_PROCESS.append(True)
    status = main()
    if ends_as_exec():
        import os

        os._exit(status & 0xFF)
    gc.freeze()
    return status


# Set by `console` while the collector waits for the verb's modules (`_loaded`).
_HOLDING_COLLECTOR: list[bool] = []
# Set by `console`: this process is stockade's own, not a caller of `main`'s.
_OWN_PROCESS: list[bool] = []


def _adopt_orphans(*, server: bool = False) -> None:
    """In stockade's own process (not a caller of `main`'s), started by its PID
    namespace's init: made the reaper of what its calls leave (bwrap's namespace inits,
    a command's leftovers), which that init, an agent as a container's pid 1, may never
    reap (`executor.adopt_orphans`). The verbs that end with their command (`run`,
    `demo`, `probe`, a session's undo) are: what they could not reap goes on to that
    init as they end, as it went before. A `server` (`mcp`, `acp`) is only where the
    init does not reap a test orphan (`executor.init_reaps`): under one that does
    (tini, `docker run --init`), an unconfined command's process that left its group
    and ended on its own would be the server's, unreaped, for its whole life. Not for
    `exec`, which does it once it knows it confines (an unconfined exec becomes its
    command, which must not inherit it)."""
    import os

    if _OWN_PROCESS and os.getppid() == 1:
        from .executor import adopt_orphans

        adopt_orphans(unless_init_reaps=server)


def _loaded() -> None:
    """The verb's modules are in: freeze them and resume the collector, if `console`
    held it (a caller of `main` keeps its own collector as it was)."""
    if _HOLDING_COLLECTOR:
        _HOLDING_COLLECTOR.clear()
        import gc

        gc.freeze()
        gc.enable()


def _main(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    as_json = False
    try:
        if words[:1] == ["acp"]:
            # The ACP agent keeps one parser of its own (`stockade-acp-agent` is the same).
            from .acp import main as agent

            # Adopts once its words are read and it serves (not for --help or --show).
            verb: Callable[[], int] = partial(
                agent.main,
                words[1:],
                prog="stockade acp",
                serving=partial(_adopt_orphans, server=True),
            )
        else:
            args = fast_args(words)
            parser = None
            if args is None:
                from .cli import build_parser, wants_json

                parser = build_parser()
                # build_parser's own Parser class has it; its annotation says ArgumentParser.
                type(parser).json_errors = wants_json(words)  # type: ignore[attr-defined]
                args = parser.parse_args(words)
            as_json = bool(getattr(args, "json", False))
            if args.verb == "exec":
                # Never resumes the collector: it ends in an exec or os._exit.
                run_exec(args)
            _adopt_orphans(server=args.verb == "mcp")
            verb = _verb(args, parser)
        _loaded()
        return verb()
    except StockadeError as error:
        if isinstance(error, SandboxUnavailable):
            code, detail, status = error.code, error.detail, EXIT_UNAVAILABLE
        elif isinstance(error, ConfigError | InvalidPolicy):
            code = "CONFIG" if isinstance(error, ConfigError) else "USAGE"
            detail, status = str(error), EXIT_USAGE
        else:
            code, detail, status = "ENVIRONMENT", str(error), 1
        # One object on stdout with --json, else `stockade: [CODE: ]DETAIL` on stderr.
        emit_error(code, detail, as_json=as_json)
        return status


def _verb(args: argparse.Namespace, parser: argparse.ArgumentParser | None) -> Callable[[], int]:
    """The verb `args` names, its modules loaded, not run yet: `_main` resumes the
    collector between the two, once for every verb."""
    match args.verb:
        case "probe":
            from .cli import run_probe

            return partial(run_probe, args)
        case "session":
            return _session(args)
        case "cache":
            from .cli import run_cache

            return partial(run_cache, args)
        case "rules":
            from .cli import run_rules_check

            return partial(run_rules_check, args)
        case "demo":
            from .cli import run_demo

            return partial(run_demo, interactive=args.interactive, config=args.config)
        case "run":
            from .cli import run_command

            return partial(run_command, args)
        case "mcp":
            from .mcp import run_mcp

            return partial(run_mcp, args)
        case _:
            assert parser is not None  # the fast path always names a verb

            def usage() -> int:
                parser.print_help()
                return EXIT_USAGE

            return usage


if __name__ == "__main__":
    raise SystemExit(main())

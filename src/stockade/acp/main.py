"""`stockade-acp-agent`: the ACP agent over stdio (also `python -m examples.acp_agent`).

Standard library and stockade's own core at import; the ACP SDK (the `acp` extra)
is imported only once the command runs, so a missing extra is one clear line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any, Final

SDK_MISSING: Final = "the ACP SDK is not installed"
COMPOSITIONS: Final = ("editor", "automation")
# The console script's name; `stockade acp` runs the same agent under its own name.
PROG: Final = "stockade-acp-agent"
KEY_VARIABLES: Final = ("STOCKADE_ACP_API_KEY", "OPENAI_API_KEY")
# The keyless model: each prompt is run as one bash command (the editor demo).
SHELL_MODEL: Final = "shell"
DEFAULT_CHAT_MODEL: Final = "gpt-4o-mini"
NO_MODEL: Final = (
    "no model is configured: set OPENAI_API_KEY (or STOCKADE_ACP_API_KEY) for a "
    "chat-completions model (--model NAME, --base-url URL), or start the agent with "
    f"--model {SHELL_MODEL} to run each prompt as one bash command"
)


def sdk_hint() -> str:
    """The missing-SDK line: the install line that works for this installation."""
    from ..install_hint import extra_hint

    return f"{SDK_MISSING}; {extra_hint('acp')}"


def parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="An ACP agent over stdio whose shell commands run under stockade's "
        "sandbox; escalations are asked in the editor (session/request_permission).",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--composition",
        choices=COMPOSITIONS,
        default="editor",
        help="editor (default): presets advertised as ACP session modes; automation: no "
        "presets, no modes, the mode is --mode",
    )
    where.add_argument("--config", metavar="FILE", help="a stockade.yml to use instead")
    p.add_argument(
        "--mode",
        choices=("read-only", "workspace-write", "danger-full-access"),
        help="the deployment's default sandbox mode (required with --composition automation)",
    )
    p.add_argument(
        "--allow-always",
        action="store_true",
        help="also offer allow_always on an escalation: it switches the session's mode "
        "(a knob event), never a stored grant; needs presets (not with automation)",
    )
    p.add_argument(
        "--permission-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="an escalation nobody answers in this time is unavailable (0: wait; default 300)",
    )
    p.add_argument(
        "--allow-root",
        action="append",
        default=[],
        metavar="DIR",
        help="accept DIR as a session cwd even though it is / or your home directory "
        "(refused by default: a widened session could write everything there)",
    )
    p.add_argument(
        "--script",
        metavar="FILE",
        help="use the scripted model with this JSON script (a list of turns) instead of a "
        "chat-completions model",
    )
    p.add_argument(
        "--model",
        default=os.environ.get("STOCKADE_ACP_MODEL") or None,
        help=f"'{SHELL_MODEL}': run each prompt as one bash command (no model, no key); "
        "else a chat-completions model name, which needs an API key "
        f"(${KEY_VARIABLES[0]} or ${KEY_VARIABLES[1]}; $STOCKADE_ACP_MODEL; with a key "
        f"and no name: {DEFAULT_CHAT_MODEL})",
    )
    p.add_argument(
        "--base-url",
        default=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        help="an OpenAI-compatible API base URL ($OPENAI_BASE_URL)",
    )
    p.add_argument(
        "--show",
        metavar="SESSION",
        help="print a session log this agent wrote (path or id) and exit",
    )
    p.add_argument("--json", action="store_true", help="with --show: one JSON object per event")
    p.add_argument("--state-dir", help="with --show: where session logs live")
    return p


def load(args: argparse.Namespace) -> Any:
    """The composition the arguments name, with --mode applied."""
    import attrs

    from ..config import load_composition, loads_composition
    from ..errors import ConfigError
    from ..vocab import SandboxMode

    if args.config is not None:
        composition = load_composition(args.config)
    else:
        name = args.composition
        text = resources.files(__package__).joinpath(f"{name}.yml").read_text(encoding="utf-8")
        composition = loads_composition(text, filename=f"<stockade.acp {name} composition>")
        if name == "automation" and args.mode is None:
            raise ConfigError(
                "the automation composition needs --mode: it mounts no presets, so its "
                "sandbox mode is the deployment's explicit choice"
            )
    if args.allow_always and composition.presets is None:
        raise ConfigError(
            "--allow-always switches a session through its presets, and this composition "
            "mounts none (the automation path has no runtime switch)"
        )
    if args.mode is not None:
        executor = composition.executor
        if executor is None or not hasattr(executor.config, "mode"):
            raise ConfigError("--mode needs a confining executor (stockade.bash.sandbox)")
        mode = SandboxMode.parse(args.mode)
        entry = attrs.evolve(executor, config=attrs.evolve(executor.config, mode=mode))
        entries = tuple(entry if e is executor else e for e in composition.entries)
        composition = attrs.evolve(composition, entries=entries)
    return composition


def choose_model(args: argparse.Namespace, environ: Any = os.environ) -> Any:
    """--script: scripted; `--model shell`: each prompt runs as a command; else an API
    key: chat completions; else none, which says in one line what to configure.

    A chat model named without a key is an error (ValueError): the person asked for a
    model that cannot be reached, and silently running prompts as commands instead
    would surprise them."""
    from .model import ChatCompletionsModel, ScriptedModel, UnconfiguredModel

    if args.script is not None:
        with open(args.script, encoding="utf-8") as handle:
            return ScriptedModel.from_json(json.load(handle))
    if args.model == SHELL_MODEL:
        return ScriptedModel(
            description="shell (each prompt runs as one bash command)", voice="shell"
        )
    key = next((environ[name] for name in KEY_VARIABLES if environ.get(name)), None)
    if key is not None:
        name = args.model or DEFAULT_CHAT_MODEL
        return ChatCompletionsModel(api_key=key, model=name, base_url=args.base_url)
    if args.model is not None:
        raise ValueError(
            f"--model {args.model} needs an API key: set {KEY_VARIABLES[1]} (or "
            f"{KEY_VARIABLES[0]}), or pass --model {SHELL_MODEL} to run each prompt as one "
            "bash command"
        )
    return UnconfiguredModel(text=NO_MODEL)


def _show(args: argparse.Namespace) -> int:
    """`stockade session show`, knowing this agent's events and folding the effective
    values over the agent's own composition (with --mode)."""
    from ..faces import Unshowable, show_session
    from ..harness import assemble, harness_registry
    from ..shown import escaped_lines, json_escaped
    from .events import ACP_EVENTS

    _actors, harness = assemble(load(args), extra_events=ACP_EVENTS)
    try:
        show_session(
            args.show,
            sys.stdout,
            as_json=args.json,
            state_dir=args.state_dir,
            registry=harness_registry(*ACP_EVENTS),
            defaults=harness.defaults,
            presets=harness.presets,
        )
    except Unshowable as error:
        # As `stockade session show` tells it: one JSON object with --json, else a line.
        if args.json:
            reply = {"error": {"code": error.code, "detail": error.detail}}
            print(json_escaped(json.dumps(reply, ensure_ascii=False)))
        else:
            print(f"stockade: {escaped_lines(error.detail)}", file=sys.stderr)
        return 1
    return 0


def _failed(prog: str, error: BaseException) -> int:
    """One line for an error that stopped the agent: 2 for the composition's (as
    before serving), 1 for anything else (the operating system's refusal)."""
    from ..errors import ConfigError, InvalidPolicy

    print(f"{prog}: {error}", file=sys.stderr)
    return 2 if isinstance(error, ConfigError | InvalidPolicy) else 1


def main(
    argv: Sequence[str] | None = None,
    *,
    prog: str = PROG,
    serving: Callable[[], None] | None = None,
) -> int:
    """The agent over stdio; `prog` names it in its messages (`stockade acp`). A
    Ctrl-C at any moment, even while it imports, exits 130 without a traceback.
    `serving` is called once the words are read and the agent is about to serve (not
    for `--help` or `--show`): what stockade's own process does then (`console`)."""
    try:
        return _main(argv, prog, serving)
    except KeyboardInterrupt:
        return 130


def console() -> int:
    """The `stockade-acp-agent` script: `main` in stockade's own process, which becomes
    the reaper of what its calls leave (bwrap's namespace inits) where its parent is a
    pid 1 that does not reap them, as `stockade acp` does (`executor.init_reaps`).
    Not `main`'s own doing: an embedder calling it keeps its process as it was."""
    return main(serving=adopt_orphans_as_server)


def adopt_orphans_as_server() -> None:
    """Where this process's parent is its PID namespace's init and that init does not
    reap a test orphan (an agent as a container's pid 1): this process reaps its calls'
    orphans instead (`executor.adopt_orphans`). Under a reaping init (tini, `docker run
    --init`) nothing changes: an unconfined command's escapees stay that init's."""
    if os.getppid() == 1:
        from ..executor import adopt_orphans

        adopt_orphans(unless_init_reaps=True)


def _main(argv: Sequence[str] | None, prog: str, serving: Callable[[], None] | None) -> int:
    args = parser(prog).parse_args(argv)
    if args.show is not None:
        from ..errors import StockadeError

        try:
            return _show(args)
        except StockadeError as error:
            print(f"{prog}: {error}", file=sys.stderr)
            return 2
    try:
        import acp  # noqa: F401
    except ImportError:
        print(f"{prog}: {sdk_hint()}", file=sys.stderr)
        return 2
    import trio

    from ..errors import StockadeError
    from .agent import serve

    try:
        composition = load(args)
        model = choose_model(args)
    except (StockadeError, OSError, ValueError) as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    print(
        f"{prog}: serving ACP on stdio; model: {model.description}",
        file=sys.stderr,
    )
    if model.description == "none configured":
        print(f"{prog}: {NO_MODEL}", file=sys.stderr)
    if serving is not None:
        serving()
    try:
        stopped_by = trio.run(
            lambda: serve(
                composition,
                model,
                allow_always=args.allow_always,
                permission_timeout=args.permission_timeout or None,
                broad_roots=tuple(args.allow_root),
            )
        )
    except KeyboardInterrupt:
        return 130
    except BaseExceptionGroup as group:
        # A Ctrl-C before the signal handler listened, or one error raised inside a
        # nursery (the harness's, trio-asyncio's loop): told as itself, in one line.
        if group.subgroup(KeyboardInterrupt) is not None:
            return 130
        errors = group.exceptions
        while len(errors) == 1 and isinstance(errors[0], BaseExceptionGroup):
            errors = errors[0].exceptions
        if len(errors) == 1 and isinstance(errors[0], StockadeError | OSError):
            return _failed(prog, errors[0])
        raise
    except (StockadeError, OSError) as error:
        return _failed(prog, error)
    # Stopped by a signal, it exits as a shell reports one (130 for Ctrl-C).
    return 0 if stopped_by is None else 128 + stopped_by


if __name__ == "__main__":
    raise SystemExit(main())

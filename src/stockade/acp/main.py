"""`stockade-acp-agent`: the ACP agent over stdio (also `python -m examples.acp_agent`).

Standard library and stockade's own core at import; the ACP SDK (the `acp` extra)
is imported only once the command runs, so a missing extra is one clear line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from importlib import resources
from typing import Any, Final

MISSING_SDK: Final = (
    "stockade-acp-agent: the ACP SDK is not installed; install the extra: "
    "pip install 'stockade[acp]'"
)
COMPOSITIONS: Final = ("editor", "automation")
KEY_VARIABLES: Final = ("STOCKADE_ACP_API_KEY", "OPENAI_API_KEY")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stockade-acp-agent",
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
        default=os.environ.get("STOCKADE_ACP_MODEL", "gpt-4o-mini"),
        help="chat-completions model name ($STOCKADE_ACP_MODEL; default gpt-4o-mini)",
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
    """--script: scripted; else an API key: chat completions; else the keyless demo."""
    from .model import ChatCompletionsModel, ScriptedModel

    if args.script is not None:
        with open(args.script, encoding="utf-8") as handle:
            return ScriptedModel.from_json(json.load(handle))
    for variable in KEY_VARIABLES:
        key = environ.get(variable)
        if key:
            return ChatCompletionsModel(api_key=key, model=args.model, base_url=args.base_url)
    return ScriptedModel(description="scripted (no API key: each prompt runs as a command)")


def _show(args: argparse.Namespace) -> int:
    """`stockade session show`, knowing this agent's events and folding the effective
    values over the agent's own composition (with --mode)."""
    from ..harness import assemble, harness_registry
    from ..sessionlog.show import run_show
    from .events import ACP_EVENTS

    _actors, harness = assemble(load(args), extra_events=ACP_EVENTS)
    shown = argparse.Namespace(path_or_id=args.show, json=args.json, state_dir=args.state_dir)
    return run_show(
        shown,
        registry=harness_registry(*ACP_EVENTS),
        defaults=harness.defaults,
        presets=harness.presets,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.show is not None:
        from ..errors import StockadeError

        try:
            return _show(args)
        except StockadeError as error:
            print(f"stockade-acp-agent: {error}", file=sys.stderr)
            return 2
    try:
        import acp  # noqa: F401
    except ImportError:
        print(MISSING_SDK, file=sys.stderr)
        return 2
    import trio

    from ..errors import StockadeError
    from .agent import serve

    try:
        composition = load(args)
        model = choose_model(args)
    except (StockadeError, OSError, ValueError) as error:
        print(f"stockade-acp-agent: {error}", file=sys.stderr)
        return 2
    print(
        f"stockade-acp-agent: serving ACP on stdio; model: {model.description}",
        file=sys.stderr,
    )
    try:
        trio.run(
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
    except StockadeError as error:
        print(f"stockade-acp-agent: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

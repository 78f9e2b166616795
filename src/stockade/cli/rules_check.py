"""`stockade rules check [--config F] [--json] -- CMD...`: the command rules' verdict on a
command, as `run` and `exec` would judge it, without running anything.

One word is a script (`bash -c WORD`, as `stockade run 'WORD'` runs it); several are an
argv (as `stockade exec -- CMD ARG...` and `stockade run -- CMD ARG...` run them: each
word one argument). The exit status says the decision (docs/cli.md).
"""

from __future__ import annotations

import sys

from ..faces import load_face_composition
from ..shown import escaped_lines, json_escaped
from .errors import EXIT_ASK_FIRST, EXIT_FORBIDDEN, EXIT_USAGE, say
from .settings import cli_settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..rules import Judgement


def run_rules_check(args: argparse.Namespace) -> int:
    """Print the verdict on `args.command`; 0 allow or no rule, EXIT_ASK_FIRST prompt,
    EXIT_FORBIDDEN forbid. A composition or rules file that cannot be used raises
    ConfigError (one line, exit 2, from the entry)."""
    words = list(args.command)
    if words[:1] == ["--"]:
        words = words[1:]
    if not words:
        from .errors import emit_error

        emit_error(
            "USAGE",
            "rules check needs a command after --, e.g. stockade rules check -- 'git push -f'",
            as_json=args.json,
        )
        return EXIT_USAGE
    settings = cli_settings(
        load_face_composition(args.config), mode=None, root=args.root, backend="auto"
    )
    rules = settings.rules
    judgement = rules.judge(words[0]) if len(words) == 1 else rules.judge_argv(words)
    _print(judgement, as_json=args.json)
    return exit_status(judgement)


def exit_status(judgement: Judgement) -> int:
    """0 when the rules let the command run (allow, or no rule decides)."""
    if judgement.forbidden:
        return EXIT_FORBIDDEN
    return EXIT_ASK_FIRST if judgement.must_ask else 0


def _print(judgement: Judgement, *, as_json: bool) -> None:
    # A verdict quotes the command's words: escaped (stockade.shown), as JSON escapes too.
    if as_json:
        import msgspec

        say(sys.stdout, json_escaped(msgspec.json.encode(judgement).decode()) + "\n")
        return
    from ..rules import render_judgement

    say(sys.stdout, escaped_lines(render_judgement(judgement)) + "\n")

"""Command rules and verdicts as text: the forbidden prefixes for the model's policy message,
the rules in force for `probe`, and one verdict for `stockade rules check`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._judge import Judgement
from ._rule import Rule
from ._words import Decision


def render_forbidden(rules: Iterable[Rule]) -> str:
    """The forbidden commands and their reasons, one line each, for the model (empty when
    there are none); the prompting ones follow, so the model knows a person is asked."""
    rules = tuple(rules)
    forbidden = [r for r in rules if r.decision is Decision.FORBID]
    prompting = [r for r in rules if r.decision is Decision.PROMPT]
    lines: list[str] = []
    if forbidden:
        lines.append("Commands that are refused (nothing runs):")
        lines += [f"- `{r.shown()}` ({r.name}): {r.reason}" for r in forbidden]
    if prompting:
        lines.append("Commands that wait for the person's approval:")
        lines += [f"- `{r.shown()}` ({r.name}): {r.reason}" for r in prompting]
    return "\n".join(lines)


def deciding_rule(judgement: Judgement) -> tuple[str, str]:
    """(the rule's name, its reason) that decided `judgement`; ("uncertain", the doubts)
    when doubt made it prompt."""
    if judgement.rule is not None:
        return judgement.rule.name, judgement.rule.reason
    reasons = dict.fromkeys(u.reason for u in judgement.uncertain)
    return "uncertain", "the command cannot be judged exactly: " + "; ".join(reasons)


def render_refusal(judgement: Judgement) -> str:
    """Why a command that is forbidden, or must be asked about, did not run, as one phrase
    for a person (the caller says what happens next)."""
    rule, reason = deciding_rule(judgement)
    if judgement.forbidden:
        return f"the command rule {rule!r} forbids this command: {reason}"
    if judgement.rule is None:
        return f"a person is asked before this command runs: {reason}"
    return f"the command rule {rule!r} asks a person before this command runs ({reason})"


def render_rules(rules: Iterable[Rule]) -> list[str]:
    """One line per rule in force: decision, name, words (for `probe`)."""
    return [f"{r.decision.value:<6} {r.name}: {r.shown()}" for r in rules]


def render_judgement(judgement: Judgement) -> str:
    """A verdict for a person: the decision and its rule, each simple command as parsed,
    and every doubt."""
    decision = judgement.decision.value if judgement.decision is not None else "none"
    head = f"decision: {decision}"
    if judgement.rule is not None:
        head += f" (rule {judgement.rule.name}: {judgement.rule.reason})"
    elif judgement.decision is Decision.PROMPT:
        head += " (the script cannot be judged exactly)"
    elif judgement.decision is None:
        head += " (no rule decides: the mode's own rules apply)"
    lines = [head, "commands:"]
    for command in judgement.commands:
        where = f" [{command.origin}]" if command.origin else ""
        runs = f" -> runs {' '.join(command.runs)}" if command.runs != command.words else ""
        verdict = command.decision.value if command.decision is not None else "none"
        rule = f" by {command.rule}" if command.rule else ""
        carrier = " (carries a script, judged below)" if command.carrier else ""
        lines.append(f"  {' '.join(command.words)}{runs}{where}: {verdict}{rule}{carrier}")
    if judgement.uncertain:
        lines.append("uncertain:")
        for doubt in judgement.uncertain:
            where = f" [{doubt.origin}]" if doubt.origin else ""
            text = f": {doubt.text}" if doubt.text else ""
            lines.append(f"  {doubt.reason}{where}{text}")
    if judgement.not_allowable:
        lines.append("never allowed (it changes what the commands do):")
        for held in judgement.not_allowable:
            where = f" [{held.origin}]" if held.origin else ""
            lines.append(f"  {held.reason}{where}: {held.text}")
    return "\n".join(lines)

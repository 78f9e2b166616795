"""A set of command rules, checked when made (each rule's examples must behave as
declared), and the entry points that judge a script or an argv against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..errors import ConfigError
from ..reprs import fields_repr
from ._judge import Judgement, judge
from ._parse import BashParser
from ._rule import Rule
from ._words import Decision, Match, Word


@attrs.frozen
class RuleSet:
    """Rules in force, in order (a tie between equally strict rules goes to the first).

    Judging parses with tree-sitter, imported on the first judgement; a set made and never
    used costs no import."""

    __repr__ = fields_repr

    rules: tuple[Rule, ...] = ()
    _parser: BashParser = attrs.field(factory=BashParser, eq=False, repr=False, alias="parser")

    def __attrs_post_init__(self) -> None:
        names = [rule.name for rule in self.rules]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ConfigError(f"command rules: the name {twice[0]!r} is used twice")

    @classmethod
    def from_config(
        cls,
        entries: Sequence[Mapping[str, Any]],
        *,
        defaults: bool = True,
        drop: Iterable[str] = (),
    ) -> RuleSet:
        """The default rules (unless `defaults` is False), less those named in `drop`, then
        `entries` (mappings as in a rules file); each rule's examples checked."""
        from ._config import rule_from_mapping
        from ._defaults import DEFAULT_RULES

        dropped = tuple(drop)
        known = {rule.name for rule in DEFAULT_RULES}
        unknown = [name for name in dropped if name not in known]
        if unknown:
            raise ConfigError(
                f"command rules: cannot drop {unknown[0]!r}: no default rule has that name "
                f"(the defaults: {', '.join(sorted(known))})"
            )
        base = [r for r in DEFAULT_RULES if r.name not in dropped] if defaults else []
        own = [rule_from_mapping(entry, index) for index, entry in enumerate(entries)]
        ruleset = cls((*base, *own))
        ruleset.check_examples(own)
        return ruleset

    @classmethod
    def defaults(cls) -> RuleSet:
        from ._defaults import DEFAULT_RULES

        return cls(DEFAULT_RULES)

    def without(self, *names: str) -> RuleSet:
        return RuleSet(tuple(r for r in self.rules if r.name not in names), parser=self._parser)

    def plus(self, *rules: Rule) -> RuleSet:
        """These rules and `rules` after them (a session's "allow for this session" rule)."""
        return RuleSet((*self.rules, *rules), parser=self._parser)

    def prepare(self) -> None:
        """Make the parser now (tree-sitter imported), rather than at the first judgement."""
        self._parser.prepare()

    def judge(self, script: str) -> Judgement:
        """The verdict on a bash script (what `bash -c SCRIPT` would run)."""
        return judge(self.rules, self._parser, script=script)

    def judge_argv(self, argv: Sequence[str]) -> Judgement:
        """The verdict on an argv: a shell's `-c` script is parsed; any other argv is one
        command whose words are exactly its items."""
        return judge(self.rules, self._parser, words=tuple(Word.exact(arg) for arg in argv))

    def check_examples(self, rules: Iterable[Rule] | None = None) -> None:
        """Refuse (ConfigError, naming the rule and the example) a rule whose `match`
        example it does not certainly match, or whose `not_match` example it may match."""
        for rule in self.rules if rules is None else rules:
            alone = (rule,)
            for example in rule.match:
                judgement = judge(alone, self._parser, script=example)
                if not any(rule.name in c.matched for c in judgement.commands):
                    raise ConfigError(
                        f"command rule {rule.name!r}: its match example {example!r} does not "
                        f"match{_why(judgement, rule)}"
                    )
            for example in rule.not_match:
                judgement = judge(alone, self._parser, script=example)
                if any(rule.name in c.matched for c in judgement.commands) or any(
                    u.rule == rule.name for u in judgement.uncertain
                ):
                    raise ConfigError(
                        f"command rule {rule.name!r}: its not_match example {example!r} matches"
                    )

    def forbidden(self) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if r.decision is Decision.FORBID)

    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rules)


def _why(judgement: Judgement, rule: Rule) -> str:
    maybe = next((u for u in judgement.uncertain if u.rule == rule.name), None)
    if maybe is not None:
        return f" (only perhaps: {maybe.reason})"
    doubt = next(iter(judgement.uncertain), None)
    return f" ({doubt.reason})" if doubt is not None else ""


def matches(rule: Rule, words: Sequence[str]) -> bool:
    """Whether `rule` certainly matches the argv `words` as written (no unwrapping)."""
    return rule.judge(tuple(Word.exact(w) for w in words), ()) is Match.YES

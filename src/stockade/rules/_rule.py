"""One command rule: a prefix of words, conditions on the words after it, the commands that
may feed it, and the decision; and how it matches one view of a simple command.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..reprs import fields_repr
from ._words import Decision, Match, Word, WordPattern


def _and(answers: Sequence[Match]) -> Match:
    if Match.NO in answers:
        return Match.NO
    return Match.MAYBE if Match.MAYBE in answers else Match.YES


@attrs.frozen
class Rule:
    """`prefix` matches the command's first words in order; each pattern of `args` must
    match some word after the prefix (anywhere: `git push origin -f`); `piped_from`,
    when given, asks that a command named by one of its patterns feed this one's
    standard input (an earlier stage of its pipeline, or a `<(...)` argument)."""

    __repr__ = fields_repr

    name: str
    prefix: tuple[WordPattern, ...]
    decision: Decision
    reason: str
    args: tuple[WordPattern, ...] = ()
    piped_from: tuple[WordPattern, ...] = ()
    match: tuple[str, ...] = ()  # example scripts that must meet the rule
    not_match: tuple[str, ...] = ()  # example scripts that must not

    def judge(self, words: Sequence[Word], fed_by: Sequence[Word]) -> Match:
        """Whether the rule applies to a command with these words, fed by these commands."""
        answers: list[Match] = []
        allowing = self.decision is Decision.ALLOW
        for position, pattern in enumerate(self.prefix):
            if position >= len(words):
                return Match.NO
            word = words[position]
            if word.splat:
                # It may become any words: the rest of the prefix and the conditions too.
                answers.append(Match.MAYBE)
                return _and(answers) if Match.NO in answers else Match.MAYBE
            answers.append(pattern.match(word, allowing=allowing))
            if answers[-1] is Match.NO:
                return Match.NO
        rest = words[len(self.prefix) :]
        met: list[frozenset[int]] = []
        for pattern in self.args:
            found = [pattern.match(word, allowing=allowing) for word in rest]
            answers.append(_or(found))
            if answers[-1] is Match.NO:
                return Match.NO
            met.append(frozenset(i for i, answer in enumerate(found) if answer is not Match.NO))
        if len(self.args) > 1 and _one_word_for_two(self.args, met, rest):
            return Match.NO
        if self.piped_from:
            answers.append(
                Match.NO if not fed_by else _or([_any(p, fed_by) for p in self.piped_from])
            )
        return _and(answers)

    def shown(self) -> str:
        """The rule's words as a person reads them: `git push [-f, --force*, +*]`."""
        words = [pattern.shown() for pattern in self.prefix]
        words += [f"... {pattern.shown()}" for pattern in self.args]
        fed = " | ".join(pattern.shown() for pattern in self.piped_from)
        return (f"{fed} | " if fed else "") + " ".join(words)


def _one_word_for_two(
    patterns: Sequence[WordPattern], met: Sequence[frozenset[int]], words: Sequence[Word]
) -> bool:
    """Whether an option-only condition and a condition no option meets are each met
    only by the same one word, which stays one word (quoted: `for f in *; do rm -f "$f"`
    is not `rm -r /`): it cannot be both an option and not one."""
    for a, pattern in enumerate(patterns):
        if len(met[a]) != 1 or not pattern.options_only:
            continue
        (index,) = met[a]
        word = words[index]
        if word.splat or word.glob:
            continue  # may become several words
        for b, other in enumerate(patterns):
            if b != a and met[b] == met[a] and other.never_an_option:
                return True
    return False


def _or(answers: Sequence[Match]) -> Match:
    if Match.YES in answers:
        return Match.YES
    return Match.MAYBE if Match.MAYBE in answers else Match.NO


def _any(pattern: WordPattern, words: Sequence[Word], *, allowing: bool = False) -> Match:
    return _or([pattern.match(word, allowing=allowing) for word in words])

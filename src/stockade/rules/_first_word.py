"""Whether any rule could touch an argv, told from its first word with the standard library
alone: `stockade exec` asks this before it pays for loading the rules and the judge.

Exact, never a guess: when `may_apply` says False, `RuleSet.judge_argv` would find no rule
that matches, no rule that may match and no doubt (tests/rules/test_first_word.py holds the
tables here to the judge's own).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ._rule import Rule

# The interpreters whose `-c` script (or heredoc) is bash, near enough to judge it as bash.
SHELLS = frozenset({"sh", "bash", "dash", "ksh", "mksh", "zsh", "ash", "busybox-sh"})
# Shells whose language is not bash: what they are given cannot be judged.
OTHER_SHELLS = frozenset({"fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh"})
# The wrappers whose inner command is judged (`_unwrap.WRAPPERS` is keyed by these), with
# the multi-call binaries that run their first word as an applet (`busybox rm`).
WRAPPER_NAMES = frozenset(
    {
        *("env", "nice", "timeout", "nohup", "coproc", "time", "command", "builtin", "exec"),
        *("stdbuf", "ionice", "setsid", "xargs", "sudo", "doas", "chroot"),
        *("busybox", "toybox"),
    }
)
# Every command the judge looks inside, whatever the rules: a wrapper, a shell or
# `eval`/`trap`/`find -exec` whose script or command is judged in turn, git (its global
# options), and what is itself a doubt or an assignment (`source`, an alias definition,
# `read`). The judge finds them in any case and through lookalike letters too (a name
# whose `skeleton` is one of these), which `may_apply` lets through: it lower-cases an
# ASCII word (an ASCII word's skeleton is its lower case) and lets every other through.
LOOKED_INTO = frozenset(
    {
        *SHELLS,
        *OTHER_SHELLS,
        *WRAPPER_NAMES,
        *("eval", "trap", "find", "source", ".", "alias"),
    }
)
# The default rules' first words, lower-case (`_defaults.DEFAULT_RULES`): what exec with no
# composition checks without making a rule.
DEFAULT_FIRST_WORDS = frozenset({"git", "rm", "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})


def first_words(rules: Iterable[Rule]) -> frozenset[str] | None:
    """The words (lower-case) the rules' commands begin with; None when a rule begins with
    a pattern (a glob, an option, `~`, a non-ASCII word), which any word may meet."""
    found: set[str] = set()
    for rule in rules:
        for alternative in rule.prefix[0].alternatives:
            literal = alternative.literal
            if (
                literal is None
                or alternative.short_flag is not None
                or alternative.home
                or not literal.isascii()
            ):
                return None
            found.add(literal.lower())
    return frozenset(found)


def may_apply(first: str, words: frozenset[str] | None) -> bool:
    """Whether a rule beginning with one of `words` (None: any word) could apply to a
    command whose first word is `first`: as written, by its base name (`/usr/bin/git`),
    another case or a lookalike letter (`GIT`, a Cyrillic i), or through what the judge looks
    inside (`env git push`, `bash -c '...'`)."""
    if words is None or not first.isascii():
        return True
    base = first.rpartition("/")[2].lower()
    whole = first.lower()
    return bool({whole, base} & (words | LOOKED_INTO))


# What a script may hold for `plain_words` to read it as one command's words: letters,
# digits, spaces and the punctuation that means nothing to bash in a word. Out: quotes,
# `\`, `$`, backquotes, operators (`;&|<>()`), newlines, globs and brackets (`*?[]{}`),
# `~`, `=` (an assignment), `#` (a comment), `!` (history, negation), `^` (a pipe to sh).
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t-_./:,+@%")
# Bash's reserved words: a script beginning with one is not a simple command.
_RESERVED = frozenset(
    {
        *("if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while"),
        *("until", "do", "done", "in", "function", "time", "coproc"),
    }
)


def plain_words(script: str) -> list[str] | None:
    """`script` as the argv of its one simple command when bash could read it no other
    way (nothing expands, nothing redirects, no second command, no reserved word first),
    else None. `stockade run` then judges those words with `may_apply`, as exec does."""
    if not script or not all(char in _PLAIN for char in script):
        return None
    words = script.split()
    if not words or words[0] in _RESERVED:
        return None
    return words

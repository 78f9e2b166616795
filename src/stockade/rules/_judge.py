"""The decision over a script: every simple command (and every script it carries) matched
against the rules, the strictest decision kept, and every doubt turned away from allow.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import attrs
import msgspec

from ._first_word import first_words, past_a_link
from ._parse import BashParser, Doubt, SimpleCommand, brief, may_set, sets_variable
from ._rule import Rule
from ._unwrap import Unwrapped, View, unwrap
from ._words import Decision, Match, Word

# How deep `bash -c 'eval "bash -c ..."'` is followed before the script is uncertain.
MAX_DEPTH: Final = 8


class RuleRef(msgspec.Struct, frozen=True):
    """The rule that decided: its name, decision and reason (what the model and person see)."""

    name: str
    decision: Decision
    reason: str


class Uncertainty(msgspec.Struct, frozen=True):
    """Something the judge could not decide exactly, and why; never allowed."""

    reason: str
    text: str = ""  # the part of the script it is about
    origin: str = ""  # where that part sits ("in $(...)", "bash -c")
    rule: str | None = None  # the rule that may apply, when one may


class JudgedCommand(msgspec.Struct, frozen=True):
    """One simple command as parsed: its words (an unknown word as written), what it runs
    once unwrapped (`env A=1 git push` runs `git push`), where it sits, and its decision."""

    words: tuple[str, ...]
    runs: tuple[str, ...]
    origin: str
    text: str
    decision: Decision | None = None
    rule: str | None = None
    matched: tuple[str, ...] = ()  # every rule that certainly matched
    carrier: bool = False  # it only runs the scripts it carries, judged on their own


class Judgement(msgspec.Struct, frozen=True):
    """A script's verdict. `decision`: FORBID when a forbid rule certainly matches a command;
    else PROMPT when a prompt rule does, or a forbid or prompt rule may (`uncertain` says
    why); else ALLOW when an allow rule certainly matches every command and nothing is
    uncertain; else None (no rule decides: the plain mode rules apply)."""

    decision: Decision | None
    rule: RuleRef | None
    commands: tuple[JudgedCommand, ...]
    uncertain: tuple[Uncertainty, ...] = ()
    # What keeps an allow rule from allowing the script though nothing is uncertain: a
    # variable assignment, `export`/`unset`, `env NAME=...`, output written to a file.
    not_allowable: tuple[Uncertainty, ...] = ()

    @property
    def forbidden(self) -> bool:
        return self.decision is Decision.FORBID

    @property
    def must_ask(self) -> bool:
        return self.decision is Decision.PROMPT

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOW


def _ref(rule: Rule) -> RuleRef:
    return RuleRef(rule.name, rule.decision, rule.reason)


class _Work(msgspec.Struct):
    script: str | None = None
    words: tuple[Word, ...] = ()
    origin: str = ""
    depth: int = 0
    moved: bool = False  # a script around it may set HOME, PWD or OLDPWD


# The variables a home word reads (`HOME=/`, `export HOME`, `read HOME`, `env HOME=/`,
# `exec {HOME}>f`).
_SETS_HOME: Final = sets_variable("HOME", "OLDPWD", "PWD")
# A file every bash started after it sources before its own script, as `source` does.
_SETS_BASH_ENV: Final = sets_variable("BASH_ENV")
SOURCES_BASH_ENV: Final = "BASH_ENV makes bash source a file first: its commands are not judged"
# What else, set anywhere in a script or an argv, changes what a later command runs unseen
# (exec's pre-check lets no argv naming one pass: `_first_word.JUDGED_NAMES`).
# Each with what must be in the same text for it to matter (None: nothing), so that
# reading the names (`grep PS4 ~/.bashrc`) stays certain: bash expands PS4 only when
# tracing, and an alias only with expand_aliases; it imports only `BASH_FUNC_name%%`.
_SETS_UNSEEN: Final = (
    (
        sets_variable("BASH_CMDS"),
        None,
        "BASH_CMDS makes a command name run another program",
    ),
    (
        sets_variable("BASH_ALIASES"),
        re.compile("expand_aliases"),
        "BASH_ALIASES makes a command name run other words",
    ),
    (
        re.compile(r"BASH_FUNC_\S*%%"),
        None,
        "BASH_FUNC_ exports a function a later bash runs in place of a command",
    ),
    (
        sets_variable("PS4"),
        re.compile(r"xtrace|SHELLOPTS|(?<![\w-])-[A-Za-z]*x"),
        "PS4 is expanded before each traced command, running what it holds",
    ),
)
# What an interactive shell runs by itself, when a script or argv sets it: any command
# PROMPT_COMMAND holds, the file ENV names, a prompt that may expand to a substitution
# (a literal prompt, `PS1='inner$ '`, runs nothing).
_SETS_PROMPT_CODE: Final = sets_variable("PROMPT_COMMAND", "ENV")
_SETS_PROMPT: Final = sets_variable("PS0", "PS1", "PS2")
_MAY_EXPAND: Final = re.compile(r"\$[({\w]|`")
# Only for a rule that may name git (the pre-check does not look into git for others).
# GIT_CONFIG_NOSYSTEM only takes configuration away.
_SETS_GIT_CONFIG: Final = sets_variable(r"GIT_CONFIG(?!_NOSYSTEM\b)\w*")
GIT_CONFIG_FROM_ENVIRONMENT: Final = (
    "GIT_CONFIG_* gives git configuration (an alias, a push refspec) not judged"
)


def _may_move_home(text: str) -> bool:
    return may_set(_SETS_HOME, text)


def _sets_bash_env(work: _Work) -> bool:
    """Whether a script (its name spelt as bash may read it), or an argv's words as they
    are, may set BASH_ENV (exec's pre-check lets no argv naming BASH_ENV pass)."""
    if work.script is not None:
        return may_set(_SETS_BASH_ENV, work.script)
    return _SETS_BASH_ENV.search(_argv_text(work.words)) is not None


def _sets(pattern: re.Pattern[str], work: _Work) -> bool:
    if work.script is not None:
        return may_set(pattern, work.script)
    return pattern.search(_argv_text(work.words)) is not None


def _argv_text(words: Sequence[Word]) -> str:
    return " ".join(w.value if w.value is not None else w.text for w in words)


def _moved(command: SimpleCommand) -> SimpleCommand:
    """The command with each home word's directory taken as anywhere."""
    if not any(word.home for word in (*command.words, *command.fed_by)):
        return command
    words = tuple(attrs.evolve(w, moved=True) if w.home else w for w in command.words)
    return attrs.evolve(command, words=words)


def judge(
    rules: Sequence[Rule],
    parser: BashParser,
    *,
    script: str | None = None,
    words: Sequence[Word] = (),
) -> Judgement:
    """Judge a bash script, or one command given as words (an argv)."""
    strict = any(rule.decision is not Decision.ALLOW for rule in rules)
    starts = first_words(rules)
    names_git = starts is None or any(word.rpartition("/")[2] == "git" for word in starts)
    shown = script if script is not None else " ".join(word.text for word in words)
    queue = [_Work(script, tuple(words), moved=_may_move_home(shown))]
    commands: list[JudgedCommand] = []
    doubts: list[Uncertainty] = []
    held: list[Uncertainty] = []
    forbid: RuleRef | None = None
    prompt: RuleRef | None = None
    maybe_strict = False
    every_allowed = True
    while queue:
        work = queue.pop(0)
        if work.script is None and not work.words:
            continue
        if work.depth > MAX_DEPTH:
            doubts.append(Uncertainty(f"scripts nested deeper than {MAX_DEPTH}", "", work.origin))
            continue
        literals: list[Doubt] = []
        moved = work.moved or (work.script is not None and _may_move_home(work.script))
        text = work.script if work.script is not None else _argv_text(work.words)
        if _sets_bash_env(work):
            doubts.append(Uncertainty(SOURCES_BASH_ENV, brief(text), work.origin))
        for pattern, also, reason in _SETS_UNSEEN:
            if _sets(pattern, work) and (also is None or _sets(also, work)):
                doubts.append(Uncertainty(reason, brief(text), work.origin))
        if names_git and _sets(_SETS_GIT_CONFIG, work):
            doubts.append(Uncertainty(GIT_CONFIG_FROM_ENVIRONMENT, brief(text), work.origin))
        if work.script is not None:
            parsed = parser.parse(work.script, work.origin)
            found: Sequence[SimpleCommand] = parsed.commands
            literals = [d for d in parsed.doubts if d.literal is not None]
            doubts += [_doubt(d) for d in parsed.doubts if d.literal is None]
            held += [_doubt(d) for d in parsed.unallowable]
        else:
            found = (SimpleCommand(work.words, " ".join(w.text for w in work.words), work.origin),)
        if moved:
            found = [_moved(command) for command in found]
        carried_here: set[str] = set()
        for command in found:
            unwrapped = unwrap(command.words, command.stdin)
            carried_here.update(c.script for c in unwrapped.carried if c.script is not None)
            prompts = (
                unwrapped.prompt_doubts
                if unwrapped.prompt_doubts
                and (
                    _sets(_SETS_PROMPT_CODE, work)
                    or (_sets(_SETS_PROMPT, work) and _MAY_EXPAND.search(text) is not None)
                )
                else ()
            )
            for reason in (
                *unwrapped.doubts,
                *(unwrapped.git_doubts if names_git else ()),
                *prompts,
            ):
                doubts.append(Uncertainty(reason, brief(command.text), command.origin))
            for reason in unwrapped.unallowable:
                held.append(Uncertainty(reason, brief(command.text), command.origin))
            for carried in unwrapped.carried:
                if carried.script is None:
                    reason = f"{carried.origin} of a script not known until run time"
                    doubts.append(Uncertainty(reason, brief(command.text), command.origin))
                else:
                    origin = _join(carried.origin, command.origin)
                    queue.append(
                        _Work(carried.script, origin=origin, depth=work.depth + 1, moved=moved)
                    )
            for more, how in unwrapped.more:
                queue.append(
                    _Work(None, more, _join(how, command.origin), work.depth + 1, moved=moved)
                )
            judged, uncertain = _judge_command(rules, command, unwrapped)
            commands.append(judged)
            doubts += uncertain
            decided = next((r for r in rules if r.name == judged.rule), None)
            if decided is not None and decided.decision is Decision.FORBID and forbid is None:
                forbid = _ref(decided)
            if decided is not None and decided.decision is Decision.PROMPT and prompt is None:
                prompt = _ref(decided)
            maybe_strict = maybe_strict or any(
                u.rule is not None and _decision(rules, u.rule) is not Decision.ALLOW
                for u in uncertain
            )
            if judged.decision is not Decision.ALLOW and not judged.carrier:
                every_allowed = False
        # A literal holding `$(` is a doubt, unless it is a script this judge parses
        # itself (then its substitutions are commands judged there).
        doubts += [_doubt(d) for d in literals if d.literal not in carried_here]
    opaque = any(u.rule is None for u in doubts)
    decision: Decision | None
    rule: RuleRef | None = None
    if forbid is not None:
        decision, rule = Decision.FORBID, forbid
    elif prompt is not None:
        decision, rule = Decision.PROMPT, prompt
    elif maybe_strict or (opaque and strict):
        decision = Decision.PROMPT
    elif every_allowed and commands and not doubts and not held:
        decision = Decision.ALLOW
        rule = next(
            (_ref(r) for c in commands for r in rules if r.name == c.rule and not c.carrier), None
        )
    else:
        decision = None
    return Judgement(decision, rule, tuple(commands), tuple(doubts), tuple(held))


def _decision(rules: Sequence[Rule], name: str) -> Decision | None:
    return next((r.decision for r in rules if r.name == name), None)


def _join(inner: str, outer: str) -> str:
    return f"{inner} < {outer}" if outer else inner


def _doubt(doubt: Doubt) -> Uncertainty:
    return Uncertainty(doubt.reason, doubt.text, doubt.origin)


def _judge_command(
    rules: Sequence[Rule], command: SimpleCommand, unwrapped: Unwrapped
) -> tuple[JudgedCommand, list[Uncertainty]]:
    best: Rule | None = None
    matched: list[str] = []
    uncertain: list[Uncertainty] = []
    maybe_seen: set[str] = set()
    for rule in rules:
        for view in unwrapped.views:
            answer = rule.judge(view.words, command.fed_by)
            if answer is Match.YES and (view.exact or rule.decision is not Decision.ALLOW):
                if rule.name not in matched:
                    matched.append(rule.name)
                if best is None or rule.decision.strictness > best.decision.strictness:
                    best = rule
                break
            if answer is Match.MAYBE and rule.name not in maybe_seen:
                maybe_seen.add(rule.name)
                uncertain.append(
                    Uncertainty(
                        _why_maybe(rule, view), brief(command.text), command.origin, rule.name
                    )
                )
    # A rule that certainly matched outranks its own doubt on another view.
    uncertain = [u for u in uncertain if u.rule not in matched]
    if best is not None:
        uncertain = [
            u
            for u in uncertain
            if _decision(rules, u.rule or "") is None
            or _strictness(rules, u.rule or "") > best.decision.strictness
        ]
    innermost = unwrapped.views[-1].words
    judged = JudgedCommand(
        words=tuple(w.shown for w in command.words),
        runs=tuple(w.shown for w in innermost),
        origin=command.origin,
        text=brief(command.text, 200),
        decision=best.decision if best is not None else None,
        rule=best.name if best is not None else None,
        matched=tuple(matched),
        carrier=unwrapped.carrier,
    )
    return judged, uncertain


def _strictness(rules: Sequence[Rule], name: str) -> int:
    decision = _decision(rules, name)
    return decision.strictness if decision is not None else -1


def _why_maybe(rule: Rule, view: View) -> str:
    unknown = next((w for w in view.words if not w.known), None)
    verb = "is not allowed by" if rule.decision is Decision.ALLOW else "may meet"
    if unknown is not None:
        return f"it {verb} rule {rule.name!r}: {unknown.text} is known only at run time"
    climbing = next((w for w in view.words if ".." in (w.value or "").split("/")), None)
    if climbing is not None:
        where = "where its .. leads is known only at run time (a symbolic link, a home)"
        return f"it {verb} rule {rule.name!r}: {climbing.text}: {where}"
    linked = next(
        (w for w in view.words if w.value is not None and past_a_link(w.value) is not None), None
    )
    if linked is not None:
        where = (
            "where the kernel's link (/proc/PID/root, cwd, /dev/fd/N) leads is known at run time"
        )
        return f"it {verb} rule {rule.name!r}: {linked.text}: {where}"
    moved = next((w for w in view.words if w.home and w.moved), None)
    if moved is not None:
        where = "where it leads (a HOME, PWD or OLDPWD the script may set) is known at run time"
        return f"it {verb} rule {rule.name!r}: {moved.text}: {where}"
    lookalike = "a word only looks like the rule's (another case, lookalike letters)"
    return f"it {verb} rule {rule.name!r}: {lookalike}"

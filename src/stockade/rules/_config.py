"""Command rules from configuration mappings: every key checked, every error one line that
names the rule and what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..errors import ConfigError
from ._rule import Rule
from ._words import Decision, WordPattern

KEYS: Final = ("name", "prefix", "decision", "reason", "args", "piped_from", "match", "not_match")
REQUIRED: Final = ("name", "prefix", "decision", "reason")


def _where(entry: Any, index: int) -> str:
    name = entry.get("name") if isinstance(entry, Mapping) else None
    line = getattr(getattr(entry, "lc", None), "line", None)
    shown = f" ({name})" if isinstance(name, str) and name else ""
    at = f" at line {line + 1}" if isinstance(line, int) else ""
    return f"command rule {index + 1}{shown}{at}"


def rule_from_mapping(entry: Any, index: int = 0) -> Rule:
    """A Rule from `{name, prefix, decision, reason, args?, piped_from?, match?, not_match?}`."""
    where = _where(entry, index)
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(entry).__name__}")
    for key in entry:
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} (allowed: {', '.join(KEYS)})")
    for key in REQUIRED:
        if key not in entry:
            raise ConfigError(f"{where}: {key!r} is required")
    name = _text(entry["name"], where, "name")
    reason = _text(entry["reason"], where, "reason")
    decision_text = entry["decision"]
    try:
        decision = Decision(decision_text)
    except ValueError:
        allowed = ", ".join(d.value for d in Decision)
        raise ConfigError(f"{where}: decision {decision_text!r} is not one of {allowed}") from None
    prefix = _patterns(entry["prefix"], where, "prefix")
    if not prefix:
        raise ConfigError(f"{where}: 'prefix' is empty; a rule names at least its command")
    return Rule(
        name=name,
        prefix=prefix,
        decision=decision,
        reason=reason,
        args=_patterns(entry.get("args", []), where, "args"),
        piped_from=_patterns(entry.get("piped_from", []), where, "piped_from"),
        match=_examples(entry.get("match", []), where, "match"),
        not_match=_examples(entry.get("not_match", []), where, "not_match"),
    )


def _text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key!r} must be a non-empty string, got {value!r}")
    return value


def _patterns(value: Any, where: str, key: str) -> tuple[WordPattern, ...]:
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{where}: {key!r} must be a list of words, got {value!r}")
    patterns = []
    for item in value:
        if isinstance(item, str) and item:
            patterns.append(WordPattern.of(item))
        elif (
            isinstance(item, list | tuple)
            and item
            and all(isinstance(alternative, str) and alternative for alternative in item)
        ):
            patterns.append(WordPattern.of(*item))
        else:
            raise ConfigError(
                f"{where}: each word of {key!r} is a non-empty string or a non-empty list of "
                f"them (alternatives), got {item!r}"
            )
    return tuple(patterns)


def _examples(value: Any, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(
        isinstance(item, str) and item.strip() for item in value
    ):
        raise ConfigError(f"{where}: {key!r} must be a list of command lines, got {value!r}")
    return tuple(value)

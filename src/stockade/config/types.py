"""Checked value types for composition config fields, and the errors their checks raise.

A plugin's attrs config class annotates fields with these; the loader's converter checks them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, NewType

from ..errors import ConfigError

NonEmptyStr = NewType("NonEmptyStr", str)
"""A string with at least one non-blank character."""

SingleLine = NewType("SingleLine", str)
"""A non-empty string without a line break."""

AbsolutePath = NewType("AbsolutePath", str)
"""An absolute path, normalised; write `!path ~/x` for one relative to home or the file."""

Regex = NewType("Regex", str)
"""A regular expression (Python `re` syntax) that compiles."""

AnswererName = NewType("AnswererName", str)
"""`terminal`, `scripted`, or a `module:attribute` import path to an async callable."""

PresetName = NewType("PresetName", str)
"""A permission preset's name: a non-empty word that is not the reserved `custom`."""

PositiveInt = NewType("PositiveInt", int)
PositiveFloat = NewType("PositiveFloat", float)
NonNegativeFloat = NewType("NonNegativeFloat", float)

BUILTIN_ANSWERERS: Final = ("terminal", "scripted")
RESERVED_PRESET: Final = "custom"  # policy/presets.py folds unmatched knob values to it

_DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_IMPORT_PATH: Final = re.compile(rf"{_DOTTED}:{_DOTTED}")


class ValueProblem(ConfigError):
    """A value has the right type but is not allowed; the message says what is."""


class FieldProblem(ValueProblem):
    """Raised by an attrs validator about one field, so the error points at that key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class WrongType(ConfigError):
    """A value of the wrong YAML type; `expected` reads like "an integer"."""

    def __init__(self, expected: str, got: object) -> None:
        super().__init__(f"expected {expected}, got {describe(got)}")
        self.expected = expected
        self.got = got


def describe(value: object) -> str:
    """How a YAML value reads in a message: `null`, `'text'`, `3`, `a mapping`, `a list`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, int):
        return str(int(value))  # ruamel's ScalarInt keeps its source formatting
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def strict_str(value: object) -> str:
    # cattrs' default would turn 5 into "5"; a config typo should not pass as text.
    if not isinstance(value, str):
        raise WrongType("a string", value)
    return str(value)  # drop ruamel's ScalarString subclass


def strict_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongType("an integer", value)
    return int(value)


def strict_float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WrongType("a number", value)
    try:
        number = float(value)
    except OverflowError:
        raise ValueProblem("is too large to be a number") from None
    if math.isnan(number):
        # NaN slips past every `<= 0` check and fails later, at run time.
        raise ValueProblem("must be a number, got nan")
    return number


def strict_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise WrongType("true or false", value)
    return bool(value)


def check_non_empty(value: object) -> str:
    text = strict_str(value)
    if not text.strip():
        raise ValueProblem("must not be empty")
    return text


def check_single_line(value: object) -> str:
    text = check_non_empty(value)
    if "\n" in text or "\r" in text:
        raise ValueProblem(f"must be a single line, got {text!r}")
    return text


def check_absolute_path(value: object) -> str:
    text = check_non_empty(value)
    if text.startswith("~"):
        raise ValueProblem(f"{text!r} is not absolute; write `!path {text}` to expand it")
    if not os.path.isabs(text):
        raise ValueProblem(
            f"{text!r} is not an absolute path; write `!path {text}` for one "
            "relative to this file, or `!cwd`"
        )
    return os.path.normpath(text)


def check_regex(value: object) -> str:
    text = check_non_empty(value)
    try:
        re.compile(text)
    except re.error as exc:
        raise ValueProblem(f"invalid regular expression {text!r}: {exc}") from None
    return text


def check_answerer(value: object) -> str:
    text = strict_str(value)
    if text in BUILTIN_ANSWERERS or _IMPORT_PATH.fullmatch(text):
        return text
    raise ValueProblem(
        f"unknown answerer {text!r} "
        f"(allowed: {', '.join(BUILTIN_ANSWERERS)}, or a module:attribute import path)"
    )


def check_preset_name(value: object) -> str:
    text = check_non_empty(value)
    if text != text.strip():
        raise ValueProblem(f"preset name {text!r} has surrounding blanks")
    if text == RESERVED_PRESET:
        raise ValueProblem(
            f"preset name {RESERVED_PRESET!r} is reserved for combinations outside the table"
        )
    return text


def check_positive_int(value: object) -> int:
    number = strict_int(value)
    if number <= 0:
        raise ValueProblem(f"must be a positive integer, got {number}")
    return number


def check_positive_float(value: object) -> float:
    number = strict_float(value)
    if number <= 0:
        raise ValueProblem(f"must be a positive number, got {number:g}")
    return number


def check_non_negative_float(value: object) -> float:
    number = strict_float(value)
    if number < 0:
        raise ValueProblem(f"must not be negative, got {number:g}")
    return number


CHECKS: Final[Mapping[Any, Callable[[object], Any]]] = MappingProxyType(
    {
        str: strict_str,
        int: strict_int,
        float: strict_float,
        bool: strict_bool,
        NonEmptyStr: check_non_empty,
        SingleLine: check_single_line,
        AbsolutePath: check_absolute_path,
        Regex: check_regex,
        AnswererName: check_answerer,
        PresetName: check_preset_name,
        PositiveInt: check_positive_int,
        PositiveFloat: check_positive_float,
        NonNegativeFloat: check_non_negative_float,
    }
)
"""The converter's hook for each checked type (and the strict primitives)."""

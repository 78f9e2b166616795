"""Load problems: where each one is (a key path into the source) and how it reads as a line.

Turns cattrs' nested exception groups into flat problems and renders them in source order.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any, Literal, Protocol

import attrs
from cattrs.errors import (
    AttributeValidationNote,
    BaseValidationError,
    ForbiddenExtraKeysError,
    IterableValidationNote,
)
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ..errors import ConfigError
from ..reprs import fields_repr
from .types import FieldProblem

Step = str | int
Path = tuple[Step, ...]
At = Literal["key", "value", "node"]


@attrs.frozen
class Problem:
    """One mistake. `at` picks the key itself, its value, or the mapping holding `path`.

    `subject` prefixes the message with the key path inside the entry (`config.mode: ...`)
    for value errors whose text does not name the key.
    """

    __repr__ = fields_repr

    path: Path
    message: str
    at: At = "value"
    subject: bool = False


class CompositionError(ConfigError):
    """Every problem of one composition source, one rendered line each, in source order."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)


class Locator(Protocol):
    def where(self, path: Path, at: At = "node") -> tuple[str, tuple[int, ...]]:
        """The rendered location of `path` and a key that sorts it in source order."""
        ...

    def subject(self, path: Path) -> str | None:
        """The key path inside the entry, when the location does not already say it."""
        ...


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _render_step(step: Any) -> str:
    """`.key` for a plain key, `[3]` for an index, `['odd key']` for anything else."""
    if isinstance(step, int) and not isinstance(step, bool):
        return f"[{step}]"
    if isinstance(step, str) and _PLAIN_KEY.fullmatch(step):
        return f".{step}"
    return f"[{step!r}]"


def _render_path(path: Path) -> str:
    return "".join(_render_step(step) for step in path).removeprefix(".")


class YamlLocator:
    """Locations from ruamel's round-trip line/column data: `file:LINE:COL` (1-based)."""

    def __init__(self, filename: str, root: Any) -> None:
        self.filename = filename
        self.root = root

    def position(self, path: Path, at: At = "node") -> tuple[int, int]:
        node = self.root
        line, col = _own_position(node)
        for index, step in enumerate(path):
            last = index == len(path) - 1
            if isinstance(node, CommentedMap) and step in node:
                # A key merged in by `<<:` has no position of its own: keep the mapping's.
                with contextlib.suppress(KeyError, TypeError):
                    line, col = node.lc.key(step) if last and at == "key" else node.lc.value(step)
                node = node[step]
            elif isinstance(node, CommentedSeq) and isinstance(step, int) and step < len(node):
                line, col = node.lc.item(step)
                node = node[step]
            else:  # the path leaves the document (a missing key): the deepest node found
                break
        return line + 1, col + 1

    def where(self, path: Path, at: At = "node") -> tuple[str, tuple[int, ...]]:
        line, col = self.position(path, at)
        return f"{self.filename}:{line}:{col}", (line, col)

    def subject(self, path: Path) -> str | None:
        return _render_path(path[1:]) or None


def _own_position(node: Any) -> tuple[int, int]:
    lc = getattr(node, "lc", None)
    if lc is None or lc.line is None:
        return 0, 0
    return lc.line, lc.col


class MappingLocator:
    """Locations in a Python source: `<mapping>:entry[2].config.mode`."""

    def __init__(self, name: str = "<mapping>") -> None:
        self.name = name

    def where(self, path: Path, at: At = "node") -> tuple[str, tuple[int, ...]]:
        if not path or not isinstance(path[0], int):
            return self.name, (-1,)
        rest = "".join(_render_step(step) for step in path[1:])
        return f"{self.name}:entry[{path[0]}]{rest}", (path[0],)

    def subject(self, path: Path) -> str | None:
        return None  # the location already spells the key path


def render(problems: Sequence[Problem], locator: Locator) -> list[str]:
    """One line per problem, in source order (stable for problems at one place)."""
    lines = []
    for problem in problems:
        where, order = locator.where(problem.path, problem.at)
        subject = locator.subject(problem.path) if problem.subject else None
        text = f"{subject}: {problem.message}" if subject else problem.message
        lines.append((order, f"{where}: {text}"))
    lines.sort(key=lambda item: item[0])
    return [line for _order, line in lines]


def flatten(exc: BaseException, path: Path) -> Iterator[Problem]:
    """The problems inside one cattrs structuring failure at `path`."""
    if isinstance(exc, BaseValidationError):
        for sub in exc.exceptions:
            yield from _from_member(sub, path)
    elif isinstance(exc, ForbiddenExtraKeysError):
        allowed = ", ".join(a.name for a in attrs.fields(exc.cl) if a.init)
        for key in sorted(exc.extra_fields, key=str):
            yield Problem((*path, key), f"unknown key {key!r} (allowed: {allowed})", at="key")
    elif isinstance(exc, FieldProblem):
        yield Problem((*path, exc.key), str(exc), subject=True)
    elif isinstance(exc, ConfigError):
        yield Problem(path, str(exc), subject=True)
    else:  # a third-party validator's own exception type
        yield Problem(path, f"{type(exc).__name__}: {exc}", subject=True)


def _from_member(sub: BaseException, path: Path) -> Iterator[Problem]:
    # The note cattrs attached at THIS level is the last of its kind on the exception.
    notes = [
        note
        for note in getattr(sub, "__notes__", ())
        if isinstance(note, AttributeValidationNote | IterableValidationNote)
    ]
    if not notes:  # raised while instantiating the class: a validator
        yield from flatten(sub, path)
        return
    note = notes[-1]
    if isinstance(note, AttributeValidationNote):
        if isinstance(sub, KeyError) and sub.args == (note.name,):
            yield Problem(path, f"missing required key {note.name!r}", at="node")
        else:
            yield from flatten(sub, (*path, note.name))
        return
    if str(note).startswith("Structuring mapping key"):
        for problem in flatten(sub, (*path, note.index)):
            yield attrs.evolve(problem, at="key")
        return
    yield from flatten(sub, (*path, note.index))

"""Reading stockade.yml: ruamel's round-trip loader (it keeps line/column) plus the run-time tags.

`!cwd`, `!env NAME` and `!path P` parse to markers; `resolve_tags` replaces them in place
(`!env` as a credential's `value` by a reference: a secret is never read into a composition).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import attrs
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.reader import ReaderError

from ..reprs import fields_repr
from ._problems import Path, Problem

TAGS: Final = ("!cwd", "!env", "!path")


@attrs.frozen
class Tagged:
    """A tagged scalar whose value is known only at load time (or an unknown tag)."""

    __repr__ = fields_repr

    tag: str
    value: str | None  # None when the tag was put on a mapping or a list


_YAML_PREFIX: Final = "tag:yaml.org,2002:"

# (list key, item key): where `!env NAME` names the variable the harness reads when it
# starts (`EnvReference`), not a value read now. A credential's value (issue 41) is a
# secret: the composition, its errors and whatever shows it never hold it.
REFERENCE_KEYS: Final = frozenset({("network_credentials", "value")})


@attrs.frozen
class EnvReference:
    """`!env NAME` where a secret goes: the variable's name only (its value is read by
    whoever needs it, the harness when it starts)."""

    __repr__ = fields_repr

    name: str


def _construct_tagged(constructor: RoundTripConstructor, node: Any) -> Tagged:
    value = str(node.value) if isinstance(node, ScalarNode) else None
    tag = str(getattr(node.tag, "value", node.tag))
    if tag.startswith(_YAML_PREFIX):  # spell it as it was written: `!!python/object`
        tag = "!!" + tag.removeprefix(_YAML_PREFIX)
    return Tagged(tag, value)


class _Constructor(RoundTripConstructor):
    """The round-trip constructor plus our tags; a subclass, so ruamel's own stays untouched."""


for _tag in TAGS:
    _Constructor.add_constructor(_tag, _construct_tagged)
# Any other tag (`!!python/object`, a typo like `!envv`) becomes a marker reported as unknown.
_Constructor.add_constructor(None, _construct_tagged)


@attrs.frozen
class SyntaxProblem:
    """A document ruamel could not read: 0-based position and its own wording."""

    __repr__ = fields_repr

    line: int
    col: int
    message: str


# ruamel's scanner is quadratic in flow nesting (seconds at ~1000 levels) and its
# composer runs out of stack near 300 anyway: refuse deeper documents up front.
MAX_FLOW_DEPTH: Final = 200


def _flow_depth(text: str) -> int:
    """The deepest `[`/`{` nesting outside quoted scalars and comments (a cheap bound)."""
    depth = deepest = 0
    quote = None
    previous = "\n"
    escaped = False
    comment = False
    for char in text:
        if comment:
            comment = char != "\n"
        elif quote == '"':
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quote = None
        elif quote == "'":
            if char == "'":
                quote = None  # '' (an escaped quote) closes and reopens: same effect
        elif char in "\"'":
            quote = char
        elif char == "#" and previous in " \t\n":
            comment = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
        previous = char
    return deepest


def parse(text: str) -> Any | SyntaxProblem:
    """The document's round-trip tree, or where and why it is not YAML."""
    if _flow_depth(text) > MAX_FLOW_DEPTH:
        return SyntaxProblem(
            0, 0, f"invalid YAML: the document nests deeper than {MAX_FLOW_DEPTH} levels"
        )
    yaml = YAML(typ="rt", pure=True)
    yaml.Constructor = _Constructor
    try:
        return yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or "invalid YAML"
        if exc.context:
            what = f"{what} ({exc.context})"
        line, col = (mark.line, mark.column) if mark is not None else (0, 0)
        return SyntaxProblem(line, col, f"invalid YAML: {_one_line(what)}")
    except ReaderError as exc:  # a character YAML forbids: point at it
        line, col = _line_col(text, exc.position)
        char = exc.character
        shown = f"{chr(char)!r} (#x{char:04x})" if isinstance(char, int) else repr(char)
        what = f"unacceptable character {shown}: {exc.reason}"
        return SyntaxProblem(line, col, f"invalid YAML: {_one_line(what)}")
    except YAMLError as exc:  # unmarked: the whole document
        return SyntaxProblem(0, 0, f"invalid YAML: {_one_line(str(exc))}")
    except RecursionError:  # ruamel composes recursively
        return SyntaxProblem(0, 0, "invalid YAML: the document nests too deeply")
    except TypeError as exc:  # e.g. a complex mapping key (`? [ ]`): not a config shape
        return SyntaxProblem(0, 0, f"invalid YAML: unsupported key ({_one_line(str(exc))})")


def _one_line(text: str) -> str:
    """An error line stays one line: ruamel's own texts may carry a `\n  in ...` tail."""
    return " ".join(str(text).split())


def _line_col(text: str, position: int) -> tuple[int, int]:
    """0-based line and column of a character offset."""
    position = max(0, min(int(position), len(text)))
    start = text.rfind("\n", 0, position) + 1
    return text.count("\n", 0, position), position - start


@attrs.frozen(kw_only=True)
class TagContext:
    """What the tags expand against: the working directory, environment and file's directory."""

    __repr__ = fields_repr

    cwd: str
    environ: Mapping[str, str]
    base_dir: str


def resolve_tags(root: Any, context: TagContext) -> list[Problem]:
    """Replace every tag marker under `root` in place; the problems for those that cannot be.

    Iterative, and each node is visited once: an alias shares its node, and a
    recursive alias (`&a [*a]`) makes a cycle that must not be walked forever.
    """
    problems: list[Problem] = []
    seen: set[int] = set()
    stack: list[tuple[Any, Path]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, CommentedMap | CommentedSeq) or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, CommentedMap):
            for key in list(node):
                if isinstance(key, Tagged):
                    # The step is the key itself, not a str: the locator finds its line
                    # by looking it up in this mapping.
                    problems.append(Problem((*path, key), f"a tag ({key.tag}) cannot be a key"))  # type: ignore[arg-type]
                    continue
                node[key] = _visit(node[key], (*path, key), context, problems, stack)
        else:
            for index, item in enumerate(node):
                node[index] = _visit(item, (*path, index), context, problems, stack)
    return problems


def _visit(
    value: Any,
    path: Path,
    context: TagContext,
    problems: list[Problem],
    stack: list[tuple[Any, Path]],
) -> Any:
    if not isinstance(value, Tagged):
        stack.append((value, path))
        return value
    try:
        if value.tag == "!env" and len(path) >= 3 and (path[-3], path[-1]) in REFERENCE_KEYS:
            return _reference(value)
        return _expand(value, context)
    except _TagError as exc:
        problems.append(Problem(path, str(exc)))
        return None


class _TagError(Exception):
    pass


def _reference(tagged: Tagged) -> EnvReference:
    if tagged.value is None:
        raise _TagError("!env takes a plain scalar, not a mapping or a list")
    name = tagged.value.strip()
    if not name:
        raise _TagError("!env needs a NAME, as in `!env NAME`")
    return EnvReference(name)


def _expand(tagged: Tagged, context: TagContext) -> str:
    tag, value = tagged.tag, tagged.value
    if tag not in TAGS:
        raise _TagError(f"unknown tag {tag} (allowed: {', '.join(TAGS)})")
    if value is None:
        raise _TagError(f"{tag} takes a plain scalar, not a mapping or a list")
    value = value.strip()
    if tag == "!cwd":
        if value:
            raise _TagError(f"!cwd takes no value, got {value!r}")
        return os.path.abspath(context.cwd)
    if not value:
        argument = "NAME" if tag == "!env" else "PATH"
        raise _TagError(f"{tag} needs a {argument}, as in `{tag} {argument}`")
    if tag == "!env":
        found = context.environ.get(value)
        if found is None:
            raise _TagError(f"environment variable {value!r} is not set (from !env {value})")
        return found
    return _expand_path(value, context)


def _expand_path(value: str, context: TagContext) -> str:
    if value == "~" or value.startswith("~/"):
        # The injected environment decides HOME, so a test never reads the real one.
        home = context.environ.get("HOME") or os.path.expanduser("~")
        value = home + value[1:]
    else:
        value = os.path.expanduser(value)  # `~user/...`
    return os.path.normpath(os.path.join(context.base_dir, value))

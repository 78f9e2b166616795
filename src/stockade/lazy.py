"""A folder's public surface from one table: the `name as name` imports of its
`__init__.py`, each name written once. Standard library only, no `re`, no `ast`.

Mypy reads the imports (`name as name` is an explicit re-export); the runtime reads
the same lines as text: those under `if TYPE_CHECKING:` are loaded on first use, those
above it are eager; `__all__` is every name the table holds and every public name the
`__init__` defines itself. `stockade exec` reads the tables of the folders it asks, so
the reading is plain string work, done once per folder, on the first lazy name asked.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

GUARD = "if TYPE_CHECKING:"
NOT_NAMES = frozenset({"TYPE_CHECKING"})

# name -> (module, level, lazy): `from <level dots><module> import name as name`,
# written under the TYPE_CHECKING guard (lazy) or above it (eager). The module is ""
# when the name is a submodule itself (`from . import name as name`).
Table = dict[str, tuple[str, int, bool]]


def _statements(text: str) -> list[tuple[str, bool, bool]]:
    """Each logical line outside strings: (text, begins at column 0, under the guard).
    Comments are dropped; a bracketed line is joined with the lines it continues on."""
    found: list[tuple[str, bool, bool]] = []
    in_string = guarded = pending_top = False
    pending = ""
    for raw in text.split("\n"):
        quotes = raw.count('"""') + raw.count("'''")
        if quotes % 2:
            in_string = not in_string
        if in_string or quotes:
            continue
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if not pending:
            pending_top = not line[0].isspace()
            if pending_top:
                guarded = line == GUARD
        pending = f"{pending} {line.strip()}" if pending else line.strip()
        if pending.count("(") > pending.count(")"):
            continue
        found.append((pending, pending_top, guarded))
        pending = ""
    return found


def read_table(text: str) -> Table:
    """The re-exports of an `__init__`'s source. Only `from X import name as name`
    counts (mypy's rule for a re-export); a plain `from X import name`, or a renaming,
    is the module's own use."""
    table: Table = {}
    for line, _top, guarded in _statements(text):
        if not line.startswith("from ") or " import " not in line:
            continue
        where, _, names = line[len("from ") :].partition(" import ")
        level = len(where) - len(where.lstrip("."))
        for piece in names.replace("(", " ").replace(")", " ").split(","):
            words = piece.split()
            if len(words) == 3 and words[1] == "as" and words[0] == words[2]:
                table[words[0]] = (where[level:], level, guarded)
    return table


def defined_names(text: str) -> list[str]:
    """The public names an `__init__`'s source defines at column 0 (def, class, an
    assignment), in order."""
    names: list[str] = []
    for line, top, _guarded in _statements(text):
        if not top:
            continue
        if line.startswith(("def ", "class ", "async def ")):
            head = line.removeprefix("async ").split(None, 1)[1]
            name = head.split("(", 1)[0].split(":", 1)[0].strip()
        else:
            name = line.split("=", 1)[0].split(":", 1)[0].strip() if "=" in line else ""
        if name.isidentifier() and not name.startswith("_") and name not in NOT_NAMES:
            names.append(name)
    return names


def find_lazy(text: str, name: str) -> tuple[str, int] | None:
    """`read_table(text)[name]`'s module and level when one indented line
    `from <module> import name as name` says it; None when no such line does (then
    `read_table` decides). A few searches instead of reading every line: this is what
    `stockade exec` does for each name it asks."""
    end = text.find(f" import {name} as {name}\n")
    if end < 0:
        return None
    line = text[text.rfind("\n", 0, end) + 1 : end]
    if not line.startswith("    from "):
        return None
    where = line[len("    from ") :]
    level = len(where) - len(where.lstrip("."))
    return where[level:], level


def surface(package: str, namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`, whose `__init__`'s namespace is
    `namespace`: a lazy name of its table is imported on first use and bound there,
    so each is looked up once; `__all__` is derived from the source the same way."""
    texts: list[str] = []
    tables: list[Table] = []

    def source() -> str:
        if not texts:
            data: bytes = namespace["__loader__"].get_data(namespace["__file__"])
            texts.append(data.decode())
        return texts[0]

    def table() -> Table:
        if not tables:
            tables.append(read_table(source()))
        return tables[0]

    def __getattr__(name: str) -> Any:
        value: Any
        if name == "__all__":
            value = sorted({*table(), *defined_names(source())})
            namespace[name] = value
            return value
        found = find_lazy(source(), name)
        if found is None:
            module, level, lazy = table().get(name, ("", 0, False))
            if not lazy:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
        else:
            module, level = found
        base = package.rsplit(".", level - 1)[0] if level > 1 else package
        where = f"{base}.{module or name}" if level else module
        # The builtin, not importlib (whose import is half a millisecond of exec).
        __import__(where)
        value = getattr(sys.modules[where], name) if module else sys.modules[where]
        namespace[name] = value
        return value

    return __getattr__

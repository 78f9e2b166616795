"""Every folder's public surface: each name its table promises resolves, `__all__` is
the table, the table's reader (string work, no `ast`) reads what Python reads, and
importing a lazy room costs nothing until a name is asked for (exec's fast path)."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys
import textwrap

import pytest

import stockade
from stockade.lazy import defined_names, find_lazy, read_table

SOURCE = pathlib.Path(stockade.__file__).parent
PACKAGES = sorted(
    ".".join(("stockade", *path.parent.relative_to(SOURCE).parts))
    for path in SOURCE.rglob("__init__.py")
)
# Extras a folder's names need: a surface whose names import them is skipped without.
NEEDS = {"stockade.acp": "acp", "stockade.mcp": "mcp"}


def _table_by_ast(text: str) -> dict[str, tuple[str, int, bool]]:
    """What `read_table` must find, read by Python's own parser."""
    table = {}
    tree = ast.parse(text)
    guarded = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            guarded.update(id(inner) for inner in ast.walk(node))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname == alias.name:
                    table[alias.name] = (node.module or "", node.level, id(node) in guarded)
    return table


def _defined_by_ast(text: str) -> list[str]:
    names = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("_") and n != "TYPE_CHECKING"]


def _path(package: str) -> pathlib.Path:
    return SOURCE.joinpath(*package.split(".")[1:], "__init__.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_the_tables_reader_reads_what_python_reads(package):
    text = _path(package).read_text()
    assert read_table(text) == _table_by_ast(text)
    assert defined_names(text) == _defined_by_ast(text)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_of_a_table_resolves_and_all_is_the_table(package):
    text = _path(package).read_text()
    table = read_table(text)
    room = importlib.import_module(package)
    if package in NEEDS:
        pytest.importorskip(NEEDS[package])
    for name, (module, level, _lazy) in table.items():
        value = getattr(room, name)
        assert value is not None, name
        if module and hasattr(value, "__module__") and not isinstance(value, type(sys)):
            # The name is the one its module defines (or re-exports), not a stand-in.
            base = package.rsplit(".", level - 1)[0] if level > 1 else package
            origin = importlib.import_module(f"{base}.{module}" if level else module)
            assert getattr(origin, name) is value, name
    assert room.__all__ == sorted({*table, *defined_names(text)})
    with pytest.raises(AttributeError):
        _ = room.no_such_name


def test_a_table_is_read_from_its_lines():
    text = textwrap.dedent(
        '''\
        """A surface.

        from .not_code import fake as fake   (a docstring's line is no import)
        """

        from __future__ import annotations

        from .eager import Eager as Eager
        from .eager import used_here

        TYPE_CHECKING = False
        if TYPE_CHECKING:
            from . import sub as sub
            from ._private import Lazy as Lazy  # why, said here
            from ..above import Up as Up, Renamed as Other
            from .wrapped import (
                one as one,
                two as two,  # a comment inside
            )

        NAMES: tuple[str, ...] = (
            "a",
        )


        def named(name: str) -> None:
            """from .x import y as y"""


        if not TYPE_CHECKING:
            __getattr__ = object()
        '''
    )
    assert read_table(text) == {
        "Eager": ("eager", 1, False),
        "sub": ("", 1, True),
        "Lazy": ("_private", 1, True),
        "Up": ("above", 2, True),
        "one": ("wrapped", 1, True),
        "two": ("wrapped", 1, True),
    }
    assert read_table(text) == _table_by_ast(text)
    assert defined_names(text) == ["NAMES", "named"] == _defined_by_ast(text)


def test_importing_the_rooms_imports_none_of_their_modules():
    lazy = ("sandbox", "executor", "trust", "approval", "tools", "cli", "network", "limits")
    probe = (
        f"import sys, stockade\nfor room in {lazy!r}:\n"
        "    __import__('stockade.' + room)\n"
        f"print(sorted(m for m in sys.modules if m.startswith({tuple(f'stockade.{r}.' for r in lazy)!r})"
        " or m in ('trio', 'attrs', 'msgspec', 'typing')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


@pytest.mark.parametrize("package", PACKAGES)
def test_the_quick_lookup_agrees_with_the_table(package):
    """exec's path finds a lazy name with a few searches; read_table reads every line."""
    text = _path(package).read_text()
    table = read_table(text)
    for name, (module, level, lazy) in table.items():
        found = find_lazy(text, name)
        assert found in (None, (module, level)) if lazy else found is None, name
    assert find_lazy(text, "no_such_name") is None

"""Every stockade name that bench/ and examples/ import still exists: nothing else
runs them in the test suite, and a layout move must not leave them behind."""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


def _stockade_imports() -> list[tuple[str, str, str | None]]:
    found = []
    for folder in ("bench", "examples"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.ImportFrom) and not node.level:
                    if (node.module or "").split(".")[0] == "stockade":
                        found += [(where, node.module or "", a.name) for a in node.names]
                elif isinstance(node, ast.Import):
                    found += [
                        (where, a.name, None)
                        for a in node.names
                        if a.name.split(".")[0] == "stockade"
                    ]
    return found


IMPORTS = _stockade_imports()


def test_the_scan_finds_the_benchmarks_imports():
    assert len(IMPORTS) > 20


@pytest.mark.parametrize(("where", "module", "name"), IMPORTS, ids=[i[0] for i in IMPORTS])
def test_each_stockade_import_resolves(where, module, name):
    imported = importlib.import_module(module)
    if name is not None and not hasattr(imported, name):
        importlib.import_module(f"{module}.{name}")  # a submodule, or ModuleNotFoundError

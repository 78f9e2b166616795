"""Every test module that runs something as uid 65534 carries the `nobody` marker.

.ci/run runs the suite from a copy in a mode-700 directory, where nobody cannot read
the checkout: a marked module reads what nobody runs through the public mirror
(support.py), and `-m nobody` selects every test that does so. "Runs as nobody": a call with `user=NOBODY` (or 65534), a mapping with
`"user": NOBODY`, an `os.set*uid` call, or a use of a tests' function that does one
(defined in the module or imported from another tests module), transitively.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SETUID = {"setuid", "seteuid", "setreuid", "setresuid"}


def _is_nobody(node: ast.AST | None) -> bool:
    return (isinstance(node, ast.Name) and node.id == "NOBODY") or (
        isinstance(node, ast.Constant) and node.value == 65534
    )


def _drops_to_nobody(node: ast.AST) -> bool:
    """One node that runs something as nobody by itself."""
    if isinstance(node, ast.Call):
        if any(k.arg == "user" and _is_nobody(k.value) for k in node.keywords):
            return True
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in SETUID
    if isinstance(node, ast.Dict):
        return any(
            isinstance(key, ast.Constant) and key.value == "user" and _is_nobody(value)
            for key, value in zip(node.keys, node.values, strict=True)
        )
    return False


class Module:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = ".".join(path.relative_to(TESTS.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text(), filename=str(path))
        self.marked = any(
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
            and "mark.nobody" in ast.unparse(node.value)
            for node in tree.body
        )
        # The names it imports from other tests modules: local name -> (module, name).
        self.imports: dict[str, tuple[str, str]] = {}
        # Per function, and for the whole module (None): whether it drops to nobody
        # itself, and the names it uses (the functions it may call).
        self.direct: dict[str | None, bool] = {None: False}
        self.names: dict[str | None, set[str]] = {None: set()}
        self._visit(tree, [None])

    def _visit(self, node: ast.AST, scopes: list[str | None]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            scopes = [*scopes, node.name]
            self.direct.setdefault(node.name, False)
            self.names.setdefault(node.name, set())
        elif isinstance(node, ast.ImportFrom) and node.level:
            package = self.name.split(".")[: -node.level]
            source = ".".join([*package, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                self.imports[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Name):
            for scope in scopes:
                self.names[scope].add(node.id)
        if _drops_to_nobody(node):
            for scope in scopes:
                self.direct[scope] = True
        for child in ast.iter_child_nodes(node):
            self._visit(child, scopes)

    def used(self, scope: str | None) -> set[tuple[str, str]]:
        """The functions `scope` may call: each name as this module's own, or as what
        it was imported as."""
        names = self.names[scope]
        return {(self.name, n) for n in names} | {
            self.imports[n] for n in names if n in self.imports
        }


@pytest.fixture(scope="module")
def nobody_modules() -> list[Module]:
    """The test modules (test_*.py) that run something as nobody."""
    modules = [Module(path) for path in sorted(TESTS.rglob("*.py"))]
    calls = {
        (module.name, scope): (module.direct[scope], module.used(scope))
        for module in modules
        for scope in module.direct
        if scope is not None
    }
    spawners = {key for key, (direct, _) in calls.items() if direct}
    grew = True
    while grew:
        found = {key for key, (_, used) in calls.items() if key not in spawners and used & spawners}
        spawners |= found
        grew = bool(found)
    return [
        module
        for module in modules
        if module.path.name.startswith("test_")
        and (module.direct[None] or module.used(None) & spawners)
    ]


def test_every_module_that_runs_something_as_nobody_carries_the_marker(nobody_modules):
    unmarked = [str(m.path.relative_to(TESTS.parent)) for m in nobody_modules if not m.marked]
    assert unmarked == [], (
        "these modules run something as uid 65534: add `pytest.mark.nobody` to their "
        f"module-level `pytestmark` (tests/README.md): {unmarked}"
    )


def test_the_rule_finds_the_known_nobody_modules(nobody_modules):
    """Against a rule that rots into finding nothing (a helper renamed, say)."""
    found = {str(m.path.relative_to(TESTS)) for m in nobody_modules}
    assert {
        "precision/test_denials.py",  # its own subprocess call, user=NOBODY
        "security/test_network.py",  # user=65534, and an imported helper
        "security/test_privilege.py",  # only an imported helper
        "tools/test_escape.py",  # os.setuid in a forked child
    } <= found, found
    assert "trust/test_trust.py" not in found  # chowns to nobody, runs nothing as it

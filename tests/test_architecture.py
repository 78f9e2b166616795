"""The layout's rules, read from the source with `ast` (docs/architecture.md, "Rules").

No import cycles; no import of another folder's private module or name; the pure
modules import no event loop; the arrows the design forbids do not exist; and a
backend's knowledge stays in its module (sandbox/backends/): no backend name compared
as a string elsewhere, no backend module elsewhere or reached from another room. Each
rule is also checked against a small made-up package, so a rule that silently
stopped finding anything would fail here too.
"""

from __future__ import annotations

import ast
import pathlib
import textwrap
from collections.abc import Iterator

import attrs
import pytest

from stockade.lazy import read_table

SOURCE = pathlib.Path(__file__).resolve().parents[1] / "src"

# Event loops and the libraries that bring one.
LOOPS = ("trio", "anyio", "trio_asyncio", "asyncio", "hypercorn")

# Where a module may run under Trio: the actor runtime, the composition root and the
# faces, whole rooms; and, in the other rooms, the actor itself and the modules that
# are its Trio shell (spawning and draining children, the executor's process type,
# background jobs, the held placeholders, the running slots, each call's limits in
# force and proxy endpoints, the executor's client, answerers that wait on a person,
# the tools that await an actor, the network proxy and its per-call, protocol,
# exchange and TLS-ending shells).
# Every other module — the vocabulary at the top, policy/, trust/, config/, every
# render.py and events.py, the sandbox's and the executor's deciding modules — is
# pure: a new module is pure unless its name says it is a shell.
LOOP_ROOMS = frozenset({"actors", "harness", "cli", "mcp", "acp"})
LOOP_NAMES = frozenset(
    {
        "actor",
        "answerers",
        "_spawn",
        "_child",
        "_job",
        "_jobs",
        "_holds",
        "_slots",
        "_limits",
        "_endpoints",
        "client",
        "bash",
        "fs_tool",
        "_approve",
        "proxy",
        "_call",
        "_http",
        "_socks",
        "_exchange",
        "_terminate",
        "serve",
    }
)
# Never a shell, whatever the room.
PURE_NAMES = frozenset({"render", "events", "config"})

# The whiteboard's "never" arrows: a room and the rooms it may never import.
FACES = frozenset({"cli", "mcp", "acp", "harness"})
NEVER = {
    # policy knows no actor (nor anything that holds one)
    "policy": frozenset(
        {"actors", "sandbox", "executor", "approval", "sessionlog", "tools"} | FACES
    ),
    # the sandbox decides and wraps; it never runs the command, never asks
    "sandbox": frozenset({"executor", "approval", "tools"} | FACES),
    # the executor runs what it is given; it never asks
    "executor": frozenset({"approval", "tools"} | FACES),
    # the log knows no face (nor the tools that faces call), and no executor: the
    # secrets commands must not inherit it gives as data (`credentials()`)
    "sessionlog": frozenset({"executor", "tools"} | FACES),
    # the network proxy stands on the ground; the harness runs it and reports for it
    "network": frozenset(
        {"sandbox", "executor", "approval", "sessionlog", "tools", "policy", "config"} | FACES
    ),
    # the limits vocabulary stands on the ground: every room may use it
    "limits": frozenset(
        {
            "actors",
            "sandbox",
            "executor",
            "approval",
            "sessionlog",
            "tools",
            "policy",
            "config",
            "network",
            "trust",
        }
        | FACES
    ),
    # command rules are pure judgement over words: no actor, no face, no configuration
    # room (config will read rules, not the other way round)
    "rules": frozenset(
        {
            "actors",
            "sandbox",
            "executor",
            "approval",
            "sessionlog",
            "tools",
            "policy",
            "config",
            "network",
        }
        | FACES
    ),
    # undo stands on the ground: the harness hands it a root and a store and appends
    # the events it returns; it knows no actor, no face, no sandbox
    "history": frozenset(
        {
            "actors",
            "sandbox",
            "executor",
            "approval",
            "sessionlog",
            "tools",
            "policy",
            "config",
            "network",
            "rules",
        }
        | FACES
    ),
    # the trust base stands on the standard library
    "trust": frozenset(
        {"actors", "sandbox", "executor", "approval", "sessionlog", "tools", "policy"} | FACES
    ),
}
# How a room would spawn a command itself.
SPAWNS = ("trio.run_process", "trio.lowlevel.open_process", "os.posix_spawn", "os.execv")

# Where a backend's knowledge lives: one module each, in this package.
BACKENDS_PACKAGE = "sandbox.backends"
# Backend names as a module might compare them (the chain's list, and an operator's
# runner_command); the backends' own modules, beside the chain: bwrap, landlock, ...
BACKEND_NAMES = frozenset({"bwrap", "landlock", "seatbelt", "runner-command"})
BACKEND_MODULES = frozenset({"bwrap", "landlock", "seatbelt", "fake"})
# Where a name may be compared: the backends themselves, and the configuration's
# vocabulary (its Literal of the choices).
NAMES_COMPARED_IN = (BACKENDS_PACKAGE, "config")


@attrs.frozen
class Module:
    name: str  # dotted
    path: pathlib.Path
    is_package: bool
    tree: ast.Module

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]

    @property
    def room(self) -> str:
        """The first folder under the top package, or "" for a top-level module."""
        parts = self.name.split(".")
        if len(parts) == 1 or (len(parts) == 2 and not self.is_package):
            return ""
        return parts[1]


@attrs.frozen
class Import:
    importer: Module
    target: str  # dotted module (or package) the statement names
    name: str | None  # the imported name, when it is not a module
    line: int
    in_function: bool
    # The module the statement names (`from X import ...`, `import X`), and the name
    # it asks X for (a submodule's too), before resolving it to a module.
    named: str = ""
    asked: str | None = None

    def where(self) -> str:
        return f"{self.importer.name}:{self.line}"


def load(source: pathlib.Path, top: str = "stockade") -> dict[str, Module]:
    modules = {}
    for path in sorted((source / top).rglob("*.py")):
        parts = list(path.relative_to(source).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        modules[name] = Module(name, path, is_package, ast.parse(path.read_text(), str(path)))
    return modules


def _type_checking_only(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(inner) for inner in ast.walk(child))
    return skipped


def _functions(tree: ast.Module) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(inner) for inner in ast.walk(node) if inner is not node)
    return inside


def imports(
    modules: dict[str, Module], top: str = "stockade", type_checking: bool = False
) -> Iterator[Import]:
    """Every import statement that runs (not under TYPE_CHECKING, unless asked),
    resolved."""
    for module in modules.values():
        skipped = set() if type_checking else _type_checking_only(module.tree)
        inside = _functions(module.tree)
        for node in ast.walk(module.tree):
            if id(node) in skipped:
                continue
            in_function = id(node) in inside
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(module, alias.name, None, node.lineno, in_function, alias.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    resolved = (sub, None) if sub in modules else (target, alias.name)
                    yield Import(module, *resolved, node.lineno, in_function, target, alias.name)


def lazy_source(modules: dict[str, Module], package: str, name: str) -> str | None:
    """The module a lazy name of `package`'s table is loaded from (following the
    surfaces it passes through), or None when `name` is not a lazy name there."""
    module = modules.get(package)
    if module is None or not module.is_package:
        return None
    where, level, lazy = read_table(module.path.read_text()).get(name, ("", 0, False))
    if not lazy:
        return None
    base = package.rsplit(".", level - 1)[0] if level > 1 else package
    target = f"{base}.{where or name}" if level else where
    return (lazy_source(modules, target, name) or target) if where else target


def executed(modules: dict[str, Module], found: Import) -> set[str]:
    """The modules an import runs: its target, the packages above it and, for a lazy
    name of a surface, the module the name is loaded from and the packages above that;
    not the packages the importer itself sits in (they are already running)."""
    own = {*_ancestors(found.importer.name), found.importer.package, found.importer.name}
    targets = [found.target]
    if found.name is not None:
        targets.append(lazy_source(modules, found.target, found.name) or found.target)
    return {
        ran
        for target in targets
        for ran in (*_ancestors(target), target)
        if ran in modules and ran not in own
    }


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """Module -> the modules its imports execute: the target and the target's packages
    (except packages the importer itself sits in, which are already running)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for found in imports(modules):
        if found.target in modules:
            graph[found.importer.name] |= executed(modules, found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def private_reach_ins(modules: dict[str, Module], top: str = "stockade") -> list[str]:
    """Imports of a `_module` (or a `_name`) from outside the folder that owns it."""
    found = []
    for imp in imports(modules):
        if not imp.target.startswith(top):
            continue
        parts = imp.target.split(".")
        for depth, part in enumerate(parts):
            if not _private(part):
                continue
            owner = ".".join(parts[:depth])  # the folder the private module sits in
            # ... and the folders inside it; but the top package's folders are the
            # rooms: a top-level `_module` is the top level's alone.
            inside = owner != top and imp.importer.package.startswith(owner + ".")
            if not (imp.importer.package == owner or inside):
                found.append(f"{imp.where()}: {imp.importer.name} imports {imp.target}")
            break
        if imp.name and _private(imp.name) and imp.target in modules:
            owner = modules[imp.target].package
            if not (imp.importer.package == owner or imp.importer.package.startswith(owner + ".")):
                found.append(
                    f"{imp.where()}: {imp.importer.name} imports {imp.name} from {imp.target}"
                )
    return found


def exports(package: Module) -> frozenset[str]:
    """The names a package's `__init__` promises: each `name as name` import (eager,
    or lazy under TYPE_CHECKING) and each public name it defines itself."""
    names: set[str] = set()
    for node in ast.walk(package.tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(a.asname for a in node.names if a.asname and a.asname == a.name)
    for node in package.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return frozenset(n for n in names if not _private(n) and n != "TYPE_CHECKING")


def surface_bypasses(modules: dict[str, Module], top: str = "stockade") -> list[str]:
    """Imports (TYPE_CHECKING ones too) that cross into another folder other than
    through its `__init__`: naming a module inside it, or asking its package for a
    name the package does not export.

    A module imports directly from its own folder and the folders containing it (a
    nested folder belongs to its parent's room); any other folder, nested ones too,
    it reaches by its package (docs/decisions.md)."""
    found = []
    for imp in imports(modules, top, type_checking=True):
        named = imp.named
        if named not in modules:
            continue  # not stockade's
        mine = {imp.importer.package, *_ancestors(imp.importer.package)}
        folder = modules[named].package
        if folder in mine:
            continue
        if not modules[named].is_package:
            found.append(f"{imp.where()}: {imp.importer.name} imports {named}, not {folder}")
        elif imp.asked is not None and imp.asked not in exports(modules[named]):
            found.append(
                f"{imp.where()}: {imp.importer.name} imports {imp.asked}, "
                f"which {named} does not export"
            )
    return found


# The session log's stores and their format: only sessionlog/ names them; every other
# folder asks a store through its protocol (sessionlog/stores/interface.py).
STORE_NAMES = frozenset(
    {"JsonlStore", "MemoryStore", "PostgresStore", "PostgresHandle", "JsonlCatalog"}
)
LOG_SUFFIX = ".jsonl"
# Outside sessionlog/, what a module may still name: the public testing kit re-exports
# the memory store (docs/embedding.md), and the CLI's help shows a log file's path.
STORE_NAMES_ALLOWED = {"stockade.testing": frozenset({"MemoryStore"})}
SUFFIX_ALLOWED = frozenset({"stockade.cli.parser"})


def store_leaks(modules: dict[str, Module]) -> list[str]:
    """Modules outside sessionlog/ that name a store class (a name, an attribute, an
    import or a string) or hold the log files' suffix in a string."""
    found = []
    for module in modules.values():
        if module.room == "sessionlog":
            continue
        allowed = STORE_NAMES_ALLOWED.get(module.name, frozenset())
        for node in ast.walk(module.tree):
            named: list[str] = []
            if isinstance(node, ast.Name):
                named = [node.id]
            elif isinstance(node, ast.Attribute):
                named = [node.attr]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                named = [part for alias in node.names for part in alias.name.split(".")]
                named += [alias.asname for alias in node.names if alias.asname]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                named = [name for name in STORE_NAMES if name in node.value]
                if LOG_SUFFIX in node.value and module.name not in SUFFIX_ALLOWED:
                    found.append(f"{module.name}:{node.lineno}: names {LOG_SUFFIX!r}")
            for name in named:
                if name in STORE_NAMES and name not in allowed:
                    found.append(f"{module.name}:{node.lineno}: names {name}")
    return found


# The faces are siblings: none imports another (what they share lives in faces/, and
# the program that launches each of them is `stockade.entry`, above them).
SIBLING_FACES = frozenset({"cli", "mcp", "acp"})


def face_cross_imports(modules: dict[str, Module], top: str = "stockade") -> list[str]:
    """Imports (module-level or inside a function) of one face by another."""
    found = []
    for imp in imports(modules):
        room = imp.importer.room
        if room not in SIBLING_FACES or not imp.target.startswith(top + "."):
            continue
        target_room = imp.target.split(".")[1]
        if target_room in SIBLING_FACES and target_room != room:
            found.append(f"{imp.where()}: {room}/ imports {target_room}/ ({imp.target})")
    return found


# Modules that hold a harness and must use only its public members.
HARNESS_HOLDERS = frozenset({"stockade.harness.agent"})


def harness_private_reaches(modules: dict[str, Module]) -> list[str]:
    """Attributes `harness._name` (or `x.harness._name`) read by a module that holds a
    Harness but is not its class's module."""
    found = []
    for name in HARNESS_HOLDERS:
        module = modules.get(name)
        if module is None:
            continue
        for node in ast.walk(module.tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            owner = node.value
            held = (isinstance(owner, ast.Name) and owner.id == "harness") or (
                isinstance(owner, ast.Attribute) and owner.attr == "harness"
            )
            if held:
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    return found


def is_pure(module: Module) -> bool:
    leaf = module.name.rpartition(".")[2]
    if leaf in ("__main__",) or module.name.endswith(".testing"):
        return False
    if leaf in PURE_NAMES:
        return True
    return module.room not in LOOP_ROOMS and leaf not in LOOP_NAMES


def loop_imports(modules: dict[str, Module]) -> list[str]:
    """Pure modules that import an event loop, directly or through a stockade module
    they import at module level."""
    direct: dict[str, list[str]] = {}
    for imp in imports(modules):
        if imp.target.split(".")[0] in LOOPS:
            direct.setdefault(imp.importer.name, []).append(f"{imp.target} (line {imp.line})")
    module_level: dict[str, set[str]] = {name: set() for name in modules}
    for imp in imports(modules):
        if not imp.in_function and imp.target in modules:
            # The target's packages run first (an eager __init__ counts), and a lazy
            # name's module, except the packages the importer sits in.
            module_level[imp.importer.name] |= executed(modules, imp)
    found = []
    for module in modules.values():
        if not module.is_package and not is_pure(module):
            continue
        if module.is_package:
            # A package re-exports; it is judged through the pure modules that import
            # it (its eager imports run first), not on its own.
            continue
        seen, todo, via = set(), [module.name], {}
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if current in direct:
                chain = [current]
                while chain[-1] in via:
                    chain.append(via[chain[-1]])
                route = " <- ".join(chain)
                found.append(f"{module.name} imports {direct[current][0]} via {route}")
                break
            for nxt in module_level[current]:
                if nxt not in seen:
                    via.setdefault(nxt, current)
                    todo.append(nxt)
    return found


def forbidden_arrows(modules: dict[str, Module], top: str = "stockade") -> list[str]:
    found = []
    for imp in imports(modules):
        room = imp.importer.room
        banned = NEVER.get(room)
        if not banned or not imp.target.startswith(top + "."):
            continue
        target_room = imp.target.split(".")[1]
        if target_room in banned:
            found.append(f"{imp.where()}: {room}/ may never import {target_room}/ ({imp.target})")
    for module in modules.values():
        if module.room not in ("sandbox", "policy", "trust", "limits"):
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute):
                text = ast.unparse(node)
                if text.startswith(SPAWNS):
                    found.append(f"{module.name}:{node.lineno}: {module.room}/ spawns ({text})")
    return found


def _literals(node: ast.AST) -> Iterator[str]:
    """The string constants `node` is, or holds as a tuple, list or set element."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _literals(element)


def name_comparisons(modules: dict[str, Module], top: str = "stockade") -> list[str]:
    """Comparisons (==, !=, in, not in, a match case) of a value against a backend's
    name written as a string, outside the backends' package and the configuration: the
    rest of stockade acts on what a backend says (its spawn traits), never on its name."""
    found = []
    allowed = [f"{top}.{where}" for where in NAMES_COMPARED_IN]
    for module in modules.values():
        if any(module.name == a or module.name.startswith(a + ".") for a in allowed):
            continue
        for node in ast.walk(module.tree):
            operands: list[ast.AST] = []
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
            elif isinstance(node, ast.MatchValue):
                operands = [node.value]
            for operand in operands:
                for literal in _literals(operand):
                    if literal in BACKEND_NAMES:
                        found.append(
                            f"{module.name}:{node.lineno}: compares a backend name "
                            f"({literal!r}): {ast.unparse(node)}"
                        )
    return found


def stray_backends(modules: dict[str, Module], top: str = "stockade") -> list[str]:
    """A backend's module outside the backends' package, and an import of one from
    another room (which reaches a backend through the sandbox's surface instead)."""
    package = f"{top}.{BACKENDS_PACKAGE}"
    found = [
        f"{module.name}: a backend's module outside {package}"
        for module in modules.values()
        if module.name.rpartition(".")[2] in BACKEND_MODULES and module.package != package
    ]
    for imp in imports(modules):
        target = imp.target
        if imp.name is not None and target == package and imp.name in BACKEND_MODULES:
            target = f"{package}.{imp.name}"
        if target.rpartition(".")[0] != package or target.rpartition(".")[2] not in BACKEND_MODULES:
            continue
        if imp.importer.room != "sandbox":
            found.append(f"{imp.where()}: {imp.importer.room}/ imports the backend {target}")
    return found


@pytest.fixture(scope="module")
def stockade_modules() -> dict[str, Module]:
    return load(SOURCE)


def test_no_import_cycles(stockade_modules):
    assert cycles(import_graph(stockade_modules)) == []


def test_no_folder_reaches_into_another_folders_private_module(stockade_modules):
    assert private_reach_ins(stockade_modules) == []


def test_other_folders_are_reached_only_through_their_surface(stockade_modules):
    assert surface_bypasses(stockade_modules) == []


def test_only_the_log_names_its_stores_and_their_format(stockade_modules):
    assert store_leaks(stockade_modules) == []


def test_faces_are_siblings(stockade_modules):
    """cli, mcp and acp import none of each other (faces/ is what they share)."""
    assert face_cross_imports(stockade_modules) == []


def test_agent_session_uses_no_private_member_of_the_harness(stockade_modules):
    assert harness_private_reaches(stockade_modules) == []


def test_pure_modules_import_no_event_loop(stockade_modules):
    pure = [m for m in stockade_modules.values() if is_pure(m) and not m.is_package]
    assert len(pure) > 40  # the rule still finds the pure core
    assert loop_imports(stockade_modules) == []


def test_the_never_arrows_do_not_exist(stockade_modules):
    assert forbidden_arrows(stockade_modules) == []


def test_backend_names_are_compared_only_in_the_backends(stockade_modules):
    assert name_comparisons(stockade_modules) == []


def test_backend_modules_live_and_are_reached_only_in_the_sandbox(stockade_modules):
    assert stray_backends(stockade_modules) == []
    # The rule still finds the backends: one module each, in their package.
    found = {
        m.rpartition(".")[2] for m in stockade_modules if m.startswith("stockade.sandbox.backends.")
    }
    assert found >= BACKEND_MODULES


def test_the_rules_backend_names_are_the_chains():
    from stockade.sandbox import backends

    assert {*backends.NAMES, backends.RUNNER_COMMAND} == BACKEND_NAMES


# --- the rules catch what they claim to catch --------------------------------------------


def _made_up(tmp_path: pathlib.Path, files: dict[str, str]) -> dict[str, Module]:
    for name, text in files.items():
        path = tmp_path / "stockade" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for directory in [tmp_path / "stockade", *(tmp_path / "stockade").rglob("*")]:
        if directory.is_dir() and not (directory / "__init__.py").exists():
            (directory / "__init__.py").write_text("")
    return load(tmp_path)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "config/a.py": "from .b import thing\n",
            "config/b.py": "def thing():\n    from .a import other\n",
            "config/c.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from .a import x\n",
        },
    )
    assert cycles(import_graph(modules)) == [["stockade.config.a", "stockade.config.b"]]


def test_a_cycle_through_a_package_init_is_found(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "sandbox/__init__.py": "from .x import y\n",
            "sandbox/x.py": "from ..policy.p import q\ny = 1\n",
            "policy/p.py": "from ..sandbox import _z\nq = 1\n",
            "sandbox/_z.py": "",
        },
    )
    assert cycles(import_graph(modules)) == [
        ["stockade.policy.p", "stockade.sandbox", "stockade.sandbox.x"]
    ]


def test_private_reach_ins_are_found_and_own_folder_ones_are_not(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "sandbox/_probe.py": "def _hidden(): ...\ndef shown(): ...\n",
            "sandbox/actor.py": "from ._probe import _hidden, shown\n",
            "cli/run.py": "from ..sandbox._probe import shown\nfrom ..sandbox import _probe\n",
            "cli/x.py": "from ..sandbox.actor import _private_name\n",
            "_modes.py": "",
            "errors.py": "from ._modes import x\n",
            "policy/knobs.py": "from .._modes import x\n",
            "sessionlog/_scan.py": "",
            "sessionlog/stores/jsonl.py": "from .._scan import scan\n",
        },
    )
    assert sorted(line.split(": ", 1)[1] for line in private_reach_ins(modules)) == [
        "stockade.cli.run imports stockade.sandbox._probe",
        "stockade.cli.run imports stockade.sandbox._probe",
        "stockade.cli.x imports _private_name from stockade.sandbox.actor",
        "stockade.policy.knobs imports stockade._modes",
    ]


def test_store_names_and_the_log_suffix_are_found_outside_the_log(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "harness/a.py": "from ..sessionlog import JsonlStore, build_store\n",
            "harness/b.py": "import os\ndef f(d, i):\n    return os.path.join(d, f'{i}.jsonl')\n",
            "acp/c.py": "from .. import sessionlog\ndef f(s):\n    return isinstance(s, sessionlog.MemoryStore)\n",
            "cli/d.py": "def f():\n    from ..sessionlog.stores.postgres import store as PostgresStore\n",
            "mcp/e.py": "WHICH = {'PostgresStore': 'sessionlog.stores.postgres'}\n",
            "testing.py": "from .sessionlog import MemoryStore as MemoryStore\nX = 'JsonlStore'\n",
            "cli/parser.py": "HELP = 'a .jsonl log file or a session id'\n",
            "sessionlog/stores/jsonl.py": "SUFFIX = '.jsonl'\nclass JsonlStore: ...\n",
            "sessionlog/__init__.py": "from .stores.jsonl import JsonlStore\n",
        },
    )
    found = sorted(store_leaks(modules))
    assert found == [
        "stockade.acp.c:3: names MemoryStore",
        "stockade.cli.d:2: names PostgresStore",
        "stockade.harness.a:1: names JsonlStore",
        "stockade.harness.b:3: names '.jsonl'",
        "stockade.mcp.e:1: names PostgresStore",
        "stockade.testing:2: names JsonlStore",
    ]


def test_a_pure_module_reaching_trio_through_another_is_found(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "policy/knobs.py": "from ..executor import _spawn_helper\n",
            "executor/_spawn_helper.py": "import trio\n",
            "executor/actor.py": "import trio\n",
            "cli/run.py": "import trio\n",
        },
    )
    found = loop_imports(modules)
    assert any(line.startswith("stockade.policy.knobs imports trio") for line in found)
    assert any(line.startswith("stockade.executor._spawn_helper imports trio") for line in found)
    assert not any("actor" in line.split(" imports ")[0] for line in found)
    assert not any(line.startswith("stockade.cli") for line in found)


def test_never_arrows_and_spawning_are_found(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "sessionlog/show.py": "from ..cli.errors import CliError\n",
            "sessionlog/stores/_select.py": (
                "def secrets():\n    from ...executor.environment import LIBPQ\n"
            ),
            "executor/x.py": "from ..approval import ask\n",
            "limits/z.py": "from ..executor import spawn\n",
            "sandbox/y.py": "import trio\nasync def f():\n    await trio.run_process(['x'])\n",
        },
    )
    found = forbidden_arrows(modules)
    assert any("sessionlog/ may never import cli/" in line for line in found)
    assert any("sessionlog/ may never import executor/" in line for line in found)
    assert any("executor/ may never import approval/" in line for line in found)
    assert any("limits/ may never import executor/" in line for line in found)
    assert any("sandbox/ spawns (trio.run_process)" in line for line in found)


def test_one_face_importing_another_is_found(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "acp/main.py": "def f():\n    from ..cli.session_show import run_show\n",
            "mcp/command.py": "from .. import cli\nfrom ..faces import load\n",
            "cli/entry.py": "import stockade.mcp.server\nfrom ..faces.sessions import show\n",
            "cli/run.py": "from .settings import x\n",
            "faces/sessions.py": "",
            "entry.py": "from .acp.main import f\nfrom .mcp.command import g\n",
        },
    )
    assert sorted(line.split(": ", 1)[1] for line in face_cross_imports(modules)) == [
        "acp/ imports cli/ (stockade.cli.session_show)",
        "cli/ imports mcp/ (stockade.mcp.server)",
        "mcp/ imports cli/ (stockade.cli)",
    ]


def test_a_reach_into_the_harness_private_members_is_found(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "harness/agent.py": (
                "class AgentSession:\n"
                "    def f(self, harness):\n"
                "        self.harness._open.add(1)\n"
                "        harness._pin(2)\n"
                "        self._mine = self.harness.register_session(3)\n"
            ),
        },
    )
    assert sorted(harness_private_reaches(modules)) == [
        "stockade.harness.agent:3: self.harness._open",
        "stockade.harness.agent:4: harness._pin",
    ]


def test_a_backend_name_compared_outside_the_backends_is_found(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "executor/actor.py": (
                "def f(facts):\n"
                "    if facts.backend == 'bwrap':\n"
                "        return 1\n"
                "    return facts.backend in ('landlock', 'none')\n"
            ),
            "cli/fast.py": (
                "def g(name):\n    match name:\n        case 'seatbelt':\n            return 1\n"
            ),
            "sandbox/backends/bwrap.py": "NAME = 'bwrap'\ndef same(n):\n    return n == 'bwrap'\n",
            "config/builtins.py": "def ok(v):\n    return v in ('auto', 'bwrap', 'landlock')\n",
            "executor/other.py": "def h(facts):\n    return facts.backend == 'none'\n",
        },
    )
    found = sorted(line.split(": ", 1)[0] for line in name_comparisons(modules))
    assert found == [
        "stockade.cli.fast:3",
        "stockade.executor.actor:2",
        "stockade.executor.actor:4",
    ]


def test_a_stray_backend_module_is_found(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "sandbox/backends/landlock.py": "NAME = 'landlock'\n",
            "sandbox/backends/bwrap.py": "from . import landlock\n",
            "sandbox/_confine.py": "from .backends import bwrap\n",
            "executor/landlock.py": "",
            "executor/_limits.py": "from ..sandbox.backends import landlock\n",
            "cli/fast.py": "from ..sandbox.backends.bwrap import NAME\n",
        },
    )
    assert sorted(line.split(": ", 1)[1] for line in stray_backends(modules)) == [
        "a backend's module outside stockade.sandbox.backends",
        "cli/ imports the backend stockade.sandbox.backends.bwrap",
        "executor/ imports the backend stockade.sandbox.backends.landlock",
    ]


def test_a_cross_folder_import_naming_a_submodule_is_found_and_a_package_import_is_not(
    tmp_path,
):
    modules = _made_up(
        tmp_path,
        {
            "sandbox/__init__.py": (
                "TYPE_CHECKING = False\nif TYPE_CHECKING:\n"
                "    from .config import ProviderConfig as ProviderConfig\n"
                "    from . import backends as backends\n"
            ),
            "sandbox/config.py": "class ProviderConfig: ...\nclass Hidden: ...\n",
            "sandbox/actor.py": "from .config import ProviderConfig\n",
            "sandbox/backends/__init__.py": "def named(name): ...\n",
            "sandbox/backends/bwrap.py": "from ..config import ProviderConfig\n",
            "cli/run.py": (
                "from ..sandbox import ProviderConfig, backends\n"
                "from ..sandbox.backends import named\n"
                "from .. import sandbox, messages\n"
                "from ..messages import Shell\n"
            ),
            "cli/settings.py": (
                "from ..sandbox.config import ProviderConfig\n"
                "TYPE_CHECKING = False\nif TYPE_CHECKING:\n"
                "    from ..sandbox.backends.bwrap import x\n"
                "def f():\n    import stockade.sandbox.config\n"
            ),
            "cli/probe.py": "from ..sandbox import Hidden, config\n",
            "messages.py": "class Shell: ...\n",
        },
    )
    assert sorted(line.split(": ", 1)[1] for line in surface_bypasses(modules)) == [
        "stockade.cli.probe imports Hidden, which stockade.sandbox does not export",
        "stockade.cli.probe imports config, which stockade.sandbox does not export",
        "stockade.cli.settings imports stockade.sandbox.backends.bwrap, not stockade.sandbox.backends",
        "stockade.cli.settings imports stockade.sandbox.config, not stockade.sandbox",
        "stockade.cli.settings imports stockade.sandbox.config, not stockade.sandbox",
    ]


def test_a_lazy_name_is_followed_to_the_module_it_loads(tmp_path):
    modules = _made_up(
        tmp_path,
        {
            "approval/__init__.py": (
                "TYPE_CHECKING = False\nif TYPE_CHECKING:\n"
                "    from ._chain import Answer as Answer\n"
                "    from .actor import ApprovalClient as ApprovalClient\n"
            ),
            "approval/_chain.py": "class Answer: ...\n",
            "approval/actor.py": "import trio\nfrom ..tools import ask\n",
            "tools/__init__.py": "from .fs import ask as ask\n",
            "tools/fs.py": "from ..approval import ApprovalClient\nask = 1\n",
            "tools/_escalation.py": "from ..approval import Answer\n",
        },
    )
    assert cycles(import_graph(modules)) == [
        ["stockade.approval.actor", "stockade.tools", "stockade.tools.fs"]
    ]
    found = loop_imports(modules)
    assert any(line.startswith("stockade.tools.fs imports trio") for line in found)
    assert not any(line.startswith("stockade.tools._escalation") for line in found)

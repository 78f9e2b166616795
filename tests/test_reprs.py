"""`stockade.reprs.fields_repr` writes what attrs' generated `__repr__` would, and every
attrs class of stockade uses it (or has no repr of attrs' making): attrs compiles one per
class at import otherwise."""

from __future__ import annotations

import ast
from pathlib import Path

import attrs

from stockade.reprs import fields_repr


def _pair(**options: object) -> tuple[type, type]:
    """The same record twice: attrs' own repr, and `fields_repr`."""

    def make(shared: bool) -> type:
        body: dict[str, object] = {
            "__annotations__": {"name": "str", "secret": "str", "count": "int", "later": "int"},
            "name": attrs.field(),
            "secret": attrs.field(default="s", repr=False),
            "count": attrs.field(default=3, repr=lambda value: f"<{value} items>"),
            "later": attrs.field(init=False),
        }
        if shared:
            body["__repr__"] = fields_repr
        return attrs.define(type("Record", (), body), **options)  # type: ignore[call-overload,no-any-return]

    return make(False), make(True)


def test_the_shared_repr_is_attrs_own_for_mutable_and_frozen_records():
    for options in ({}, {"frozen": True}, {"slots": False}):
        generated, shared = _pair(**options)
        assert "__repr__" in vars(shared) and vars(shared)["__repr__"] is fields_repr
        for record in (generated("x"), shared("x")):
            if not options.get("frozen"):
                assert "later=NOTHING" in repr(record)
        assert repr(shared("it's")) == repr(generated("it's"))


def test_a_field_not_shown_stays_out_and_a_set_later_field_is_shown():
    generated, shared = _pair()
    record = shared("x", secret="hunter2")
    record.later = 5
    assert repr(record) == "Record(name='x', count=<3 items>, later=5)"
    assert "hunter2" not in repr(record)
    twin = generated("x", secret="hunter2")
    twin.later = 5
    assert repr(record) == repr(twin)


def test_a_record_that_holds_itself_is_shown_once():
    @attrs.define(eq=False)
    class Node:
        __repr__ = fields_repr

        label: str
        child: object = None

    node = Node("a")
    node.child = node
    assert repr(node) == "Node(label='a', child=...)"


def test_a_subclass_shows_its_own_name_and_every_field():
    @attrs.frozen
    class Base:
        __repr__ = fields_repr

        a: int

    @attrs.frozen
    class Derived(Base):
        __repr__ = fields_repr

        b: str = "b"

    assert repr(Derived(1)) == "Derived(a=1, b='b')"


SOURCE = Path(__file__).resolve().parents[1] / "src" / "stockade"
DECORATORS = {"attrs.define", "attrs.frozen", "attrs.mutable", "attrs.attrs", "attr.s"}


def attrs_classes_with_a_generated_repr(text: str) -> list[str]:
    """The attrs classes in `text` for which attrs would compile a `__repr__`: not
    `repr=False`, and none of their own in the body."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.ClassDef):
            continue
        decorators = [
            d
            for d in node.decorator_list
            if ast.unparse(d.func if isinstance(d, ast.Call) else d) in DECORATORS
        ]
        if not decorators:
            continue
        if any(
            keyword.arg == "repr"
            and isinstance(keyword.value, ast.Constant)
            and keyword.value.value is False
            for decorator in decorators
            if isinstance(decorator, ast.Call)
            for keyword in decorator.keywords
        ):
            continue
        own = any(
            (isinstance(statement, ast.FunctionDef) and statement.name == "__repr__")
            or (
                isinstance(statement, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__repr__" for t in statement.targets)
            )
            for statement in node.body
        )
        if not own:
            found.append(node.name)
    return found


def test_no_attrs_class_of_stockade_has_its_repr_compiled_at_import():
    generated = {
        f"{path.relative_to(SOURCE)}: {name}"
        for path in SOURCE.rglob("*.py")
        for name in attrs_classes_with_a_generated_repr(path.read_text())
    }
    assert not generated, "add `__repr__ = fields_repr` (stockade.reprs) to each"


def test_a_class_left_to_attrs_repr_is_found():
    text = """
@attrs.frozen(kw_only=True)
class Generated:
    a: int

@attrs.define(eq=False, repr=False)
class Without:
    a: int

@attrs.frozen
class Shared:
    __repr__ = fields_repr
    a: int

@attrs.define
class Own:
    a: int
    def __repr__(self) -> str:
        return "own"

class Plain:
    a: int
"""
    assert attrs_classes_with_a_generated_repr(text) == ["Generated"]


def test_no_attrs_class_of_stockade_has_a_repr_of_attrs_making_however_it_is_spelled():
    """What the AST check above cannot see, the classes themselves say: a decorator
    imported by name (`from attrs import define`), `attr.define`, a module alias,
    `repr=True` (which overrides the body's `__repr__`)."""
    import importlib
    import inspect
    import pkgutil

    import stockade

    generated = set()
    for module in pkgutil.walk_packages(stockade.__path__, "stockade."):
        if module.name.endswith("__main__"):
            continue
        for value in vars(importlib.import_module(module.name)).values():
            if not (inspect.isclass(value) and attrs.has(value)):
                continue
            own = vars(value).get("__repr__")
            code = getattr(own, "__code__", None)
            if code is not None and code.co_filename.startswith("<attrs generated"):
                generated.add(f"{value.__module__}.{value.__qualname__}")
    assert not generated, "add `__repr__ = fields_repr` (stockade.reprs) to each"

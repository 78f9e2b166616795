"""The `__repr__` stockade's attrs classes share: attrs' own format, read from the
class's fields when asked, instead of one generated and compiled per class at import.

attrs compiles each class's `__repr__` from an f-string as the class is made, about a
quarter of a millisecond a class (docs/performance.md); a `stockade run` makes dozens.
A class opts in with `__repr__ = fields_repr` in its body (attrs' `auto_detect` then
makes none); tests/test_reprs.py holds every attrs class to it or `repr=False`.
"""

from __future__ import annotations

from reprlib import recursive_repr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@recursive_repr()
def fields_repr(self: Any) -> str:
    """`Name(field=value, ...)` as attrs writes it: its fields in order, each one's
    `repr` option obeyed (False: left out; a callable: used instead of `repr`), a field
    not set yet (init=False) shown as attrs' NOTHING, and a record that holds itself as
    `...`."""
    from attrs import NOTHING, fields

    shown = []
    for field in fields(type(self)):
        if field.repr is False:
            continue
        value = getattr(self, field.name, NOTHING)
        text = repr(value) if field.repr is True else field.repr(value)
        shown.append(f"{field.name}={text}")
    name = type(self).__qualname__.rsplit(">.", 1)[-1]
    return f"{name}({', '.join(shown)})"

"""Lazy re-exports for a room's `__init__.py`: a name is imported from its module on
first use, so importing the room costs only what is asked for. Standard library only.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: `table` maps each re-exported name to the
    module beneath `package` that defines it (dotted, relative), or to "" when the
    name is a submodule itself. A value found is bound into `namespace`, so each name
    is looked up once."""

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # The builtin, not importlib (whose import is half a millisecond of `stockade exec`).
        module = __import__(f"{package}.{where or name}", fromlist=[name])
        value = module if not where else getattr(module, name)
        namespace[name] = value
        return value

    return __getattr__

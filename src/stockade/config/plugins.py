"""The plugin descriptor an entry point names, and the lookup from entry names to plugins.

Pure metadata: importing this module loads no plugin; a `PluginTable` loads on first lookup
(`builtins.default_plugins()` is the table of this environment).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib.metadata import EntryPoint
from typing import Any, Final, Literal, Protocol, get_args

import attrs

from ..errors import ConfigError
from ..reprs import fields_repr

ENTRY_POINT_GROUP: Final = "stockade.plugins"

PluginKind = Literal["sandbox", "executor", "approval", "presets", "log", "fs", "mcp"]
KINDS: Final[tuple[str, ...]] = get_args(PluginKind)

# Kinds whose plugins can confine: `confines` means nothing for the others.
CONFINING_KINDS: Final = ("executor", "fs")


class PluginActor(Protocol):
    """What a third-party `factory` returns: an actor the harness starts in its nursery."""

    @property
    def client(self) -> Any:
        """The small object the tools call once the actor has started."""
        ...

    async def run(self, *, task_status: Any = ...) -> None:
        """Serve until cancelled; call `task_status.started()` after setup."""
        ...


def _check_kind(_instance: object, _attribute: object, kind: str) -> None:
    if kind not in KINDS:
        raise ConfigError(f"unknown plugin kind {kind!r} (allowed: {', '.join(KINDS)})")


def _check_config_type(_instance: object, _attribute: object, config_type: type) -> None:
    if not (isinstance(config_type, type) and attrs.has(config_type)):
        raise ConfigError(f"a plugin's config_type must be an attrs class, got {config_type!r}")


def _check_confines(instance: Plugin, _attribute: object, confines: bool) -> None:
    if confines and instance.kind not in CONFINING_KINDS:
        raise ConfigError(
            f"plugin {instance.name!r}: only {' and '.join(CONFINING_KINDS)} plugins confine"
        )


@attrs.frozen(kw_only=True)
class Plugin:
    """What a `stockade.plugins` entry point loads: one composable capability.

    `config_type` is the attrs class an entry's `config:` mapping is structured into
    (every field needs a default or the entry must give it; unknown keys are errors).
    `confines` says an executor confines its commands, or an fs plugin fences its
    paths, under the session's sandbox policy.

    `factory` is for third-party plugins: the harness calls `factory(config)` with
    the structured config and starts the returned `PluginActor`. The built-ins leave
    it None because the harness constructs them itself.
    """

    __repr__ = fields_repr

    name: str
    kind: PluginKind = attrs.field(validator=_check_kind)
    config_type: type = attrs.field(validator=_check_config_type)
    confines: bool = attrs.field(default=False, validator=_check_confines)
    factory: Callable[[Any], PluginActor] | None = None
    summary: str = ""


class PluginLoadError(ConfigError):
    """An entry point could not be imported, or does not name a `Plugin`."""


class PluginTable(Mapping[str, Plugin]):
    """Names -> plugins: `base` overlaid by entry points, each loaded on first lookup.

    An entry point wins over a `base` plugin of the same name, so an installed
    distribution's registration is authoritative and `base` is only the fallback
    for a source tree whose metadata is not installed.
    """

    def __init__(self, base: Mapping[str, Plugin], points: Iterable[EntryPoint]) -> None:
        self._base = dict(base)
        self._points: dict[str, list[EntryPoint]] = {}
        for point in points:
            same = self._points.setdefault(point.name, [])
            # The same registration seen twice (a stale dist-info beside an
            # editable install) is one registration, not a conflict.
            if all(other.value != point.value for other in same):
                same.append(point)
        self._loaded: dict[str, Plugin] = {}

    def __getitem__(self, name: str) -> Plugin:
        if name in self._loaded:
            return self._loaded[name]
        points = self._points.get(name)
        if not points:
            return self._base[name]
        if len(points) > 1:
            sources = ", ".join(sorted(point.value for point in points))
            raise PluginLoadError(f"plugin {name!r} is registered more than once ({sources})")
        plugin = _load_point(points[0])
        self._loaded[name] = plugin
        return plugin

    def __iter__(self) -> Iterator[str]:
        yield from self._base
        yield from (name for name in self._points if name not in self._base)

    def __len__(self) -> int:
        return len(self._base.keys() | self._points.keys())

    def __contains__(self, name: object) -> bool:
        return name in self._base or name in self._points


def _load_point(point: EntryPoint) -> Plugin:
    try:
        plugin = point.load()
    except Exception as exc:  # a third party's import error must not read as ours
        raise PluginLoadError(
            f"plugin {point.name!r} ({point.value}) failed to load: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(plugin, Plugin):
        raise PluginLoadError(
            f"plugin {point.name!r} ({point.value}) is a {type(plugin).__name__}, not a Plugin"
        )
    return plugin

"""Loading a composition: find the file, read it, structure every entry, check the whole.

All problems of one source are collected and raised together; loading never writes anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

import attrs

from ..errors import ConfigError
from ..reprs import fields_repr
from ._converter import make_converter
from ._problems import (
    CompositionError,
    Locator,
    MappingLocator,
    Problem,
    YamlLocator,
    flatten,
    render,
)
from ._problems import Path as KeyPath
from ._yaml import SyntaxProblem, TagContext, parse, resolve_tags
from .builtins import default_plugins
from .plugins import Plugin
from .types import NonEmptyStr

CONFIG_ENV: Final = "STOCKADE_CONFIG"
CONFIG_FILENAME: Final = "stockade.yml"
DEFAULT_SOURCE: Final = "<embedded default>"
MAPPING_SOURCE: Final = "<mapping>"

Source = str | os.PathLike[str] | Sequence[Mapping[str, Any]] | None


@attrs.frozen(kw_only=True)
class EntrySpec:
    """The shape of one list item before its plugin is known."""

    __repr__ = fields_repr

    id: NonEmptyStr
    name: NonEmptyStr
    config: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class Entry:
    """One mounted plugin: its id, name, descriptor, structured config and source location."""

    __repr__ = fields_repr

    id: str
    name: str
    plugin: Plugin
    config: Any
    position: str

    @property
    def kind(self) -> str:
        return self.plugin.kind


@attrs.frozen(kw_only=True)
class Composition:
    """The validated entries, in source order, and where they came from."""

    __repr__ = fields_repr

    entries: tuple[Entry, ...]
    source: str
    # The real path of the file it was read from (None: the embedded default or a
    # list given in code). The trust base checks it before honouring what it says.
    path: str | None = None

    def get(self, entry_id: str) -> Entry | None:
        return next((entry for entry in self.entries if entry.id == entry_id), None)

    def of_kind(self, kind: str) -> Entry | None:
        # At most one entry per kind: the loader rejects a second.
        return next((entry for entry in self.entries if entry.kind == kind), None)

    @property
    def provider(self) -> Entry | None:
        return self.of_kind("sandbox")

    @property
    def executor(self) -> Entry | None:
        return self.of_kind("executor")

    @property
    def approval(self) -> Entry | None:
        return self.of_kind("approval")

    @property
    def presets(self) -> Entry | None:
        return self.of_kind("presets")

    @property
    def session_log(self) -> Entry | None:
        return self.of_kind("log")

    @property
    def fs(self) -> Entry | None:
        return self.of_kind("fs")

    @property
    def mcp(self) -> Entry | None:
        return self.of_kind("mcp")

    @property
    def confines(self) -> bool:
        """True when the mounted executor confines: the escalation fields exist exactly then."""
        return self.executor is not None and self.executor.plugin.confines


def find_config(
    explicit: str | os.PathLike[str] | None,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Path | None:
    """`--config FILE` > `$STOCKADE_CONFIG` > `./stockade.yml`; None means the embedded default.

    A file named explicitly (flag or variable) must exist.
    """
    env = os.environ if environ is None else environ
    here = Path(os.getcwd() if cwd is None else cwd)
    for named, how in ((explicit, "--config"), (env.get(CONFIG_ENV) or None, CONFIG_ENV)):
        if named is None:
            continue
        path = here / named
        if not path.is_file():
            state = "is not a file" if path.exists() else "does not exist"
            raise ConfigError(f"config file {os.fspath(named)!r} (from {how}) {state}")
        return path
    found = here / CONFIG_FILENAME
    return found if found.is_file() else None


def default_composition_text() -> str:
    """The embedded default as YAML, for a user to copy and edit."""
    return resources.files(__package__).joinpath("default.yml").read_text(encoding="utf-8")


def load_composition(
    source: Source = None,
    *,
    plugins: Mapping[str, Plugin] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Composition:
    """A validated composition from a file path, a list of entry mappings, or None (the default).

    `plugins` maps entry names to descriptors (default: built-ins overlaid by the
    `stockade.plugins` entry points). `environ` and `cwd` are what `!env` and `!cwd`
    read (default: this process's). Raises one CompositionError with every problem.
    """
    here = os.path.abspath(os.getcwd() if cwd is None else cwd)
    if source is None:
        return loads_composition(
            default_composition_text(),
            filename=DEFAULT_SOURCE,
            base_dir=here,
            plugins=plugins,
            environ=environ,
            cwd=here,
        )
    if isinstance(source, str | os.PathLike):
        filename = os.fspath(source)
        path = Path(here, filename)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise ConfigError(f"{filename}: cannot read: {reason}") from None
        loaded = loads_composition(
            text,
            filename=filename,
            base_dir=str(path.parent),
            plugins=plugins,
            environ=environ,
            cwd=here,
        )
        return attrs.evolve(loaded, path=os.path.realpath(path))
    if isinstance(source, Mapping):
        raise CompositionError([f"{MAPPING_SOURCE}: expected a list of entries, got a mapping"])
    return _build(list(source), MappingLocator(MAPPING_SOURCE), [], plugins, MAPPING_SOURCE)


def loads_composition(
    text: str,
    *,
    filename: str = "<string>",
    base_dir: str | os.PathLike[str] | None = None,
    plugins: Mapping[str, Plugin] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Composition:
    """A validated composition from YAML text; `filename` names it in messages.

    `!path` resolves against `base_dir` (default: `cwd`).
    """
    here = os.path.abspath(os.getcwd() if cwd is None else cwd)
    root = parse(text)
    if isinstance(root, SyntaxProblem):
        raise CompositionError([f"{filename}:{root.line + 1}:{root.col + 1}: {root.message}"])
    context = TagContext(
        cwd=here,
        environ=os.environ if environ is None else environ,
        base_dir=os.path.abspath(here if base_dir is None else base_dir),
    )
    tag_problems = resolve_tags(root, context)
    return _build(root, YamlLocator(filename, root), tag_problems, plugins, filename)


def _build(
    root: Any,
    locator: Locator,
    problems: list[Problem],
    plugins: Mapping[str, Plugin] | None,
    source: str,
) -> Composition:
    table = default_plugins() if plugins is None else plugins
    if root is None:
        problems.append(Problem((), "empty document; expected a list of entries"))
    elif not isinstance(root, list | tuple):
        kind = "a mapping" if isinstance(root, Mapping) else f"a {type(root).__name__}"
        problems.append(Problem((), f"expected a list of entries (id, name, config), got {kind}"))
    tagged = [problem.path for problem in problems]
    checker = _Checker(table, locator)
    for index, raw in enumerate(root if isinstance(root, list | tuple) else ()):
        checker.entry(index, raw)
    problems += [p for p in checker.problems if not _under_any(p.path, tagged)]
    problems += checker.whole()
    if problems:
        raise CompositionError(render(problems, locator))
    return Composition(entries=tuple(checker.entries), source=source)


def _under_any(path: KeyPath, prefixes: list[KeyPath]) -> bool:
    # A tag that failed already said so; its placeholder value must not fail twice.
    return any(path[: len(prefix)] == prefix for prefix in prefixes)


class _Checker:
    """Structures entries one by one, then checks the rules that span entries."""

    def __init__(self, plugins: Mapping[str, Plugin], locator: Locator) -> None:
        self.plugins = plugins
        self.locator = locator
        self.converter = make_converter()
        self.problems: list[Problem] = []
        self.entries: list[Entry] = []
        self.mounted: list[tuple[int, str, Plugin]] = []  # resolved, even if invalid otherwise
        self.ids: dict[str, int] = {}

    def entry(self, index: int, raw: Any) -> None:
        spec: EntrySpec | None = None
        try:
            spec = self.converter.structure(raw, EntrySpec)
        except Exception as exc:
            self.problems += flatten(exc, (index,))
        # Keep going with what is usable, so one run reports the config's mistakes too.
        name = spec.name if spec else (raw.get("name") if isinstance(raw, Mapping) else None)
        if spec is not None:
            first = self.ids.setdefault(spec.id, index)
            if first != index:
                where, _ = self.locator.where((first, "id"), "value")
                self.problems.append(
                    Problem((index, "id"), f"duplicate id {spec.id!r} (first at {where})")
                )
        if not isinstance(name, str) or not name.strip():
            return
        plugin = self._plugin(index, name)
        if plugin is None:
            return
        self.mounted.append((index, name, plugin))
        raw_config = raw.get("config")
        if raw_config is not None and not isinstance(raw_config, Mapping):
            return  # EntrySpec already said it must be a mapping
        try:
            config: object = self.converter.structure(raw_config or {}, plugin.config_type)
        except Exception as exc:
            self.problems += flatten(exc, (index, "config"))
            return
        if spec is not None:
            position, _ = self.locator.where((index,), "node")
            self.entries.append(
                Entry(id=spec.id, name=name, plugin=plugin, config=config, position=position)
            )

    def _plugin(self, index: int, name: str) -> Plugin | None:
        if name not in self.plugins:
            known = ", ".join(sorted(self.plugins))
            self.problems.append(
                Problem((index, "name"), f"unknown plugin {name!r} (allowed: {known})")
            )
            return None
        try:
            plugin = self.plugins[name]
        except ConfigError as exc:
            self.problems.append(Problem((index, "name"), str(exc)))
            return None
        if plugin.name != name:
            self.problems.append(
                Problem((index, "name"), f"{name!r} resolves to a plugin named {plugin.name!r}")
            )
            return None
        return plugin

    def whole(self) -> list[Problem]:
        """The rules between entries: one per kind, and what each kind needs beside it."""
        problems: list[Problem] = []
        first_of: dict[str, int] = {}
        for index, name, plugin in self.mounted:
            first = first_of.setdefault(plugin.kind, index)
            if first != index:
                where, _ = self.locator.where((first,), "node")
                problems.append(
                    Problem(
                        (index, "name"),
                        f"a second {plugin.kind} entry ({name!r}); a composition mounts "
                        f"one {plugin.kind} (the first is at {where})",
                    )
                )
        kinds = {plugin.kind for _index, _name, plugin in self.mounted}
        confining_executor = any(
            plugin.kind == "executor" and plugin.confines for _i, _n, plugin in self.mounted
        )
        for index, name, plugin in self.mounted:
            needs: list[str] = []
            if plugin.kind == "executor" and plugin.confines and "sandbox" not in kinds:
                needs.append("sandbox")
            if plugin.kind == "presets":
                if "approval" not in kinds:
                    needs.append("approval")
                if not confining_executor:
                    needs.append("confining executor")
            if plugin.kind == "fs" and plugin.confines and not confining_executor:
                needs.append("confining executor")
            problems += [
                Problem((index, "name"), self._needs_message(name, plugin, need)) for need in needs
            ]
        return problems

    def _needs_message(self, name: str, plugin: Plugin, need: str) -> str:
        why = {
            "sandbox": "confines commands and needs a sandbox provider entry",
            "approval": "needs an approval entry",
            "confining executor": (
                "fences by the sandbox policy and needs a confining executor entry"
                if plugin.kind == "fs"
                else "needs a confining executor entry"
            ),
        }[need]
        return f"{name!r} {why} (allowed: {', '.join(self._names_for(need))})"

    def _names_for(self, need: str) -> list[str]:
        # Only on the error path: loading every plugin here is a price worth the hint.
        names = []
        for name in sorted(self.plugins):
            try:
                plugin = self.plugins[name]
            except ConfigError:
                continue
            if need == "confining executor":
                if plugin.kind == "executor" and plugin.confines:
                    names.append(name)
            elif plugin.kind == need:
                names.append(name)
        return names

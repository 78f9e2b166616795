"""What a command (`Limits`) and a whole session (`SessionLimits`) may use: the defaults,
and the operator's or caller's `NAME: VALUE` overrides merged over them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import attrs

from ..errors import ConfigError, brief
from ..reprs import fields_repr
from ._values import (
    COMMAND_MEMORY_SHARE,
    DEFAULT_FILE_SIZE,
    DEFAULT_OPEN_FILES,
    DEFAULT_OUTPUT_BYTES,
    DEFAULT_PROCESSES,
    DEFAULT_SESSION_PROCESSES,
    SESSION_MEMORY_SHARE,
    check_value,
    known,
    parse_value,
    share,
)
from ._values import memtotal as read_memtotal

_L = TypeVar("_L", "Limits", "SessionLimits")


def _checked(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    check_value(attribute.name, value)


def _command_memory() -> int | None:
    return share(read_memtotal(), COMMAND_MEMORY_SHARE)


def _session_memory() -> int | None:
    return share(read_memtotal(), SESSION_MEMORY_SHARE)


@attrs.frozen(kw_only=True)
class Limits:
    """What one command may use; None is unlimited. `wall_seconds` is its timeout.

    `Limits()` holds the defaults (memory: half of this host's MemTotal, read when it
    is built); `Limits.defaults(memtotal)` builds them for a given MemTotal."""

    __repr__ = fields_repr

    processes: int | None = attrs.field(default=DEFAULT_PROCESSES, validator=_checked)
    memory: int | None = attrs.field(factory=_command_memory, validator=_checked)
    cpu_seconds: float | None = attrs.field(default=None, validator=_checked)
    wall_seconds: float | None = attrs.field(default=None, validator=_checked)
    output_bytes: int | None = attrs.field(default=DEFAULT_OUTPUT_BYTES, validator=_checked)
    file_size: int | None = attrs.field(default=DEFAULT_FILE_SIZE, validator=_checked)
    open_files: int | None = attrs.field(default=DEFAULT_OPEN_FILES, validator=_checked)

    @classmethod
    def defaults(cls, memtotal: int | None = None) -> Limits:
        """The defaults for a host of `memtotal` bytes (read from /proc/meminfo when
        None; memory is unlimited when that cannot be read)."""
        total = read_memtotal() if memtotal is None else memtotal
        return cls(memory=share(total, COMMAND_MEMORY_SHARE))

    def merged(self, overrides: Mapping[str, object], *, memtotal: int | None = None) -> Limits:
        """These limits with `NAME: VALUE` overrides applied (values parsed or raw, as
        `parse_value` reads them), or a ConfigError naming the bad name or value."""
        return _merged(self, overrides, "limit", memtotal)

    def items(self) -> tuple[tuple[str, int | float | None], ...]:
        """(name, value) of every limit, in declared order."""
        return tuple((field.name, getattr(self, field.name)) for field in attrs.fields(Limits))


@attrs.frozen(kw_only=True)
class SessionLimits:
    """What a whole session may use together; None is unlimited. Background jobs beyond
    `running_jobs` queue until one ends."""

    __repr__ = fields_repr

    processes: int | None = attrs.field(default=DEFAULT_SESSION_PROCESSES, validator=_checked)
    memory: int | None = attrs.field(factory=_session_memory, validator=_checked)
    running_jobs: int | None = attrs.field(default=None, validator=_checked)

    @classmethod
    def defaults(cls, memtotal: int | None = None) -> SessionLimits:
        """The defaults for a host of `memtotal` bytes (as `Limits.defaults`)."""
        total = read_memtotal() if memtotal is None else memtotal
        return cls(memory=share(total, SESSION_MEMORY_SHARE))

    def merged(
        self, overrides: Mapping[str, object], *, memtotal: int | None = None
    ) -> SessionLimits:
        """These limits with `NAME: VALUE` overrides applied (as `Limits.merged`)."""
        return _merged(self, overrides, "session limit", memtotal)


LIMIT_NAMES = tuple(field.name for field in attrs.fields(Limits))
SESSION_LIMIT_NAMES = tuple(field.name for field in attrs.fields(SessionLimits))


def _merged(limits: _L, overrides: Mapping[str, object], what: str, memtotal: int | None) -> _L:
    names = tuple(attrs.fields_dict(type(limits)))
    changes: dict[str, Any] = {}
    for given, raw in overrides.items():
        name = str(given).replace("-", "_")
        if name not in names:
            raise ConfigError(f"unknown {what} {brief(str(given))} (known: {known(names)})")
        changes[name] = parse_value(name, raw, memtotal=memtotal)
    return attrs.evolve(limits, **changes)

"""The limits' names and their values: parsing `NAME=VALUE` and YAML values, checking
them, formatting them for people, and the host's MemTotal that `N%` is a share of.
"""

from __future__ import annotations

from ..errors import ConfigError, brief

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Mapping

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
TIB = 1024 * GIB

# The defaults (docs/limits.md), here so that `stockade exec` reads them without attrs.
DEFAULT_PROCESSES = 512
DEFAULT_OUTPUT_BYTES = MIB  # the executor's capture cap
DEFAULT_FILE_SIZE = 16 * GIB
DEFAULT_OPEN_FILES = 65536
DEFAULT_SESSION_PROCESSES = 8192
# Shares of MemTotal: a command may take half the host, a session three quarters.
COMMAND_MEMORY_SHARE = 0.5
SESSION_MEMORY_SHARE = 0.75

# Each limit's kind decides its syntax, its check and its format.
SIZE, SECONDS, COUNT = "size", "seconds", "count"
KINDS: Mapping[str, str] = {
    "processes": COUNT,
    "memory": SIZE,
    "cpu_seconds": SECONDS,
    "wall_seconds": SECONDS,
    "output_bytes": SIZE,
    "file_size": SIZE,
    "open_files": COUNT,
    "running_jobs": COUNT,
}

UNLIMITED_WORDS = frozenset({"null", "none", "unlimited", "~"})
# Binary, every spelling: K = KB = KiB = 1024 (a limit is never meant in powers of ten).
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    **{spelling: KIB for spelling in ("k", "kb", "kib")},
    **{spelling: MIB for spelling in ("m", "mb", "mib")},
    **{spelling: GIB for spelling in ("g", "gb", "gib")},
    **{spelling: TIB for spelling in ("t", "tb", "tib")},
}
_SECOND_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}
_FORMAT_UNITS = ((TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB"))
# A sign is read so that "-1" is refused as too small, not as unreadable.
# Compiled where a value is read (`re` is not imported on `stockade exec`'s path).
_NUMBER = r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*([a-z%]*)\s*"

_HINTS = {
    SIZE: "a number of bytes or a size such as 512M or 2G (K, M, G, T are binary: 1K = 1024)",
    SECONDS: "a number of seconds or a duration such as 90s, 2m or 1.5h",
    COUNT: "a whole number such as 512",
}


def memtotal(path: str = "/proc/meminfo") -> int | None:
    """The host's MemTotal in bytes, or None when it cannot be read. (Inside a
    container this is still the host's memory, not the container's limit.)"""
    try:
        # Bytes, decoded as ASCII: a text file's "ascii" codec is a module of its own,
        # which `stockade exec` would load for this alone.
        with open(path, "rb") as meminfo:
            for raw in meminfo:
                key, _, rest = raw.decode("ascii").partition(":")
                if key == "MemTotal":
                    number, _, unit = rest.strip().partition(" ")
                    return int(number) * (KIB if unit == "kB" else 1)
    except (OSError, ValueError):
        return None
    return None


def share(total: int | None, fraction: float) -> int | None:
    """`fraction` of `total` bytes, rounded down to a MiB (None when total is unknown)."""
    if total is None:
        return None
    return int(total * fraction) // MIB * MIB


def known(names: Mapping[str, object] | tuple[str, ...]) -> str:
    return ", ".join(names)


def kind_of(name: str) -> str:
    """The kind of the limit `name`, or a ConfigError listing the known names."""
    kind = KINDS.get(name)
    if kind is None:
        raise ConfigError(f"unknown limit {brief(str(name))} (known: {known(KINDS)})")
    return kind


def check_value(name: str, value: object) -> int | float | None:
    """`value` itself when it is a valid value of limit `name` (None: unlimited), else a
    ConfigError that says what is allowed."""
    kind = kind_of(name)
    if value is None:
        return None
    if kind == SECONDS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _unreadable(name, value)
        import math  # a module of its own (exec reads no config values)

        if not math.isfinite(value):
            raise ConfigError(f"{name} must be a finite number of seconds, or null for unlimited")
        if value <= 0:
            raise ConfigError(f"{name} must be more than 0 seconds, or null for unlimited")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise _unreadable(name, value)
    if value < 1:
        least = "1 byte" if kind == SIZE else "1"
        raise ConfigError(f"{name} must be at least {least}, or null for unlimited")
    return value


def parse_value(name: str, raw: object, *, memtotal: int | None = None) -> int | float | None:
    """The value of limit `name` from `raw`: a parsed value, a YAML scalar or the text of
    `--limit NAME=VALUE`.

    - sizes (memory, output_bytes, file_size): bytes, or a number with a binary unit,
      K/KB/KiB = 1024, M/MB/MiB, G/GB/GiB, T/TB/TiB (any case; a fraction is rounded
      down to a byte); memory also takes `N%` of MemTotal (`memtotal`, read
      from /proc/meminfo when not given), rounded down to a MiB;
    - seconds (cpu_seconds, wall_seconds): a number, or one with s, m or h (`90s`,
      `2m`, `1.5h`);
    - counts (processes, open_files, running_jobs): a whole number;
    - unlimited: None (YAML null), or the words null, none, unlimited.
    Zero and negative values are refused: unlimited is said with null.
    """
    kind = kind_of(name)
    if not isinstance(raw, str):
        return check_value(name, raw)
    text = raw.strip()
    if text.lower() in UNLIMITED_WORDS:
        return None
    import re

    matched = re.fullmatch(_NUMBER, text, re.IGNORECASE)
    if matched is None:
        raise _unreadable(name, raw)
    number, unit = matched[1], matched[2].lower()
    whole = re.fullmatch(r"[+-]?\d+", number) is not None
    if unit == "%":
        if name != "memory":
            raise ConfigError(f"{name}: only memory takes a share of MemTotal (N%)")
        return check_value(name, _percent(float(number), memtotal))
    if kind == SIZE and unit in _SIZE_UNITS and _SIZE_UNITS[unit] == 1 and not whole:
        raise ConfigError(f"{name}: {brief(raw)} is not a whole number of bytes")
    try:
        value = _scaled(kind, number, unit, whole)
    except (OverflowError, ValueError):  # a number too long or too large to hold
        value = None
    if value is None:
        raise _unreadable(name, raw)
    return check_value(name, value)


def _scaled(kind: str, number: str, unit: str, whole: bool) -> int | float | None:
    """`number` in `unit` as bytes, seconds or a count; None when `unit` is not one of
    `kind`'s."""
    if kind == SIZE and unit in _SIZE_UNITS:
        return int(float(number) * _SIZE_UNITS[unit]) if unit else int(number)
    if kind == SECONDS and unit in _SECOND_UNITS:
        return float(number) * _SECOND_UNITS[unit]
    if kind == COUNT and not unit and whole:
        return int(number)
    return None


def _percent(percent: float, total: int | None) -> int:
    if percent <= 0:
        raise ConfigError("memory must be more than 0%, or null for unlimited")
    if percent > 100:
        raise ConfigError(f"memory={percent:g}% is more than MemTotal; give at most 100%")
    if total is None:
        total = memtotal()
    if total is None:
        raise ConfigError("memory=N% needs the host's MemTotal, and /proc/meminfo was unreadable")
    bytes_ = share(total, percent / 100) or 0
    if bytes_ < MIB:
        raise ConfigError(f"memory={percent:g}% of MemTotal is under 1 MiB")
    return bytes_


def parse_assignment(text: str, *, memtotal: int | None = None) -> tuple[str, int | float | None]:
    """`("memory", 2147483648)` from the command line's `--limit memory=2G` (a `-` in the
    name reads as `_`; the value as `parse_value` reads it)."""
    name, equals, raw = text.partition("=")
    if not equals or not name.strip():
        raise ConfigError(f"--limit takes NAME=VALUE, e.g. memory=2G (got {brief(text)})")
    name = name.strip().replace("-", "_")
    return name, parse_value(name, raw, memtotal=memtotal)


def format_value(name: str, value: int | float | None) -> str:
    """`value` of limit `name` for a person: "2 GiB", "1.5 KiB", "30 s", "512",
    "unlimited". A size takes the largest binary unit that shows it exactly in at most
    one decimal (or a smaller one, under 10000 of it); failing both, rounded to one
    decimal."""
    kind = kind_of(name)
    if value is None:
        return "unlimited"
    if kind == SECONDS:
        return f"{_short(float(value))} s"
    if kind == COUNT:
        return str(value)
    size = int(value)
    fitting = [(unit, label) for unit, label in _FORMAT_UNITS if size >= unit]
    for unit, label in fitting:
        if (size * 10) % unit == 0 and (size // unit < 10000 or unit == fitting[0][0]):
            return f"{_short(size / unit)} {label}"
    if size < 10000 or not fitting:
        return f"{size} B"
    unit, label = fitting[0]
    return f"{size / unit:.1f} {label}"


def _short(number: float) -> str:
    """12, 1.5, 0.25: no trailing zeros, no exponent."""
    if number == int(number):
        return str(int(number))
    return f"{number:.3f}".rstrip("0").rstrip(".")


def _unreadable(name: str, raw: object) -> ConfigError:
    hint = _HINTS[KINDS[name]]
    if name == "memory":
        hint += ", or a share of MemTotal such as 50%"
    return ConfigError(f"{name}: cannot read {brief(str(raw))}; give {hint}, or null for unlimited")

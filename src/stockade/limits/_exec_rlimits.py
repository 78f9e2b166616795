"""The limits `stockade exec` sets: the rlimits a host without cgroups would use (exec
runs no harness to make or remove a group), from the defaults or a composition's
values. Standard library only, like exec's whole fast path."""

from __future__ import annotations

import resource

from ._values import (
    COMMAND_MEMORY_SHARE,
    DEFAULT_FILE_SIZE,
    DEFAULT_OPEN_FILES,
    memtotal,
    share,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def exec_rlimits(values: Mapping[str, float | None] | None = None) -> tuple[tuple[str, int], ...]:
    """The launcher's `--rlimit NAME=VALUE` pairs for one exec: memory as RLIMIT_DATA
    (partial: per process), cpu_seconds as RLIMIT_CPU (per process), file_size and
    open_files (the latter at most this process's hard limit, which exec cannot raise).
    `values`: the command's limits by name (a composition's); None: the defaults.
    processes has no rlimit worth setting (docs/limits.md): exec holds none."""
    if values is None:
        values = {
            "memory": share(memtotal(), COMMAND_MEMORY_SHARE),
            "file_size": DEFAULT_FILE_SIZE,
            "open_files": DEFAULT_OPEN_FILES,
        }
    pairs: list[tuple[str, int]] = []
    if (memory := values.get("memory")) is not None:
        pairs.append(("data", int(memory)))
    if (cpu := values.get("cpu_seconds")) is not None:
        pairs.append(("cpu", -int(-cpu // 1)))  # rounded up (math is a module of its own)
    if (file_size := values.get("file_size")) is not None:
        pairs.append(("fsize", int(file_size)))
    if (open_files := values.get("open_files")) is not None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY:
            open_files = min(int(open_files), hard)
        pairs.append(("nofile", int(open_files)))
    return tuple(pairs)


def with_rlimits(argv: tuple[str, ...], pairs: tuple[tuple[str, int], ...]) -> tuple[str, ...]:
    """`argv` (the Landlock launcher's, or bwrap's with its filter stage) with the
    launcher's `--rlimit` options where the launcher reads its own; unchanged when no
    launcher runs in it."""
    options: list[str] = []
    for name, value in pairs:
        options += ["--rlimit", f"{name}={value}"]
    if not options:
        return argv
    if argv[0].endswith("/landlock-run"):
        return (argv[0], *options, *argv[1:])
    for index in range(2, len(argv)):
        if argv[index] == "--filters-only" and argv[index - 2] == "--":
            return (*argv[: index + 1], *options, *argv[index + 1 :])
    return argv

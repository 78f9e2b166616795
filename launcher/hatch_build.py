"""Hatch build hook: compile the Landlock launcher (launcher/*.c: one C file per
mechanism, and landlock-run.h between them) into src/stockade/_bin/landlock-run.

Static (musl-gcc when it can run, else cc or gcc), for both wheels and editable
installs; the binary is never committed, and the wheel is tagged for this platform.
A build that cannot compile stops with `LauncherBuildError`: its first line says what
to install, and no traceback follows it.

The launcher is Linux-only (Landlock, namespaces, seccomp): on any other platform
(macOS, where Seatbelt confines) nothing is compiled, no compiler is needed, and the
wheel is pure Python (`py3-none-any`) without the launcher.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

CFLAGS = ["-static", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-s"]
# What makes `gcc` work on Debian/Ubuntu: gcc brings libc6-dev (the static C library)
# as a recommended package; musl-tools only wraps gcc (musl-gcc runs gcc underneath).
INSTALL_HINT = (
    "install gcc (Debian/Ubuntu: apt-get install gcc; optionally musl-tools as well, for "
    "a smaller static launcher), or set STOCKADE_CC to a C compiler"
)
NO_COMPILER = (
    "stockade: no C compiler found to build the Landlock launcher (needed at install): "
    + INSTALL_HINT
)
# The launcher's path in the source tree, and the pattern that puts it in a wheel (the
# wheel target excludes it in pyproject.toml; only a build that made it adds it back).
LAUNCHER = "src/stockade/_bin/landlock-run"
_REALGCC = re.compile(rb"\$\{REALGCC:-([^}\s]+)\}")


class LauncherBuildError(SystemExit):
    """The launcher cannot be built. A SystemExit, so a build frontend (pip) shows its
    message as is, without a traceback in front of it; the first line is the fix."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _musl_gcc_runs(path: str) -> bool:
    """musl-gcc is a wrapper that runs gcc (`${REALGCC:-<triplet>-gcc}`); without that
    compiler it cannot build anything. A wrapper that cannot be read is given a try."""
    real = os.environ.get("REALGCC")
    if not real:
        try:
            with open(path, "rb") as wrapper:
                found = _REALGCC.search(wrapper.read(64 * 1024))
        except OSError:
            return True
        if found is None:
            return True
        real = found.group(1).decode(errors="replace")
    return shutil.which(real) is not None


def pick_compiler() -> str:
    # An explicit choice wins; musl gives a small, libc-independent binary.
    explicit = os.environ.get("STOCKADE_CC")
    if explicit and shutil.which(explicit):
        return explicit
    musl = shutil.which("musl-gcc")
    if musl and _musl_gcc_runs(musl):
        return "musl-gcc"
    for candidate in ("cc", "gcc"):
        if shutil.which(candidate):
            return candidate
    raise LauncherBuildError(NO_COMPILER)


def launcher_sources(root: Path) -> list[Path]:
    """The launcher's C files, in a stable order: every `launcher/*.c` (landlock-run.h
    is included by each, found beside them)."""
    return sorted((root / "launcher").glob("*.c"))


def build_launcher(root: Path) -> Path:
    sources = launcher_sources(root)
    if not sources:
        raise LauncherBuildError(
            f"stockade: the Landlock launcher's sources are missing ({root / 'launcher'}/*.c)"
        )
    target = root / LAUNCHER
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    compiler = pick_compiler()
    result = subprocess.run(
        [compiler, *CFLAGS, "-o", str(partial), *map(str, sources)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise LauncherBuildError(
            f"stockade: building the Landlock launcher with {compiler} failed "
            f"(exit {result.returncode}); {INSTALL_HINT}. The compiler said:\n"
            f"{result.stderr.strip()}"
        )
    partial.chmod(0o755)
    # Rename so a concurrent reader never sees a half-written executable.
    partial.replace(target)
    return target


def builds_launcher() -> bool:
    """Whether this platform gets the launcher: Linux only (read at build time, so a
    test can force another platform)."""
    return sys.platform.startswith("linux")


class LauncherBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or not builds_launcher():
            # Elsewhere the wheel stays pure Python, without the launcher (a stale one
            # in the tree is excluded by the wheel target's `exclude`).
            return
        build_launcher(Path(self.root))
        build_data["artifacts"].append(f"/{LAUNCHER}")
        build_data["pure_python"] = False
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        build_data["tag"] = f"py3-none-{platform}"

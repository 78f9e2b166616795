"""Hatch build hook: compile launcher/landlock-run.c into src/stockade/_bin/landlock-run.

Static (musl-gcc when present, else cc), for both wheels and editable installs;
the binary is never committed, and the wheel is tagged for this platform.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

CFLAGS = ["-static", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-s"]


def pick_compiler() -> str:
    # An explicit choice wins; musl gives a small, libc-independent binary.
    for candidate in (os.environ.get("STOCKADE_CC"), "musl-gcc", "cc"):
        if candidate and shutil.which(candidate):
            return candidate
    raise RuntimeError(
        "stockade: no C compiler found to build the Landlock launcher; "
        "install one (Debian: apt-get install musl-tools, or gcc)"
    )


def build_launcher(root: Path) -> Path:
    source = root / "launcher" / "landlock-run.c"
    target = root / "src" / "stockade" / "_bin" / "landlock-run"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    compiler = pick_compiler()
    result = subprocess.run(
        [compiler, *CFLAGS, "-o", str(partial), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"stockade: building the Landlock launcher with {compiler} failed:\n{result.stderr}"
        )
    partial.chmod(0o755)
    # Rename so a concurrent reader never sees a half-written executable.
    partial.replace(target)
    return target


class LauncherBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        build_launcher(Path(self.root))
        build_data["pure_python"] = False
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        build_data["tag"] = f"py3-none-{platform}"

"""The launcher's unit tests, one C program per mechanism file (tests/launcher/unit/).

Every launcher/*.c is compiled with -DLAUNCHER_UNIT_TEST (main.c then has no `main`,
and the few helpers marked TESTABLE are external instead of static), with the compilers
and the flags the build hook uses, and linked with unit/test_<mechanism>.c and the
checks' helpers (unit/unit.c). Each program runs its checks, prints one line per
failure and "<n> checks, <m> failed" last, and exits 0 only when none failed. Every
mechanism file has its program: a new launcher/*.c without one fails here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

# Some programs use the real kernel: Landlock, namespaces, seccomp, a relayed connection.
pytestmark = pytest.mark.kernel

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "launcher"
UNIT = Path(__file__).resolve().parent / "unit"
# main.c holds the modes, which a unit test does not run; every other file is a mechanism.
MECHANISMS = sorted(path.stem for path in LAUNCHER.glob("*.c") if path.stem != "main")
SUMMARY = re.compile(r"^(\d+) checks, (\d+) failed$")


def _hook_cflags() -> list[str]:
    """The build hook's own flags (launcher/hatch_build.py), so the tests build as it does."""
    spec = importlib.util.spec_from_file_location(
        "stockade_hatch_build", LAUNCHER / "hatch_build.py"
    )
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return list(hook.CFLAGS)


CFLAGS = [*_hook_cflags(), "-DLAUNCHER_UNIT_TEST", "-I", str(LAUNCHER)]


def _compile(compiler: str, *args: str) -> None:
    done = subprocess.run([compiler, *CFLAGS, *args], capture_output=True, text=True)
    assert done.returncode == 0, f"{compiler} {' '.join(args)}:\n{done.stderr}"


@pytest.fixture(scope="module", params=["cc", "musl-gcc"])
def objects(request, tmp_path_factory) -> tuple[str, list[str]]:
    """The launcher's files and the helpers, compiled once per compiler."""
    compiler = request.param
    if shutil.which(compiler) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{compiler} is required in CI but is not installed")
        pytest.skip(f"{compiler} is not installed")
    out = tmp_path_factory.mktemp(f"units-{compiler}")
    built = []
    for source in [*sorted(LAUNCHER.glob("*.c")), UNIT / "unit.c"]:
        target = out / f"{source.stem}.o"
        _compile(compiler, "-c", "-o", str(target), str(source))
        built.append(str(target))
    return compiler, built


def test_every_mechanism_file_has_a_unit_test():
    assert MECHANISMS, "no launcher/*.c found"
    missing = [name for name in MECHANISMS if not (UNIT / f"test_{name}.c").is_file()]
    assert missing == [], f"launcher/{{{','.join(missing)}}}.c without tests/launcher/unit/test_*.c"
    strays = sorted(
        path.name
        for path in UNIT.glob("test_*.c")
        if path.stem.removeprefix("test_") not in MECHANISMS
    )
    assert strays == [], "unit tests for no launcher file"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_unit(objects, mechanism, tmp_path):
    compiler, built = objects
    program = UNIT / f"test_{mechanism}.c"
    assert program.is_file(), f"launcher/{mechanism}.c has no unit test ({program})"
    binary = tmp_path / f"test_{mechanism}"
    _compile(compiler, "-o", str(binary), str(program), *built)
    done = subprocess.run([str(binary)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert lines, f"no output (exit {done.returncode}); stderr:\n{done.stderr}"
    summary = SUMMARY.match(lines[-1])
    assert summary is not None, done.stdout + done.stderr
    failures = [line for line in lines if not SUMMARY.match(line)]
    assert (done.returncode, summary.group(2), failures) == (0, "0", []), done.stdout + done.stderr
    # A program that checks almost nothing is no test.
    assert int(summary.group(1)) >= 10, done.stdout

"""The build hook's error path (launcher/hatch_build.py): with no usable C compiler on
PATH, the build stops with one line that says what to install, and no traceback."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "launcher" / "hatch_build.py"


def load_hook():
    spec = importlib.util.spec_from_file_location("stockade_hatch_build", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def build_root(tmp_path) -> Path:
    """A source tree of the launcher's C files and header, so a build never touches the
    checkout's _bin."""
    (tmp_path / "launcher").mkdir()
    for source in [*(REPO / "launcher").glob("*.c"), *(REPO / "launcher").glob("*.h")]:
        shutil.copy(source, tmp_path / "launcher")
    return tmp_path


@pytest.fixture
def bare_path(tmp_path, monkeypatch) -> Path:
    """A PATH of one empty directory: no cc, gcc or musl-gcc on it."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    for name in ("STOCKADE_CC", "REALGCC"):
        monkeypatch.delenv(name, raising=False)
    return bindir


def assert_says_what_to_install(message: str) -> None:
    first = message.splitlines()[0]
    assert first.startswith("stockade: ")
    assert "install gcc" in first and "apt-get install gcc" in first
    assert "optionally musl-tools" in first


def test_no_compiler_is_one_clear_line(build_root, bare_path):
    hook = load_hook()
    with pytest.raises(hook.LauncherBuildError) as stopped:
        hook.build_launcher(build_root)
    message = str(stopped.value)
    assert "\n" not in message
    assert message.startswith("stockade: no C compiler found to build the Landlock launcher")
    assert_says_what_to_install(message)
    # A SystemExit: a build frontend prints the message, not a traceback.
    assert isinstance(stopped.value, SystemExit) and stopped.value.code == message
    assert not (build_root / "src").exists() or not any((build_root / "src").rglob("landlock-run*"))


def test_musl_gcc_without_gcc_is_no_compiler(build_root, bare_path):
    """musl-tools alone brings a wrapper that runs gcc, not a compiler."""
    wrapper = bare_path / "musl-gcc"
    wrapper.write_text(
        '#!/bin/sh\nexec "${REALGCC:-x86_64-linux-gnu-gcc}" "$@" -specs /nonexistent.specs\n'
    )
    wrapper.chmod(0o755)
    hook = load_hook()
    with pytest.raises(hook.LauncherBuildError, match="no C compiler found"):
        hook.build_launcher(build_root)


def test_a_compiler_that_fails_says_so_first(build_root, bare_path, monkeypatch):
    broken = bare_path / "broken-cc"
    broken.write_text("#!/bin/sh\necho 'cannot find -lc' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("STOCKADE_CC", "broken-cc")
    hook = load_hook()
    with pytest.raises(hook.LauncherBuildError) as stopped:
        hook.build_launcher(build_root)
    message = str(stopped.value)
    assert message.splitlines()[0].startswith(
        "stockade: building the Landlock launcher with broken-cc failed (exit 1)"
    )
    assert_says_what_to_install(message)
    assert message.splitlines()[-1] == "cannot find -lc"


def test_the_error_reaches_a_build_frontend_as_one_line(build_root, bare_path):
    """What pip shows: the backend process's stderr, here the message alone."""
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('hook', {str(HOOK)!r})\n"
        "hook = importlib.util.module_from_spec(spec); spec.loader.exec_module(hook)\n"
        f"hook.build_launcher(__import__('pathlib').Path({str(build_root)!r}))\n"
    )
    env = {**os.environ, "PATH": str(bare_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert_says_what_to_install(line)


def test_with_a_compiler_the_hook_builds(build_root):
    if shutil.which("cc") is None and shutil.which("musl-gcc") is None:
        pytest.skip("no C compiler on this machine")
    target = load_hook().build_launcher(build_root)
    assert target == build_root / "src" / "stockade" / "_bin" / "landlock-run"
    assert os.access(target, os.X_OK)

"""The build hook on each platform (launcher/hatch_build.py, issue 38): the launcher is
Linux-only, so elsewhere (macOS, where Seatbelt confines) the build compiles nothing,
needs no compiler, and makes a pure-Python wheel without the launcher; on Linux it
still builds it into a platform wheel. The wheel is built in-process by hatchling from
a copy of the tree, with `sys.platform` forced."""

from __future__ import annotations

import shutil
import sys
import zipfile
from pathlib import Path

import pytest

hatchling_wheel = pytest.importorskip("hatchling.builders.wheel")

REPO = Path(__file__).resolve().parents[2]
MEMBER = "stockade/_bin/landlock-run"


@pytest.fixture
def tree(tmp_path) -> Path:
    """The files a wheel is built from, without .git or .gitignore: only the wheel
    target's own `exclude` keeps a stale launcher out."""
    root = tmp_path / "tree"
    root.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, root / name)
    shutil.copytree(REPO / "launcher", root / "launcher")
    shutil.copytree(
        REPO / "src" / "stockade",
        root / "src" / "stockade",
        ignore=shutil.ignore_patterns("__pycache__", "_bin"),
    )
    return root


def build_wheel(root: Path, out: Path) -> Path:
    builder = hatchling_wheel.WheelBuilder(str(root))
    (wheel,) = builder.build(directory=str(out), versions=["standard"])
    return Path(wheel)


def test_non_linux_build_compiles_nothing_and_ships_no_launcher(tree, tmp_path, monkeypatch):
    # A launcher left in the tree (built earlier on Linux) must not reach the wheel.
    stale = tree / "src" / MEMBER
    stale.parent.mkdir()
    stale.write_bytes(b"\x7fELF stale")
    # No compiler anywhere: a build that tried one would stop with "no C compiler".
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("STOCKADE_CC", raising=False)
    ran: list[object] = []
    monkeypatch.setattr("subprocess.run", lambda *a, **k: ran.append(a) or pytest.fail(a))
    monkeypatch.setattr(sys, "platform", "darwin")

    wheel = build_wheel(tree, tmp_path / "dist")

    assert ran == []
    assert wheel.name == "stockade-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        wheel_meta = archive.read("stockade-0.1.0.dist-info/WHEEL").decode()
    assert not [name for name in names if "_bin/" in name]
    assert "stockade/__init__.py" in names and "stockade/entry.py" in names
    assert "Root-Is-Purelib: true" in wheel_meta
    assert stale.read_bytes() == b"\x7fELF stale"  # the tree is left alone


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no cc")
def test_linux_build_still_compiles_the_launcher_into_a_platform_wheel(tree, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    wheel = build_wheel(tree, tmp_path / "dist")
    assert "-py3-none-linux_" in wheel.name
    built = (tree / "src" / MEMBER).read_bytes()
    assert built.startswith(b"\x7fELF")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(MEMBER) == built
        assert archive.getinfo(MEMBER).external_attr >> 16 & 0o111

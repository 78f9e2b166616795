"""The built wheel carries the launcher the build produced, executable and intact."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MEMBER = "stockade/_bin/landlock-run"


def test_installed_wheel_launcher_is_executable_and_byte_identical(tmp_path):
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("stockade-*.whl")
    # Platform-tagged: the launcher is native code.
    assert wheel.name.endswith(".whl") and "-none-any" not in wheel.name
    assert "-py3-none-linux_" in wheel.name

    produced = (REPO / "src" / MEMBER).read_bytes()
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(MEMBER) == produced

    target = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    installed = target / MEMBER
    assert os.access(installed, os.X_OK)
    assert installed.read_bytes() == produced
    probe = subprocess.run([str(installed), "--probe"], capture_output=True, text=True, check=False)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith("landlock-run: probe ok: abi=")

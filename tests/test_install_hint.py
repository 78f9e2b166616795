"""A missing extra names the install line that works for this installation (issue 38):
stockade is on no package index, so `pip install 'stockade[mcp]'` names nothing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stockade import install_hint as _install

REPO = Path(__file__).resolve().parent.parent
MCP_REQUIREMENTS = "'hypercorn>=0.17' 'mcp<3,>=2.3'"


def test_the_extras_requirements_come_from_the_installed_metadata():
    assert sorted(_install.extra_requirements("mcp")) == ["hypercorn>=0.17", "mcp<3,>=2.3"]
    assert _install.extra_requirements("acp") == ["agent-client-protocol<0.13,>=0.12.1"]
    assert _install.extra_requirements("no-such-extra") == []


def test_an_editable_install_names_its_clone_and_this_venvs_pip():
    # The suite runs from the clone's editable install (the README's test command).
    assert _install.install_line("mcp") == (f"{sys.prefix}/bin/pip install -e '{REPO}[mcp]'")
    assert _install.extra_hint("postgres").startswith("install the postgres extra: ")


def test_under_pipx_it_is_an_inject(tmp_path, monkeypatch):
    (tmp_path / "pipx_metadata.json").write_text("{}")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    line = _install.install_line("mcp")
    assert line.startswith("pipx inject stockade ")
    assert sorted(line.split()[3:]) == sorted(MCP_REQUIREMENTS.split())


def test_an_install_from_a_clone_directory_names_that_clone(tmp_path, monkeypatch):
    clone = tmp_path / "my clone"
    clone.mkdir()
    (clone / "pyproject.toml").write_text("")
    monkeypatch.setattr(_install, "_clone_of_package", lambda: None)
    monkeypatch.setattr(_install, "extra_requirements", lambda extra: ["x"])

    class Dist:
        def read_text(self, name):
            assert name == "direct_url.json"
            return json.dumps(
                {"dir_info": {}, "url": "file:///" + str(clone)[1:].replace(" ", "%20")}
            )

    monkeypatch.setattr("importlib.metadata.distribution", lambda name: Dist())
    assert _install.install_line("acp").endswith(f" install '{clone}[acp]'")


def test_a_wheel_install_names_the_requirements(monkeypatch):
    monkeypatch.setattr(_install, "_clone_of_package", lambda: None)
    monkeypatch.setattr(_install, "_clone_installed_from", lambda: None)
    line = _install.install_line("mcp")
    assert line.endswith(" install " + " ".join(sorted(MCP_REQUIREMENTS.split())))


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
    except OSError:
        return False
    return True


def test_a_fresh_venv_gets_a_line_that_works(tmp_path):
    """The clone installed (not editable) into a fresh venv: the missing-ACP-SDK line
    names the clone and that venv's pip, and, when PyPI answers, running the line as
    printed installs the SDK."""
    started = time.monotonic()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    wheels = tmp_path / "wheels"
    # The clone's own wheel: this venv's hatchling builds it, no index needed.
    subprocess.run(
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
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("stockade-*.whl")
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    # What the missing-SDK messages print (standard library only, like their callers'
    # error paths); the dependencies are not installed (--no-deps): not needed here.
    code = "from stockade.install_hint import extra_hint; print(extra_hint('acp'))"
    hint = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    ).stdout.strip()
    assert hint == (
        f"install the acp extra: {venv}/bin/pip install 'agent-client-protocol<0.13,>=0.12.1'"
    )
    if not _pypi_reachable() or os.environ.get("STOCKADE_TEST_OFFLINE"):
        pytest.skip("PyPI unreachable: the printed line was checked, not run")
    line = hint.split("install the acp extra: ", 1)[1]
    ran = subprocess.run(
        ["sh", "-c", line + " -q --disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    subprocess.run([str(python), "-c", "import acp"], check=True, cwd=tmp_path)
    assert time.monotonic() - started < 90
    shutil.rmtree(venv)

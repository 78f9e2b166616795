"""stockade started through a link inside the workspace (`ws/venv -> the venv`): no bind
holds a link (it holds where the link leads), so a workspace-write command could
re-point it, and the next stockade process started the same way would run what the
command chose, unconfined. Such a call is refused on every backend before anything
runs (`trust.installation_links`, `sandbox._guard`). Judged on the real kernel, with
the control: a call started by the real path lets its command re-point the link, and
the next start through it runs the command's interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..support import IN_CI
from ._support import Area, write_executable

REFUSED = 125  # EXIT_UNAVAILABLE


def _venv() -> Path:
    """The venv these tests run from (CI's, a person's), resolved."""
    venv = Path(sys.prefix).resolve()
    if not (venv / "pyvenv.cfg").is_file() or not (venv / "bin" / "stockade").is_file():
        message = f"not run from a venv with stockade's console script: {sys.prefix}"
        if IN_CI:
            pytest.fail(f"CI=true and {message}")
        pytest.skip(message)
    return venv


def _start(how: str, venv: Path) -> list[str]:
    """stockade started through `venv` as written: its console script (argv[0]), or its
    interpreter (sys.executable and the prefix)."""
    return (
        [str(venv / "bin" / "stockade")]
        if how == "script"
        else [
            str(venv / "bin" / "python"),
            "-m",
            "stockade",
        ]
    )


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )


@pytest.mark.parametrize("how", ["script", "interpreter"])
def test_a_start_through_a_link_in_the_workspace_is_refused(area: Area, backend: str, how: str):
    venv = _venv()
    link = area.root / "venv"
    link.symlink_to(venv)
    done = _run(
        [
            *_start(how, link),
            "exec",
            "--backend",
            backend,
            "--mode",
            "workspace-write",
            "--",
            "sh",
            "-c",
            "echo ran > ran; ln -sfn /nowhere venv",
        ],
        area.root,
    )
    assert done.returncode == REFUSED, done
    assert f"stockade was started through the symlink {link}, " in done.stderr, done
    assert done.stderr.count("\n") == 1, done.stderr  # one line
    assert not (area.root / "ran").exists()  # nothing ran
    assert os.readlink(link) == str(venv)  # and the link is as it was
    # Read-only has nothing writable: it runs.
    done = _run(
        [*_start(how, link), "exec", "--backend", backend, "--mode", "read-only", "--", "true"],
        area.root,
    )
    assert done.returncode == 0, done


def test_control_a_command_re_points_the_link_and_the_next_start_runs_its_interpreter(
    area: Area, backend: str
):
    """Started by the real path, the call is allowed; its command re-points the
    workspace's link to an interpreter of its own, which the next start through the
    link runs, unconfined (it writes outside every root)."""
    venv = _venv()
    link = area.root / "venv"
    link.symlink_to(venv)
    marker = area.target("interpreter-of-the-command")
    fake = area.root / "fake"
    (fake / "bin").mkdir(parents=True)
    write_executable(fake / "bin" / "python", f"#!/bin/sh\nid > {marker}\n")
    done = _run(
        [
            str(venv / "bin" / "stockade"),
            "exec",
            "--backend",
            backend,
            "--mode",
            "workspace-write",
            "--",
            "sh",
            "-c",
            f"echo x > {marker} || ln -sfn fake venv",
        ],
        area.root,
    )
    assert done.returncode == 0, done
    assert not marker.exists()  # confined: it could not write outside
    assert os.readlink(link) == "fake"  # but it could re-point the link
    _run([str(link / "bin" / "python"), "-c", "pass"], area.root)
    assert marker.exists()  # the next start through it ran the command's interpreter


def test_the_links_on_the_way_are_found_through_a_chain(area: Area):
    """Every link met while the paths as written resolve, a link to a link included,
    each named by its real directory."""
    venv = _venv()
    (area.outside / "venv").symlink_to(venv)
    (area.root / "via").symlink_to(area.outside / "venv")
    done = _run(
        [
            str(area.root / "via" / "bin" / "python"),
            "-c",
            "import json; from stockade.trust import installation_links; "
            "print(json.dumps(installation_links()))",
        ],
        area.outside,
    )
    assert done.returncode == 0, done
    found = json.loads(done.stdout)
    assert str(area.root / "via") in found
    assert str(area.outside / "venv") in found


def test_a_dot_dot_after_a_link_leaves_the_links_target_and_the_link_is_found(area: Area):
    """`ws/l/../x` resolves `..` from where `ws/l` leads, as the kernel does (a textual
    normalization would drop the link), and an import directory reached so is found."""
    (area.outside / "deep" / "lib").mkdir(parents=True)
    (area.root / "l").symlink_to(area.outside / "deep" / "lib")
    spelled = f"{area.root}/l/../lib"
    done = _run(
        [
            sys.executable,
            "-c",
            "import json, sys; from stockade.trust import installation_links; "
            f"sys.path.append({spelled!r}); print(json.dumps(installation_links()))",
        ],
        area.outside,
    )
    assert done.returncode == 0, done
    assert str(area.root / "l") in json.loads(done.stdout)


def test_an_import_directory_through_a_link_in_the_workspace_is_refused(area: Area, backend: str):
    """PYTHONPATH through a link in the workspace: the next stockade process, and this
    one's own imports after its command, would read what the command re-pointed it to."""
    (area.tools / "lib").mkdir()
    (area.root / "lib").symlink_to(area.tools / "lib")
    done = subprocess.run(
        [*_start("script", _venv()), "exec", "--backend", backend, "--", "touch", "ran"],
        cwd=area.root,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(area.root / "lib")},
    )
    assert done.returncode == REFUSED, done
    assert f"started through the symlink {area.root / 'lib'}, " in done.stderr
    assert not (area.root / "ran").exists()


def test_a_missing_import_directory_in_the_workspace_stays_missing(area: Area, backend: str):
    """PYTHONPATH naming a directory the workspace does not have yet: what a command made
    there would be imported before the standard library (a json.py) by the next stockade
    process. It is blocked for the call; the control, the same call without it, makes it."""
    script = 'mkdir -p missing && echo "raise SystemExit(9)" > missing/json.py'
    argv = [*_start("script", _venv()), "exec", "--backend", backend, "--", "sh", "-c", script]
    environ = {**os.environ, "PYTHONPATH": str(area.root / "missing")}
    done = subprocess.run(
        argv, cwd=area.root, capture_output=True, text=True, env=environ, timeout=60
    )
    assert done.returncode != 0, done
    assert not (area.root / "missing" / "json.py").exists()
    control = subprocess.run(argv, cwd=area.root, capture_output=True, text=True, timeout=60)
    assert control.returncode == 0, control
    assert (area.root / "missing" / "json.py").exists()


def test_the_base_interpreters_prefix_is_part_of_the_installation():
    """Beneath a venv, the interpreter's own installation (its shared library, the links
    to it, a python311.zip it would import first) is what the next process runs too."""
    from stockade.trust import installation_paths

    found = installation_paths()
    assert os.path.realpath(sys.base_prefix) in found
    assert all(os.path.realpath(entry) in found for entry in sys.path if entry.endswith(".zip"))

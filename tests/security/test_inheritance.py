"""The escape battery, what a command inherits: descriptors, environment, startup files.

A descriptor the harness holds open for writing is a capability no path rule can
take back (Landlock checks paths at open, not writes on an open descriptor), so the
executor must not pass any on. The spec's environment reaches bash inside the
sandbox (BASH_ENV, HOME) and the RUNNER itself, before it confines anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ..support import IN_CI
from .support import ATTACK, MODES, describe_change

pytestmark = [
    pytest.mark.parametrize("via", ["run", "job"]),
    pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value),
]


async def test_no_descriptor_leaks_into_the_command(sandbox, mode, via):
    with sandbox.battery.attempt(f"descriptors visible inside ({mode.value}, {via})"):
        result = await sandbox.run("ls -l /proc/self/fd", mode, via=via)
        entries = [line.split()[-3:] for line in result.stdout.splitlines()[1:]]
        numbers = sorted(int(fields[0]) for fields in entries)
        # 0, 1, 2 and the directory ls is listing (its own fd 3, "-> /proc/<pid>/fd").
        assert numbers == [0, 1, 2, 3], result.stdout
        assert entries[3][2].startswith("/proc/") and entries[3][2].endswith("/fd"), result.stdout


async def test_a_descriptor_the_harness_opened_for_writing_does_not_reach_the_command(
    sandbox, mode, via
):
    terrain = sandbox.terrain
    # Inheritable on purpose (no O_CLOEXEC): the executor alone must keep them out.
    writer = os.open(terrain.victim, os.O_WRONLY | os.O_APPEND)
    directory = os.open(terrain.outside, os.O_RDONLY | os.O_DIRECTORY)
    for fd in (writer, directory):
        os.set_inheritable(fd, True)
    try:
        before = terrain.state()
        command = (
            f"echo pwned >&{writer}; echo pwned > /proc/self/fd/{writer}; "
            f"echo new > /proc/self/fd/{directory}/new; "
            f"{ATTACK} write-fd {writer} -- create-at {directory} new2 "
            f"-- write /proc/self/fd/{writer}"
        )
        with sandbox.battery.attempt(f"descriptor leaked by the harness ({mode.value}, {via})"):
            result = await sandbox.run(command, mode, via=via)
            assert terrain.state() == before, describe_change(before, terrain.state())
            assert ": DONE" not in result.stdout, result.stdout
    finally:
        os.close(writer)
        os.close(directory)


def startup_files(terrain) -> str:
    """A HOME whose every bash/sh startup file prints a marker and writes outside."""
    home = terrain.tools / "home"
    home.mkdir()
    for name in (".bashrc", ".bash_profile", ".profile", ".bash_login", ".bash_logout", ".shrc"):
        (home / name).write_text(
            f"echo ran{name}\necho pwned > {terrain.victim}\necho new > {terrain.outside}/from{name}\n"
        )
    return str(home)


async def test_bash_env_runs_inside_the_sandbox(sandbox, mode, via):
    terrain = sandbox.terrain
    script = terrain.tools / "bash_env.sh"
    script.write_text(f"echo ran-bash-env\necho pwned > {terrain.victim}\n")
    before = terrain.state()
    with sandbox.battery.attempt(f"BASH_ENV from the spec env ({mode.value}, {via})"):
        result = await sandbox.run("true", mode, via=via, env={"BASH_ENV": str(script)})
        assert "ran-bash-env" in result.stdout  # it ran: inside, and was refused
        assert terrain.state() == before, describe_change(before, terrain.state())
        assert result.denied


async def test_interactive_and_login_startup_files_run_inside_the_sandbox(sandbox, mode, via):
    terrain = sandbox.terrain
    home = startup_files(terrain)
    before = terrain.state()
    command = (
        "bash -c true; bash -i -c 'echo interactive'; bash -l -c 'echo login'; "
        f"HOME={home} bash -i -c true; ENV={home}/.shrc sh -i -c true; exit 0"
    )
    with sandbox.battery.attempt(
        f"~/.bashrc, ~/.profile, ENV via bash -i / -l ({mode.value}, {via})"
    ):
        result = await sandbox.run(command, mode, via=via, env={"HOME": home})
        for marker in ("ran.bashrc", "ran.bash_profile", "ran.shrc"):
            assert marker in result.stdout, result.stdout + result.stderr
        assert terrain.state() == before, describe_change(before, terrain.state())


def build_preload(terrain) -> str:
    """A shared object whose constructor writes a file outside, wherever it is loaded."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        if IN_CI:
            pytest.fail("CI=true and no C compiler: the launcher build needs one too")
        pytest.skip("no C compiler to build the preload library")
    source = terrain.tools / "preload.c"
    source.write_text(
        "#include <stdio.h>\n#include <unistd.h>\n"
        "__attribute__((constructor)) static void run(void) {\n"
        "  char path[512]; FILE *f;\n"
        f'  snprintf(path, sizeof path, "{terrain.outside}/preload-%d", (int)getpid());\n'
        '  f = fopen(path, "w");\n'
        '  if (f) { fputs("pwned\\n", f); fclose(f); }\n'
        '  fprintf(stderr, "preload ran in %d\\n", (int)getpid());\n'
        "}\n"
    )
    library = terrain.tools / "preload.so"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True, timeout=60
    )
    return str(library)


async def test_a_loader_variable_in_the_spec_env_does_not_run_code_before_confinement(
    sandbox, mode, via, request
):
    """A dynamically linked runner (bwrap) would load LD_PRELOAD on the host,
    unconfined, before it builds any sandbox; so the executor never puts the spec's
    variables in the runner's environment: `/usr/bin/env` sets them inside."""
    terrain = sandbox.terrain
    library = build_preload(terrain)
    before = terrain.state()
    with sandbox.battery.attempt(
        f"LD_PRELOAD in the spec env reaches the runner ({mode.value}, {via})"
    ):
        result = await sandbox.run("true", mode, via=via, env={"LD_PRELOAD": library})
        assert "preload ran" in result.stderr  # it was loaded (inside, at least)
        assert terrain.state() == before, describe_change(before, terrain.state())

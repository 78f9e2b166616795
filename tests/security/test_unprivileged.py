"""The escape battery, as an UNPRIVILEGED caller (uid/gid 65534, no groups): the
provider builds the wrapped argv, and it is spawned as nobody against targets nobody
could otherwise write (a 0777 directory, a 0666 file, a file nobody owns, all
outside the root). bwrap then runs through an unprivileged user namespace; the
launcher has no capability to drop. Both must refuse exactly as for root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import trio

from stockade.sandbox._select import select_backend
from stockade.sandbox.backends import bwrap as bwrap_backend
from stockade.vocab import SandboxPolicy

from ..support import variant_backend
from .support import (
    IS_ROOT,
    MODES,
    NOBODY,
    RO,
    WW,
    describe_change,
    expected_enforcement,
    proc_status,
)

pytestmark = [
    pytest.mark.skipif(not IS_ROOT, reason="spawning as uid 65534 needs a root caller"),
    pytest.mark.nobody,
]
by_mode = pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)

# {P} the public directory, {W} the root, {H} the host-residue tag, {S} a setuid-root cat.
ATTACKS = {
    "write-create": (
        "echo pwned > {P}/shared.txt; echo pwned > {P}/nobody.txt; echo new > {P}/new; "
        "mkdir {P}/d; cp {W}/inside.txt {P}/c"
    ),
    "remove-rename": "rm -f {P}/shared.txt; mv {P}/nobody.txt {W}/stolen; mv {W}/inside.txt {P}/moved",
    "links": (
        "ln -s {P} {W}/pl; echo new > {W}/pl/new2; ln {P}/nobody.txt {W}/hl && echo pwned >> {W}/hl; "
        "ln {P}/shared.txt /tmp/{H}-nhl && echo pwned >> /tmp/{H}-nhl"
    ),
    "truncate-special": "truncate -s0 {P}/shared.txt; : > {P}/nobody.txt; mkfifo {P}/fifo; mknod {P}/n c 1 3",
    "temp-and-shm": "echo x > /tmp/{H}-n; echo x > /dev/shm/{H}-n",
    "user-namespace": (
        "unshare -Ur sh -c 'mount -o remount,rw /; mount --bind {W} {P}; echo pwned > {P}/shared.txt'; "
        "unshare -Urm sh -c 'mount -o remount,bind,rw {P}; mount -o remount,bind,rw /; "
        "echo pwned > {P}/shared.txt; echo new > {P}/new'"
    ),
}


@pytest.fixture
def runner(variant, terrain, monkeypatch) -> str:
    """The selected runner, or a copy nobody can execute (the static launcher only).

    The argv it runs is built here, by root, and spawned as nobody: built as nobody's
    own stockade builds it, with bwrap binding the protected paths (a root caller's
    filter stage binds them instead, which nobody's could not)."""
    monkeypatch.setattr(bwrap_backend, "launcher_may_mount", lambda: False)
    name, config = variant
    name = variant_backend(name)
    path = select_backend(config).backend.runner
    try:
        subprocess.run(
            [path, "--help"],
            user=NOBODY,
            group=NOBODY,
            extra_groups=[],
            capture_output=True,
            timeout=10,
            check=False,
            cwd="/",
        )
    except PermissionError:
        if name != "landlock":
            pytest.skip(f"uid {NOBODY} cannot execute {path} on this machine")
        copy = terrain.tools / "landlock-run"
        shutil.copy2(path, copy)
        copy.chmod(0o755)
        return str(copy)
    return path


@pytest.fixture
def nobody_terrain(terrain):
    for path in [terrain.root, *terrain.root.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    helper = terrain.tools / "suid-cat"
    shutil.copy2(shutil.which("cat"), helper)
    helper.chmod(0o4755)
    return terrain


async def confined_as_nobody(sandbox, runner, mode, command):
    wrapped = await sandbox.provider.confine(
        ("bash", "-c", command), SandboxPolicy(mode, str(sandbox.terrain.root))
    )
    assert wrapped.enforcement is expected_enforcement(
        sandbox.backend, mode, tier=sandbox.tier or "namespaced"
    )
    argv = (runner, *wrapped.argv[1:])
    return await trio.run_process(
        argv,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        stdin=b"",
        cwd=str(sandbox.terrain.root),
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        start_new_session=True,
    )


def forbidden_residue(terrain, mode) -> list[str]:
    """All of it: no mode writes the host's /tmp (only a session's private directory)."""
    return list(terrain.residue())


@by_mode
@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_nobody_is_refused_what_only_the_sandbox_forbids(
    sandbox, runner, nobody_terrain, mode, attack
):
    terrain = nobody_terrain
    command = ATTACKS[attack].format(
        P=terrain.public, W=terrain.root, H=terrain.host_name("").rstrip("-")
    )
    before = terrain.state(with_root=mode is RO)
    with sandbox.battery.attempt(f"as nobody: {attack} ({mode.value})"):
        done = await confined_as_nobody(sandbox, runner, mode, command)
        after = terrain.state(with_root=mode is RO)
        assert after == before, describe_change(before, after) + done.stderr.decode()
        assert forbidden_residue(terrain, mode) == [], done.stderr.decode()


@by_mode
async def test_nobody_metadata_of_an_owned_outside_file(sandbox, runner, nobody_terrain, mode):
    terrain = nobody_terrain
    owned = terrain.public / "nobody.txt"
    command = f"chmod 600 {owned}; touch -d 2001-01-01 {owned}; chmod 777 {terrain.root}/.."
    before = terrain.state(with_root=mode is RO)
    if sandbox.tier == "plain" and mode is WW:
        await confined_as_nobody(sandbox, runner, mode, command)  # asserts `partial`
        sandbox.battery.disclosed(
            "as nobody: chmod/utimes of an owned outside file (workspace-write)"
        )
        return
    with sandbox.battery.attempt(
        f"as nobody: chmod/utimes of an owned outside file ({mode.value})"
    ):
        done = await confined_as_nobody(sandbox, runner, mode, command)
        after = terrain.state(with_root=mode is RO)
        assert after == before, describe_change(before, after) + done.stderr.decode()


@by_mode
async def test_nobody_holds_nothing_and_a_setuid_helper_gains_nothing(
    sandbox, runner, nobody_terrain, mode
):
    """CapBnd is not required empty here: without CAP_SETPCAP the launcher cannot drop
    it (bwrap, through its user namespace, does); no_new_privs is what keeps a setuid
    or file-capability exec from using it, and the helper shows that."""
    helper = nobody_terrain.tools / "suid-cat"
    command = f"cat /proc/self/status; echo ===; {helper} /proc/self/status"
    with sandbox.battery.attempt(f"as nobody: capabilities and setuid-root helper ({mode.value})"):
        done = await confined_as_nobody(sandbox, runner, mode, command)
        own, _, helped = done.stdout.decode().partition("===\n")
        for status in (proc_status(own), proc_status(helped)):
            assert status, done.stderr.decode()
            assert status["Uid"].split()[1] == str(NOBODY), status["Uid"]
            for name in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
                assert int(status[name], 16) == 0, f"{name} = {status[name]}"
            assert status["NoNewPrivs"] == "1"


def test_the_public_targets_are_writable_by_nobody_unconfined(terrain):
    """Control: without the sandbox, nobody CAN change every target above."""
    public = terrain.public
    script = (
        f"echo x >> {public}/shared.txt && echo y > {public}/new && chmod 600 {public}/nobody.txt "
        f"&& echo ok"
    )
    done = subprocess.run(
        ["bash", "-c", script],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=10,
        cwd="/",
    )
    assert done.stdout == "ok\n", done.stderr
    assert Path(public, "new").exists()

"""The escape battery, metadata: chmod, chown, utimes, xattrs and inode flags of files
outside the writable roots (and, in read-only, inside the workspace too).

Read-only refuses them on both backends (bwrap: a read-only bind; Landlock: the
launcher's --seal-metadata seccomp filter). Workspace-write on bwrap refuses them
outside the binds. Workspace-write on Landlock is the documented gap: Landlock does
not govern metadata and the seal cannot be path-aware, so there the test asserts the
honest claim (`enforcement == partial`) instead of a refusal, and the battery counts
it as disclosed, not as an attempt. Chown to ANOTHER owner still needs CAP_CHOWN,
which no confined command holds: that part stays an attempt everywhere.
"""

from __future__ import annotations

import os

import pytest

from stockade.vocab import Enforcement

from .support import ATTACK, KEEP_XATTR, RO, WW, describe_change


def metadata_command(terrain, mode) -> str:
    victim, outside = terrain.victim, terrain.outside
    steps = [
        f"chmod 600 {victim}",
        f"chmod u+s {victim}",
        f"chmod 700 {outside}",
        f"chown root:root {victim}",  # same owner: needs no capability, still a change (ctime)
        f"touch -d 2001-01-01 {victim}",
        f"touch -m {outside}/sub/keep.txt",
        f"command -v setfattr >/dev/null && setfattr -n user.stockade -v 1 {victim}",
        f"{ATTACK} setxattr {victim} -- chattr {victim} -- setxattr {outside}/sub"
        + (f" -- removexattr {victim} {KEEP_XATTR}" if terrain.xattrs else ""),
    ]
    if mode is RO:
        inside = terrain.root / "inside.txt"
        steps += [
            f"chmod 600 {inside}",
            f"touch -d 2001-01-01 {inside}",
            f"{ATTACK} setxattr {inside}",
        ]
    return "; ".join(steps)


@pytest.mark.parametrize("mode", [RO, WW], ids=lambda mode: mode.value)
async def test_metadata_outside_the_roots(sandbox, mode):
    terrain = sandbox.terrain
    before = terrain.state(with_root=mode is RO)
    command = metadata_command(terrain, mode)
    if sandbox.tier == "plain" and mode is WW:
        result = await sandbox.run(command, mode)  # asserts enforcement == partial
        assert result.enforcement is Enforcement.PARTIAL
        # The gap is real (so `partial` is the honest claim): mode, times, xattrs and,
        # where the file system has them, inode flags changed outside the root.
        assert terrain.state() != before
        assert "setxattr: DONE" in result.stdout, result.stdout
        if before["outside/victim.txt"][-1] is not None:
            assert "chattr: DONE" in result.stdout, result.stdout
        sandbox.battery.disclosed(
            "chmod/chown/utimes/xattr/chattr outside the root (workspace-write)"
        )
        return
    with sandbox.battery.attempt(f"chmod/chown/utimes/xattr/chattr ({mode.value})"):
        result = await sandbox.run(command, mode)
        after = terrain.state(with_root=mode is RO)
        assert after == before, describe_change(before, after)
        assert ": DONE" not in result.stdout, result.stdout
        assert result.denied, result.stderr


@pytest.mark.parametrize("mode", [RO, WW], ids=lambda mode: mode.value)
async def test_chown_to_another_owner_is_refused(sandbox, mode):
    terrain = sandbox.terrain
    owner = os.stat(terrain.victim)
    with sandbox.battery.attempt(f"chown to another owner ({mode.value})"):
        await sandbox.run(f"chown 1:1 {terrain.victim}; chgrp 1 {terrain.outside}/sub", mode)
        now = os.stat(terrain.victim)
        assert (now.st_uid, now.st_gid) == (owner.st_uid, owner.st_gid)
        assert os.stat(terrain.outside / "sub").st_gid == owner.st_gid

"""The escape battery, the workspace root's own path: a workspace-write command may
write the host's temp roots where the composition restores them (`allow_host_temp`),
so when the workspace root lies beneath one (or beneath another session's root) a
command can replace a component of the root's PATH with a symlink. Roots are pinned to their real path when a session opens; the provider
refuses a root that now resolves elsewhere, and the launcher opens its grants with
RESOLVE_NO_SYMLINKS. (bwrap binds by path: a swap racing the few milliseconds between
the check and its mount is the residual window docs/security.md describes.)

Both attempts aim at `outside/proj` (outside every root, a directory whose name
matches the root's last component, as /usr/src would match a root .../src).
"""

from __future__ import annotations

import os
from pathlib import Path

from stockade.errors import CommandStartError, InvalidPolicy, SandboxUnavailable

from .support import WW, describe_change


async def run_refusal_tolerant(sandbox, command, root):
    """A fixed backend may refuse the redirected root outright: that counts as stopped."""
    try:
        return await sandbox.run(command, WW, root=root)
    except (InvalidPolicy, SandboxUnavailable, CommandStartError):
        return None


async def test_a_command_cannot_redirect_its_own_roots_path(sandbox):
    terrain = sandbox.terrain
    top = Path("/tmp", terrain.host_name("r"))
    root = top / "x" / "proj"
    root.mkdir(parents=True)
    before = terrain.state()
    with sandbox.battery.attempt("root path redirected by its own command (workspace-write)"):
        await sandbox.run(
            f"cd / && mv {top}/x {top}/x.old && ln -s {terrain.outside} {top}/x",
            WW,
            root=root,
            host_temp=("/tmp",),
        )
        await run_refusal_tolerant(sandbox, f"echo pwned > {root}/victim.txt; echo new > new", root)
        assert terrain.state() == before, describe_change(before, terrain.state())


async def test_a_command_cannot_redirect_another_roots_path(sandbox):
    terrain = sandbox.terrain
    top = Path("/tmp", terrain.host_name("r"))
    root, other = top / "proj", top / "other"
    root.mkdir(parents=True)
    other.mkdir()
    before = terrain.state()
    with sandbox.battery.attempt("root path redirected from a sibling root (workspace-write)"):
        await sandbox.run(
            f"mv {root} {root}.old && ln -s {terrain.outside}/proj {root}",
            WW,
            root=other,
            host_temp=("/tmp",),
        )
        await run_refusal_tolerant(sandbox, f"echo pwned > {root}/victim.txt; echo new > new", root)
        assert terrain.state() == before, describe_change(before, terrain.state())
    assert os.path.islink(root)  # the swap itself is allowed: /tmp was granted

"""The escape battery, privilege: what a confined command holds (capabilities,
no_new_privs), what it cannot regain (setuid and file-capability helpers), and the
host state only privilege could change (mounts, namespaces, sysctls, sysfs, cgroups,
hostname, kernel modules, block devices). Through the executor, bwrap AND Landlock,
read-only and workspace-write. The caller is root here, as in CI.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import struct
from pathlib import Path

import pytest

from ..support import host_mount_table
from .support import (
    ATTACK,
    IS_ROOT,
    MODES,
    block_devices,
    cgroup_dirs,
    describe_change,
    proc_status,
    restoring,
    restoring_hostname,
    unconfined_nobody,
    writable_devices,
)

pytestmark = [
    pytest.mark.parametrize("via", ["run", "job"]),
    pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value),
    pytest.mark.nobody,
]

STATUS = "grep -E '^(Uid|Cap[A-Za-z]+|NoNewPrivs):' /proc/self/status"


async def test_no_capability_is_held_and_no_new_privs_is_set(sandbox, mode, via):
    with sandbox.battery.attempt(
        f"capabilities held: CapEff/CapPrm/CapInh/CapAmb ({mode.value}, {via})"
    ):
        result = await sandbox.run(STATUS, mode, via=via)
        status = proc_status(result.stdout)
        for name in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
            assert int(status[name], 16) == 0, f"{name} = {status[name]}"
        assert status["NoNewPrivs"] == "1"


async def test_the_capability_bounding_set_is_empty(sandbox, mode, via):
    # bwrap: --unshare-user-try empties the set for a root caller (uid 0 maps to 0).
    with sandbox.battery.attempt(f"capability bounding set empty ({mode.value}, {via})"):
        result = await sandbox.run(STATUS, mode, via=via)
        assert int(proc_status(result.stdout)["CapBnd"], 16) == 0, result.stdout


# --- helpers that would raise privilege --------------------------------------------


def setuid_copy(terrain) -> Path:
    helper = terrain.tools / "suid-cat"
    shutil.copy2(shutil.which("cat"), helper)
    os.chown(helper, 0, 0)
    helper.chmod(0o4755)
    return helper


def file_capability_copy(terrain) -> Path:
    """A copy of cat carrying security.capability: cap_dac_override,cap_sys_admin=ep."""
    helper = terrain.tools / "fcap-cat"
    shutil.copy2(shutil.which("cat"), helper)
    revision_2_effective = 0x02000001
    permitted = (1 << 1) | (1 << 21)
    capability = struct.pack("<5I", revision_2_effective, permitted, 0, 0, 0)
    try:
        os.setxattr(helper, "security.capability", capability)
    except OSError as error:
        pytest.skip(f"security.capability cannot be set on this file system: {error}")
    return helper


@pytest.mark.skipif(not IS_ROOT, reason="making a setuid-root helper needs a root caller")
async def test_a_setuid_root_helper_regains_nothing(sandbox, mode, via):
    helper = setuid_copy(sandbox.terrain)
    control = proc_status(unconfined_nobody(str(helper), "/proc/self/status").stdout)
    if control["Uid"].split()[1] != "0":
        pytest.skip("setuid bits are ignored on this file system (nosuid)")
    # Evidence the helper works: unconfined, nobody running it becomes euid 0 with caps.
    assert int(control["CapEff"], 16) != 0
    with sandbox.battery.attempt(f"setuid-root helper ({mode.value}, {via})"):
        result = await sandbox.run(f"{helper} /proc/self/status", mode, via=via)
        status = proc_status(result.stdout)
        assert status, result.stderr
        assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0, result.stdout


@pytest.mark.skipif(not IS_ROOT, reason="setting security.capability needs a root caller")
async def test_a_file_capability_helper_regains_nothing(sandbox, mode, via):
    helper = file_capability_copy(sandbox.terrain)
    control = proc_status(unconfined_nobody(str(helper), "/proc/self/status").stdout)
    assert int(control["CapEff"], 16) == (1 << 1) | (1 << 21)
    with sandbox.battery.attempt(f"file-capability helper ({mode.value}, {via})"):
        result = await sandbox.run(f"{helper} /proc/self/status; echo exit=$?", mode, via=via)
        status = proc_status(result.stdout)
        # Either exec is refused (Landlock: a capability-aware exec that cannot get its
        # caps fails with EPERM) or it runs with nothing (bwrap: no_new_privs).
        assert not status or (int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0)
        assert status or "exit=126" in result.stdout, result.stdout + result.stderr


# --- host state only privilege could change -----------------------------------------


async def test_mount_and_remount_are_refused(sandbox, mode, via):
    terrain = sandbox.terrain
    before, mounts = terrain.state(), host_mount_table(terrain.base)
    command = (
        f"mount -o remount,rw /; mount -t tmpfs none {terrain.outside}; "
        f"mount --bind {terrain.root} {terrain.outside}; umount -l /proc; "
        f"{ATTACK} remount-rw / -- remount-rw {terrain.outside}; echo pwned > {terrain.victim}"
    )
    with sandbox.battery.attempt(f"mount / remount ({mode.value}, {via})"):
        result = await sandbox.run(command, mode, via=via)
        assert terrain.state() == before, describe_change(before, terrain.state())
        assert host_mount_table(terrain.base) == mounts
        assert ": DONE" not in result.stdout, result.stdout


async def test_new_namespaces_do_not_reach_the_host(sandbox, mode, via):
    """unshare -m / -U / -Ur / -Upfm --mount-proc, then remount, bind, tmpfs, write, sysctl."""
    terrain, tag = sandbox.terrain, sandbox.terrain.host_name("ns")
    victim, outside = terrain.victim, terrain.outside
    with restoring("/proc/sys/kernel/domainname") as domainname:
        before, mounts = terrain.state(), host_mount_table(terrain.base)
        command = (
            f"unshare -m sh -c 'mount -o remount,rw /; echo pwned > {victim}'; "
            f"unshare -U -m sh -c 'mount -o remount,rw /; echo pwned > {victim}'; "
            f"unshare -Ur sh -c 'echo pwned > {victim}'; "
            f"unshare -Upfm --mount-proc sh -c "
            f"'echo {tag} > /proc/sys/kernel/domainname; echo pwned > {victim}'; "
            f"{ATTACK} userns-remount-write {victim}; "
            f"{ATTACK} userns-bind-write {outside} {terrain.root}/insidedir victim.txt; "
            f"{ATTACK} userns-tmpfs-over {outside}"
        )
        with sandbox.battery.attempt(f"unshare then mount/write ({mode.value}, {via})"):
            result = await sandbox.run(command, mode, via=via)
            assert terrain.state() == before, describe_change(before, terrain.state())
            assert host_mount_table(terrain.base) == mounts
            assert Path("/proc/sys/kernel/domainname").read_text() == domainname
            done = [line for line in result.stdout.splitlines() if ": DONE" in line]
            # A tmpfs over `outside` in a private namespace is harmless; the host check is
            # the mount table above. Everything else must have been refused.
            assert all(line.startswith("userns-tmpfs-over") for line in done), result.stdout


@pytest.mark.skipif(not IS_ROOT, reason="only root could change them unconfined")
async def test_host_sysctls_and_hostname_are_not_writable(sandbox, mode, via):
    tag = sandbox.terrain.host_name("uts")
    command = (
        f"hostname {tag}; echo {tag} > /proc/sys/kernel/hostname; "
        f"echo {tag} > /proc/sys/kernel/domainname; sysctl -w kernel.domainname={tag}; "
        f"{ATTACK} open-write /proc/sys/kernel/hostname -- open-write /proc/sys/vm/drop_caches"
    )
    with (
        restoring_hostname() as hostname,
        restoring("/proc/sys/kernel/domainname") as domain,
        sandbox.battery.attempt(f"/proc/sys and hostname ({mode.value}, {via})"),
    ):
        result = await sandbox.run(command, mode, via=via)
        assert socket.gethostname() == hostname
        assert Path("/proc/sys/kernel/domainname").read_text() == domain
        assert ": DONE" not in result.stdout, result.stdout
        assert result.denied, result.stderr


async def test_sysrq_trigger_is_not_writable(sandbox, mode, via):
    # Attempted even where this kernel has no sysrq (no CONFIG_MAGIC_SYSRQ): the
    # confined command must not be able to create or open it either.
    with sandbox.battery.attempt(f"/proc/sysrq-trigger ({mode.value}, {via})"):
        # Opened for writing, never written: a success would still be the evidence.
        result = await sandbox.run(f"{ATTACK} open-write /proc/sysrq-trigger", mode, via=via)
        assert "open-write: refused" in result.stdout, result.stdout


SYSFS_KNOB = "/sys/kernel/mm/ksm/pages_to_scan"
SYSFS_OPEN_ONLY = (
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/kernel/uevent_helper",
    "/sys/kernel/profiling",
)


@pytest.mark.skipif(
    not any(os.access(path, os.W_OK) for path in (SYSFS_KNOB, *SYSFS_OPEN_ONLY)),
    reason="no root-writable sysfs attribute to aim at on this machine",
)
async def test_sysfs_is_not_writable(sandbox, mode, via):
    targets = [path for path in SYSFS_OPEN_ONLY if os.access(path, os.W_OK)]
    command = " -- ".join(f"open-write {path}" for path in targets)
    command = f"{ATTACK} {command}" if targets else "true"
    with contextlib.ExitStack() as stack:
        if os.access(SYSFS_KNOB, os.W_OK):
            value = stack.enter_context(restoring(SYSFS_KNOB))
            command += f"; echo {int(value) + 1} > {SYSFS_KNOB}"
        with sandbox.battery.attempt(f"/sys writes ({mode.value}, {via})"):
            result = await sandbox.run(command, mode, via=via)
            assert ": DONE" not in result.stdout, result.stdout
            if os.access(SYSFS_KNOB, os.W_OK):
                assert Path(SYSFS_KNOB).read_text() == value


@pytest.mark.skipif(not cgroup_dirs(), reason="no cgroup hierarchy is mounted here")
async def test_cgroups_are_not_writable(sandbox, mode, via):
    hierarchies = cgroup_dirs()[:3]
    name = sandbox.terrain.host_name("cg")
    parts = [f"mkdir {top}/{name}" for top in hierarchies]
    opens = [
        f"open-write {top}/{leaf}"
        for top in hierarchies
        for leaf in ("release_agent", "cgroup.procs")
        if os.path.exists(f"{top}/{leaf}")
    ]
    command = "; ".join(parts) + (f"; {ATTACK} " + " -- ".join(opens) if opens else "")
    try:
        with sandbox.battery.attempt(f"cgroup mkdir / release_agent ({mode.value}, {via})"):
            result = await sandbox.run(command, mode, via=via)
            assert not [top for top in hierarchies if os.path.exists(f"{top}/{name}")]
            assert ": DONE" not in result.stdout, result.stdout
    finally:
        for top in hierarchies:
            with contextlib.suppress(OSError):
                os.rmdir(f"{top}/{name}")


async def test_devices_cannot_be_written_made_or_ioctled(sandbox, mode, via):
    """Host devices this caller could open for writing; a privileged device ioctl; mknod.

    Devices are opened, never written (the kernel log, consoles, loop and disk nodes);
    the ioctls are a size read on a block device and a zero-bit entropy credit
    (RNDADDTOENTCNT needs CAP_SYS_ADMIN: it passes unconfined and changes nothing).
    """
    terrain = sandbox.terrain
    actions = [f"open-write {path}" for path in writable_devices()]
    actions += [f"block-ioctl {path}" for path in block_devices()]
    actions.append("credit-entropy /dev/urandom")
    command = (
        f"mknod {terrain.root}/blk b 7 0; mknod {terrain.root}/chr c 1 1; "
        f"{ATTACK} " + " -- ".join(actions)
    )
    with sandbox.battery.attempt(f"device write / mknod / device ioctl ({mode.value}, {via})"):
        result = await sandbox.run(command, mode, via=via)
        assert not os.path.lexists(terrain.root / "blk"), "a block device node was made"
        assert not os.path.lexists(terrain.root / "chr"), "a device node was made"
        assert result.stdout.count(": refused") == len(actions), result.stdout


async def test_kernel_modules_cannot_be_loaded(sandbox, mode, via):
    modules = Path("/proc/modules").read_text() if os.path.exists("/proc/modules") else None
    command = (
        f"{ATTACK} init-module -- finit-module; "
        "command -v insmod && insmod /nonexistent/stockade.ko; "
        "command -v modprobe && modprobe stockade-no-such-module; true"
    )
    with sandbox.battery.attempt(f"kernel module load ({mode.value}, {via})"):
        result = await sandbox.run(command, mode, via=via)
        assert "init-module: refused" in result.stdout, result.stdout
        assert "finit-module: refused" in result.stdout, result.stdout
        if modules is not None:
            assert Path("/proc/modules").read_text() == modules

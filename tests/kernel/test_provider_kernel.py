"""Real kernel, bwrap AND Landlock each: the confined argv the provider returns holds.

Assertions are on the filesystem; the caller is root here, as in CI.
"""

from __future__ import annotations

import os
import shutil
import socket
import uuid
from pathlib import Path

import pytest
import trio

from stockade.sandbox.actor import open_provider
from stockade.vocab import SandboxMode, SandboxPolicy

RO = SandboxMode.READ_ONLY
WW = SandboxMode.WORKSPACE_WRITE


async def confined(config, mode, root, script, **policy):
    """Run `sh -c script` confined; (exit, stdout, stderr, wrapped)."""
    # The argv is good while its provider runs (the launcher may be its sealed copy).
    async with open_provider(config) as provider:
        wrapped = await provider.confine(
            ("/bin/sh", "-c", script), SandboxPolicy(mode, str(root), **policy)
        )
        done = await trio.run_process(
            wrapped.argv, capture_stdout=True, capture_stderr=True, check=False, stdin=b""
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode(), wrapped


@pytest.fixture
def project(scratch):
    root = Path(scratch) / "project"
    sibling = Path(scratch) / "sibling"
    root.mkdir()
    sibling.mkdir()
    (sibling / "readable.txt").write_text("outside content\n")
    return root, sibling


async def test_read_only_refuses_writes_everywhere_but_dev_null(backend_config, project):
    root, sibling = project
    name = f"stockade-{uuid.uuid4().hex}"
    targets = [
        root / name,
        sibling / name,
        Path("/tmp") / name,
        Path("/etc") / name,
        Path.home() / name,
    ]
    script = "; ".join(f"echo x > '{target}'" for target in targets) + "; echo ok > /dev/null"
    try:
        status, _, stderr, wrapped = await confined(backend_config, RO, root, script + "; echo $?")
        for target in targets:
            assert not target.exists(), f"{target} was written under read-only"
        assert stderr.count(wrapped.denial_signatures[0]) == len(targets)
        assert status == 0  # the last command, the /dev/null write, succeeded
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


async def test_read_only_denial_text_is_the_backends_signature(backend_config, project):
    root, _ = project
    status, _, stderr, wrapped = await confined(backend_config, RO, root, f"touch '{root}/x'")
    assert status != 0
    assert not (root / "x").exists()
    # The Landlock launcher's namespaced tier refuses on its read-only host first.
    expected = {"bwrap": "Read-only file system", "landlock": "Read-only file system"}
    assert wrapped.denial_signatures[0] == expected[wrapped.backend]
    assert expected[wrapped.backend] in stderr


async def test_workspace_write_allows_root_and_temp_root_but_not_a_sibling(backend_config, project):
    """The policy's temp directory is writable; the host's /tmp is not (nor a sibling)."""
    root, sibling = project
    temp = Path(f"/tmp/stockade-kernel-{uuid.uuid4().hex}")
    temp.mkdir(mode=0o700)
    host_file = Path("/tmp") / f"stockade-{uuid.uuid4().hex}"
    script = (
        f"echo inside > '{root}/made.txt'; mkdir '{root}/sub' && echo deep > '{root}/sub/f'; "
        f"echo temp > '{temp}/t'; echo host > '{host_file}'; echo outside > '{sibling}/made.txt'"
    )
    try:
        _, _, stderr, wrapped = await confined(backend_config, WW, root, script, temp_dir=str(temp))
        assert (root / "made.txt").read_text() == "inside\n"
        assert (root / "sub" / "f").read_text() == "deep\n"
        assert (temp / "t").read_text() == "temp\n"
        assert not host_file.exists()
        assert not (sibling / "made.txt").exists()
        assert stderr.count(wrapped.denial_signatures[0]) == 2
    finally:
        host_file.unlink(missing_ok=True)
        shutil.rmtree(temp)  # with bwrap's placeholders (.git, stockade.yml)


async def test_a_grandchild_is_equally_confined(backend_config, project):
    root, sibling = project
    script = (
        f"sh -c \"sh -c 'echo deep > {sibling}/grandchild.txt' & wait\"; "
        f"sh -c \"sh -c 'echo ok > {root}/grandchild.txt' & wait\""
    )
    await confined(backend_config, WW, root, script)
    assert not (sibling / "grandchild.txt").exists()
    assert (root / "grandchild.txt").read_text() == "ok\n"


async def test_reads_outside_the_root_work(backend_config, project):
    root, sibling = project
    for mode in (RO, WW):
        status, stdout, _, _ = await confined(
            backend_config, mode, root, f"cat '{sibling}/readable.txt'"
        )
        assert (status, stdout) == (0, "outside content\n")


@pytest.mark.parametrize("mode", [RO, WW])
async def test_a_root_caller_holds_no_privilege_inside(backend_config, project, mode):
    if os.geteuid() != 0:
        pytest.skip("this test is about a root caller; CI runs as root")
    root, _ = project
    _status, stdout, _, _ = await confined(
        backend_config, mode, root, "grep -E '^(CapEff|CapPrm|NoNewPrivs):' /proc/self/status"
    )
    facts = dict(line.split(":\t") for line in stdout.splitlines())
    assert int(facts["CapEff"], 16) == 0
    assert int(facts["CapPrm"], 16) == 0
    assert facts["NoNewPrivs"] == "1"


@pytest.mark.parametrize("mode", [RO, WW])
async def test_a_root_caller_cannot_remount_or_write_host_sysctls(backend_config, project, mode):
    root, sibling = project
    hostname = socket.gethostname()
    script = (
        "mount -o remount,rw / ; "
        f"echo escaped > '{sibling}/after-remount.txt'; "
        "echo stockade-escaped > /proc/sys/kernel/hostname; "
        "echo stockade-escaped > /proc/sys/kernel/domainname; true"
    )
    domainname = Path("/proc/sys/kernel/domainname")
    before = domainname.read_text()
    try:
        await confined(backend_config, mode, root, script)
        assert not (sibling / "after-remount.txt").exists()
        assert socket.gethostname() == hostname
        assert domainname.read_text() == before
    finally:
        if domainname.read_text() != before:
            domainname.write_text(before)

"""Fixtures for the fs tools: a workspace and an outside directory (both outside /tmp),
a temp root, policies per mode, and the resolver switch (openat2 or the forced fallback)."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

import pytest

from stockade.tools import _fence
from stockade.vocab import ExecutionPolicy, SandboxMode


def _outside_tmp(base: str) -> str:
    for temp_root in ("/tmp", os.environ.get("TMPDIR") or "/tmp"):
        real = os.path.realpath(temp_root).rstrip("/") + "/"
        if os.path.realpath(base).startswith(real):
            pytest.fail(f"{base} lies under the temp root {temp_root}; unset TMPDIR")
    return base


@pytest.fixture
def ws() -> Iterator[str]:
    """The workspace root: a real directory under /var/tmp (not a temp root)."""
    base = _outside_tmp(os.path.realpath(tempfile.mkdtemp(prefix="stockade-ws-", dir="/var/tmp")))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def outside() -> Iterator[str]:
    """A directory no workspace-write policy grants (same file system as `ws`)."""
    base = _outside_tmp(os.path.realpath(tempfile.mkdtemp(prefix="stockade-out-", dir="/var/tmp")))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def temp_root() -> Iterator[str]:
    """A scratch directory beneath /tmp, which the tests pass as the only temp root."""
    base = tempfile.mkdtemp(prefix="stockade-tmp-", dir="/tmp")
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


TEMP_ROOTS = ("/tmp",)


@pytest.fixture
def policy(ws: str) -> Callable[[SandboxMode], ExecutionPolicy]:
    def make(mode: SandboxMode = SandboxMode.WORKSPACE_WRITE) -> ExecutionPolicy:
        return ExecutionPolicy(mode=mode, workspace_root=ws)

    return make


@pytest.fixture
def ww(policy: Callable[[SandboxMode], ExecutionPolicy]) -> ExecutionPolicy:
    return policy(SandboxMode.WORKSPACE_WRITE)


def kernel_has_openat2() -> bool:
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(_fence.openat2(fd, ".", os.O_RDONLY | os.O_DIRECTORY, _fence.RESOLVE_BENEATH))
        return True
    except OSError as error:
        if error.errno == errno.ENOSYS:
            return False
        raise
    finally:
        os.close(fd)


@pytest.fixture(params=["openat2", "fallback"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test through openat2 (the walk must not be needed) or the forced fallback."""
    if request.param == "fallback":

        def absent(*_args: object) -> int:
            raise OSError(errno.ENOSYS, "openat2 forced off by the test")

        monkeypatch.setattr(_fence, "openat2", absent)
    else:
        if not kernel_has_openat2():
            pytest.skip("this kernel has no openat2")

        def no_walk(*_args: object) -> int:
            raise AssertionError("the fallback walk ran although openat2 is available")

        monkeypatch.setattr(_fence, "walk_beneath", no_walk)
    return request.param


def snapshot(*roots: str) -> dict[str, object]:
    """Every entry under `roots`: file bytes, link text, or 'dir' / the file type."""
    seen: dict[str, object] = {}
    for root in roots:
        for here, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(here, name)
                if os.path.islink(path):
                    seen[path] = ("link", os.readlink(path))
                elif os.path.isfile(path):
                    with open(path, "rb") as handle:
                        seen[path] = handle.read()
                else:
                    seen[path] = ("type", os.lstat(path).st_mode)
    return seen

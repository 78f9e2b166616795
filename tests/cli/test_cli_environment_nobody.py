"""The environment policy as nobody: `stockade exec` run by uid 65534 on both backends,
the secret-looking variables in its environment, judged by what `env` printed inside."""

from __future__ import annotations

import os
import subprocess

import pytest

from ..support import IS_ROOT, require_backend
from .test_cli_environment import HOST, assert_clean

pytestmark = pytest.mark.nobody  # runs stockade as uid 65534 (tests/README.md)

NOBODY = 65534
COMMAND = ("--mode", "workspace-write", "--", "sh", "-c", "env -0 > seen.env; env -0")


@pytest.mark.skipif(not IS_ROOT, reason="needs root to become nobody")
@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_exec_as_nobody_drops_them_too(backend, scratch, nobody_public):
    require_backend(backend)
    root = os.path.join(scratch, "project")
    os.mkdir(root)
    os.chown(root, NOBODY, NOBODY)
    os.chmod(scratch, 0o755)
    done = subprocess.run(
        [nobody_public.python, "-m", "stockade", "exec", "--backend", backend, *COMMAND],
        capture_output=True,
        text=True,
        cwd=root,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        env={
            **os.environ,
            **HOST,
            "HOME": "/",
            "PYTHONPATH": nobody_public.pythonpath,
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert_clean(done.stdout)
    # What the command wrote in its root, as nobody: the same clean environment.
    written = os.path.join(root, "seen.env")
    assert os.stat(written).st_uid == NOBODY
    with open(written, encoding="utf-8") as handle:
        assert_clean(handle.read())

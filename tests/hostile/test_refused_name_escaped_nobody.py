"""test_refused_name_escaped.py as nobody: `stockade run` run by uid 65534 on both
backends (Landlock through its user namespace), the command asking the proxy for a
SOCKS5 name made of terminal escapes; the marker on stderr shows it escaped, and the
control (`--json`) shows the name reached stockade as sent.

Not `stockade exec` here: its proxy process is `python -I -m stockade.network.serve`,
which (isolated, rightly) ignores the PYTHONPATH that lets nobody import this
checkout's mirror; the same marker function is judged as root."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ..support import IS_ROOT, require_backend
from .test_person_facing_escapes import ALL_CLEAR, raw_controls
from .test_refused_name_escaped import ALLOW, SHOWN, SOCKS_HOSTILE

pytestmark = pytest.mark.nobody  # runs stockade as uid 65534 (tests/README.md)

NOBODY = 65534


def as_nobody(public, root: Path, *words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [public.python, "-m", "stockade", *words],
        capture_output=True,
        text=True,
        cwd=root,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        env={
            **os.environ,
            "STOCKADE_CONFIG": "",
            "HOME": "/",
            "PYTHONPATH": public.pythonpath,
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(not IS_ROOT, reason="needs root to become nobody")
@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_the_marker_is_escaped_for_nobody_too(backend, scratch, nobody_public):
    require_backend(backend)
    root = Path(scratch) / "project"
    root.mkdir()
    (root / "socks.py").write_text(SOCKS_HOSTILE)
    for path in (root, root / "socks.py"):
        os.chown(path, NOBODY, NOBODY)
    os.chmod(scratch, 0o755)
    command = f"{nobody_public.python} -I -S socks.py"
    marker = f"[sandbox: network access to {SHOWN} denied]"

    ran = as_nobody(nobody_public, root, "run", "--backend", backend, "--allow", ALLOW, command)
    assert ran.returncode == 0, ran.stderr
    assert "socks-reply 2" in ran.stdout, (ran.stdout, ran.stderr)
    assert raw_controls(ran.stderr) == [], repr(ran.stderr)
    assert marker in ran.stderr.splitlines()

    # The control: the name reached stockade exactly as the command sent it.
    facts = as_nobody(
        nobody_public, root, "run", "--json", "--backend", backend, "--allow", ALLOW, command
    )
    assert raw_controls(facts.stdout) == [], repr(facts.stdout)
    hosts = [c["host"] for c in json.loads(facts.stdout)["connections"]]
    assert hosts == [ALL_CLEAR], facts.stdout

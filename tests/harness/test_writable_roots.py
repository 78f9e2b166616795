"""Extra writable roots (issue 37): `writable_roots` in the composition, a session's
own through the API, `--writable` on the command line. Each is trust-checked like the
workspace root, writable in workspace-write only, protected metadata stays read-only
inside it, and the policy message and the facts state it.

Real kernel, both backends; unconfined controls show each refused write is real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from stockade import open_harness
from stockade.errors import ConfigError

from ..support import require_backend, stockade
from .conftest import on_backend as composition

BACKENDS = ("bwrap", "landlock")


@attrs.frozen
class Place:
    home: Path
    root: Path
    extra: Path
    sibling: Path


@pytest.fixture
def place(monkeypatch) -> Iterator[Place]:
    base = Path(tempfile.mkdtemp(prefix="stockade-extra-", dir="/var/tmp"))
    home, root, extra, sibling = base / "home", base / "ws", base / "extra", base / "sibling"
    for path in (home, root, extra, sibling):
        path.mkdir()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("KEY\n")
    subprocess.run(["git", "init", "-q", str(extra)], check=True)
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "STOCKADE_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    try:
        yield Place(home, root, extra, sibling)
    finally:
        shutil.rmtree(base, ignore_errors=True)


WRITES = "echo a > {extra}/made; echo b > {sibling}/made; echo c > {extra}/.git/hooks/pre-commit"


def test_the_controls_every_write_is_real(place):
    script = WRITES.format(extra=place.extra, sibling=place.sibling)
    assert subprocess.run(["bash", "-c", script]).returncode == 0
    assert (place.sibling / "made").exists() and (place.extra / ".git/hooks/pre-commit").exists()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("given", ("composition", "session"))
async def test_an_extra_root_is_written_and_nothing_beside_it(backend, place, given):
    require_backend(backend)
    sandbox = {"writable_roots": [str(place.extra)]} if given == "composition" else {}
    own = [str(place.extra)] if given == "session" else []
    async with open_harness(composition(backend, **sandbox)) as harness:
        session = await harness.open_session(cwd=str(place.root), writable_roots=own)
        await session.set_sandbox_mode("workspace-write")
        script = WRITES.format(extra=place.extra, sibling=place.sibling)
        result = await session.run_tool("bash", {"command": script})
        assert (place.extra / "made").read_text() == "a\n"
        assert not (place.sibling / "made").exists()
        assert not (place.extra / ".git" / "hooks" / "pre-commit").exists()
        assert result.facts["denied"], result.text
        assert str(place.extra) in result.facts["writable"]
        context = await session.pre_step()
        assert context is not None and str(place.extra) in context.text
        assert context.writable_roots == (str(place.extra),)
        # read-only: the extra root is not writable either.
        await session.set_sandbox_mode("read-only")
        refused = await session.run_tool("bash", {"command": f"echo d > {place.extra}/ro"})
        assert refused.facts["denied"] and not (place.extra / "ro").exists()
        session_id = session.id
        await session.close()
        # A resumed session keeps its own roots without naming them again.
        resumed = await harness.resume_session(session_id)
        await resumed.set_sandbox_mode("workspace-write")
        again = await resumed.run_tool("bash", {"command": f"echo e > {place.extra}/again"})
        assert again.facts.get("exit_code") == 0, again.text
        assert (place.extra / "again").exists()


@pytest.mark.parametrize(
    "pick",
    ("/", "home", "ssh", "holds-ssh", "missing", "relative", "installation"),
)
async def test_a_root_that_would_expose_something_is_refused(place, pick):
    require_backend("bwrap")
    import stockade as package

    chosen = {
        "/": "/",
        "home": str(place.home),
        "ssh": str(place.home / ".ssh"),
        "holds-ssh": str(place.home.parent),
        "missing": str(place.home / "nope"),
        "relative": "ws",
        "installation": os.path.dirname(package.__file__),
    }[pick]
    async with open_harness(composition("bwrap")) as harness:
        with pytest.raises(ConfigError) as refused:
            await harness.open_session(cwd=str(place.root), writable_roots=[chosen])
    assert "writable root" in str(refused.value)
    # And in a composition: the harness does not open.
    with pytest.raises(ConfigError):
        async with open_harness(composition("bwrap", writable_roots=[chosen])):
            pass


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("verb", ("exec", "run"))
def test_the_command_line_writable(backend, place, verb):
    require_backend(backend)
    script = f"echo a > {place.extra}/cli; echo b > {place.sibling}/cli"
    argv = ["--", "bash", "-c", script] if verb == "exec" else [script]
    done = stockade(
        verb, "--backend", backend, "--writable", str(place.extra), *argv, cwd=place.root
    )
    assert (place.extra / "cli").read_text() == "a\n", done.stderr
    assert not (place.sibling / "cli").exists()
    home = stockade(verb, "--writable", str(place.home), *argv, cwd=place.root)
    assert home.returncode == 2 and "home directory" in home.stderr, home.stderr
    assert len(home.stderr.splitlines()) == 1

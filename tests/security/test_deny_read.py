"""deny_read on the real kernel: each default item planted with known content in a
throwaway HOME, read every way a command would try (cat, cp, tar, python's open, a
symlink made in the root, a hard link), as root and as nobody, on both backends. The
content must appear in no output and in no file the command wrote; the result says
denied, and that only danger-full-access lifts it. Unconfined controls show each read
is real. docs/security.md, "Secrets: files".
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio

from stockade import open_harness
from stockade.approval.answerers import ScriptedAnswerer
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.executor.render import render_result
from stockade.sandbox.actor import open_provider
from stockade.trust.secrets import ENV_FILE_DEPTH, HOME_SECRETS
from stockade.vocab import READ_DENIED_HINT, ExecutionPolicy, Network, SandboxMode

from .support import NOBODY, SYSTEM_PYTHON
from .test_unprivileged import confined_as_nobody, nobody_terrain, runner  # noqa: F401

pytestmark = pytest.mark.nobody

RO, WW = SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE
by_mode = pytest.mark.parametrize("mode", (RO, WW), ids=lambda mode: mode.value)


@attrs.frozen
class Planted:
    """A secret planted for the test: the path a command names, the file holding the
    content, and the content (unique per item)."""

    path: str
    file: str
    content: str


def _plant(home: Path, item: str, tag: str) -> Planted:
    relative = item.removeprefix("~/").replace("*", ".toml")
    path = home / relative
    content = f"SECRET-{tag}-{relative.replace('/', '_')}"
    # The items that are directories by convention hold a key file.
    if relative in (".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".config/gh"):
        path.mkdir(parents=True)
        file = path / "credentials"
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        file = path
    file.write_text(content + "\n")
    return Planted(str(path), str(file), content)


@pytest.fixture
def secret_home(monkeypatch, terrain) -> Iterator[list[Planted]]:
    """Every default home item, the state directory, and `.env` files in the root: all
    readable by nobody too (0755 directories, 0644 files), so a refusal is the sandbox's."""
    home = Path(tempfile.mkdtemp(prefix="stockade-home-", dir="/var/tmp"))
    tag = terrain.tag
    planted = [_plant(home, item, tag) for item in HOME_SECRETS]
    state = home / ".local" / "state" / "stockade" / "sessions"
    state.mkdir(parents=True)
    log = state / "s1.jsonl"
    log.write_text(f"SECRET-{tag}-sessionlog\n")
    planted.append(Planted(str(log), str(log), f"SECRET-{tag}-sessionlog"))
    root = Path(terrain.root)
    nested = root / "app" / "config"
    nested.mkdir(parents=True)
    for where, name in ((root, ".env"), (root / "app", ".env.local"), (nested, ".env")):
        content = f"SECRET-{tag}-{where.name}{name}"
        (where / name).write_text(content + "\n")
        planted.append(Planted(str(where / name), str(where / name), content))
    for directory, _, files in os.walk(home):
        os.chmod(directory, 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)
    for directory in (root / "app", nested):
        os.chmod(directory, 0o777)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("STOCKADE_STATE_DIR", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    try:
        yield planted
    finally:
        shutil.rmtree(home, ignore_errors=True)


def every_way(planted: list[Planted], out: str | None) -> str:
    """One shell script reading each secret every way; `out` a directory it may write
    (copies, archives, links), None in read-only."""
    lines = []
    for number, secret in enumerate(planted):
        p, f = secret.path, secret.file
        lines += [
            f"cat {f}",
            # The runner's own pid 1 sits outside the covers' mount namespace.
            f"cat /proc/1/root{f}",
            f"{SYSTEM_PYTHON} -I -S -c \"print(open('{f}').read())\"",
            f"ls -la {p}",
        ]
        if out is not None:
            lines += [
                f"cp -r {p} {out}/copy-{number}",
                f"tar cf {out}/t-{number}.tar {p}",
                f"ln -s {f} {out}/link-{number} && cat {out}/link-{number}",
                f"ln {f} {out}/hard-{number}",
                f"cat {out}/hard-{number}",
            ]
    return "\n".join(lines) + "\ncat /etc/shadow\ntrue"


def _shadow_line() -> str:
    return Path("/etc/shadow").read_text().splitlines()[0]


def leaked(planted: list[Planted], output: str, written: Path | None) -> list[str]:
    """The secrets whose content shows in `output` or in any file under `written`."""
    found = [s.content for s in planted if s.content in output]
    if _shadow_line() in output:
        found.append("/etc/shadow")
    if written is not None:
        for directory, _, files in os.walk(written):
            for name in files:
                path = os.path.join(directory, name)
                if os.path.islink(path):
                    continue
                data = Path(path).read_bytes()
                found += [s.content for s in planted if s.content.encode() in data]
    return found


@by_mode
async def test_no_default_item_is_readable(sandbox, secret_home, mode):
    out = f"{sandbox.terrain.root}/out" if mode is WW else None
    if out is not None:
        os.mkdir(out)
    command = every_way(secret_home, out)
    control = await trio.run_process(
        ["bash", "-c", command], capture_stdout=True, capture_stderr=True, check=False
    )
    assert set(leaked(secret_home, control.stdout.decode(), None)) >= {
        s.content for s in secret_home
    }, "the control read nothing: the attack is not real"
    if out is not None:
        shutil.rmtree(out)
        os.mkdir(out)
    inside = in_root_gap(sandbox, secret_home, mode)
    with sandbox.battery.attempt(f"deny_read: every default item ({mode.value})"):
        result = await sandbox.run(command, mode)
        written = Path(out) if out is not None else None
        assert set(leaked(secret_home, result.stdout + result.stderr, written)) <= inside
        assert result.denied and result.read_denied, result
        assert READ_DENIED_HINT in render_result(result)
        assert_gaps_name(result, secret_home, inside)


def in_root_gap(sandbox, planted: list[Planted], mode) -> set[str]:
    """What the plain tier leaves readable in workspace-write, and names: the items
    inside the writable root (no mount namespace to cover them; its complement grants
    cannot carve them out of the root's)."""
    if sandbox.tier != "plain" or mode is not WW:
        return set()
    root = str(sandbox.terrain.root) + "/"
    return {s.content for s in planted if s.path.startswith(root)}


def assert_gaps_name(result, planted: list[Planted], inside: set[str]) -> None:
    for secret in planted:
        if secret.content in inside:
            named = [g for g in result.gaps if "inside a writable root" in g]
            assert any(os.path.realpath(secret.file) in g for g in named), result.gaps


async def test_a_background_job_reads_no_secret_either(sandbox, secret_home):
    with sandbox.battery.attempt("deny_read: a background job"):
        report = await sandbox.run(every_way(secret_home[:3], None), WW, via="job")
        assert leaked(secret_home, report.stdout + report.stderr, None) == []
        assert report.denied and report.read_denied, report


@by_mode
async def test_nobody_reads_no_secret(sandbox, runner, nobody_terrain, secret_home, mode):  # noqa: F811
    command = every_way(secret_home, None)
    control = await trio.run_process(
        ["cat", *(s.file for s in secret_home)],
        capture_stdout=True,
        capture_stderr=True,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        check=False,
    )
    seen = control.stdout.decode()
    assert all(s.content in seen for s in secret_home), control.stderr
    inside = in_root_gap(sandbox, secret_home, mode)
    with sandbox.battery.attempt(f"as nobody: deny_read ({mode.value})"):
        done = await confined_as_nobody(sandbox, runner, mode, command)
        output = (done.stdout + done.stderr).decode()
        assert set(leaked(secret_home, output, None)) <= inside
        assert output.count("Permission denied") >= len(secret_home) - len(inside)


async def test_the_bound_and_a_configured_glob(backend, terrain, secret_home, monkeypatch):
    """A `.env` deeper than the bound stays readable, as documented; a configured glob
    hides its matches in the root; `!NAME` gives a default item back."""
    name, config = backend
    root = Path(terrain.root)
    deep = root.joinpath(*[f"d{i}" for i in range(ENV_FILE_DEPTH + 1)])
    deep.mkdir(parents=True)
    (deep / ".env").write_text("beyond-the-bound\n")
    (root / "keys").mkdir()
    (root / "keys" / "server.pem").write_text("SECRET-pem\n")
    netrc = next(s for s in secret_home if s.path.endswith(".netrc"))
    configured = attrs.evolve(config, deny_read=("*.pem", "!~/.netrc"))
    policy = ExecutionPolicy(mode=WW, workspace_root=str(root))
    async with (
        open_provider(configured) as provider,
        open_executor(ExecutorConfig(kill_grace=0.5), provider) as executor,
    ):
        result = await executor.run(
            executor.resolve(f"cat {deep}/.env keys/server.pem {netrc.file} .env", policy=policy)
        )
    assert result.backend == name
    assert "beyond-the-bound" in result.stdout
    assert netrc.content in result.stdout
    assert "SECRET-pem" not in result.stdout
    assert next(s for s in secret_home if s.path == str(root / ".env")).content not in result.stdout
    assert result.denied and result.read_denied


async def test_ordinary_work_still_runs(sandbox, secret_home):
    """Reading everything else, git, and a venv in the root."""
    root = sandbox.terrain.root
    command = (
        "set -e; cat inside.txt >/dev/null; ls / >/dev/null; "
        "git init -q repo && git -C repo -c user.email=a@b -c user.name=a commit -q "
        "--allow-empty -m one && git -C repo log --oneline | wc -l; "
        f"{SYSTEM_PYTHON} -m venv --without-pip venv && venv/bin/python -c 'print(42)'"
    )
    result = await sandbox.run(command, WW)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == ["1", "42"]
    assert not result.denied
    assert os.path.isdir(f"{root}/venv/bin")


async def test_a_granted_escalation_hides_them_too(backend, terrain, secret_home, tmp_path_factory):
    """read-only, a denial, then a granted retry under workspace-write: still refused,
    and the first result already says no wider sandbox mode would help."""
    name, _ = backend
    state_dir = Path(tempfile.mkdtemp(prefix="stockade-state-deny-", dir="/var/tmp"))
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": name}},
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "approval", "name": "stockade.approval.user"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state_dir)}},
    ]
    key = secret_home[0]
    command = f"cat {key.file} > copy.txt; cat {key.file}; cat {state_dir}/* 2>&1 | head -c 300"
    try:
        async with open_harness(entries, answerers=[ScriptedAnswerer(["allowed-once"])]) as harness:
            session = await harness.open_session(cwd=terrain.root)
            await session.set_sandbox_mode("read-only")
            denied = await session.run_tool("bash", {"command": command})
            granted = await session.run_tool(
                "bash",
                {
                    "command": command,
                    "sandbox_permissions": "workspace-write",
                    "justification": "write the copy",
                },
            )
        for result in (denied, granted):
            assert key.content not in result.text
            assert READ_DENIED_HINT in result.text, result.text
        assert granted.facts["granted"] == "workspace-write"
        copy = Path(terrain.root) / "copy.txt"
        assert copy.exists() and key.content not in copy.read_text()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def _wheel(directory: Path) -> str:
    """A minimal pure wheel (`demo 1.0`), enough for `pip download` to fetch."""
    import zipfile

    name = "demo-1.0-py3-none-any.whl"
    info = "demo-1.0.dist-info"
    with zipfile.ZipFile(directory / name, "w") as wheel:
        wheel.writestr("demo.py", "VALUE = 1\n")
        wheel.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
        wheel.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{info}/RECORD", "")
    return name


async def test_pip_download_with_network_on(sandbox, secret_home, tmp_path):
    """A package index on loopback (PEP 503), reached with network on, deny_read in force."""
    import functools
    import http.server
    import sys
    import threading

    index = tmp_path / "index"
    (index / "simple" / "demo").mkdir(parents=True)
    wheel = _wheel(index / "simple" / "demo")
    (index / "simple" / "demo" / "index.html").write_text(f'<a href="{wheel}">{wheel}</a>\n')
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(index))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/simple"
        command = (
            f"{sys.executable} -m pip download --no-cache-dir --no-deps --disable-pip-version-check "
            f"-q -d dl --index-url {url} demo"
        )
        result = await sandbox.run(command, WW, network=Network.ON)
    finally:
        server.shutdown()
    assert result.exit_code == 0, result.stderr
    assert (Path(sandbox.terrain.root) / "dl" / wheel).exists()
    assert not result.denied


FORGE_RENAME = """
import os, sys
root, name, moved = sys.argv[1:4]
times = {p: (os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns) for p in (root, f"{root}/{name}")}
os.rename(f"{root}/{name}", f"{root}/{moved}")
os.mkdir(f"{root}/{name}")
os.utime(root, ns=times[root])
os.utime(f"{root}/{moved}", ns=times[f"{root}/{name}"])
os.utime(f"{root}/{name}", ns=times[f"{root}/{name}"])
print("forged", os.stat(root).st_mtime_ns == times[root][1])
"""


async def test_a_env_renamed_with_its_times_set_back_is_still_hidden(sandbox, secret_home):
    """Issue 35, hole 3: call 1 reads `svc/.env` (refused); call 2 renames `svc` to
    `svc2`, makes an empty `svc` and sets every directory's times back; call 3 reads
    `svc2/.env`. The search of call 1 may not be reused for call 3: a command can set
    a directory's mtime back, never its ctime (nor keep its inode)."""
    root = Path(sandbox.terrain.root)
    (root / "svc").mkdir(mode=0o777)
    secret = f"SECRET-{sandbox.terrain.tag}-renamed-env"
    (root / "svc" / ".env").write_text(secret + "\n")
    control = await trio.run_process(
        ["cat", str(root / "svc" / ".env")], capture_stdout=True, check=False
    )
    assert secret in control.stdout.decode(), "the control read nothing: the attack is not real"
    await trio.sleep(0.05)  # older than a clock tick: call 1's search may be kept
    if sandbox.tier == "plain":
        # A .env inside the writable root: the plain tier's named gap, with no search
        # to reuse (nothing is covered).
        result = await sandbox.run("true", WW)
        assert any("inside a writable root" in g for g in result.gaps), result.gaps
        sandbox.battery.disclosed("deny_read: a .env inside the root (plain tier)")
        return
    with sandbox.battery.attempt("deny_read: a .env renamed, its directories' times set back"):
        first = await sandbox.run("cat svc/.env", WW)
        assert secret not in first.stdout and first.read_denied, first
        forged = await sandbox.run(f"{SYSTEM_PYTHON} -I -S -c '{FORGE_RENAME}' {root} svc svc2", WW)
        assert forged.stdout.strip() == "forged True", forged
        third = await sandbox.run("cat svc2/.env", WW)
        assert secret not in third.stdout + third.stderr
        assert third.read_denied, third

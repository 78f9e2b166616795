"""The PostgreSQL store's own credential files are hidden from every confined command
(issue 35, hole 4): every file libpq would read for the store's DSN and environment.

A composition whose session log is a postgres store logs in with a password file
named in the DSN (`passfile=`), one named by `$PGPASSFILE`, a service file
(`$PGSERVICEFILE`) holding the password and naming a client certificate, and TLS files
(`sslkey=`, libpq's default `~/.postgresql/postgresql.key`). Each lies outside the
workspace, readable by the harness's user (the service and TLS files by nobody too).
A command reads it every way it would (cat, `/proc/1/root`, python's open, a copy
into the root) through the bash tool in read-only and workspace-write, through the fs
tool, through `stockade run` and `stockade exec`, and as nobody: the password and
key show in no output and the result says read denied. Unconfined controls read each
file, so the attack is real; the sessions open, so the store logged in with them.
docs/security.md, "Secrets: files".
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio

from stockade import open_harness
from stockade.vocab import SandboxMode, SandboxPolicy

from ..postgres._cluster import PASSWORD, PASSWORD_ROLE
from ..postgres.fixtures import fresh_database, pg_dsn, with_params  # noqa: F401
from ..support import stockade, variant_backend, variant_tier
from .support import IS_ROOT, NOBODY, SYSTEM_PYTHON
from .test_unprivileged import runner  # noqa: F401

pytestmark = pytest.mark.nobody

RO, WW = SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE
by_mode = pytest.mark.parametrize("mode", (RO, WW), ids=lambda mode: mode.value)
SERVICE = "stockade_log"


@attrs.frozen
class Credentials:
    """One way the store gets its login: the DSN the composition names, the harness's
    environment, and the files libpq reads for it (each with a text that must not
    leak: the password, or a key's unique content)."""

    name: str
    dsn: str
    env: dict[str, str]
    files: tuple[Path, ...]
    secrets: tuple[str, ...]
    root: Path
    home: Path
    base: Path


def _key(tag: str) -> tuple[str, str]:
    """A key file's text, and the unique line in it that must not leak."""
    unique = f"SECRET-{tag}-{secrets.token_hex(8)}"
    return f"-----BEGIN PRIVATE KEY-----\n{unique}\n", unique


def _write(path: Path, text: str, mode: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def _plant(name: str, base: Path, home: Path, login_dsn: str, trusted_dsn: str) -> Credentials:
    """`login_dsn` needs the role's password (libpq must find it in a file);
    `trusted_dsn` logs in without one (for the TLS files, which a Unix socket never
    makes libpq read: what is judged is that they are hidden, not used)."""
    creds = base / "creds"
    passline = f"*:*:*:{PASSWORD_ROLE}:{PASSWORD}\n"
    env: dict[str, str] = {}
    if name == "passfile":
        passfile = _write(creds / "pgpass", passline, 0o600)
        dsn, files, leaks = with_params(login_dsn, passfile=str(passfile)), (passfile,), (PASSWORD,)
    elif name == "PGPASSFILE":
        passfile = _write(creds / "pgpass", passline, 0o600)
        dsn, files, leaks = login_dsn, (passfile,), (PASSWORD,)
        env["PGPASSFILE"] = str(passfile)
    elif name == "sslkey":
        key, unique = _key("sslkey")
        keyfile = _write(creds / "client.key", key, 0o644)
        dsn, files, leaks = with_params(trusted_dsn, sslkey=str(keyfile)), (keyfile,), (unique,)
    elif name == "service":
        # The service's section holds the password and names a client certificate:
        # libpq reads both files for `service=...`.
        cert, unique = _key("sslcert")
        certfile = _write(creds / "client.crt", cert, 0o644)
        import psycopg

        parts = psycopg.conninfo.conninfo_to_dict(login_dsn)
        section = "".join(f"{key}={value}\n" for key, value in parts.items())
        text = f"# the session log\n[{SERVICE}]\n{section}password={PASSWORD}\nsslcert={certfile}\n"
        servicefile = _write(creds / "pg_service.conf", text, 0o644)
        dsn, files, leaks = f"service={SERVICE}", (servicefile, certfile), (PASSWORD, unique)
        env["PGSERVICEFILE"] = str(servicefile)
    elif name == "default-tls":
        key, unique = _key("default")
        keyfile = _write(home / ".postgresql" / "postgresql.key", key, 0o644)
        dsn, files, leaks = trusted_dsn, (keyfile,), (unique,)
    else:
        raise AssertionError(name)
    return Credentials(
        name=name,
        dsn=dsn,
        env=env,
        files=files,
        secrets=leaks,
        root=base / "root",
        home=home,
        base=base,
    )


SCENARIOS = ("passfile", "PGPASSFILE", "sslkey", "service", "default-tls")
# What nobody reads unconfined: a password file must be 0600 (libpq ignores one that
# others may read), so nobody's control would read nothing of it.
NOBODY_SCENARIOS = ("sslkey", "service", "default-tls")


@pytest.fixture
def databases(pg_dsn) -> tuple[str, str]:  # noqa: F811
    """A database the password role owns: its DSN as that role (no password), and as
    the trusted superuser. One per test: a scenario logging in as the superuser makes
    the log's tables the superuser's, which the password role may then not use."""
    database = fresh_database(pg_dsn, owner=PASSWORD_ROLE)
    return with_params(database, user=PASSWORD_ROLE), database


@pytest.fixture(params=SCENARIOS)
def credentials(request, databases, monkeypatch) -> Iterator[Credentials]:
    login_dsn, trusted_dsn = databases
    base = Path(tempfile.mkdtemp(prefix="stockade-pgcreds-", dir="/var/tmp"))
    base.chmod(0o755)
    home = base / "home"
    home.mkdir()
    planted = _plant(request.param, base, home, login_dsn, trusted_dsn)
    planted.root.mkdir()
    planted.root.chmod(0o777)
    for directory, _, _ in os.walk(base):
        if Path(directory) != planted.root:
            os.chmod(directory, 0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("STOCKADE_STATE_DIR", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    for variable in ("PGPASSFILE", "PGSERVICEFILE", "PGSERVICE", "PGSSLKEY", "PGPASSWORD"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in planted.env.items():
        monkeypatch.setenv(variable, value)
    try:
        yield planted
    finally:
        shutil.rmtree(base, ignore_errors=True)


def composition(backend: str, dsn: str) -> list[dict]:
    """`backend` a BACKEND_VARIANTS name (the plain tier: landlock_tier plain)."""
    sandbox = {"backend": variant_backend(backend)}
    if variant_tier(backend) == "plain":
        sandbox["landlock_tier"] = "plain"
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": sandbox},
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "fs", "name": "stockade.fs.sandbox"},
        {"id": "approval", "name": "stockade.approval.user", "config": {"policy": "never"}},
        {"id": "log", "name": "stockade.session.log", "config": {"store": "postgres", "dsn": dsn}},
    ]


def every_way(credentials: Credentials, out: Path | None) -> str:
    """One script reading each file every way a command would; `out` a directory it
    may copy into (None in read-only)."""
    lines = []
    for number, path in enumerate(credentials.files):
        lines += [
            f"cat {path}",
            f"cat /proc/1/root{path}",
            f"{SYSTEM_PYTHON} -I -S -c \"print(open('{path}').read())\"",
        ]
        if out is not None:
            lines.append(f"cp {path} {out}/copy-{number}; cat {out}/copy-{number}")
    return "\n".join(lines) + "\ntrue"


def leaked(credentials: Credentials, output: str, written: Path | None = None) -> list[str]:
    """The secrets that show in `output`, or in any file under `written`."""
    found = [secret for secret in credentials.secrets if secret in output]
    if written is not None:
        for path in written.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_text(errors="replace")
                found += [secret for secret in credentials.secrets if secret in data]
    return found


def test_the_controls_read_every_file(credentials):
    """Unconfined, with the harness's user, each file gives its secret away: the attack
    is real (and the password file's content is the login the store uses)."""
    done = subprocess.run(
        ["bash", "-c", every_way(credentials, None)], capture_output=True, text=True, check=False
    )
    assert set(leaked(credentials, done.stdout)) == set(credentials.secrets), done.stderr


@by_mode
async def test_a_bash_command_reads_no_credential_of_the_store(backend, credentials, mode):
    name, _ = backend
    out = credentials.root / "out" if mode is WW else None
    with trio.fail_after(120):
        async with open_harness(composition(name, credentials.dsn)) as harness:
            # The session opens: the store logged in with these very files.
            session = await harness.open_session(cwd=str(credentials.root))
            await session.set_sandbox_mode(mode)
            if out is not None:
                out.mkdir()
            result = await session.run_tool("bash", {"command": every_way(credentials, out)})
            assert leaked(credentials, result.text, out) == [], result.text
            assert result.facts["denied"] and result.facts["read_denied"], result.facts
            for path in credentials.files:
                read = await session.run_tool("read_file", {"path": str(path)})
                assert leaked(credentials, read.text) == [], read.text
                assert read.is_error and read.facts["read_denied"], read.text


@pytest.mark.parametrize("verb", ("run", "exec"))
@by_mode
def test_the_command_line_verbs_hide_them_too(backend, credentials, verb, mode):
    """`stockade run` and `exec` confine beside the harness's store: the same files."""
    name, _ = backend
    config = credentials.base / "stockade.yml"
    config.write_text(json.dumps(composition(name, credentials.dsn)))
    config.chmod(0o644)
    files = [str(path) for path in credentials.files]
    done = stockade(
        verb,
        "--config",
        str(config),
        "--mode",
        mode.value,
        "--root",
        str(credentials.root),
        "--",
        "cat",
        *files,
        cwd=credentials.root,
        env={"HOME": str(credentials.home), **credentials.env},
    )
    output = done.stdout + done.stderr
    assert leaked(credentials, output) == [], output
    assert done.returncode != 0, output
    assert output.count("Permission denied") >= len(files), output


async def _confined_as_nobody(harness, runner, mode, command, root):  # noqa: F811
    wrapped = await harness.provider.confine(("bash", "-c", command), SandboxPolicy(mode, root))
    return await trio.run_process(
        (runner, *wrapped.argv[1:]),
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        stdin=b"",
        cwd=root,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        start_new_session=True,
    )


@pytest.mark.skipif(not IS_ROOT, reason="spawning as uid 65534 needs a root caller")
@pytest.mark.parametrize("credentials", NOBODY_SCENARIOS, indirect=True)
@by_mode
async def test_nobody_reads_no_credential_of_the_store(variant, runner, credentials, mode):  # noqa: F811
    """The harness's own confinement, with its command run as uid 65534: the files
    nobody can read unconfined (the service file, the TLS keys) stay hidden."""
    name, _ = variant
    # nobody's own root, as a session's would be (the launcher makes its placeholders
    # for protected paths there as the command's user).
    os.chown(credentials.root, NOBODY, NOBODY)
    command = every_way(credentials, None)
    control = await trio.run_process(
        ["bash", "-c", command],
        capture_stdout=True,
        capture_stderr=True,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        check=False,
        cwd="/",
    )
    assert set(leaked(credentials, control.stdout.decode())) == set(credentials.secrets)
    with trio.fail_after(120):
        async with open_harness(composition(name, credentials.dsn)) as harness:
            await harness.open_session(cwd=str(credentials.root))
            done = await _confined_as_nobody(harness, runner, mode, command, str(credentials.root))
    output = (done.stdout + done.stderr).decode()
    assert leaked(credentials, output) == [], output
    assert output.count("Permission denied") >= len(credentials.files), output

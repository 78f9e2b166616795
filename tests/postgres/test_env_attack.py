"""Issue 24's attack, on both backends: a read-only session with network on tries to
write a `sandbox/mode: danger-full-access` event into its own PostgreSQL log.

The server asks every login for its password (`_password_cluster.py`); the password
lives only in the harness's environment (PGPASSWORD), the DSN in an innocuously named
variable, and the executor's policy is the loosest there is (`keep_default_excludes:
false`): only the harness's withholding of its own secrets stands in the way. The
attacker knows everything else (host, port, role, database, session id). Judged by
the host's state: the log's rows, and what a resume folds to. The control runs the
same script outside the sandbox with the harness's environment: it forges the event
and the resume folds to danger-full-access, so the attempt is a real one.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from stockade import open_harness

from ..support import REAL_BACKENDS, require_backend
from . import _cluster, _password_cluster

STORE_ENV = "LOGSTORE"  # a name no default exclude matches: the value must give it away

ATTACK = r"""
import os, sys
import psycopg
FORGE = '''
WITH s AS (
    UPDATE stockade_sessions SET last_seq = last_seq + 1 WHERE session_id = %s
    RETURNING session_id, last_seq
)
INSERT INTO stockade_events (session_id, seq, ts, type, data)
SELECT session_id, last_seq, 1, 'sandbox/mode', convert_to(
    '{"type":"sandbox/mode","seq":' || last_seq || ',"ts":1,"mode":"danger-full-access"}',
    'UTF8') FROM s
'''
print("saw:", ",".join(n for n in ("PGPASSWORD", "LOGSTORE") if n in os.environ) or "-")
try:
    dsn = os.environ.get("LOGSTORE") or sys.argv[1]
    with psycopg.connect(dsn, connect_timeout=10, autocommit=True) as conn:
        done = conn.execute(FORGE, (sys.argv[2],))
    print("FORGED", done.rowcount)
except Exception as error:
    print("REFUSED", type(error).__name__, " ".join(str(error).split()))
"""

COMPOSITION = """\
- id: sandbox
  name: stockade.sandbox.local
  config: {{backend: {backend}}}
- id: bash
  name: stockade.bash.sandbox
  config:
    mode: read-only
    network: "on"
    env: {{keep_default_excludes: false}}
- id: approval
  name: stockade.approval.user
  config: {{policy: never}}
- id: log
  name: stockade.session.log
  config: {{store: postgres, dsn: !env {store_env}}}
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[_password_cluster.PasswordCluster]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true and psycopg 3 is missing: pip install -e '.[test]'")
        pytest.skip("psycopg 3 missing: pip install -e '.[test]'")
    if _cluster.bin_dir() is None:
        # tests/conftest.py turns this skip into a failure when CI=true.
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    directory = tempfile.mkdtemp(prefix="stockade-pgpw-", dir="/var/tmp")
    try:
        made, watchdog = _password_cluster.start(directory)
    except BaseException:
        _cluster.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)
        raise
    try:
        yield made
    finally:
        _cluster.finish(directory, watchdog)


def rows(cluster: _password_cluster.PasswordCluster, session_id: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(cluster.admin_dsn, autocommit=True) as conn:
        return [
            (seq, kind, bytes(data))
            for seq, kind, data in conn.execute(
                "SELECT seq, type, data FROM stockade_events WHERE session_id = %s ORDER BY seq",
                (session_id,),
            )
        ]


async def resumed_mode(config: str, session_id: str) -> str:
    async with open_harness(config, answerers=[]) as harness:
        session = await harness.resume_session(session_id)
        return (await session.sandbox_mode()).value


@pytest.mark.parametrize("backend", REAL_BACKENDS)
async def test_a_read_only_session_cannot_write_its_own_postgres_log(
    backend, cluster, scratch, monkeypatch
):
    require_backend(backend)
    # The harness's environment: the store's password and where it is, nothing else.
    monkeypatch.setenv("PGPASSWORD", cluster.log_password)
    monkeypatch.setenv(STORE_ENV, cluster.log_dsn)
    base = Path(scratch)
    root = base / "project"
    root.mkdir()
    script = base / "attack.py"
    script.write_text(ATTACK)
    config = base / "stockade.yml"
    config.write_text(COMPOSITION.format(backend=backend, store_env=STORE_ENV))

    with trio.fail_after(120):
        async with open_harness(str(config), answerers=[]) as harness:
            session = await harness.open_session(cwd=root)
            session_id = session.id
            assert (await session.sandbox_mode()).value == "read-only"
            before = rows(cluster, session_id)
            command = f"{sys.executable} {script} '{cluster.log_dsn}' {session_id}"
            result = await session.run_tool("bash", {"command": command})
        after = rows(cluster, session_id)
        # What the command saw: neither variable, and a server that asked for a password.
        assert "saw: -" in result.text, result.text
        assert "REFUSED" in result.text and "no password supplied" in result.text, result.text
        assert {"PGPASSWORD", STORE_ENV} <= set(result.facts["env_dropped"])
        assert cluster.log_password not in result.text
        # The host's state: every row before is still there, unchanged; no row since
        # sets a mode; the resume folds to read-only.
        assert after[: len(before)] == before
        assert not [row for row in after if b"danger-full-access" in row[2]]
        assert await resumed_mode(str(config), session_id) == "read-only"

        # The control: the same script, unconfined, with the harness's environment.
        done = await trio.run_process(
            [sys.executable, str(script), cluster.log_dsn, session_id],
            capture_stdout=True,
            capture_stderr=True,
            env=dict(os.environ),
            check=False,
        )
        out = (done.stdout + done.stderr).decode()
        assert "saw: PGPASSWORD,LOGSTORE" in out and "FORGED 1" in out, out
        assert [row for row in rows(cluster, session_id) if b"danger-full-access" in row[2]]
        assert await resumed_mode(str(config), session_id) == "danger-full-access"

"""The PostgreSQL server the tests use: $STOCKADE_TEST_PG_DSN (CI starts one), else a
throwaway cluster of our own when the server binaries are here, else a skip (which
tests/conftest.py turns into a failure when CI=true).

Import the fixtures into a conftest: `from tests.postgres.fixtures import pg_dsn`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator

import pytest

from . import _cluster


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """A superuser DSN of a server made by `_cluster.py` (it has the password role)."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "CI=true and psycopg 3 / psycopg-pool are missing: pip install -e '.[test]'"
            )
        pytest.skip("psycopg 3 / psycopg-pool missing: pip install -e '.[test]'")
    dsn = os.environ.get(_cluster.DSN_ENV)
    if dsn:
        yield dsn
        return
    if _cluster.bin_dir() is None:
        pytest.skip(
            f"no PostgreSQL server: set {_cluster.DSN_ENV}, or apt-get install postgresql "
            "and the tests start their own"
        )
    directory = tempfile.mkdtemp(prefix="stockade-pg-", dir="/var/tmp")
    try:
        dsn, watchdog = _cluster.start_owned(directory)
    except BaseException:
        _cluster.stop(directory)
        shutil.rmtree(directory, ignore_errors=True)
        raise
    try:
        yield dsn
    finally:
        _cluster.finish(directory, watchdog)


def with_params(dsn: str, **params: str) -> str:
    """`dsn` with some parameters replaced (key=value form)."""
    import psycopg

    parts = psycopg.conninfo.conninfo_to_dict(dsn)
    parts.update(params)
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in parts.items()})


def fresh_database(dsn: str, owner: str | None = None) -> str:
    """A new, empty database on the server of `dsn` (owned by `owner`); its DSN."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"' + (f' OWNER "{owner}"' if owner else ""))
    return with_params(dsn, dbname=name)


def sql(dsn: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Run one statement on its own connection (autocommit); its rows, if any."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(statement, params)
        return cursor.fetchall() if cursor.description else []

"""Reaching the database: the DSN, psycopg, one-line errors, and the store's connections.

`Connections` holds the store's two kinds of connection, made on first use: one
*holder* connection per store (per host), on which every session lock it takes
lives (locks.py says why the lock's life is the connection's), and the pool that
appends and reads share. It migrates the schema on the first holder it makes.

Durable: every pool connection runs with `synchronous_commit = on` (whatever the
role's or database's default), so an append returns only after its commit record
is flushed. psycopg 3 (with psycopg-pool) is an extra (`stockade[postgres]`),
imported only when a PostgresStore is made.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any, Final

from ....errors import ConfigError, StockadeError
from .schema import migrate

logger = logging.getLogger("stockade.sessionlog")

# The holder's TCP keepalives (server side): a vanished host's backend, and with it
# its locks, is gone after about idle + interval * count seconds.
_KEEPALIVE: Final = {
    "tcp_keepalives_idle": 10,
    "tcp_keepalives_interval": 5,
    "tcp_keepalives_count": 3,
}


class StoreUnavailable(StockadeError):
    """The session-log database cannot be reached, refused the login, or went away."""


def import_psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError as error:
        from ....install_hint import extra_hint

        raise ConfigError(
            "the postgres session-log store needs psycopg 3 and psycopg-pool: "
            f"{extra_hint('postgres')} ({error})"
        ) from None
    return psycopg


def dsn_parts(dsn: str) -> dict[str, str]:
    """The DSN's parameters (a URI or key=value string), as libpq reads them."""
    psycopg = import_psycopg()
    try:
        return {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as error:
        raise ConfigError(f"the session log's dsn cannot be parsed: {error}") from None


def describe_dsn(dsn: str) -> str:
    """Where a DSN points, for messages: never its password."""
    parts = dsn_parts(dsn)
    host = parts.get("host") or os.environ.get("PGHOST") or "(libpq default socket)"
    port = parts.get("port") or os.environ.get("PGPORT") or "5432"
    user = parts.get("user") or os.environ.get("PGUSER") or "(login user)"
    dbname = parts.get("dbname") or os.environ.get("PGDATABASE") or user
    service = f" service={parts['service']}" if "service" in parts else ""
    return f"postgres {user}@{host}:{port}/{dbname}{service}"


# libpq reads these files; whoever can write one can redirect or impersonate the log,
# and whoever can read one holds the log's login. Each is a connection parameter, and
# `PG` + its name in capitals is its environment variable (`PGPASSFILE`, `PGSSLKEY`).
_FILE_PARAMETERS: Final = {
    "passfile": "the session log database's password file",
    "sslrootcert": "the session log database's CA certificate",
    "sslcert": "the session log database's client certificate",
    "sslkey": "the session log database's client key",
    "sslcrl": "the session log database's certificate revocation list",
    "sslcrldir": "the session log database's certificate revocation directory",
}
_SERVICE_FILE = "the session log database's service file"
# What libpq reads when a TLS parameter is not set: ~/.postgresql/<name>.
_DEFAULT_TLS_FILES: Final = {
    "sslcert": "postgresql.crt",
    "sslkey": "postgresql.key",
    "sslrootcert": "root.crt",
    "sslcrl": "root.crl",
}
# Values that name no file: libpq's keywords for the system's CA store.
_NOT_A_FILE: Final = frozenset({"system"})


def dsn_files(dsn: str, environ: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """(path, what) for every file libpq would read for this DSN and that exists or is named.

    The service files when a `service` is named (the DSN's `servicefile`, else
    `$PGSERVICEFILE`, else `~/.pg_service.conf` when present; the system's,
    `$PGSYSCONFDIR/pg_service.conf`, when present); the password file and each TLS
    file, each from the DSN, else the service's section, else its `PG*` variable
    (`~/.pgpass` when no password file is named and it is present). Each must pass
    the trust base's check 1: a confined command that could write one could point the
    log elsewhere, or log in as someone else.
    """
    return libpq_files(dsn_parts(dsn), os.environ if environ is None else environ)


def libpq_files(
    parts: Mapping[str, str], environ: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """`dsn_files` for a DSN already parsed into `parts` (`dsn_parts`)."""
    found: list[tuple[str, str]] = []
    service = parts.get("service") or environ.get("PGSERVICE")
    # libpq's order: the DSN's own parameter, else the service's section, else PG*.
    section: dict[str, str] = {}
    if service:
        for path, named in _service_files(parts, environ):
            if named or os.path.exists(path):
                found.append((path, _SERVICE_FILE))
            for key, setting in _service_section(path, service).items():
                section.setdefault(key, setting)
    for name, what in _FILE_PARAMETERS.items():
        value = parts.get(name) or section.get(name) or environ.get(f"PG{name.upper()}")
        if value and value not in _NOT_A_FILE:
            found.append((_absolute(value), what))
    if not _names_a_passfile(parts, environ, section):
        for home in _homes(environ):
            default = os.path.join(home, ".pgpass")
            if os.path.exists(default):
                found.append((default, _FILE_PARAMETERS["passfile"]))
    return tuple(dict.fromkeys(found))


def credential_paths(parts: Mapping[str, str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """Every path libpq would read for a DSN parsed into `parts`, under `environ`,
    whether it exists now or not: `libpq_files`, and the defaults it falls back on
    (`~/.pgpass`, `~/.pg_service.conf` when a service is named, the client
    certificate, key, CA and revocation list in `~/.postgresql/`). What no confined
    command may read (deny_read): each holds, or leads to, the log's login."""
    paths = [path for path, _ in libpq_files(parts, environ)]
    service = parts.get("service") or environ.get("PGSERVICE")
    if service:
        paths += [path for path, _ in _service_files(parts, environ)]
    for home in _homes(environ):
        if not _names_a_passfile(parts, environ, {}):
            paths.append(os.path.join(home, ".pgpass"))
        for name, default in _DEFAULT_TLS_FILES.items():
            if not (parts.get(name) or environ.get(f"PG{name.upper()}")):
                paths.append(os.path.join(home, ".postgresql", default))
    return tuple(dict.fromkeys(paths))


def _names_a_passfile(
    parts: Mapping[str, str], environ: Mapping[str, str], section: Mapping[str, str]
) -> bool:
    return bool(parts.get("passfile") or environ.get("PGPASSFILE") or section.get("passfile"))


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def _homes(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Where libpq looks for `~`: $HOME (libpq 18), else, and in older libpq always,
    the account's home directory. Both, when they differ: either may be the one."""
    homes = []
    if environ.get("HOME"):
        homes.append(environ["HOME"])
    try:
        import pwd

        homes.append(pwd.getpwuid(os.geteuid()).pw_dir)
    except (ImportError, KeyError):
        pass
    return tuple(dict.fromkeys(os.path.abspath(home) for home in homes if home))


def _service_files(parts: Mapping[str, str], environ: Mapping[str, str]) -> list[tuple[str, bool]]:
    """(path, named) of the service files libpq reads for a named service: the user's
    (`servicefile`, else `$PGSERVICEFILE`, else `~/.pg_service.conf`) and the
    system's (`$PGSYSCONFDIR/pg_service.conf`; libpq's compiled-in directory when
    that is unset is not known here)."""
    files: list[tuple[str, bool]] = []
    named = parts.get("servicefile") or environ.get("PGSERVICEFILE")
    if named:
        files.append((_absolute(named), True))
    else:
        files += [(os.path.join(home, ".pg_service.conf"), False) for home in _homes(environ)]
    if environ.get("PGSYSCONFDIR"):
        files.append((os.path.join(_absolute(environ["PGSYSCONFDIR"]), "pg_service.conf"), False))
    return files


def _service_section(path: str, service: str) -> dict[str, str]:
    """The parameters `path`'s `[service]` section sets, as libpq reads that file
    (`#` comments, `key=value` lines); empty when the file cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return {}
    found: dict[str, str] = {}
    inside = False
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            inside = line.rstrip("]").removeprefix("[") == service
            continue
        if inside and "=" in line:
            key, _, value = line.partition("=")
            found.setdefault(key.strip(), value.strip())
    return found


def clear_error(error: BaseException, where: str, doing: str) -> StoreUnavailable:
    """A psycopg error as one line saying what failed, where, and what to check."""
    text = str(error).strip().replace("\n", " ")
    hint = "check that the server runs and the dsn's host, port and dbname"
    lowered = text.lower()
    if "password" in lowered or "authentication" in lowered:
        hint = (
            "check the user and its password (from the dsn's environment variable or password file)"
        )
    elif "does not exist" in lowered and "database" in lowered:
        hint = "create the database, or fix the dsn's dbname"
    return StoreUnavailable(f"{where}: {doing} failed: {text}; {hint}")


class Connections:
    """The holder connection and the pool of one store, made on first use.

    `lock` is held by whoever uses the holder (a psycopg connection serves one
    thread at a time) or makes or drops a connection; the store also guards the
    sessions it holds with it, so that holding a session and taking its lock are
    one step.
    """

    def __init__(
        self, dsn: str, *, pool_size: int, connect_timeout: float, owner: str, where: str
    ) -> None:
        self.dsn = dsn
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self.owner = owner
        self.where = where
        self.psycopg = import_psycopg()
        self.lock = threading.Lock()
        self.holder: Any = None
        self.pool: Any = None
        self.closed = False

    def connect(self, purpose: str) -> Any:
        psycopg = self.psycopg
        try:
            return psycopg.connect(
                self.dsn,
                autocommit=True,
                connect_timeout=max(1, round(self.connect_timeout)),
                application_name=f"stockade {purpose} ({self.owner})"[:63],
            )
        except psycopg.Error as error:
            raise clear_error(error, self.where, "connecting") from None

    def _configure(self, conn: Any) -> None:
        # Durable whatever the server's, role's or database's default says.
        conn.execute("SET synchronous_commit = on")

    def started(self) -> tuple[Any, Any]:
        """The holder connection and the pool, made (and the schema migrated) on first use.

        Call with `self.lock` held.
        """
        if self.closed:
            raise StockadeError(f"{self.where}: the session-log store was closed")
        holder = self.holder
        if holder is None or holder.closed or holder.broken:
            if holder is not None:
                logger.warning("%s: the lock connection was lost; reconnecting", self.where)
            holder = self.connect("locks")
            try:
                for name, value in _KEEPALIVE.items():
                    holder.execute(f"SET {name} = {int(value)}")
                if holder.execute("SHOW fsync").fetchone() == ("off",):
                    logger.warning(
                        "%s: the server runs with fsync = off: a commit it acknowledges "
                        "may be lost in a crash, and so may acknowledged session events",
                        self.where,
                    )
                if self.pool is None:
                    self._migrate(holder)
            except BaseException:
                holder.close()
                raise
            self.holder = holder
        if self.pool is None:
            from psycopg_pool import ConnectionPool

            pool = ConnectionPool(
                self.dsn,
                min_size=self.pool_size,
                max_size=self.pool_size,
                kwargs={
                    "autocommit": True,
                    "application_name": f"stockade appends ({self.owner})"[:63],
                    "connect_timeout": max(1, round(self.connect_timeout)),
                },
                configure=self._configure,
                timeout=self.connect_timeout,
                name="stockade-sessionlog",
                open=False,
            )
            try:
                pool.open(wait=True, timeout=self.connect_timeout)
            except Exception as error:
                pool.close()
                raise clear_error(error, self.where, "opening the connection pool") from None
            self.pool = pool
        return holder, self.pool

    def _migrate(self, conn: Any) -> None:
        try:
            migrate(conn, self.where)
        except self.psycopg.Error as error:
            raise clear_error(error, self.where, "creating or migrating the schema") from None

    def detach(self) -> tuple[Any, Any]:
        """Mark these connections closed and hand back (pool, holder) for the caller to
        close outside the lock. Call with `self.lock` held."""
        self.closed = True
        pool, self.pool = self.pool, None
        holder, self.holder = self.holder, None
        return pool, holder

"""Which store a composition's `stockade.session.log` entry names, built and checked.

`store: jsonl` (the default): one file per session under the state directory.
`store: postgres`: one database shared by every host (`dsn`, `pool_size`).

The log-location rule of the trust base (docs/security.md) applies to both: the
JSON-lines directory, and every file libpq reads for the DSN (password, service and
TLS files), must lie outside every writable root; a password may come from the
environment (`dsn: !env VAR`) or a password file, never from the composition text.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import ConfigError
from ...events import EventRegistry
from .interface import SessionStore
from .jsonl import JsonlStore, resolve_state_dir


def build_store(
    config: Any, registry: EventRegistry, *, composition_path: str | None = None
) -> SessionStore:
    """The store `config` (a SessionLogConfig) names; nothing is connected yet."""
    if getattr(config, "store", "jsonl") != "postgres":
        return JsonlStore(resolve_state_dir(config.state_dir), registry=registry)
    from .postgres import PostgresStore, dsn_parts

    dsn = config.dsn
    if dsn is None:  # the config model refuses this; a Composition built in code may not
        raise ConfigError(
            "stockade.session.log: store postgres needs a dsn: give the entry's config a "
            "libpq connection string (in stockade.yml, `dsn: !env STOCKADE_LOG_DSN`)"
        )
    password = dsn_parts(dsn).get("password")
    if password and composition_path is not None and _written_in(composition_path, password):
        raise ConfigError(
            f"{composition_path}: the session log's dsn carries its password in the file; "
            "credentials come from the environment or a password file outside every "
            "writable root: write `dsn: !env STOCKADE_LOG_DSN` (and set that variable), or "
            "drop the password and name a `passfile` in the dsn (or use ~/.pgpass)"
        )
    return PostgresStore(dsn, registry=registry, pool_size=config.pool_size)


def store_secrets(config: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names, values) of the store's credentials, which no command's environment may
    hold whatever its policy says: for a postgres store, libpq's login variables (the
    harness's own connection reads them) and the DSN and its password as values (so
    whatever variable `dsn: !env VAR` read them from is dropped too). None for jsonl."""
    if config is None or getattr(config, "store", "jsonl") != "postgres" or not config.dsn:
        return (), ()
    from ...executor.environment import LIBPQ_CREDENTIALS
    from .postgres import dsn_parts

    dsn = config.dsn
    try:
        password = dsn_parts(dsn).get("password", "")
    except ConfigError:  # build_store says so; the whole DSN is still withheld
        password = ""
    return LIBPQ_CREDENTIALS, (dsn, password)


# Words a DSN holds when it names a file parameter or a service (`%`: a URI may spell a
# keyword percent-encoded). Without any, libpq takes its files from the environment
# and its defaults alone, and the DSN need not be parsed (`stockade exec` loads no
# psycopg for it).
_FILE_WORDS = ("passfile", "ssl", "service", "%")


def config_credential_files(
    config: Any, environ: Mapping[str, str] = os.environ
) -> tuple[str, ...]:
    """`credential_files()` of the store `config` (a SessionLogConfig, or None) names,
    without making the store: for the CLI verbs, which open no log but confine
    commands beside the harness's store all the same."""
    if config is None or getattr(config, "store", "jsonl") != "postgres" or not config.dsn:
        return ()
    from .postgres.connections import credential_paths, dsn_parts

    dsn: str = config.dsn
    lowered = dsn.lower()
    parts = dsn_parts(dsn) if any(word in lowered for word in _FILE_WORDS) else {}
    return credential_paths(parts, environ)


def _written_in(path: str, secret: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return secret in handle.read()
    except OSError:
        return False


def store_files(store: Any) -> tuple[tuple[str, str], ...]:
    """(path, what) of the files beside the log's directory that steer where it is."""
    trusted = getattr(store, "trusted_files", None)
    return tuple(trusted()) if trusted is not None else ()


def check_store_files(files: Sequence[tuple[str, str]], writable_roots: Sequence[str]) -> None:
    """ConfigError unless each of `files` ((path, what), from `store_files`) passes the
    trust base's check 1 against `writable_roots`."""
    from ...trust import check_trusted

    for path, what in files:
        problem = check_trusted(path, writable_roots, what=what)
        if problem is not None:
            raise ConfigError(
                problem.message(
                    "a confined command that could write it could point the session log "
                    "at another database or log in as someone else: keep it outside "
                    "workspace roots and temp directories, owned by you or root and "
                    "writable by no one else (chmod 600)"
                )
            )

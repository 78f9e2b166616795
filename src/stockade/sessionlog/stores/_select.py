"""Which store a composition's `stockade.session.log` entry names, built and checked.

`store: jsonl` (the default): one file per session under the state directory.
`store: postgres`: one database shared by every host (`dsn`, `pool_size`).

No entry: a memory store, for this process's life.

The log-location rule of the trust base (docs/security.md) applies to both: the
JSON-lines directory, and every file libpq reads for the DSN (password, service and
TLS files), must lie outside every writable root; a password may come from the
environment (`dsn: !env VAR`) or a password file, never from the composition text.

What a store answers for itself (`protected_paths`, `credentials`,
`credential_files`) the CLI verbs, which make no store, learn from the entry's
config alone: `config_protected_paths`, `store_secrets`, `config_credential_files`.
Those load no store (the standard library, and psycopg only for a DSN that needs
parsing), so `stockade exec` stays light.
"""

from __future__ import annotations

import os

from ...errors import ConfigError

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from ...events import EventRegistry
    from .interface import SessionStore


def build_store(
    config: Any,
    registry: EventRegistry,
    *,
    composition_path: str | None = None,
    state_dir: str | os.PathLike[str] | None = None,
) -> SessionStore:
    """The store `config` (a SessionLogConfig; None: no log entry, so sessions live in
    this process's memory) names; nothing is connected yet. `state_dir` (a `--state-dir`
    given on the command line) replaces the JSON-lines store's directory."""
    if config is None:
        from .memory import MemoryStore

        return MemoryStore(registry=registry)
    if getattr(config, "store", "jsonl") != "postgres":
        from .jsonl import JsonlStore, directory_store, resolve_state_dir

        if state_dir:
            return directory_store(state_dir, registry)
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
    """`credentials()` of the store `config` (a SessionLogConfig, or None) names,
    without making the store: (names, values) no command's environment may hold
    whatever its policy says. For a postgres store, libpq's login variables (the
    harness's own connection reads them) and the DSN and its password as values (so
    whatever variable `dsn: !env VAR` read them from is dropped too). None for jsonl."""
    if config is None or getattr(config, "store", "jsonl") != "postgres" or not config.dsn:
        return (), ()
    from .postgres import dsn_credentials

    return dsn_credentials(config.dsn)


def config_protected_paths(config: Any) -> tuple[str, ...]:
    """`protected_paths()` of the store `config` (a SessionLogConfig, or None) names,
    as far as the config says it, without making the store: a JSON-lines store's
    configured `state_dir` ($STOCKADE_STATE_DIR and the default directory are
    deny_read's `state` item whatever the config says); none for the others."""
    if config is None or getattr(config, "store", "jsonl") == "postgres":
        return ()
    configured = getattr(config, "state_dir", None)
    if not configured:
        return ()
    return (os.path.abspath(os.path.expanduser(configured)),)


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
    from .postgres import credential_paths, dsn_parts

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

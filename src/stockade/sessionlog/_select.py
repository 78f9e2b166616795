"""Which store a composition's `stockade.session.log` entry names, built and checked.

`store: jsonl` (the default): one file per session under the state directory.
`store: postgres`: one database shared by every host (`dsn`, `pool_size`).

The log-location rule of the trust base (docs/security.md) applies to both: the
JSON-lines directory, and every file libpq reads for the DSN (password, service and
TLS files), must lie outside every writable root; a password may come from the
environment (`dsn: !env VAR`) or a password file, never from the composition text.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from ..events import EventRegistry
from ._store import JsonlStore, SessionStore, resolve_state_dir


def build_store(
    config: Any, registry: EventRegistry, *, composition_path: str | None = None
) -> SessionStore:
    """The store `config` (a SessionLogConfig) names; nothing is connected yet."""
    if getattr(config, "store", "jsonl") != "postgres":
        return JsonlStore(resolve_state_dir(config.state_dir), registry=registry)
    from ._postgres import PostgresStore, dsn_parts

    dsn = config.dsn
    if dsn is None:  # the config model refuses this; a Composition built in code may not
        raise ConfigError("stockade.session.log: store postgres needs a dsn")
    password = dsn_parts(dsn).get("password")
    if password and composition_path is not None and _written_in(composition_path, password):
        raise ConfigError(
            f"{composition_path}: the session log's dsn carries its password in the file; "
            "credentials come from the environment or a password file outside every "
            "writable root: write `dsn: !env STOCKADE_LOG_DSN` (and set that variable), or "
            "drop the password and name a `passfile` in the dsn (or use ~/.pgpass)"
        )
    return PostgresStore(dsn, registry=registry, pool_size=config.pool_size)


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
    from ..trust import check_trusted

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


def show_store(args: argparse.Namespace, registry: EventRegistry) -> Any:
    """For `stockade session show`: the store of the composition named by `--config` (or
    $STOCKADE_CONFIG), when it is a database; for a JSON-lines store, its state
    directory becomes the default of `--state-dir`. None when no composition is named.
    """
    from ..cli.settings import CONFIG_ENV, load_cli_composition

    named = getattr(args, "config", None)
    if not named and not os.environ.get(CONFIG_ENV):
        return None  # a ./stockade.yml that is only present is never read (the trust base)
    composition = load_cli_composition(named)
    entry = composition.session_log if composition is not None else None
    if entry is None:
        return None
    if getattr(entry.config, "store", "jsonl") != "postgres":
        if not getattr(args, "state_dir", None) and not os.environ.get("STOCKADE_STATE_DIR"):
            args.state_dir = str(resolve_state_dir(entry.config.state_dir))
        return None
    assert composition is not None  # `entry` came from it
    store = build_store(entry.config, registry, composition_path=composition.path)
    from ..trust import host_temp_roots

    check_store_files(store_files(store), (os.path.realpath(os.getcwd()), *host_temp_roots()))
    return store

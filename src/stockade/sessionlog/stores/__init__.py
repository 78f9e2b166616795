"""Where session logs live: the store interface and the stores that implement it.

`interface` (SessionStore, LogHandle, OpenedLog, the session-id rule), `jsonl` (one
file per session, the default; a log file read by its path), `memory` (for tests),
`postgres/` (one database for many hosts), and which one a composition names
(`build_store`, and what the CLI learns from the config alone). Every name is loaded
on first use: a JSON-lines session never loads the PostgreSQL package, and `stockade
exec` asks for the config's answers without loading any store.
"""

from __future__ import annotations

from ...lazy import lazy_exports

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from ._select import build_store as build_store
    from ._select import check_store_files as check_store_files
    from ._select import config_credential_files as config_credential_files
    from ._select import config_protected_paths as config_protected_paths
    from ._select import store_files as store_files
    from ._select import store_secrets as store_secrets
    from .interface import Credentials as Credentials
    from .interface import InvalidSessionId as InvalidSessionId
    from .interface import LogHandle as LogHandle
    from .interface import OpenedLog as OpenedLog
    from .interface import SessionLocked as SessionLocked
    from .interface import SessionStore as SessionStore
    from .interface import check_session_id as check_session_id
    from .jsonl import STATE_DIR_ENV as STATE_DIR_ENV
    from .jsonl import JsonlStore as JsonlStore
    from .jsonl import UnreadableLog as UnreadableLog
    from .jsonl import default_state_dir as default_state_dir
    from .jsonl import directory_store as directory_store
    from .jsonl import names_a_log_file as names_a_log_file
    from .jsonl import read_log_file as read_log_file
    from .jsonl import resolve_state_dir as resolve_state_dir
    from .jsonl import session_of_file as session_of_file
    from .memory import MemoryStore as MemoryStore
    from .postgres import PostgresStore as PostgresStore
    from .postgres import SchemaTooNew as SchemaTooNew
    from .postgres import SessionHeldElsewhere as SessionHeldElsewhere
    from .postgres import SessionLockLost as SessionLockLost
    from .postgres import StoreUnavailable as StoreUnavailable

# name -> the module beneath this package that defines it ("": a submodule itself).
_LAZY = {
    "build_store": "_select",
    "check_store_files": "_select",
    "config_credential_files": "_select",
    "config_protected_paths": "_select",
    "store_files": "_select",
    "store_secrets": "_select",
    "Credentials": "interface",
    "InvalidSessionId": "interface",
    "LogHandle": "interface",
    "OpenedLog": "interface",
    "SessionLocked": "interface",
    "SessionStore": "interface",
    "check_session_id": "interface",
    "STATE_DIR_ENV": "jsonl",
    "JsonlStore": "jsonl",
    "UnreadableLog": "jsonl",
    "default_state_dir": "jsonl",
    "directory_store": "jsonl",
    "names_a_log_file": "jsonl",
    "read_log_file": "jsonl",
    "resolve_state_dir": "jsonl",
    "session_of_file": "jsonl",
    "MemoryStore": "memory",
    "PostgresStore": "postgres",
    "SchemaTooNew": "postgres",
    "SessionHeldElsewhere": "postgres",
    "SessionLockLost": "postgres",
    "StoreUnavailable": "postgres",
}
__getattr__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "STATE_DIR_ENV",
    "Credentials",
    "InvalidSessionId",
    "JsonlStore",
    "LogHandle",
    "MemoryStore",
    "OpenedLog",
    "PostgresStore",
    "SchemaTooNew",
    "SessionHeldElsewhere",
    "SessionLockLost",
    "SessionLocked",
    "SessionStore",
    "StoreUnavailable",
    "UnreadableLog",
    "build_store",
    "check_session_id",
    "check_store_files",
    "config_credential_files",
    "config_protected_paths",
    "default_state_dir",
    "directory_store",
    "names_a_log_file",
    "read_log_file",
    "resolve_state_dir",
    "session_of_file",
    "store_files",
    "store_secrets",
]

"""Where session logs live: the store interface and the stores that implement it.

`interface` (SessionStore, LogHandle, OpenedLog, the session-id rule), `jsonl` (one
file per session, the default; a log file read by its path), `memory` (for tests),
`postgres/` (one database for many hosts), and which one a composition names
(`build_store`, and what the CLI learns from the config alone). Every name is loaded
on first use: a JSON-lines session never loads the PostgreSQL package, and `stockade
exec` asks for the config's answers without loading any store.
"""

from __future__ import annotations

from ...lazy import surface

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
    from .jsonl_catalog import JsonlCatalog as JsonlCatalog
    from .jsonl_catalog import catalog_of as catalog_of
    from .memory import MemoryStore as MemoryStore
    from .postgres import PostgresStore as PostgresStore
    from .postgres import SchemaTooNew as SchemaTooNew
    from .postgres import SessionHeldElsewhere as SessionHeldElsewhere
    from .postgres import SessionLockLost as SessionLockLost
    from .postgres import StoreUnavailable as StoreUnavailable

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

"""Where session logs live: the store interface and the stores that implement it.

`interface` (SessionStore, LogHandle, OpenedLog, the session-id rule), `jsonl` (one
file per session, the default), `memory` (for tests), `postgres/` (one database for
many hosts), and which one a composition names (`build_store`). The PostgreSQL
names are re-exported lazily: a JSON-lines session never loads that package.
"""

from typing import TYPE_CHECKING

from ...lazy import lazy_exports
from ._select import build_store as build_store
from ._select import check_store_files as check_store_files
from ._select import config_credential_files as config_credential_files
from ._select import store_files as store_files
from ._select import store_secrets as store_secrets
from .interface import InvalidSessionId as InvalidSessionId
from .interface import LogHandle as LogHandle
from .interface import OpenedLog as OpenedLog
from .interface import SessionLocked as SessionLocked
from .interface import SessionStore as SessionStore
from .interface import check_session_id as check_session_id
from .jsonl import STATE_DIR_ENV as STATE_DIR_ENV
from .jsonl import JsonlStore as JsonlStore
from .jsonl import default_state_dir as default_state_dir
from .jsonl import resolve_state_dir as resolve_state_dir
from .memory import MemoryStore as MemoryStore

if TYPE_CHECKING:
    from .postgres import PostgresStore as PostgresStore
    from .postgres import SchemaTooNew as SchemaTooNew
    from .postgres import SessionHeldElsewhere as SessionHeldElsewhere
    from .postgres import SessionLockLost as SessionLockLost
    from .postgres import StoreUnavailable as StoreUnavailable

# psycopg is imported only by a host whose composition names the PostgreSQL store.
_POSTGRES = {
    name: "postgres"
    for name in (
        "PostgresStore",
        "SchemaTooNew",
        "SessionHeldElsewhere",
        "SessionLockLost",
        "StoreUnavailable",
    )
}
__getattr__ = lazy_exports(__name__, _POSTGRES, globals())


__all__ = [
    "STATE_DIR_ENV",
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
    "build_store",
    "check_session_id",
    "check_store_files",
    "config_credential_files",
    "default_state_dir",
    "resolve_state_dir",
    "store_files",
    "store_secrets",
]

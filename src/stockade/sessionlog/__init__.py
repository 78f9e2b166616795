"""SessionLogActor: one append-only, durable, locked log of events per session.

The actor (`actor`), the reader every store shares (`_scan`), the catalog protocol
of `session list`/`prune` (`catalog`) and the stores (`stores/`). The PostgreSQL
store's names are re-exported lazily, so the JSON-lines path never loads them.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ..messages import LogOpened as LogOpened
from ._builtin import BUILTIN_EVENTS as BUILTIN_EVENTS
from ._scan import Scan as Scan
from ._scan import TornTail as TornTail
from ._scan import scan_log as scan_log
from .actor import LogWriteFailed as LogWriteFailed
from .actor import SessionLogActor as SessionLogActor
from .actor import SessionLogClient as SessionLogClient
from .actor import SessionNotOpen as SessionNotOpen
from .actor import open_session_log as open_session_log
from .catalog import Catalog as Catalog
from .catalog import CatalogUnreadable as CatalogUnreadable
from .catalog import NoCatalog as NoCatalog
from .catalog import PruneResult as PruneResult
from .catalog import SessionEntry as SessionEntry
from .catalog import policy_summary as policy_summary
from .stores import STATE_DIR_ENV as STATE_DIR_ENV
from .stores import InvalidSessionId as InvalidSessionId
from .stores import JsonlStore as JsonlStore
from .stores import LogHandle as LogHandle
from .stores import MemoryStore as MemoryStore
from .stores import OpenedLog as OpenedLog
from .stores import SessionLocked as SessionLocked
from .stores import SessionStore as SessionStore
from .stores import build_store as build_store
from .stores import check_session_id as check_session_id
from .stores import check_store_files as check_store_files
from .stores import default_state_dir as default_state_dir
from .stores import resolve_state_dir as resolve_state_dir
from .stores import store_files as store_files
from .stores import store_secrets as store_secrets
from .stores.jsonl_catalog import JsonlCatalog as JsonlCatalog
from .stores.jsonl_catalog import catalog_of as catalog_of

if TYPE_CHECKING:
    from .stores.postgres import PostgresStore as PostgresStore
    from .stores.postgres import SchemaTooNew as SchemaTooNew
    from .stores.postgres import SessionHeldElsewhere as SessionHeldElsewhere
    from .stores.postgres import SessionLockLost as SessionLockLost
    from .stores.postgres import StoreUnavailable as StoreUnavailable

# psycopg is imported only by a host whose composition names the PostgreSQL store.
_POSTGRES = {
    name: "stores.postgres"
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
    "BUILTIN_EVENTS",
    "STATE_DIR_ENV",
    "Catalog",
    "CatalogUnreadable",
    "InvalidSessionId",
    "JsonlCatalog",
    "JsonlStore",
    "LogHandle",
    "LogOpened",
    "LogWriteFailed",
    "MemoryStore",
    "NoCatalog",
    "OpenedLog",
    "PostgresStore",
    "PruneResult",
    "Scan",
    "SchemaTooNew",
    "SessionEntry",
    "SessionHeldElsewhere",
    "SessionLockLost",
    "SessionLocked",
    "SessionLogActor",
    "SessionLogClient",
    "SessionNotOpen",
    "SessionStore",
    "StoreUnavailable",
    "TornTail",
    "build_store",
    "catalog_of",
    "check_session_id",
    "check_store_files",
    "default_state_dir",
    "open_session_log",
    "policy_summary",
    "resolve_state_dir",
    "scan_log",
    "store_files",
    "store_secrets",
]

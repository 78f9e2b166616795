"""SessionLogActor: one append-only, durable, locked log of events per session.

The actor (`actor`), the reader every store shares (`_scan`), the catalog protocol
of `session list`/`prune` (`catalog`) and the stores (`stores/`). Every name is
loaded on first use: the PostgreSQL store's only by a host whose composition names
it, and the actor's trio never by a verb that only asks where logs live.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
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
    from .stores import Credentials as Credentials
    from .stores import InvalidSessionId as InvalidSessionId
    from .stores import JsonlCatalog as JsonlCatalog
    from .stores import JsonlStore as JsonlStore
    from .stores import LogHandle as LogHandle
    from .stores import MemoryStore as MemoryStore
    from .stores import OpenedLog as OpenedLog
    from .stores import PostgresStore as PostgresStore
    from .stores import SchemaTooNew as SchemaTooNew
    from .stores import SessionHeldElsewhere as SessionHeldElsewhere
    from .stores import SessionLocked as SessionLocked
    from .stores import SessionLockLost as SessionLockLost
    from .stores import SessionStore as SessionStore
    from .stores import StoreUnavailable as StoreUnavailable
    from .stores import UnreadableLog as UnreadableLog
    from .stores import build_store as build_store
    from .stores import catalog_of as catalog_of
    from .stores import check_session_id as check_session_id
    from .stores import check_store_files as check_store_files
    from .stores import config_credential_files as config_credential_files
    from .stores import config_protected_paths as config_protected_paths
    from .stores import default_state_dir as default_state_dir
    from .stores import directory_store as directory_store
    from .stores import names_a_log_file as names_a_log_file
    from .stores import read_log_file as read_log_file
    from .stores import resolve_state_dir as resolve_state_dir
    from .stores import session_of_file as session_of_file
    from .stores import store_files as store_files
    from .stores import store_secrets as store_secrets

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

"""SessionLogActor: one append-only, durable, locked log of events per session.

The actor (`actor`), the reader every store shares (`_scan`), the catalog protocol
of `session list`/`prune` (`catalog`) and the stores (`stores/`). Every name is
loaded on first use: the PostgreSQL store's only by a host whose composition names
it, and the actor's trio never by a verb that only asks where logs live.
"""

from __future__ import annotations

from ..lazy import lazy_exports

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
    from .stores.jsonl_catalog import JsonlCatalog as JsonlCatalog
    from .stores.jsonl_catalog import catalog_of as catalog_of

# name -> the module beneath this package that defines it ("": a submodule itself).
_LAZY = {
    "BUILTIN_EVENTS": "_builtin",
    "Scan": "_scan",
    "TornTail": "_scan",
    "scan_log": "_scan",
    "LogWriteFailed": "actor",
    "SessionLogActor": "actor",
    "SessionLogClient": "actor",
    "SessionNotOpen": "actor",
    "open_session_log": "actor",
    "Catalog": "catalog",
    "CatalogUnreadable": "catalog",
    "NoCatalog": "catalog",
    "PruneResult": "catalog",
    "SessionEntry": "catalog",
    "policy_summary": "catalog",
    "JsonlCatalog": "stores.jsonl_catalog",
    "catalog_of": "stores.jsonl_catalog",
    "build_store": "stores",
    "check_store_files": "stores",
    "config_credential_files": "stores",
    "config_protected_paths": "stores",
    "store_files": "stores",
    "store_secrets": "stores",
    "Credentials": "stores",
    "InvalidSessionId": "stores",
    "LogHandle": "stores",
    "OpenedLog": "stores",
    "SessionLocked": "stores",
    "SessionStore": "stores",
    "check_session_id": "stores",
    "STATE_DIR_ENV": "stores",
    "JsonlStore": "stores",
    "UnreadableLog": "stores",
    "default_state_dir": "stores",
    "directory_store": "stores",
    "names_a_log_file": "stores",
    "read_log_file": "stores",
    "resolve_state_dir": "stores",
    "session_of_file": "stores",
    "MemoryStore": "stores",
    "PostgresStore": "stores",
    "SchemaTooNew": "stores",
    "SessionHeldElsewhere": "stores",
    "SessionLockLost": "stores",
    "StoreUnavailable": "stores",
}
_lazy = lazy_exports(__name__, _LAZY, globals())


def __getattr__(name: str) -> object:
    if name == "LogOpened":  # the actor's reply, defined with the other messages
        from ..messages import LogOpened

        globals()[name] = LogOpened
        return LogOpened
    return _lazy(name)


__all__ = [
    "BUILTIN_EVENTS",
    "STATE_DIR_ENV",
    "Catalog",
    "CatalogUnreadable",
    "Credentials",
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
    "UnreadableLog",
    "build_store",
    "catalog_of",
    "check_session_id",
    "check_store_files",
    "config_credential_files",
    "config_protected_paths",
    "default_state_dir",
    "directory_store",
    "names_a_log_file",
    "open_session_log",
    "policy_summary",
    "read_log_file",
    "resolve_state_dir",
    "scan_log",
    "session_of_file",
    "store_files",
    "store_secrets",
]

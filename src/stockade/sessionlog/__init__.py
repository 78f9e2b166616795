"""SessionLogActor: one append-only, durable, locked log of events per session."""

from ..messages import LogOpened as LogOpened
from ._builtin import BUILTIN_EVENTS as BUILTIN_EVENTS
from ._scan import Scan as Scan
from ._scan import TornTail as TornTail
from ._scan import scan_log as scan_log
from ._store import STATE_DIR_ENV as STATE_DIR_ENV
from ._store import InvalidSessionId as InvalidSessionId
from ._store import JsonlStore as JsonlStore
from ._store import LogHandle as LogHandle
from ._store import MemoryStore as MemoryStore
from ._store import OpenedLog as OpenedLog
from ._store import SessionLocked as SessionLocked
from ._store import SessionStore as SessionStore
from ._store import check_session_id as check_session_id
from ._store import default_state_dir as default_state_dir
from ._store import resolve_state_dir as resolve_state_dir
from .actor import LogWriteFailed as LogWriteFailed
from .actor import SessionLogActor as SessionLogActor
from .actor import SessionLogClient as SessionLogClient
from .actor import SessionNotOpen as SessionNotOpen
from .actor import open_session_log as open_session_log

__all__ = [
    "BUILTIN_EVENTS",
    "STATE_DIR_ENV",
    "InvalidSessionId",
    "JsonlStore",
    "LogHandle",
    "LogOpened",
    "LogWriteFailed",
    "MemoryStore",
    "OpenedLog",
    "Scan",
    "SessionLocked",
    "SessionLogActor",
    "SessionLogClient",
    "SessionNotOpen",
    "SessionStore",
    "TornTail",
    "check_session_id",
    "default_state_dir",
    "open_session_log",
    "resolve_state_dir",
    "scan_log",
]

"""The PostgreSQL session-log store: one database shared by every host, so any host can
resume any session (docs/scaling.md explains the deployment).

Split by job, each module with its own story: `store` (PostgresStore, the face:
open, append, close, scan), `connections` (the DSN, psycopg, the holder connection
and the pool), `libpq` (the login's share of the environment, standard library
only), `schema` (tables and migrations), `locks` (one writer per session: the
advisory lock and the fencing epoch), `commit` (the group commit across sessions),
`read` (a log read back) and `catalog` (list and prune). psycopg 3 (with
psycopg-pool) is an extra (`stockade[postgres]`), imported only when a
PostgresStore is made, so importing this package costs none of it; every name is
loaded on first use, so `stockade exec` asks for `libpq` alone. docs/decisions.md
says why psycopg in worker threads rather than asyncpg through trio-asyncio.
"""

from __future__ import annotations

from ....lazy import surface

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from .connections import StoreUnavailable as StoreUnavailable
    from .connections import credential_paths as credential_paths
    from .connections import describe_dsn as describe_dsn
    from .connections import dsn_files as dsn_files
    from .connections import dsn_parts as dsn_parts
    from .libpq import LIBPQ_CREDENTIALS as LIBPQ_CREDENTIALS
    from .libpq import dsn_credentials as dsn_credentials
    from .locks import SessionHeldElsewhere as SessionHeldElsewhere
    from .locks import SessionLockLost as SessionLockLost
    from .locks import lock_key as lock_key
    from .schema import MIGRATIONS as MIGRATIONS
    from .schema import SCHEMA_VERSION as SCHEMA_VERSION
    from .schema import SchemaTooNew as SchemaTooNew
    from .store import PostgresHandle as PostgresHandle
    from .store import PostgresStore as PostgresStore

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

"""The session-log tests: the PostgreSQL server fixture for the store-semantics suite."""

from __future__ import annotations

from ..postgres.fixtures import pg_dsn as pg_dsn

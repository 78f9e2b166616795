"""The PostgreSQL store's own tests: the server fixture (tests/postgres/fixtures.py)."""

from __future__ import annotations

from .fixtures import pg_dsn as pg_dsn

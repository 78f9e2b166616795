"""What every store answers for itself, so no other folder names a store or its format
(issue 39, "Stores behind their protocol"): whether a session exists and where, the
ids it holds, a log read without a lock, the paths no command may reach, its login
in the environment, and closing. Each test runs on the memory, JSON-lines and
PostgreSQL stores; then what the harness, the ACP agent and the CLI make of it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stockade import SessionNotFound, open_harness
from stockade.events import EventRegistry
from stockade.harness.session import Session
from stockade.sessionlog import (
    InvalidSessionId,
    JsonlStore,
    MemoryStore,
    SessionLocked,
    UnreadableLog,
    build_store,
    config_protected_paths,
    names_a_log_file,
    open_session_log,
    read_log_file,
    session_of_file,
    store_secrets,
)

from ._helpers import DEFAULTS, TEST_EVENTS, Note

STORES = ("memory", "jsonl", "postgres")


class Backing:
    """Stores of one kind over one backing (a second one is another process's view),
    and the ids of this test's own (the database outlives a test)."""

    def __init__(self, kind: str, make: Callable[[EventRegistry], Any]) -> None:
        self.kind = kind
        self._make = make
        self.made: list[Any] = []
        self.prefix = f"p{uuid.uuid4().hex[:8]}"

    def store(self, registry: EventRegistry = TEST_EVENTS) -> Any:
        store = self._make(registry)
        self.made.append(store)
        return store

    def sid(self, name: str) -> str:
        return f"{self.prefix}-{name}"


@pytest.fixture(params=STORES)
def backing(request: pytest.FixtureRequest, state_dir_outside: str) -> Iterator[Backing]:
    if request.param == "memory":
        shared = MemoryStore(registry=TEST_EVENTS)  # memory is one process's: one store
        backing = Backing("memory", lambda registry: shared)
    elif request.param == "jsonl":
        backing = Backing(
            "jsonl", lambda registry: JsonlStore(Path(state_dir_outside), registry=registry)
        )
    else:
        dsn = request.getfixturevalue("pg_dsn")
        from stockade.sessionlog.stores.postgres import PostgresStore

        backing = Backing(
            "postgres", lambda registry: PostgresStore(dsn, registry=registry, pool_size=2)
        )
    try:
        yield backing
    finally:
        for store in backing.made:
            store.close()


def notes(first: int, count: int) -> list[Note]:
    return [Note(n=i, seq=i, ts=1.0) for i in range(first, first + count)]


def test_exists_says_whether_a_log_is_held_and_location_names_it(backing: Backing) -> None:
    store, other = backing.store(), backing.store()
    sid = backing.sid("s")
    assert store.exists(sid) is False and other.exists(sid) is False
    location = store.location_of(sid)
    assert sid in location
    opened = store.open(sid)
    assert opened.location == location
    opened.handle.append(notes(1, 2))
    assert store.exists(sid) and other.exists(sid)  # while it is held, too
    opened.handle.close()
    assert store.exists(sid) and other.exists(sid)
    assert not store.exists(backing.sid("other"))
    for bad in ("", "../x", "a/b", "-x"):
        with pytest.raises(InvalidSessionId):
            store.exists(bad)


def test_session_ids_are_the_sessions_held_sorted(backing: Backing) -> None:
    store = backing.store()
    for name in ("b", "a", "c"):
        store.open(backing.sid(name)).handle.close()
    mine = [sid for sid in backing.store().session_ids() if sid.startswith(backing.prefix)]
    assert mine == [backing.sid("a"), backing.sid("b"), backing.sid("c")]


def test_scan_reads_a_held_log_without_its_lock_and_changes_nothing(backing: Backing) -> None:
    store, reader = backing.store(), backing.store()
    sid = backing.sid("held")
    opened = store.open(sid)
    opened.handle.append(notes(1, 3))
    assert reader.scan(sid).events == tuple(notes(1, 3))
    # Still held by its writer: reading took no lock.
    with pytest.raises(SessionLocked):
        reader.open(sid)
    opened.handle.append(notes(4, 1))
    assert [event.seq for event in reader.scan(sid).events] == [1, 2, 3, 4]
    opened.handle.close()
    with pytest.raises(KeyError):
        reader.scan(backing.sid("missing"))
    assert not reader.exists(backing.sid("missing"))  # and scanning made nothing


# A postgres commit is atomic: no store there leaves a torn tail.
@pytest.mark.parametrize("backing", ["memory", "jsonl"], indirect=True)
def test_a_torn_tail_is_reported_by_scan_not_cut(backing: Backing) -> None:
    store = backing.store()
    sid = backing.sid("torn")
    opened = store.open(sid)
    opened.handle.append(notes(1, 2))
    opened.handle.close()
    if backing.kind == "memory":
        store.files[sid] += b'{"type":"test/no'
    else:
        with open(store.location_of(sid), "ab") as log:
            log.write(b'{"type":"test/no')
    scan = store.scan(sid)
    assert scan.events == tuple(notes(1, 2)) and scan.torn is not None
    assert store.scan(sid).torn is not None  # still there: nothing was cut


def test_protected_paths_are_where_the_logs_are_on_this_host(
    backing: Backing, state_dir_outside: str
) -> None:
    paths = backing.store().protected_paths()
    if backing.kind == "jsonl":
        assert paths == (os.path.abspath(state_dir_outside),)
    else:  # in this process's memory, or in the database
        assert paths == ()


def test_credentials_are_names_and_values_the_executor_withholds(backing: Backing) -> None:
    names, values = backing.store().credentials()
    if backing.kind != "postgres":
        assert (names, values) == ((), ())
        return
    assert {"PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSSLKEY"} <= set(names)
    assert backing.store().dsn in values


def test_close_is_idempotent_and_where_names_the_store(backing: Backing) -> None:
    store = backing.store()
    assert isinstance(store.where, str) and store.where
    store.close()
    store.close()


async def test_the_log_actor_finds_a_session_without_opening_it(backing: Backing) -> None:
    store = backing.store()
    sid = backing.sid("found")
    async with open_session_log(store) as log:
        found = await log.find(sid)
        assert (found.exists, found.location) == (False, store.location_of(sid))
        assert not store.exists(sid)  # finding made nothing
        session = await Session.open(log, session_id=sid, cwd="/work/x", defaults=DEFAULTS)
        await session.close()
        assert (await log.find(sid)).exists
        with pytest.raises(InvalidSessionId):
            await log.find("../escape")


# --- the store a composition names -------------------------------------------------------


def test_a_postgres_dsn_carries_its_password_into_the_credentials(pg_dsn: str) -> None:
    from stockade.sessionlog.stores.postgres import LIBPQ_CREDENTIALS, PostgresStore

    dsn = "postgresql://stockade:s3cret-pw@127.0.0.1:1/log"
    with PostgresStore(dsn) as store:
        assert store.credentials() == (LIBPQ_CREDENTIALS, (dsn, "s3cret-pw"))
    config = build_config(store="postgres", dsn=dsn)
    assert store_secrets(config) == store.credentials()
    # Percent-encoded (`%70` is `p`), the keyword is still found and parsed.
    encoded = "postgresql:///log?host=/run/pg&%70assword=s3cret-pw"
    assert store_secrets(build_config(store="postgres", dsn=encoded))[1] == (encoded, "s3cret-pw")
    # No word that could carry a password: withheld whole, never parsed.
    plain = "host=/run/pg dbname=log"
    assert store_secrets(build_config(store="postgres", dsn=plain)) == (
        LIBPQ_CREDENTIALS,
        (plain, ""),
    )


def build_config(**fields: Any) -> Any:
    from stockade.config.builtins import SessionLogConfig

    return SessionLogConfig(**fields)


def test_build_store_makes_each_kind_and_the_config_says_the_same(tmp_path: Path) -> None:
    memory = build_store(None, TEST_EVENTS)
    assert memory.protected_paths() == () and memory.credentials() == ((), ())
    config = build_config(state_dir=str(tmp_path / "logs"))
    jsonl = build_store(config, TEST_EVENTS)
    assert jsonl.protected_paths() == config_protected_paths(config) == (str(tmp_path / "logs"),)
    # A --state-dir on the command line stands in for the configured directory.
    elsewhere = build_store(config, TEST_EVENTS, state_dir=str(tmp_path / "other"))
    assert elsewhere.protected_paths() == (str(tmp_path / "other"),)
    assert config_protected_paths(None) == ()
    assert config_protected_paths(build_config(store="postgres", dsn="host=/x")) == ()


def test_the_configs_answers_load_no_store(tmp_path: Path) -> None:
    """What `stockade exec` asks of a composition's log entry (its paths, its secrets,
    its login's files) loads no store module, no trio and no psycopg."""
    heavy = (
        "trio",
        "psycopg",
        "stockade.sessionlog.actor",
        "stockade.sessionlog.stores.interface",
        "stockade.sessionlog.stores.jsonl",
        "stockade.sessionlog.stores.memory",
        "stockade.sessionlog.stores.postgres.connections",
        "stockade.sessionlog.stores.postgres.store",
    )
    probe = (
        "import sys\n"
        "from stockade.config.builtins import SessionLogConfig\n"
        "from stockade.sessionlog import (config_credential_files, config_protected_paths,"
        " store_secrets)\n"
        f"jsonl = SessionLogConfig(state_dir={str(tmp_path)!r})\n"
        "pg = SessionLogConfig(store='postgres', dsn='host=/run/pg dbname=log')\n"
        "for config in (jsonl, pg):\n"
        "    config_protected_paths(config), store_secrets(config)\n"
        "config_credential_files(jsonl)\n"
        f"print(sorted(set(sys.modules) & set({heavy!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


# --- a log file by its path ---------------------------------------------------------------


def test_a_log_file_is_read_by_its_path_whatever_its_name(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path, registry=TEST_EVENTS)
    opened = store.open("s1")
    opened.handle.append(notes(1, 2))
    opened.handle.close()
    renamed = tmp_path / "kept.log"
    os.link(store.location_of("s1"), renamed)
    assert read_log_file(renamed, TEST_EVENTS).events == tuple(notes(1, 2))
    assert names_a_log_file(str(renamed)) and names_a_log_file("x.jsonl")
    assert names_a_log_file("./x") and not names_a_log_file("s1")
    assert session_of_file(store.location_of("s1")) == "s1"
    cases = {
        tmp_path / "missing.log": "SESSION_NOT_FOUND",
        tmp_path: "NOT_A_SESSION_LOG",
    }
    (tmp_path / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    cases[tmp_path / "passwd"] = "NOT_A_SESSION_LOG"
    for path, code in cases.items():
        with pytest.raises(UnreadableLog) as refused:
            read_log_file(path, TEST_EVENTS)
        assert refused.value.code == code and str(path) in str(refused.value)


# --- what the faces make of it ------------------------------------------------------------


@pytest.fixture(params=("memory", "postgres"))
def log_entry(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A composition's log entries for a store that is no directory of files."""
    if request.param == "memory":
        yield "memory", []
    else:
        dsn = request.getfixturevalue("pg_dsn")
        config = {"store": "postgres", "dsn": dsn, "pool_size": 1}
        yield "postgres", [{"id": "log", "name": "stockade.session.log", "config": config}]


async def test_resuming_an_unknown_id_leaves_no_log_in_any_store(
    log_entry: tuple[str, list[dict[str, Any]]], scratch: str
) -> None:
    """Refused before the log is opened, on every store: a database keeps no empty
    session behind (it once did), a memory store no empty log."""
    kind, entries = log_entry
    composition = [{"id": "bash", "name": "stockade.bash.local"}, *entries]
    sid = f"typo-{uuid.uuid4().hex[:8]}"
    async with open_harness(composition, cwd=scratch) as harness:
        with pytest.raises(SessionNotFound, match=f"no session '{sid}' to resume"):
            await harness.resume_session(sid)
        assert not await harness.session_exists(sid)
        session = await harness.open_session(cwd=scratch)
        await session.close()
        assert await harness.session_exists(session.id)
        again = await harness.resume_session(session.id)
        await again.close()
        assert harness.log_paths == ()
    if kind == "postgres":
        from stockade.sessionlog.stores.postgres import PostgresStore

        with PostgresStore(entries[0]["config"]["dsn"], pool_size=1) as store:
            assert not store.exists(sid) and store.exists(session.id)


def test_the_logs_surface_is_lazy_and_every_promised_name_resolves() -> None:
    """Importing the room costs nothing until a name is asked for (the CLI asks a
    config where its logs are without the actor's trio)."""
    import stockade.sessionlog
    import stockade.sessionlog.stores
    import stockade.sessionlog.stores.postgres

    for room in (
        stockade.sessionlog,
        stockade.sessionlog.stores,
        stockade.sessionlog.stores.postgres,
    ):
        for name in room.__all__:
            assert getattr(room, name) is not None, (room.__name__, name)
        with pytest.raises(AttributeError):
            _ = room.no_such_name
    probe = (
        "import sys, stockade.sessionlog.stores.postgres\n"
        "print(sorted(m for m in sys.modules if m.startswith('stockade.sessionlog')"
        " or m in ('trio', 'attrs', 'msgspec', 'typing')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    expected = ["stockade.sessionlog", "stockade.sessionlog.stores"]
    expected.append("stockade.sessionlog.stores.postgres")
    assert (done.returncode, done.stdout) == (0, f"{expected}\n"), done.stderr

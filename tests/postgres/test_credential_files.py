"""Which files the stores say hold their login (`credential_files`), and where they end
up: every file libpq would read for the DSN and its environment, in deny_read for the
harness's calls and the CLI verbs' alike. Pure (no server): the DSN is only parsed.
tests/security/test_store_credentials.py judges the same on the real kernel.
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from stockade.cli.settings import cli_settings
from stockade.config import load_composition
from stockade.harness.assembly import assemble
from stockade.sandbox.actor import ProviderActor
from stockade.sessionlog import JsonlStore, MemoryStore
from stockade.sessionlog.stores import config_credential_files
from stockade.sessionlog.stores.postgres import PostgresStore, dsn_files
from stockade.sessionlog.stores.postgres.connections import credential_paths, dsn_parts
from stockade.trust.secrets import deny_read_for

pytest.importorskip("psycopg")

TLS_DEFAULTS = ("postgresql.crt", "postgresql.key", "root.crt", "root.crl")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for variable in list(os.environ):
        if variable.startswith("PG"):
            monkeypatch.delenv(variable)
    return home


def _homes(home: Path) -> list[Path]:
    """The homes libpq may take `~` from: $HOME, and the account's."""
    return [home, Path(pwd.getpwuid(os.geteuid()).pw_dir)]


def test_the_file_stores_have_no_login(tmp_path):
    assert JsonlStore(tmp_path).credential_files() == ()
    assert MemoryStore().credential_files() == ()


def test_a_plain_dsn_names_libpqs_defaults(home):
    """No file named anywhere: libpq still reads ~/.pgpass and ~/.postgresql's client
    certificate, key, CA and revocation list, whether they exist now or not."""
    paths = PostgresStore("host=/run/pg user=u dbname=d").credential_files()
    for where in _homes(home):
        assert str(where / ".pgpass") in paths
        for name in TLS_DEFAULTS:
            assert str(where / ".postgresql" / name) in paths
    assert not any("pg_service" in path for path in paths)


def test_the_dsn_and_the_environment_name_the_files(home, tmp_path, monkeypatch):
    named = {name: tmp_path / name for name in ("pass", "key", "cert", "root", "crl", "crldir")}
    dsn = (
        f"host=/run/pg user=u dbname=d passfile={named['pass']} sslkey={named['key']} "
        f"sslcert={named['cert']} sslrootcert={named['root']} sslcrl={named['crl']} "
        f"sslcrldir={named['crldir']}"
    )
    paths = credential_paths(dsn_parts(dsn), os.environ)
    assert {str(path) for path in named.values()} <= set(paths)
    # A file the DSN names replaces libpq's default.
    assert str(home / ".pgpass") not in paths
    assert str(home / ".postgresql" / "postgresql.key") not in paths

    for variable in ("PGPASSFILE", "PGSSLKEY", "PGSSLCERT", "PGSSLROOTCERT", "PGSSLCRLDIR"):
        monkeypatch.setenv(variable, str(tmp_path / variable))
    paths = credential_paths(dsn_parts("host=/run/pg user=u"), os.environ)
    for variable in ("PGPASSFILE", "PGSSLKEY", "PGSSLCERT", "PGSSLROOTCERT", "PGSSLCRLDIR"):
        assert str(tmp_path / variable) in paths, variable
    assert str(home / ".pgpass") not in paths


def test_a_service_names_its_files_and_what_its_section_names(home, tmp_path, monkeypatch):
    section_key = tmp_path / "from-the-section.key"
    section_key.write_text("key\n")
    servicefile = tmp_path / "services.conf"
    servicefile.write_text(
        "[other]\nsslkey=/not/this/one\n"
        f"[logs]\nhost=/run/pg\n  sslkey = {section_key}\npassword=pw\n"
    )
    sysconf = tmp_path / "sysconf"
    monkeypatch.setenv("PGSERVICEFILE", str(servicefile))
    monkeypatch.setenv("PGSYSCONFDIR", str(sysconf))
    paths = credential_paths(dsn_parts("service=logs"), os.environ)
    assert str(servicefile) in paths
    assert str(section_key) in paths
    assert str(sysconf / "pg_service.conf") in paths
    assert "/not/this/one" not in paths
    # The trust base checks what exists or is named: the system's file does not exist.
    trusted = [path for path, _ in dsn_files("service=logs")]
    assert str(servicefile) in trusted and str(section_key) in trusted
    assert str(sysconf / "pg_service.conf") not in trusted

    monkeypatch.delenv("PGSERVICEFILE")
    paths = credential_paths(dsn_parts("service=logs"), os.environ)
    assert str(home / ".pg_service.conf") in paths
    # Not there, not named: the trust base does not ask for it.
    assert str(home / ".pg_service.conf") not in [path for path, _ in dsn_files("service=logs")]


def _postgres_log(dsn: str) -> dict:
    return {
        "id": "log",
        "name": "stockade.session.log",
        "config": {"store": "postgres", "dsn": dsn},
    }


def _composition(*extra: dict) -> list[dict]:
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local"},
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "fs", "name": "stockade.fs.sandbox"},
        *extra,
    ]


@pytest.mark.parametrize(
    "dsn",
    (
        "host=/run/pg user=u dbname=d",
        "postgresql://u@%2Frun%2Fpg/d?passfile={creds}/pgpass",
        # A keyword spelled percent-encoded is still libpq's `passfile`.
        "postgresql://u@%2Frun%2Fpg/d?%70assfile={creds}/pgpass",
        "host=/run/pg passfile={creds}/pgpass sslkey={creds}/client.key",
        "service=logs",
    ),
)
def test_the_harness_and_the_command_line_hide_the_same_files(
    home, tmp_path, state_dir_outside, dsn
):
    """Both places that build a provider config put the store's files in deny_read's
    tokens, and the fs tools' fence (DenyRead.denies) refuses each."""
    creds = Path(state_dir_outside)
    for name in ("pgpass", "client.key"):
        (creds / name).write_text("secret\n")
        (creds / name).chmod(0o600)
    dsn = dsn.format(creds=creds)
    composition = load_composition(_composition(_postgres_log(dsn)))
    expected = PostgresStore(dsn).credential_files()
    assert expected == config_credential_files(composition.session_log.config)
    actors, harness = assemble(composition, cwd=str(tmp_path))
    (provider_actor,) = [actor for actor in actors if isinstance(actor, ProviderActor)]
    settings = cli_settings(composition, mode=None, root=str(tmp_path), backend="auto")
    for provider in (provider_actor.config, settings.provider):
        assert set(expected) <= set(provider.secret_tokens)
    assert harness.fs is not None and harness.fs.deny_read is not None
    for deny in (
        provider_actor._deny_read,
        harness.fs.deny_read,
        deny_read_for(settings.provider),
    ):
        for path in expected:
            assert deny.denies(path, (str(tmp_path),)), path


def test_the_command_line_hides_a_configured_state_directory(home, tmp_path):
    state = tmp_path / "logs"
    log = {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state)}}
    settings = cli_settings(
        load_composition(_composition(log)), mode=None, root=str(tmp_path), backend="auto"
    )
    assert str(state) in settings.provider.secret_state
    assert deny_read_for(settings.provider).denies(str(state / "s1.jsonl"), (str(tmp_path),))

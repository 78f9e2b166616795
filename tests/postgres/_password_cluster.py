"""A throwaway PostgreSQL cluster that trusts nobody: every login, on its Unix socket
and on 127.0.0.1, must give its password (scram-sha-256). For the attack of issue 24:
a confined command that can reach the server can write the session log only with
the credentials it inherits, so this server is how the test tells the difference.

Made as `_cluster.py` makes its own (as the `postgres` system user when run as root),
listening on a free TCP port of 127.0.0.1 as well as its socket; stopped (and its
directory removed) by `_cluster.finish` on the watchdog this returns.
"""

from __future__ import annotations

import os
import pwd
import secrets
import socket
import subprocess
import sys
from dataclasses import dataclass

from . import _cluster

LOG_ROLE = "stockade_log"


@dataclass(frozen=True)
class PasswordCluster:
    directory: str
    port: int
    # The superuser's login, for the test's own setup and judging (never in any env).
    admin_dsn: str
    # The session store's: where it is, without its password.
    log_dsn: str
    log_password: str


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(directory: str) -> tuple[PasswordCluster, subprocess.Popen[bytes]]:
    binaries = _cluster.bin_dir()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries (apt-get install postgresql)")
    directory = os.path.abspath(directory)
    data, sockets = os.path.join(directory, "data"), os.path.join(directory, "socket")
    os.makedirs(sockets, exist_ok=True)
    admin_password, log_password = secrets.token_hex(16), secrets.token_hex(16)
    pwfile = os.path.join(directory, "pwfile")
    with open(pwfile, "w", encoding="ascii") as handle:
        handle.write(admin_password + "\n")
    if os.geteuid() == 0:
        entry = pwd.getpwnam(_cluster.SUPERUSER)
        for path in (directory, sockets, pwfile):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        os.chmod(directory, 0o755)
    os.chmod(pwfile, 0o600)
    # -A: every rule initdb writes (local, 127.0.0.1, ::1) asks for a scram password.
    _cluster._as_server_user(
        [
            os.path.join(binaries, "initdb"),
            "-D",
            data,
            "-U",
            _cluster.SUPERUSER,
            "-A",
            "scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--no-instructions",
        ]
    )
    os.unlink(pwfile)
    port = _free_port()
    options = f"-k {sockets} -c listen_addresses=127.0.0.1 -p {port} -c max_connections=40"
    _cluster.start_server(binaries, data, options, directory)
    watchdog = subprocess.Popen(
        [sys.executable, _cluster.__file__, "watch", directory],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    where = f"host=127.0.0.1 port={port}"
    admin = f"{where} user={_cluster.SUPERUSER} dbname=postgres password={admin_password}"
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {LOG_ROLE} LOGIN PASSWORD '{log_password}'")
        conn.execute(f"CREATE DATABASE {LOG_ROLE} OWNER {LOG_ROLE}")
    cluster = PasswordCluster(
        directory=directory,
        port=port,
        admin_dsn=f"{where} user={_cluster.SUPERUSER} dbname={LOG_ROLE} password={admin_password}",
        log_dsn=f"{where} user={LOG_ROLE} dbname={LOG_ROLE}",
        log_password=log_password,
    )
    return cluster, watchdog

"""A throwaway PostgreSQL cluster on a Unix socket: for CI (`.ci/run`) and local runs.

    python tests/postgres/_cluster.py start DIR   # prints `export STOCKADE_TEST_PG_DSN=...`
    python tests/postgres/_cluster.py stop DIR
    python tests/postgres/_cluster.py watch DIR   # stop it and remove DIR when stdin closes

The cluster lives in DIR (data in DIR/data, the socket in DIR/socket), listens on no
TCP port, and trusts local connections, except for one role, `stockade_pw`, which
must log in with its password (`PASSWORD`): the wrong-password tests need a server
that asks. Run as root it is made and run as the `postgres` system user (initdb
refuses root); as anyone else, as that user. Standard library only: CI runs it
before anything else is installed.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import sys
import time

DSN_ENV = "STOCKADE_TEST_PG_DSN"
PASSWORD_ROLE = "stockade_pw"
PASSWORD = "correct horse battery staple"
SUPERUSER = "postgres"


def bin_dir() -> str | None:
    """The newest PostgreSQL server binaries on this machine (Debian's layout), or PATH's."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: int(path.split("/")[4]) if path.split("/")[4].isdigit() else 0,
    )
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


def start_server(binaries: str, data: str, options: str, directory: str) -> None:
    """pg_ctl start on `data` with `options`, its log in `directory`, waiting up to 60 s."""
    _as_server_user(
        [
            os.path.join(binaries, "pg_ctl"),
            "-D",
            data,
            "-o",
            options,
            "-l",
            os.path.join(directory, "server.log"),
            "-w",
            "-t",
            "60",
            "start",
        ]
    )


def _as_server_user(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        argv = ["runuser", "-u", SUPERUSER, "--", *argv]
    return subprocess.run(argv, check=True, text=True, capture_output=True, **kwargs)  # type: ignore[call-overload,no-any-return]


def dsn_for(directory: str, *, user: str = SUPERUSER, dbname: str = SUPERUSER) -> str:
    return f"host={os.path.join(directory, 'socket')} user={user} dbname={dbname}"


def start(directory: str, *, max_connections: int = 200) -> str:
    """Make and start a cluster in `directory` (made if missing); its superuser DSN."""
    binaries = bin_dir()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries (apt-get install postgresql)")
    directory = os.path.abspath(directory)
    data, socket = os.path.join(directory, "data"), os.path.join(directory, "socket")
    os.makedirs(socket, exist_ok=True)
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SUPERUSER)
        for path in (directory, socket):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        os.chmod(directory, 0o755)
    _as_server_user(
        [
            os.path.join(binaries, "initdb"),
            "-D",
            data,
            "-U",
            SUPERUSER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-instructions",
        ]
    )
    hba = os.path.join(data, "pg_hba.conf")
    with open(hba, encoding="utf-8") as handle:
        rules = handle.read()
    # First match wins: the password role is asked for its password, everyone else trusted.
    with open(hba, "w", encoding="utf-8") as handle:
        handle.write(f"local all {PASSWORD_ROLE} scram-sha-256\n" + rules)
    options = (
        f"-k {socket} -c listen_addresses='' -c max_connections={max_connections} "
        # Durable as in production: every commit is flushed (the store's promise).
        "-c fsync=on -c synchronous_commit=on"
    )
    start_server(binaries, data, options, directory)
    _psql(
        binaries,
        directory,
        f"CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{PASSWORD}'; "
        f"GRANT ALL ON SCHEMA public TO {PASSWORD_ROLE};",
    )
    return dsn_for(directory)


def _psql(binaries: str, directory: str, sql: str) -> None:
    for _ in range(50):
        try:
            _as_server_user(
                [
                    os.path.join(binaries, "psql"),
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-qAt",
                    "-h",
                    os.path.join(directory, "socket"),
                    "-U",
                    SUPERUSER,
                    "-d",
                    SUPERUSER,
                    "-c",
                    sql,
                ]
            )
            return
        except subprocess.CalledProcessError as error:
            last = error
            time.sleep(0.1)
    raise RuntimeError(f"psql failed: {last.stderr}")


def stop(directory: str) -> None:
    """Stop the cluster (fast shutdown); quiet when it is not running."""
    binaries = bin_dir()
    data = os.path.join(os.path.abspath(directory), "data")
    if binaries is None or not os.path.isdir(data):
        return
    with contextlib.suppress(subprocess.CalledProcessError):
        _as_server_user([os.path.join(binaries, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"])


def start_owned(directory: str, **options: int) -> tuple[str, subprocess.Popen[bytes]]:
    """`start`, plus a watchdog that stops the cluster and removes `directory` when this
    process goes away, however it goes (a killed test run leaves no server behind).
    Close the returned watchdog's stdin (or let this process end) to stop it."""
    dsn = start(directory, **options)
    watchdog = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "watch", directory],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    return dsn, watchdog


def finish(directory: str, watchdog: subprocess.Popen[bytes]) -> None:
    """Stop a cluster from `start_owned` now, and wait for its watchdog to end."""
    assert watchdog.stdin is not None
    watchdog.stdin.close()
    try:
        watchdog.wait(60)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        stop(directory)
        shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop", "watch"):
        print(__doc__, file=sys.stderr)
        return 2
    verb, directory = argv
    if verb == "stop":
        stop(directory)
        return 0
    if verb == "watch":
        sys.stdin.buffer.read()  # EOF: our owner closed the pipe, or died
        stop(directory)
        shutil.rmtree(directory, ignore_errors=True)
        return 0
    dsn = start(directory)
    print(f"export {DSN_ENV}='{dsn}'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

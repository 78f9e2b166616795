"""A refused destination named by terminal escapes reaches the person escaped, on the
real kernel, both backends (issue 35, hole 8).

A confined command under network allowlist asks the proxy, over SOCKS5, for a
domain made of the line eraser and a line of its own, `\\x1b[2K\\rstockade: all
clear`. Printed raw in stockade's refusal line, the person's terminal showed
"stockade: all clear" in its place. Judged where a person reads it: `stockade run`'s
line on a terminal (a pty, read by a terminal emulator), its marker on a pipe, its
`--json`, `stockade exec`'s proxy process's marker, and `stockade session show` of
the session that logged the connection. The control: the name reaches stockade
exactly as sent (the result's and the log's host), and that name written raw into
the line would show "stockade: all clear" on the terminal.

As nobody: test_refused_name_escaped_nobody.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from stockade import open_harness
from stockade.messages import NetworkConnection

from ..pty_screen import PtyChild
from ..support import require_backend, stockade
from .test_person_facing_escapes import ALL_CLEAR, raw_controls, screen_rows

BACKENDS = ["bwrap", "landlock"]
# Nothing listens there; an allowlist needs an entry for the proxy to run at all.
ALLOW = "127.0.0.1:9"
# The SOCKS5 CONNECT a command sends for the hostile name (remote DNS: the proxy
# reads the name, refuses it as invalid, and logs it as sent).
SOCKS_HOSTILE = f"""\
import socket
name = {ALL_CLEAR.encode()!r}
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(b"\\x05\\x01\\x00")
s.recv(2)
s.sendall(b"\\x05\\x01\\x00\\x03" + bytes([len(name)]) + name + (80).to_bytes(2, "big"))
print("socks-reply", s.recv(2)[1])
"""
# The destination as stockade names it (a host with a colon is bracketed).
DESTINATION = NetworkConnection(
    host=ALL_CLEAR, port=80, address=None, allowed=False, rule=None, reason="", protocol="socks5"
).destination
SHOWN = "[\\x1b[2K\\rstockade: all clear]:80"
COMMAND = f"{sys.executable} -I -S socks.py"


@pytest.fixture(params=BACKENDS)
def backend(request):
    require_backend(request.param)
    return request.param


@pytest.fixture
def root(scratch) -> Path:
    """The workspace root, holding the script; its parent holds the session log."""
    project = Path(scratch) / "project"
    project.mkdir()
    (project / "socks.py").write_text(SOCKS_HOSTILE)
    return project


def test_the_control_the_raw_name_makes_the_line_say_all_clear():
    raw = f"stockade: the proxy refused network access to {DESTINATION}\n"
    assert screen_rows(raw) == ["stockade: all clear]:80"]


def test_stockade_run_on_a_terminal_shows_the_name_escaped(backend, root):
    argv = [sys.executable, "-m", "stockade", "run", "--backend", backend, "--allow", ALLOW]
    # No composition from the environment: the embedded defaults, as on a fresh machine.
    env = {**os.environ, "STOCKADE_CONFIG": ""}
    with PtyChild([*argv, COMMAND], cwd=root, env=env) as child:
        assert child.finish() == 0, child.text()
        rows = child.lines()
    assert "socks-reply 2" in rows, rows  # 0x02: not allowed by the ruleset
    assert f"stockade: the proxy refused network access to {SHOWN}" in rows, rows
    assert not any(row.startswith("stockade: all clear") for row in rows), rows


def test_stockade_run_piped_and_json(backend, root):
    done = stockade("run", "--backend", backend, "--allow", ALLOW, COMMAND, cwd=root)
    assert done.returncode == 0, done.stderr
    assert raw_controls(done.stderr) == [], repr(done.stderr)
    assert f"[sandbox: network access to {SHOWN} denied]" in done.stderr.splitlines()
    facts = stockade("run", "--json", "--backend", backend, "--allow", ALLOW, COMMAND, cwd=root)
    assert raw_controls(facts.stdout) == [], repr(facts.stdout)
    # The control: the name reached stockade exactly as the command sent it.
    connections = json.loads(facts.stdout)["connections"]
    assert [(c["host"], c["allowed"]) for c in connections] == [(ALL_CLEAR, False)]


def test_stockade_exec_proxy_marker(backend, root):
    done = stockade(
        "exec", "--backend", backend, "--allow", ALLOW, "--", *COMMAND.split(), cwd=root
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "socks-reply 2\n"
    assert raw_controls(done.stderr) == [], repr(done.stderr)
    assert f"[sandbox: network access to {SHOWN} denied]" in done.stderr.splitlines()


async def test_stockade_session_show_of_the_logged_connection(backend, root):
    state_dir = root.parent / "state"
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {
            "id": "bash",
            "name": "stockade.bash.sandbox",
            "config": {"network": "allowlist", "network_allow": [ALLOW]},
        },
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state_dir)}},
    ]
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": COMMAND})
        log = session.session.location
        await session.close()
    assert "socks-reply 2" in result.text, result.text
    # The control: the log holds the name exactly as sent.
    logged = [json.loads(line) for line in Path(log).read_text().splitlines()]
    assert [e["host"] for e in logged if e["type"] == "network/connect"] == [ALL_CLEAR]
    for extra in ((), ("--json",)):
        shown = stockade("session", "show", log, *extra)
        assert shown.returncode == 0, shown.stderr
        assert raw_controls(shown.stdout) == [], repr(shown.stdout)
        assert not any(row.startswith("stockade: all clear") for row in screen_rows(shown.stdout))
    text = stockade("session", "show", log).stdout
    assert "host='\\x1b[2K\\rstockade: all clear'" in text, text
    assert "shown as escapes" in text

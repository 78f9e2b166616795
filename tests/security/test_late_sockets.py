"""Host sockets bound AFTER a call starts, with network off: the runtime directories
where daemons put them (/run, /tmp, the caller's $XDG_RUNTIME_DIR) are fresh, empty
views in the command's mount namespace (bwrap, the Landlock launcher's namespaced
tier), so a server a host daemon binds there 1.5 s into the call is never reached.
The plain tier cannot make them (no mount namespace): its claim names the gap.

And granted agent sockets (`Call.agent_sockets`): bound at their view path inside a
fresh directory, reachable there, while a sibling socket is not.

The verdict is what the host's servers received, never the command's text; an
unconfined control shows the same command reaches them when nothing confines it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from stockade.sandbox import _profiles
from stockade.sandbox._confine import Call, GuardRules, confine
from stockade.sandbox._select import select_backend
from stockade.sandbox.backends import landlock
from stockade.vocab import Enforcement, Network

from ..support import variant_backend
from .support import MODES, PYTHON, TAG_PREFIX, WW
from .test_network import Inbox, stopped, unix_server

by_mode = pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)

# The command: wait for the marker (the host binds its servers first), then connect to
# each path and send its name; print what happened (the verdict is the servers').
CLIENT = """
import os, socket, sys, time
marker, paths = sys.argv[1], sys.argv[2:]
for _ in range(400):
    if os.path.exists(marker):
        break
    time.sleep(0.02)
else:
    print('no marker', flush=True)
for path in paths:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(2)
        s.connect(path)
        s.sendall(os.path.basename(path).encode())
        s.close()
        print('CONNECTED', path, flush=True)
    except OSError as error:
        print('refused', path, error.errno, flush=True)
"""


@contextlib.contextmanager
def late_places(tag: str) -> Iterator[tuple[list[Path], str]]:
    """Where host daemons bind: /run, the host's /tmp, and an $XDG_RUNTIME_DIR of this
    test's own (outside /run and /tmp, so it is judged on its own), each a socket
    path not yet bound; the directory to set $XDG_RUNTIME_DIR to."""
    xdg = Path(f"/var/tmp/{TAG_PREFIX}{tag}-xdg")
    xdg.mkdir(mode=0o700)
    paths = [
        Path(f"/run/{TAG_PREFIX}{tag}-late.sock"),
        Path(f"/tmp/{TAG_PREFIX}{tag}-late.sock"),
        xdg / "late.sock",
    ]
    writable = [path for path in paths if os.access(path.parent, os.W_OK)]
    try:
        yield writable, str(xdg)
    finally:
        for path in paths:
            with contextlib.suppress(OSError):
                path.unlink()
        shutil.rmtree(xdg, ignore_errors=True)


@contextlib.contextmanager
def servers(paths: list[Path]) -> Iterator[list[Inbox]]:
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(unix_server(path)) for path in paths]


def received(inboxes: list[Inbox]) -> list[list[bytes]]:
    return [inbox.settled(0.1) for inbox in inboxes]


def test_control_a_late_socket_is_reached_unconfined(terrain):
    """The attack is real: unconfined, the command reaches every server bound after it
    started, in each runtime directory."""
    with late_places(terrain.tag) as (paths, xdg):
        marker = terrain.root / "go"
        process = subprocess.Popen(
            [PYTHON, "-I", "-c", CLIENT, str(marker), *map(str, paths)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "XDG_RUNTIME_DIR": xdg},
        )
        try:
            with servers(paths) as inboxes:
                marker.write_text("")
                out, _ = process.communicate(timeout=20)
                got = received(inboxes)
        finally:
            process.kill()
            process.wait()
    assert got == [[path.name.encode()] for path in paths], out
    assert len(paths) == 3, "the control needs /run and /tmp writable"


@by_mode
async def test_a_socket_bound_after_the_call_starts_is_not_reached(sandbox, mode, monkeypatch):
    """Started first, the command waits; the host then binds a server in /run, in /tmp
    and in $XDG_RUNTIME_DIR (the caller's), and lets the command go. Under bwrap and the
    namespaced tier none is reached (fresh, empty views; read-only refuses Unix sockets
    besides). The plain tier has no mount namespace: in workspace-write its claim names
    them (`partial`), and they are reached (pinned, not counted)."""
    with late_places(sandbox.terrain.tag) as (paths, xdg):
        assert len(paths) == 3
        monkeypatch.setenv("XDG_RUNTIME_DIR", xdg)
        marker = sandbox.terrain.root / "go"
        command = f"{PYTHON} -I -c {_quote(CLIENT)} {marker} " + " ".join(map(str, paths))
        handle = await sandbox.executor.start(sandbox.spec(command, mode))
        # Well after the call started: the scan for existing sockets is long over.
        await trio.sleep(1.5)
        with servers(paths) as inboxes:
            marker.write_text("")
            report = await sandbox.executor.wait(handle.id)
            got = received(inboxes)
        marker.unlink()
    if sandbox.tier == "plain" and mode is WW:
        assert landlock.LANDLOCK_PATHNAME_GAP in report.network_gaps, report.network_gaps
        assert got == [[path.name.encode()] for path in paths], stopped(report)
        sandbox.battery.disclosed(f"network off: a socket bound late in /run (plain, {mode.value})")
        return
    with sandbox.battery.attempt(f"network off: a socket bound late in /run, /tmp ({mode.value})"):
        assert "no marker" not in report.stdout, stopped(report)
        assert got == [[], [], []], stopped(report)
    if mode is WW:
        assert report.network_enforcement is Enforcement.PARTIAL
        assert _profiles.UNFOUND_SOCKETS_GAP in report.network_gaps
        assert "runtime directories the command sees fresh" in _profiles.UNFOUND_SOCKETS_GAP


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


@by_mode
def test_an_agent_socket_is_reachable_at_its_view_path_and_a_sibling_is_not(variant, terrain, mode):
    """A granted agent socket (the host's, outside every root) is bound at its view
    path inside the fresh /run and reached there, read-only included (no pairs-only
    then); a sibling socket beside it on the host, and one in /run, stay out of reach.
    The plain tier binds nothing: the agent is reached at its host path
    (`Confined.agents` says so), and so is every other named socket (its claim)."""
    name, config = variant
    selection = select_backend(config)
    assert selection.backend is not None
    runner = selection.backend.as_runner()
    tag = terrain.tag
    host = Path(f"/var/tmp/{TAG_PREFIX}{tag}-agent")
    host.mkdir(mode=0o700)
    agent, sibling = host / "agent.sock", host / "sibling.sock"
    in_run = Path(f"/run/{TAG_PREFIX}{tag}-sibling.sock")
    view = f"/run/stockade-agent-{tag}/ssh.sock"
    try:
        with servers([agent, sibling, in_run]) as inboxes:
            confined = confine(
                Call(
                    (PYTHON, "-I", "-c", CLIENT, "/", view, str(agent), str(sibling), str(in_run)),
                    mode,
                    str(terrain.root),
                    (),
                    Network.OFF,
                    agent_sockets=((str(agent), view),),
                ),
                runner,
                GuardRules(),
                hold=True,
            )
            done = subprocess.run(
                confined.argv, capture_output=True, text=True, timeout=30, cwd=terrain.root
            )
            got = received(inboxes)
    finally:
        shutil.rmtree(host, ignore_errors=True)
        with contextlib.suppress(OSError):
            in_run.unlink()
    out = done.stdout + done.stderr
    assert not os.path.exists(os.path.dirname(view)), "nothing is made on the host"
    if variant_backend(name) == "landlock" and runner.tier == "plain":
        assert confined.agents == ((str(agent), str(agent)),)
        assert "--unix-pairs-only" not in confined.argv
        assert got[0] == [b"agent.sock"], out  # at its host path
        return
    assert confined.agents == ((str(agent), view),)
    assert "--unix-pairs-only" not in confined.argv
    # Through the view path the agent's server got "ssh.sock" (its host path, never
    # hidden, is the same socket); the siblings got nothing.
    assert b"ssh.sock" in got[0], out
    assert got[1:] == [[], []], out
    assert f"CONNECTED {view}" in out, out

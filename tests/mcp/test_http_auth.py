"""`stockade mcp --http` is a door to unconfined code: whoever reaches it can ask for
an escalation and answer it. Every request needs the bearer token; a session answers
only the token that opened it; a server holds at most `--max-sessions`.

The clients are the SDK's own, in a process of their own, as the caller and as
`nobody`; each attack is judged by the host (files written, session logs made, the
victim's log) and has a control showing it works where it should.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from contextlib import AsyncExitStack
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
import trio
from mcp.shared.exceptions import MCPError
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from stockade.trust import check_trusted, host_temp_roots

from ..support import require_backend, stockade
from .http_client import approve
from .support import events, http_server, of_type, read_status, session_logs, text

pytestmark = pytest.mark.nobody  # runs something as uid 65534 (tests/README.md)

NOBODY = 65534
IS_ROOT = os.geteuid() == 0
HERE = Path(__file__).resolve().parent
CLIENT = HERE / "http_client.py"
SYSTEM_PYTHON = "/usr/bin/python3"
WRONG = "w" * 43


# --- a client process, as the caller or as nobody -----------------------------------


def _closure(name: str) -> list:
    """The installed distributions `name` needs (its requirements and the extras they
    ask for, recursively)."""
    found: dict[str, object] = {}
    done: set[tuple[str, str]] = set()
    todo = [(name, "")]
    while todo:
        key, extra = todo.pop()
        key = canonicalize_name(key)
        if (key, extra) in done:
            continue
        done.add((key, extra))
        try:
            dist = found.get(key) or distribution(key)
        except PackageNotFoundError:
            continue
        found[key] = dist
        for line in dist.requires or ():
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": extra}):
                todo += [(requirement.name, wanted) for wanted in ("", *requirement.extras)]
    return list(found.values())


@pytest.fixture(scope="module")
def nobody_client():
    """The client and the SDK's distributions copied where nobody can read them, and
    the system interpreter of the same version to run them (the venv's may live in a
    mode-700 home)."""
    if not IS_ROOT:
        pytest.skip("spawning as uid 65534 needs a root caller")
    probe = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        check=False,
    )
    if probe.returncode != 0 or probe.stdout.strip() != str(sys.version_info[:2]):
        pytest.skip(f"nobody needs {SYSTEM_PYTHON} at Python {sys.version_info[:2]}")
    place = Path(tempfile.mkdtemp(prefix="stockade-mcp-nobody-", dir="/var/tmp"))
    try:
        for dist in _closure("mcp"):
            for file in dist.files or ():
                source = Path(dist.locate_file(file))
                if ".." in file.parts or not source.is_file() or "__pycache__" in file.parts:
                    continue
                target = place / file
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        shutil.copyfile(CLIENT, place / CLIENT.name)
        for directory, _dirs, files in os.walk(place):
            os.chmod(directory, 0o755)
            for name in files:
                os.chmod(os.path.join(directory, name), 0o644)
        yield place / CLIENT.name
    finally:
        shutil.rmtree(place, ignore_errors=True)


def _run_client(who: str, url: str, attempts: list[dict], nobody_script: Path | None) -> list:
    if who == "nobody":
        assert nobody_script is not None
        argv = [SYSTEM_PYTHON, "-E", "-s", "-S", str(nobody_script)]
        as_user = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
        env = {"PATH": "/usr/bin:/bin", "HOME": "/"}
    else:
        argv, as_user, env = [sys.executable, "-E", str(CLIENT)], {}, dict(os.environ)
    done = subprocess.run(
        [*argv, url, json.dumps(attempts)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        env=env,
        check=False,
        **as_user,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line)["result"] for line in done.stdout.splitlines()]


async def run_client(who: str, url: str, attempts: list[dict], nobody_script=None) -> list:
    return await trio.to_thread.run_sync(_run_client, who, url, attempts, nobody_script)


@pytest.fixture(params=["caller", "nobody"])
def who(request):
    """Who runs the client: the server's own uid, or another one (`nobody`)."""
    if request.param == "nobody":
        return "nobody", request.getfixturevalue("nobody_client")
    return "caller", None


def commands_run(state_dir: Path, session_id: str) -> list[str]:
    return [
        event["arguments"]["command"]
        for event in of_type(events(state_dir, session_id), "tool/call")
    ]


# --- no token, a wrong token, another client's session --------------------------------


async def test_without_the_token_nothing_is_done(who, root, outside, state_dir):
    """The issue's attack: a client that approves its own escalation runs `id` as
    danger-full-access; another sends a command into a live session by its
    `Mcp-Session-Id`. Without the token: 401, no session log, nothing run."""
    user, script = who
    async with http_server(root, state_dir) as server:
        victim_ids: list[str] = []
        async with server.client(session_ids=victim_ids) as victim:
            await victim.call_tool("bash", {"command": "true"})
            victim_session = (await read_status(victim))["session_id"]
            [mcp_session] = victim_ids
            logs = session_logs(state_dir)
            # The victim's call may leave its placeholders for a second (they linger,
            # PLACEHOLDER_LINGER): what stands in the root now may stay, nothing new.
            in_root = set(os.listdir(root))
            attacks = [
                {"kind": "escalate", "token": None, "command": f"id > {outside}/no-token"},
                {"kind": "escalate", "token": WRONG, "command": f"id > {outside}/wrong-token"},
                *(
                    {"kind": "hijack", "token": token, "session": mcp_session, "command": command}
                    for token, command in (
                        (None, f"id > {root}/hijack-no-token"),
                        (WRONG, f"id > {root}/hijack-wrong-token"),
                        (server.token[:-1], f"id > {root}/hijack-short-token"),
                        (server.token + "x", f"id > {root}/hijack-long-token"),
                    )
                ),
                {"kind": "end", "token": None, "session": mcp_session},
                {"kind": "end", "token": WRONG, "session": mcp_session},
            ]
            if user == "nobody":
                attacks.append({"kind": "read", "path": str(server.token_file)})
            results = await run_client(user, server.url, attacks, script)
            # The host: nothing written, no session opened, the victim's log untouched.
            assert sorted(os.listdir(outside)) == []
            assert set(os.listdir(root)) <= in_root
            assert not [name for name in os.listdir(root) if name.startswith("hijack")]
            assert session_logs(state_dir) == logs
            assert commands_run(state_dir, victim_session) == ["true"]
            alive = await victim.call_tool("bash", {"command": "echo alive"})
            assert text(alive).startswith("alive\n")
            escalations, hijacks = results[:2], results[2:8]
            # Refused by the server's 401 (the SDK's words for it vary with timing).
            assert all(not r["ok"] and set(r["statuses"]) == {401} for r in escalations), (
                escalations
            )
            assert [r["status"] for r in hijacks] == [401] * 6, hijacks
            if user == "nobody":
                [read] = results[8:]
                assert not read["ok"] and "PermissionError" in read["error"], read

            # Control: the same two attacks with the token are real (as root, unconfined).
            controls = [
                {"kind": "escalate", "token": server.token, "command": f"id > {outside}/token"},
                {
                    "kind": "hijack",
                    "token": server.token,
                    "session": mcp_session,
                    "command": f"id > {root}/hijack-token",
                },
            ]
            escalated, hijacked = await run_client(user, server.url, controls, script)
            assert escalated["ok"] and "[escalation granted once" in escalated["text"], escalated
            assert "uid=0(root)" in (outside / "token").read_text()
            assert hijacked["status"] == 200 and "[exit code: 0]" in hijacked["body"], hijacked
            assert "uid=0(root)" in (root / "hijack-token").read_text()
            assert commands_run(state_dir, victim_session) == [
                "true",
                "echo alive",
                f"id > {root}/hijack-token",
            ]
            assert len(session_logs(state_dir)) == len(logs) + 1


async def test_a_session_answers_only_the_token_that_opened_it(root, outside, state_dir, scratch):
    """Two tokens in `--token-file`: each is its own credential. The second token's
    holder sending into the first's session finds no such session (404); its own
    session works."""
    tokens = Path(scratch) / "tokens"
    first, second = "a" * 40, "b" * 40
    tokens.write_text(f"# one line a client\n{first}\n\n{second}\n")
    tokens.chmod(0o600)
    async with http_server(root, state_dir, "--token-file", str(tokens)) as server:
        assert not server.generated and server.token_file == tokens
        assert not list(state_dir.glob("*.token"))  # no token made when one is given
        victim_ids: list[str] = []
        async with server.client(first, session_ids=victim_ids) as victim:
            victim_session = (await read_status(victim))["session_id"]
            [mcp_session] = victim_ids
            logs = session_logs(state_dir)
            hijacked, ended = await run_client(
                "caller",
                server.url,
                [
                    {
                        "kind": "hijack",
                        "token": second,
                        "session": mcp_session,
                        "command": f"id > {root}/second",
                    },
                    {"kind": "end", "token": second, "session": mcp_session},
                ],
            )
            assert hijacked["status"] == 404, hijacked
            assert ended["status"] == 404, ended
            assert not (root / "second").exists()
            assert commands_run(state_dir, victim_session) == []
            assert session_logs(state_dir) == logs
            # Controls: the second token's own session, and the first token in its own.
            own, first_again = await run_client(
                "caller",
                server.url,
                [
                    {"kind": "escalate", "token": second, "command": f"id > {outside}/own"},
                    {
                        "kind": "hijack",
                        "token": first,
                        "session": mcp_session,
                        "command": f"id > {root}/first",
                    },
                ],
            )
            assert own["ok"] and "uid=0(root)" in (outside / "own").read_text(), own
            assert first_again["status"] == 200 and (root / "first").exists(), first_again
            assert commands_run(state_dir, victim_session) == [f"id > {root}/first"]


# --- the token file -------------------------------------------------------------------


async def test_the_generated_token_is_private_outside_every_root_and_new_each_start(
    root, state_dir
):
    seen = []
    for _ in range(2):
        async with http_server(root, state_dir) as server:
            path = server.token_file
            info = os.lstat(path)
            assert server.generated and stat.S_ISREG(info.st_mode)
            assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.getuid()
            # In the state directory (STOCKADE_STATE_DIR), named by the address served.
            port = server.url.rsplit(":", 1)[1].split("/")[0]
            assert path == state_dir / f"mcp-127.0.0.1-{port}.token"
            assert check_trusted(str(path), (str(root), *host_temp_roots()), what="t") is None
            token = server.token
            assert len(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) >= 16
            seen.append(token)
            async with server.client() as client:
                ran = await client.call_tool("bash", {"command": "echo in"})
            assert text(ran).startswith("in\n")
        assert not path.exists()  # removed when the server stops
        stderr = server.out[0]
        assert f"/mcp (bearer token in {path})" in stderr
    assert seen[0] != seen[1]


def _token_file_refused(root, state_dir, path: Path, *extra: str) -> str:
    env = {"STOCKADE_STATE_DIR": str(state_dir)}
    done = stockade(
        "mcp", "--root", str(root), "--http", "127.0.0.1:0", "--token-file", str(path), *extra,
        env=env,
    )  # fmt: skip
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1, done.stderr
    assert session_logs(state_dir) == []
    return done.stderr


def test_a_token_file_others_could_write_or_read_is_refused(root, state_dir, scratch):
    good = "t" * 40 + "\n"
    outside = Path(scratch) / "keys"
    outside.mkdir(mode=0o700)

    writable = outside / "group-writable"
    writable.write_text(good)
    writable.chmod(0o620)
    assert "writable by group or others" in _token_file_refused(root, state_dir, writable)

    readable = outside / "readable"
    readable.write_text(good)
    readable.chmod(0o644)
    assert f"chmod 600 {readable}" in _token_file_refused(root, state_dir, readable)

    inside = root / "token"
    inside.write_text(good)
    inside.chmod(0o600)
    assert f"inside the writable root {root}" in _token_file_refused(root, state_dir, inside)

    with tempfile.NamedTemporaryFile("w", dir="/tmp", prefix="stockade-token-") as temp:
        temp.write(good)
        temp.flush()
        os.chmod(temp.name, 0o600)
        refused = _token_file_refused(root, state_dir, Path(temp.name))
        assert "inside the writable root /tmp" in refused

    loose_parent = Path(scratch) / "shared"
    loose_parent.mkdir()
    loose_parent.chmod(0o777)
    under = loose_parent / "token"
    under.write_text(good)
    under.chmod(0o600)
    assert "writable by group or others" in _token_file_refused(root, state_dir, under)

    short = outside / "short"
    short.write_text("tooshort\n")
    short.chmod(0o600)
    assert "at least 32" in _token_file_refused(root, state_dir, short)

    assert "does not exist" in _token_file_refused(root, state_dir, outside / "missing")


def test_http_only_flags_and_bad_caps_are_usage_errors(root, state_dir):
    env = {"STOCKADE_STATE_DIR": str(state_dir)}
    for flags in (["--token-file", "/nonexistent"], ["--max-sessions", "3"]):
        done = stockade("mcp", "--root", str(root), *flags, env=env)
        assert done.returncode == 2 and "applies to --http only" in done.stderr, done
    for cap in ("0", "-1", "many"):
        done = stockade(
            "mcp", "--root", str(root), "--http", "127.0.0.1:0", "--max-sessions", cap, env=env
        )
        assert done.returncode == 2 and "--max-sessions" in done.stderr, done


# --- the session cap -------------------------------------------------------------------


async def test_the_seventeenth_session_is_refused_and_makes_no_log(root, state_dir):
    async with http_server(root, state_dir) as server:
        async with AsyncExitStack() as open_clients:
            clients = [
                await open_clients.enter_async_context(server.client(mode="legacy"))
                for _ in range(16)
            ]
            assert len(session_logs(state_dir)) == 16
            with pytest.raises((MCPError, BaseExceptionGroup)) as refused:
                async with server.client(mode="legacy"):
                    pass
            error = refused.value
            while isinstance(error, BaseExceptionGroup):
                [error] = error.exceptions
            assert isinstance(error, MCPError) and error.error.message == "Too many open sessions"
            assert len(session_logs(state_dir)) == 16
            ran = await clients[-1].call_tool("bash", {"command": "echo still"})
            assert text(ran).startswith("still\n")
        # Room again once they are closed.
        async with server.client(mode="legacy") as client:
            await client.call_tool("bash", {"command": "true"})
        assert len(session_logs(state_dir)) == 17
    assert "16 sessions are already open" in server.out[0]


async def test_max_sessions_sets_the_cap(root, state_dir):
    async with http_server(root, state_dir, "--max-sessions", "1") as server:
        async with server.client(mode="legacy"):
            with pytest.raises((MCPError, BaseExceptionGroup)):
                async with server.client(mode="legacy"):
                    pass
        assert len(session_logs(state_dir)) == 1


# --- from inside the sandbox ------------------------------------------------------------

# Run inside a confined command: read the server's token and open a session with it.
INSIDE_ATTACK = """
import http.client, json, sys

token = open(sys.argv[1]).read().strip()
body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
    "clientInfo": {"name": "inside", "version": "0"}}}
try:
    connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[2]), timeout=10)
    connection.request("POST", "/mcp", json.dumps(body), {
        "Authorization": "Bearer " + token, "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})
    print("status", connection.getresponse().status)
except OSError as error:
    print("unreachable", type(error).__name__, error)
"""


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
async def test_a_confined_command_with_the_network_off_cannot_reach_the_endpoint(
    backend, root, outside, state_dir, scratch
):
    """The token file's mode does not stop a command that runs as the server's user;
    deny_read does (the state directory is hidden), and the network off does too: given
    the token another way (a copy outside the state directory), the command still
    cannot connect. Control: the same command granted the network once opens a
    session (a new log)."""
    require_backend(backend)
    config = Path(scratch) / "stockade.yml"
    config.write_text(
        f"- {{id: sandbox, name: stockade.sandbox.local, config: {{backend: {backend}}}}}\n"
        "- {id: bash, name: stockade.bash.sandbox}\n"
        "- {id: approval, name: stockade.approval.user}\n"
        "- {id: log, name: stockade.session.log}\n"
    )
    script = outside / "attack.py"
    script.write_text(INSIDE_ATTACK)
    async with http_server(root, state_dir, "--config", str(config)) as server:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        leaked = outside / "leaked.token"
        leaked.write_text(Path(server.token_file).read_text())
        command = f"{sys.executable} -I -S {script} {leaked} {port}"
        async with server.client(elicitation_callback=approve) as client:
            hidden = await client.call_tool("bash", {"command": f"cat {server.token_file}"})
            assert hidden.structured_content["read_denied"], text(hidden)
            assert leaked.read_text().strip() not in text(hidden)
            logs = session_logs(state_dir)
            confined = await client.call_tool("bash", {"command": command})
            facts = confined.structured_content
            assert facts["backend"] == backend and facts["network"] == "off", facts
            assert "unreachable" in text(confined), text(confined)
            assert session_logs(state_dir) == logs
            granted = await client.call_tool(
                "bash",
                {
                    "command": command,
                    "sandbox_permissions": "with_network",
                    "justification": "the control: with the network the door is open",
                },
            )
            assert "status 200" in text(granted), text(granted)
            assert len(session_logs(state_dir)) == len(logs) + 1

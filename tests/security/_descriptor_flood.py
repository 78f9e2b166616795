"""A harness held at a soft and hard RLIMIT_NOFILE of 1024 (a service's default, with
no room to raise it): session A's four jobs each open ~390 idle connections to their
proxy bridge; then session B runs `echo` and an allowlist request. Prints one JSON
object of what happened (tests/security/test_network_audit.py reads it).

    python _descriptor_flood.py BACKEND ROOT STATE_DIR ORIGIN_PORT
"""

from __future__ import annotations

import json
import resource
import socket
import sys

import trio

from stockade import open_harness

JOBS = 4
EACH = 390
FLOOD = f"""
import socket, time
held = []
for _ in range({EACH}):
    try:
        held.append(socket.create_connection(("127.0.0.1", 3128), timeout=5))
    except OSError:
        break
print("held", len(held), flush=True)
time.sleep(30)
"""


def control() -> int:
    """How many of A's connections this process could hold at all (two descriptors each
    on the harness's side): fewer than asked, so the flood is real."""
    opened: list[socket.socket] = []
    try:
        for _ in range(JOBS * EACH):
            opened.extend(socket.socketpair())
    except OSError:
        pass
    count = len(opened) // 2
    for sock in opened:
        sock.close()
    return count


async def main(backend: str, root: str, state_dir: str, port: int) -> dict[str, object]:
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {
            "id": "bash",
            "name": "stockade.bash.sandbox",
            "config": {"network": "allowlist", "network_allow": [f"127.0.0.1:{port}"]},
        },
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]
    out: dict[str, object] = {"rlimit": list(resource.getrlimit(resource.RLIMIT_NOFILE))}
    python = sys.executable
    async with open_harness(entries) as harness:
        a = await harness.open_session(cwd=root)
        b = await harness.open_session(cwd=root)
        jobs = []
        for _ in range(JOBS):
            started = await a.run_tool(
                "bash", {"command": f"{python} -I -S -c '{FLOOD}'", "background": True}
            )
            jobs.append(started.facts["job_id"])
        held = []
        for job in jobs:
            text = ""
            with trio.fail_after(60):
                while "held" not in text:
                    await trio.sleep(0.2)
                    report = await a.run_tool("job_output", {"job_id": job})
                    text += report.text
            held.append(int(text.split("held", 1)[1].split()[0]))
        out["held"] = held
        echo = await b.run_tool("bash", {"command": "echo ok"})
        fetch = await b.run_tool(
            "bash", {"command": f"curl -sS --max-time 10 http://127.0.0.1:{port}/"}
        )
        out["echo"] = {"text": echo.text, "error": echo.is_error}
        out["fetch"] = {"text": fetch.text, "error": fetch.is_error}
        reports = []
        for job in jobs:
            killed = await a.run_tool("kill_job", {"job_id": job})
            reports.append(
                {"text": killed.text, "refused": killed.facts.get("connections_refused")}
            )
        out["jobs"] = reports
    return out


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
    flood_control = control()
    result = trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
    result["control"] = flood_control
    print(json.dumps(result))

"""Run issue 41's commands through stockade's harness, with the test's names mapped.

A script, not a test module: tests/credentials/support.py runs it under
`unshare --mount --propagation private`, with the real values in its environment.
It reads one JSON object on stdin:

    {"config": PATH, "cwd": DIR, "hosts": FILE, "names": {NAME: ADDRESS},
     "commands": [...], "unconfined": [...], "output": FILE}

binds `hosts` over /etc/hosts (this process's mount namespace only: the proxy, which
resolves names here, and nothing else on the host, reads it), checks each name
resolves as mapped, opens the harness on the composition file and one session rooted
at `cwd`, runs each command through the bash tool, then each `unconfined` command as
an unconfined child of this process (the controls), and writes to `output` every
result's text, is_error and facts, the session's events, and the controls' outputs.
`@HARNESS_PID@` in a command is this process's pid. An escalation the harness asks
for is refused (no person stands behind this run) and recorded.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import msgspec
import trio

from stockade import CallbackAnswerer, open_harness


def map_names(hosts: str, names: dict[str, str]) -> None:
    subprocess.run(["mount", "--bind", hosts, "/etc/hosts"], check=True)
    for name, address in names.items():
        found = {info[4][0] for info in socket.getaddrinfo(name, 443, socket.AF_INET)}
        if found != {address}:
            raise SystemExit(f"{name} resolves to {found}, not {address}: the hosts file")


async def drive(spec: dict) -> dict:
    asked: list[str] = []

    def refuse(request) -> bool:
        asked.append(str(request.command))
        return False

    pid = str(os.getpid())
    results = []
    async with open_harness(spec["config"], answerers=[CallbackAnswerer(refuse)]) as harness:
        session = await harness.open_session(cwd=spec["cwd"])
        for command in spec["commands"]:
            result = await session.run_tool(
                "bash", {"command": command.replace("@HARNESS_PID@", pid)}
            )
            results.append(
                {"text": result.text, "is_error": result.is_error, "facts": result.facts}
            )
        events = [msgspec.to_builtins(event) for event in await session.events()]
    controls = []
    for command in spec["unconfined"]:
        done = await trio.run_process(
            ["bash", "-c", command.replace("@HARNESS_PID@", pid)],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        controls.append(done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace"))
    return {"results": results, "events": events, "controls": controls, "asked": asked}


def main() -> None:
    spec = json.load(sys.stdin)
    map_names(spec["hosts"], spec["names"])
    done = trio.run(drive, spec)
    with open(spec["output"], "w") as handle:
        json.dump(done, handle, default=str)


if __name__ == "__main__":
    main()

"""Run output floods through a harness in a fresh process, measuring its peak memory.

_output_child.py STATE_DIR PROJECT BACKEND CALLS_JSON

CALLS_JSON is a list of bash tool arguments; background calls are waited for and
their output read through job_output. Prints one JSON list: per call, the result's
facts, its text length, wall time, and how much the process's peak RSS (ru_maxrss,
KiB) rose during the call. A fresh process makes the peak mean something.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

import trio

from stockade import open_harness


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def main(state_dir: str, project: str, backend: str, calls: list[dict[str, Any]]) -> None:
    entries = [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]
    out = []
    async with open_harness(entries, cwd=project) as harness:
        session = await harness.open_session(cwd=project)
        await session.run_tool("bash", {"command": "true"})  # the probe, before measuring
        for arguments in calls:
            before = peak_kib()
            started = time.monotonic()
            result = await session.run_tool("bash", arguments)
            facts = dict(result.facts)
            if arguments.get("background"):
                await session.shell.wait(facts["job_id"], read=False)
                result = await session.run_tool("job_output", {"job_id": facts["job_id"]})
                facts = dict(result.facts)
            out.append(
                {
                    "facts": facts,
                    "is_error": result.is_error,
                    "text_length": len(result.text),
                    "text_tail": result.text[-300:],
                    "seconds": time.monotonic() - started,
                    "peak_growth_kib": peak_kib() - before,
                }
            )
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))

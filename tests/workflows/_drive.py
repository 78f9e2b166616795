"""Run one workflow through stockade's harness and print what each call returned.

A script, not a test module: tests/workflows/support.py runs it in a fresh process as
root or as uid 65534 (from the public mirror when nobody cannot read this checkout),
with the test's own HOME and PATH. It reads one JSON object on stdin:

    {"config": PATH, "cwd": DIR, "mode": MODE, "steps": [{"command": ..., ...}, ...]}

opens the harness on the composition file, opens one session rooted at `cwd`, runs
each step through the bash tool in order, and prints one JSON object on stdout:
every result's text, is_error and facts, and every escalation the harness asked for
(an answerer that records and refuses stands in for a person).
"""

from __future__ import annotations

import json
import os
import sys

import trio

from stockade import CallbackAnswerer, open_harness

# The support put the test venv's site-packages on PYTHONPATH for our own imports (nobody
# may not read this checkout's venv otherwise); the workflow's commands must not inherit
# it: a `venv/bin/pip` would import the test venv's pip and install into the test venv.
os.environ.pop("PYTHONPATH", None)


async def drive(spec: dict) -> dict:
    asked: list[dict] = []

    def refuse(request) -> bool:
        asked.append({"command": request.command, "mode": str(request.requested_mode)})
        return False

    results = []
    async with open_harness(
        spec["config"], answerers=[CallbackAnswerer(refuse)], cwd=spec["cwd"]
    ) as harness:
        session = await harness.open_session(cwd=spec["cwd"])
        await session.set_sandbox_mode(spec["mode"])
        context = await session.pre_step()
        for step in spec["steps"]:
            result = await session.run_tool("bash", step)
            results.append(
                {"text": result.text, "is_error": result.is_error, "facts": result.facts}
            )
    return {
        "results": results,
        "asked": asked,
        "policy": None if context is None else context.text,
    }


def main() -> None:
    spec = json.load(sys.stdin)
    done = trio.run(drive, spec)
    json.dump(done, sys.stdout, default=str)


if __name__ == "__main__":
    main()

"""The 15-line embedding from docs/embedding.md: python examples/embed.py PROJECT_DIR"""

import sys
from pathlib import Path

import trio

from stockade import open_harness


async def main(project: str) -> None:
    async with open_harness(Path(__file__).with_name("stockade.yml")) as harness:
        session = await harness.open_session(cwd=project)
        await session.set_sandbox_mode("read-only")
        denied = await session.run_tool("bash", {"command": "echo hi > hello.txt"})
        print(denied.text)  # ... [sandbox: file access denied under read-only mode]
        await session.set_sandbox_mode("workspace-write")
        wrote = await session.run_tool("bash", {"command": "echo hi > hello.txt"})
        print(wrote.text, wrote.facts["backend"])  # [exit code: 0] bwrap


trio.run(main, sys.argv[1])

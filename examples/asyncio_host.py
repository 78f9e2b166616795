"""An asyncio application embedding stockade through trio-asyncio.

The agent loop and the approval prompt are plain asyncio coroutines; stockade runs
on Trio underneath, in the same thread, under `trio_asyncio.open_loop()`.
Run: python examples/asyncio_host.py [WORKSPACE]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

import trio
import trio_asyncio

from stockade import open_harness
from stockade.approval.answerers import AsyncioAnswerer


async def approve(request):
    """The host's approval UI, an asyncio coroutine: here it allows a retry that writes."""
    await asyncio.sleep(0)  # a real host would await its UI here
    print(f"  [approval] {request.command!r}: {request.justification}")
    return "allowed-once"


async def agent(harness, workspace: str) -> list[str]:
    """The host's agent loop, written for asyncio; each stockade call is awaited through
    trio_asyncio.trio_as_aio."""
    call = trio_asyncio.trio_as_aio
    session = await call(harness.open_session)(cwd=workspace)
    await call(session.set_sandbox_mode)("read-only")
    context = await call(session.pre_step)()
    print(context.text.splitlines()[1])
    denied = await call(session.run_tool)("bash", {"command": "echo hello > note.txt"})
    print(denied.text)
    granted = await call(session.run_tool)(
        "bash",
        {
            "command": "echo hello > note.txt",
            "sandbox_permissions": "workspace-write",
            "justification": "the user asked for a note in the workspace",
        },
    )
    print(granted.text)
    await call(session.close)()
    return [denied.text, granted.text]


async def main(workspace: str) -> list[str]:
    composition = [
        {"id": "sandbox", "name": "stockade.sandbox.local"},
        {"id": "bash", "name": "stockade.bash.sandbox", "config": {"workspace_root": workspace}},
        {"id": "approval", "name": "stockade.approval.user"},
        # Logs in the default state dir ($STOCKADE_STATE_DIR, else ~/.local/state):
        # never inside the workspace or /tmp, where a command could rewrite them.
        {"id": "log", "name": "stockade.session.log"},
    ]
    async with (
        trio_asyncio.open_loop(),
        open_harness(composition, answerers=[AsyncioAnswerer(approve)]) as harness,
    ):
        return await trio_asyncio.aio_as_trio(agent)(harness, workspace)


if __name__ == "__main__":
    workspace = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="stockade-asyncio-")
    texts = trio.run(main, workspace)
    ok = "[sandbox: file access denied under read-only mode]" in texts[0] and "granted" in texts[1]
    sys.exit(0 if ok else 1)

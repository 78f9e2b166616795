"""The escape battery, the policy's own storage: a session's sandbox mode is a fold over
its session log, so a log file inside a writable root is a policy the confined
command can rewrite. The default state directory (~/.local/state/stockade/sessions)
lies inside the workspace whenever the workspace is $HOME (an agent started from ~).

The attempt: one workspace-write command rewrites its session's last log line as a
`sandbox/mode danger-full-access` event (same seq, in place via sed -i, so the log
still scans clean); the session is resumed; its next command runs unconfined.
Through the whole harness (bash tool, session log), on bwrap AND Landlock.
"""

from __future__ import annotations

from stockade import open_harness
from stockade.errors import StockadeError

from .support import describe_change

REWRITE = (
    r"L=$(ls {state}/*.jsonl); N=$(wc -l < $L); "
    r'sed -i "${{N}}s/.*/{{\"type\":\"sandbox\/mode\",\"seq\":$N,\"ts\":1,'
    r'\"mode\":\"danger-full-access\"}}/" $L'
)


def composition(backend: str, state_dir: str) -> list[dict]:
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": {"backend": backend}},
        {"id": "bash", "name": "stockade.bash.sandbox", "config": {"mode": "workspace-write"}},
        {"id": "approval", "name": "stockade.approval.user", "config": {"policy": "never"}},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir}},
    ]


async def test_a_command_cannot_rewrite_its_sessions_policy(sandbox):
    # The harness refuses a session whose log lies under a writable root.
    terrain = sandbox.terrain
    state = terrain.root / ".state"  # as ~/.local/state is inside a workspace at $HOME
    config = composition(sandbox.backend, str(state))
    before = terrain.state()
    with sandbox.battery.attempt(
        "session policy rewritten from inside the workspace (workspace-write)"
    ):
        session_id = await first_call(config, str(terrain.root), REWRITE.format(state=state))
        if session_id is not None:
            await resumed_call(config, session_id, f"echo pwned > {terrain.victim}")
        assert terrain.state() == before, describe_change(before, terrain.state())


async def first_call(config, root: str, command: str) -> str | None:
    """The session id after one command; None when a (fixed) harness refuses the session."""
    async with open_harness(config, answerers=[]) as harness:
        try:
            session = await harness.open_session(cwd=root)
        except StockadeError:
            return None
        await session.run_tool("bash", {"command": command})
        return session.id


async def resumed_call(config, session_id: str, command: str) -> None:
    async with open_harness(config, answerers=[]) as harness:
        try:
            session = await harness.resume_session(session_id)
        except StockadeError:  # e.g. a log found tampered with, or a refused state dir
            return
        await session.run_tool("bash", {"command": command})

"""Cancellation leaves nothing behind: no process, no zombie, no descriptor, and the log
records a cancelled approval ask as `cancelled`.

Real processes on the real clock (docs: timeouts and cancellation on autojump_clock
belong to the pure tests; these need the kernel).
"""

from __future__ import annotations

import time
from functools import partial

import trio

from stockade import open_harness
from stockade.approval.answerers import CallbackAnswerer
from stockade.approval.events import ApprovalAnswered, ApprovalAsked
from stockade.tools.events import ToolCalled, ToolResulted

from ._support import composition, marker, open_fds, pids_with_marker, sleeper, zombie_children

JOBS = 100
FOREGROUND = 4


async def wait_for(predicate, within: float, step: float = 0.02) -> bool:
    with trio.move_on_after(within):
        while not predicate():
            await trio.sleep(step)
        return True
    return False


async def test_cancelling_the_harness_with_a_hundred_jobs_leaves_nothing_behind(state_dir, project):
    name = marker()
    before = open_fds()
    started = time.monotonic()
    with trio.CancelScope() as scope:
        async with open_harness(composition(state_dir)) as harness:
            session = await harness.open_session(cwd=project)
            for _ in range(JOBS):
                result = await session.run_tool(
                    "bash", {"command": f"{sleeper(name)}; wait", "background": True}
                )
                assert not result.is_error, result.text
            async with trio.open_nursery() as nursery:
                for _ in range(FOREGROUND):
                    nursery.start_soon(
                        session.run_tool, "bash", {"command": f"{sleeper(name)}; wait"}
                    )
                running = await wait_for(
                    lambda: len(pids_with_marker(name)) >= JOBS + FOREGROUND, within=30
                )
                assert running, f"only {len(pids_with_marker(name))} processes started"
                during = len(open_fds())
                scope.cancel()
    assert scope.cancelled_caught
    # The executor killed every group before the harness block ended.
    leftover = pids_with_marker(name)
    assert leftover == [], f"{len(leftover)} processes outlived the harness"
    assert zombie_children() == []
    after = open_fds()
    assert after == before, {
        "leaked": {fd: after[fd] for fd in set(after) - set(before)},
        "during": during,
    }
    print(
        f"{JOBS + FOREGROUND} processes, {during - len(before)} fds while running, "
        f"torn down in {time.monotonic() - started:.1f}s"
    )


async def test_cancelling_a_call_during_its_approval_ask_records_cancelled(state_dir, project):
    asked = trio.Event()

    async def never_answers(_request):
        asked.set()
        await trio.sleep_forever()

    marker_file = project / "escalated"
    escalation = {
        "command": f"touch {marker_file}",
        "sandbox_permissions": "danger-full-access",
        "justification": "the test needs it",
    }
    async with open_harness(
        composition(state_dir), answerers=[CallbackAnswerer(never_answers)]
    ) as harness:
        session = await harness.open_session(cwd=project)
        await session.set_sandbox_mode("read-only")
        with trio.move_on_after(10) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    partial(session.run_tool, "bash", escalation, call_id="call-ask")
                )
                await asked.wait()
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught, "the answerer was never asked"

        # The approval actor audits the cancelled ask as it unwinds (shielded).
        def answered() -> list[ApprovalAnswered]:
            return [e for e in events if isinstance(e, ApprovalAnswered)]

        with trio.fail_after(5):
            while True:
                events = await session.events()
                if answered():
                    break
                await trio.sleep(0.01)
        (ask,) = [e for e in events if isinstance(e, ApprovalAsked)]
        (answer,) = answered()
        assert ask.call_id == "call-ask" and ask.requested_mode == "danger-full-access"
        assert (answer.ask_id, answer.decision) == (ask.ask_id, "cancelled")
        assert answer.seq > ask.seq
        calls = [e.call_id for e in events if isinstance(e, ToolCalled)]
        results = [e.call_id for e in events if isinstance(e, ToolResulted)]
        assert calls == ["call-ask"] and results == []  # the call never returned

        # The session goes on: the next call runs under its own (read-only) mode.
        after = await session.run_tool("bash", {"command": "echo still here"})
        assert after.text.startswith("still here") and after.facts["mode"] == "read-only"
    assert not marker_file.exists()

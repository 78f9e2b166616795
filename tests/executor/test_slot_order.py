"""Running slots are served in the order they were asked for (executor/_slots.py): a
foreground call takes a free slot at once (`try_take`, issue 39's fourth round) but
never one another holder is already waiting for, and queued jobs and calls behind
full slots run in the order they came."""

from __future__ import annotations

import trio
import trio.testing

from stockade.executor._slots import Slots
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.vocab import ExecutionPolicy, SandboxMode


async def test_a_slot_given_back_goes_to_the_first_waiting_not_to_a_try_take():
    slots = Slots(bound=1)
    first, waiting, late = object(), object(), object()
    assert slots.try_take(first, None, job=False)
    got: list[str] = []

    async def take(holder: object, name: str) -> None:
        await slots.take(holder, None, job=False)
        got.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(take, waiting, "waiting")
        await trio.testing.wait_all_tasks_blocked()
        slots.give_back(first, None, job=False)
        # Free by count for no moment: the slot is the waiting holder's already,
        # before it has even run again.
        assert not slots.try_take(late, None, job=False)
        nursery.start_soon(take, late, "late")
        await trio.testing.wait_all_tasks_blocked()
        assert got == ["waiting"]
        slots.give_back(waiting, None, job=False)
    assert got == ["waiting", "late"]
    slots.give_back(late, None, job=False)
    assert slots.try_take(object(), None, job=False)


async def test_a_job_does_not_take_a_free_slot_while_its_session_has_jobs_waiting():
    # The harness bound is full; the session's cap has room. A job of a session whose
    # jobs already wait waits behind them, even when it finds slots free by count.
    slots = Slots(bound=1, session_cap=3)
    running, queued, late = object(), object(), object()
    assert slots.try_take(running, "s1", job=True)
    got: list[str] = []

    async def take(holder: object, name: str) -> None:
        await slots.take(holder, "s1", job=True)
        got.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(take, queued, "queued")
        await trio.testing.wait_all_tasks_blocked()
        assert slots.position(queued, "s1") == 0
        assert not slots.try_take(late, "s1", job=True)
        nursery.start_soon(take, late, "late")
        await trio.testing.wait_all_tasks_blocked()
        assert slots.position(late, "s1") == 1
        slots.give_back(running, "s1", job=True)
        await trio.testing.wait_all_tasks_blocked()
        assert got == ["queued"]
        slots.give_back(queued, "s1", job=True)
    assert got == ["queued", "late"]


async def test_queued_jobs_and_a_foreground_call_behind_full_slots_run_in_order(tmp_path):
    order = tmp_path / "order"
    gate = tmp_path / "gate"
    policy = ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=str(tmp_path))
    async with open_executor(ExecutorConfig(max_running=1)) as executor:

        def command(name: str, wait: bool = False) -> str:
            hold = f"; while [ ! -e {gate} ]; do sleep 0.02; done" if wait else ""
            return f"echo {name} >> {order}{hold}"

        first = await executor.start(executor.resolve(command("a", wait=True), policy=policy))
        queued = [
            await executor.start(executor.resolve(command(name), policy=policy))
            for name in ("b", "c", "d")
        ]
        assert [h.state for h in queued] == ["queued"] * 3
        async with trio.open_nursery() as nursery:
            results = []

            async def call() -> None:
                results.append(await executor.run(executor.resolve(command("f"), policy=policy)))

            nursery.start_soon(call)
            await trio.sleep(0.2)  # the call asked for a slot behind the queued jobs
            late = await executor.start(executor.resolve(command("e"), policy=policy))
            gate.touch()
        for handle in (first, *queued, late):
            with trio.fail_after(20):
                report = await executor.wait(handle.id)
            assert report.exit_code == 0, report
    assert results[0].exit_code == 0, results[0]
    assert order.read_text().split() == ["a", "b", "c", "d", "f", "e"]

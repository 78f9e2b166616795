"""A request whose caller stops waiting leaves no work running, and the actor serves on:
whether it was still waiting for the inbox (issue 39's fourth round hands a message
over without a schedule point, and waits on a full inbox only then), for its reply, or
for a running slot."""

from __future__ import annotations

import trio
import trio.testing

from stockade.actors import Envelope, Inbox, Mailbox, answer, open_inbox, request, serve_forever
from stockade.executor.actor import open_executor
from stockade.executor.config import ExecutorConfig
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import describe_processes
from ._support import marker, pids_with_marker, sleeper, zombie_children


async def test_a_request_cancelled_before_the_actor_took_it_is_never_served(autojump_clock):
    inbox: Inbox[str]
    mailbox: Mailbox[str]
    inbox, mailbox = open_inbox()
    served: list[str] = []

    async def handle(message: str) -> str:
        served.append(message)
        return message.upper()

    async def serve(envelope: Envelope[str]) -> None:
        await answer(envelope, lambda: handle(envelope.message))

    # Nobody takes from the inbox yet: the request waits for room, and is cancelled.
    with trio.move_on_after(1) as waited:
        await request(inbox, "cancelled")
    assert waited.cancelled_caught
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_forever, mailbox, serve)
        assert await request(inbox, "next") == "NEXT"
        nursery.cancel_scope.cancel()
    assert served == ["next"]


async def test_a_request_cancelled_while_served_stops_its_work(autojump_clock):
    inbox: Inbox[str]
    mailbox: Mailbox[str]
    inbox, mailbox = open_inbox()
    began, stopped = trio.Event(), trio.Event()

    async def handle(message: str) -> str:
        if message == "forever":
            began.set()
            try:
                await trio.sleep_forever()
            finally:
                stopped.set()
        return message.upper()

    async def serve(envelope: Envelope[str]) -> None:
        await answer(envelope, lambda: handle(envelope.message))

    async with trio.open_nursery() as nursery:
        await nursery.start(serve_forever, mailbox, serve)
        with trio.CancelScope() as caller:
            nursery.start_soon(_cancel_once, began, caller)
            await request(inbox, "forever")
        assert caller.cancelled_caught
        with trio.fail_after(1):
            await stopped.wait()
        assert await request(inbox, "next") == "NEXT"
        nursery.cancel_scope.cancel()


async def _cancel_once(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def test_a_call_cancelled_while_its_command_runs_leaves_nothing_running(project):
    name = marker()
    policy = ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=str(project))
    async with open_executor(ExecutorConfig(kill_grace=0.5)) as executor:
        with trio.move_on_after(20) as waited:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(executor.run, executor.resolve(sleeper(name), policy=policy))
                while not pids_with_marker(name):
                    await trio.sleep(0.01)
                nursery.cancel_scope.cancel()
        assert not waited.cancelled_caught
        # The caller does not wait for the teardown; the executor kills the group.
        with trio.move_on_after(10):
            while pids_with_marker(name):
                await trio.sleep(0.01)
        left = pids_with_marker(name)
        assert left == [], describe_processes(left)
        assert zombie_children() == []
        again = await executor.run(executor.resolve("echo served", policy=policy))
    assert again.stdout == "served\n"


async def test_a_call_cancelled_while_waiting_for_a_slot_never_runs(project):
    ran = project / "ran"
    gate = project / "gate"
    policy = ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=str(project))
    async with open_executor(ExecutorConfig(max_running=1)) as executor:
        # The one slot is held by a job until its gate opens.
        holder = await executor.start(
            executor.resolve(f"while [ ! -e {gate} ]; do sleep 0.02; done", policy=policy)
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(executor.run, executor.resolve(f"touch {ran}", policy=policy))
            await trio.sleep(0.2)  # it asked, and waits for the slot
            nursery.cancel_scope.cancel()
        gate.touch()
        with trio.fail_after(20):
            report = await executor.wait(holder.id)
        assert report.exit_code == 0, report
        again = await executor.run(executor.resolve("echo served", policy=policy))
        assert again.stdout == "served\n"
    assert not ran.exists()

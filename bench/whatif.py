"""What-if measurements for proposed fixes: `python -m bench.whatif [mailbox|append|replay]`.

Each experiment times the current code and a small prototype of a proposed change
side by side in one process, so the gain is measured rather than claimed. The
prototypes live here only (they patch nothing on disk; `append` swaps functions in
this process's imported modules for its own run). Once a change lands in src/,
its experiment becomes moot and can be deleted.

- mailbox: `_mailbox.request` + `answer()` as today, versus a one-shot reply made
  of a `trio.Event` and a slot (no memory channel per request) and an `answer()`
  that registers a CancelScope on the envelope instead of a nursery with a watcher
  task; and versus replying inline in the inbox loop.
- append: 100 writers appending to one session, as today, versus the cheap reply
  plus enqueueing `AppendEvents` inline in the actor's inbox loop into a buffered
  writer channel (a task only when the buffer is full).
- replay: `scan_log` (one decode per line, cyclic GC running) versus one
  `decode_lines` call over the complete lines with the GC paused and a seq check,
  falling back to `scan_log` for diagnostics when anything is off.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any


def _fast_reply_parts() -> tuple[Any, Any, Any]:
    """A one-shot reply box, its request(), and a scope-based answer()."""
    import outcome
    import trio

    from stockade._mailbox import Envelope

    class Box:
        __slots__ = ("abandoned", "event", "result", "scope")

        def __init__(self) -> None:
            self.event = trio.Event()
            self.result: Any = None
            self.abandoned = False
            self.scope: Any = None

        # The two methods Envelope.reply uses on its reply channel.
        def send_nowait(self, result: Any) -> None:
            if self.abandoned:
                raise trio.BrokenResourceError
            self.result = result
            self.event.set()

        def close(self) -> None:
            pass

    async def request(inbox: Any, message: object) -> Any:
        box = Box()
        envelope = Envelope(message, box)  # type: ignore[arg-type]
        try:
            await inbox.send(envelope)
            await box.event.wait()
        except BaseException:
            box.abandoned = True
            envelope.abandoned.set()
            if box.scope is not None:
                box.scope.cancel()
            raise
        return box.result.unwrap()

    async def answer(envelope: Any, handler: Any) -> None:
        box = envelope.reply_to
        with trio.CancelScope() as scope:
            box.scope = scope
            if box.abandoned:
                scope.cancel()
            try:
                value = await handler()
            except Exception as error:
                envelope.reply(outcome.Error(error))
                return
            envelope.reply(outcome.Value(value))

    return Box, request, answer


def mailbox(rounds: int) -> None:
    import outcome
    import trio

    from stockade._mailbox import answer, open_inbox, request

    _, fast_request, fast_answer = _fast_reply_parts()

    async def pong() -> int:
        return 1

    async def actor(mailbox: Any, kind: str, *, task_status: Any) -> None:
        async with trio.open_nursery() as nursery, mailbox:
            task_status.started()
            async for envelope in mailbox:
                if kind == "current":
                    nursery.start_soon(answer, envelope, pong)
                elif kind == "proposed: task per request":
                    nursery.start_soon(fast_answer, envelope, pong)
                else:
                    envelope.reply(outcome.Value(1))

    async def main() -> None:
        kinds = ("current", "proposed: task per request", "proposed: inline reply")
        samples: dict[str, list[int]] = {kind: [] for kind in kinds}
        async with trio.open_nursery() as nursery:
            inboxes = {}
            for kind in kinds:
                inbox, box = open_inbox()
                await nursery.start(
                    lambda task_status, b=box, k=kind: actor(b, k, task_status=task_status)
                )
                inboxes[kind] = inbox
            for _ in range(rounds):
                for kind in kinds:
                    ask = request if kind == "current" else fast_request
                    for _ in range(250):
                        start = time.perf_counter_ns()
                        await ask(inboxes[kind], None)
                        samples[kind].append(time.perf_counter_ns() - start)
            nursery.cancel_scope.cancel()
        for kind, values in samples.items():
            print(
                f"mailbox round trip, {kind:30s} median {statistics.median(values) / 1e3:6.1f} µs"
            )

    trio.run(main)


def append(seconds: float, disk: bool) -> None:
    import trio

    from stockade.harness import harness_registry
    from stockade.sessionlog import JsonlStore, MemoryStore, open_session_log
    from stockade.tools.events import ToolCalled

    def run_once(label: str) -> None:
        registry = harness_registry()
        scratch = tempfile.mkdtemp(prefix="stockade-whatif-", dir="/var/tmp")
        store: Any = (
            JsonlStore(scratch, registry=registry) if disk else MemoryStore(registry=registry)
        )

        async def main() -> None:
            async with open_session_log(store) as log:
                await log.open("whatif")
                count = [0]
                event = ToolCalled(call_id="c", name="bash", arguments={"command": "ls"})
                deadline = time.perf_counter() + seconds

                async def writer() -> None:
                    while time.perf_counter() < deadline:
                        await log.append("whatif", event)
                        count[0] += 1

                begun = time.perf_counter()
                async with trio.open_nursery() as nursery:
                    for _ in range(100):
                        nursery.start_soon(writer)
                elapsed = time.perf_counter() - begun
                events = await log.read("whatif")
                assert len(events) == count[0]
                assert all(e.seq == i for i, e in enumerate(events, start=1))
                print(
                    f"appends, 100 writers, {type(store).__name__}, {label:38s} "
                    f"{count[0] / elapsed:8,.0f} events/s"
                )

        try:
            trio.run(main)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    run_once("current")
    import stockade._mailbox as mailbox_module
    import stockade.sessionlog.actor as actor_module
    from stockade.sessionlog._messages import AppendEvents

    _, fast_request, _ = _fast_reply_parts()
    saved = (
        mailbox_module.request,
        actor_module.request,
        actor_module._Log.__attrs_post_init__,
        actor_module.SessionLogActor.run,
    )

    def buffered(self: Any) -> None:
        self.send, self.receive = trio.open_memory_channel[Any](1024)

    async def inline_run(self: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery, self._mailbox:
            self._nursery = nursery
            task_status.started()
            async for envelope in self._mailbox:
                message = envelope.message
                if isinstance(message, AppendEvents) and message.events:
                    log = self._logs.get(message.session_id)
                    if log is not None and log.opened is not None:
                        try:
                            self.store.registry.check(message.events)
                            log.send.send_nowait(
                                actor_module._Pending(message.events, message.after_seq, envelope)
                            )
                            continue
                        except trio.WouldBlock:
                            pass
                nursery.start_soon(self._serve, envelope)

    try:
        mailbox_module.request = fast_request
        actor_module.request = fast_request
        actor_module._Log.__attrs_post_init__ = buffered
        actor_module.SessionLogActor.run = inline_run
        run_once("proposed: cheap reply + inline enqueue")
    finally:
        (
            mailbox_module.request,
            actor_module.request,
            actor_module._Log.__attrs_post_init__,
            actor_module.SessionLogActor.run,
        ) = saved


def replay(count: int) -> None:
    from stockade.harness import harness_registry
    from stockade.sessionlog import scan_log

    from .log import write_log

    registry = harness_registry()
    directory = tempfile.mkdtemp(prefix="stockade-whatif-", dir="/var/tmp")
    path = os.path.join(directory, "replay.jsonl")
    write_log(path, count, registry, directory)
    with open(path, "rb") as log:
        data = log.read()
    decoder = registry._decoder

    def proposed(data: bytes) -> Any:
        end = data.rfind(b"\n") + 1
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            events = decoder.decode_lines(memoryview(data)[:end]) if end else []
        except Exception:
            return scan_log(data, path, registry)
        finally:
            if was_enabled:
                gc.enable()
        if any(event.seq != index for index, event in enumerate(events, start=1)):
            return scan_log(data, path, registry)
        return events

    for _ in range(3):
        gc.collect()
        begun = time.perf_counter()
        current = scan_log(data, path, registry)
        took_current = time.perf_counter() - begun
        del current
        gc.collect()
        begun = time.perf_counter()
        events = proposed(data)
        took_proposed = time.perf_counter() - begun
        assert len(events) == count
        del events
        print(
            f"replay of {count:,} events: scan_log {took_current:.2f} s; proposed "
            f"(decode_lines, GC paused, seq check) {took_proposed:.2f} s"
        )
    os.unlink(path)
    os.rmdir(directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.whatif",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "experiments", nargs="*", choices=("mailbox", "append", "replay"), default=None
    )
    parser.add_argument("--disk", action="store_true", help="append: JsonlStore, not memory")
    args = parser.parse_args(argv)
    chosen = args.experiments or ["mailbox", "append", "replay"]
    if "mailbox" in chosen:
        mailbox(20)
    if "append" in chosen:
        append(2.0, args.disk)
    if "replay" in chosen:
        replay(1_000_000)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

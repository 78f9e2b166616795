"""A separate process for the crash and lock tests.

_child.py append STATE_DIR SESSION SEED   append forever, print each acknowledged seq
_child.py hold STATE_DIR SESSION          hold the session open until stdin closes
"""

from __future__ import annotations

import random
import sys

from _helpers import TEST_EVENTS, Note

from stockade.sessionlog import JsonlStore, open_session_log


def hold(state_dir: str, session_id: str) -> None:
    opened = JsonlStore(state_dir, registry=TEST_EVENTS).open(session_id)
    print("locked", flush=True)
    sys.stdin.read()
    opened.handle.close()


async def append_forever(state_dir: str, session_id: str, seed: int) -> None:
    import trio

    rng = random.Random(seed)
    async with open_session_log(JsonlStore(state_dir, registry=TEST_EVENTS)) as log:
        await log.open(session_id)
        print("ready", flush=True)

        async def writer(k: int) -> None:
            while True:
                size = rng.choice((0, 100, 20_000, 200_000))
                (event,) = await log.append(session_id, Note(n=k, payload="x" * size))
                sys.stdout.write(f"{event.seq}\n")
                sys.stdout.flush()

        async with trio.open_nursery() as nursery:
            for k in range(4):
                nursery.start_soon(writer, k)


def main() -> None:
    mode, state_dir, session_id, *rest = sys.argv[1:]
    if mode == "hold":
        hold(state_dir, session_id)
    else:
        import trio

        trio.run(append_forever, state_dir, session_id, int(rest[0]))


if __name__ == "__main__":
    main()

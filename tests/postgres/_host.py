"""One "host" for the two-process tests: a harness (or a bare log actor) on the shared database.

_host.py open SESSION ROOT [--mode M] [--approval P] [--hold]
    open (or resume) SESSION in a harness whose log is the database, set the knobs
    given, print one JSON line ({"session", "mode", "approval", "events", "owner"}),
    then (with --hold) keep it open until stdin closes. SessionLocked: prints
    {"locked": message} and exits 3.
_host.py append SESSION SEED
    append from 4 concurrent writers forever; print "ready", then each acknowledged seq.

The database is $STOCKADE_TEST_PG_DSN (the composition reads it with !env).
"""

from __future__ import annotations

import argparse
import json
import random
import sys

import trio

COMPOSITION = """
- id: sandbox
  name: stockade.sandbox.local
- id: bash
  name: stockade.bash.sandbox
- id: approval
  name: stockade.approval.user
- id: log
  name: stockade.session.log
  config:
    store: postgres
    dsn: !env STOCKADE_TEST_PG_DSN
    pool_size: 2
"""


async def _open_or_resume(harness: object, session_id: str, root: str) -> object:
    """Resume the session when its log exists, else create it."""
    resume = getattr(harness, "resume_session", None)
    if resume is None:  # a harness whose open_session resumes an existing id itself
        return await harness.open_session(session_id, cwd=root)  # type: ignore[attr-defined]
    try:
        return await resume(session_id, cwd=root)
    except Exception as error:
        if type(error).__name__ != "SessionNotFound":
            raise
    return await harness.open_session(session_id, cwd=root)  # type: ignore[attr-defined]


async def open_session(args: argparse.Namespace) -> int:
    from stockade.approval.answerers import ScriptedAnswerer
    from stockade.config import loads_composition
    from stockade.harness import open_harness
    from stockade.sessionlog import SessionLocked

    composition = loads_composition(COMPOSITION, cwd=args.root)
    async with open_harness(composition, answerers=[ScriptedAnswerer()], cwd=args.root) as harness:
        try:
            session = await _open_or_resume(harness, args.session, args.root)
        except SessionLocked as error:
            print(json.dumps({"locked": str(error)}), flush=True)
            return 3
        if args.mode:
            await session.set_sandbox_mode(args.mode)
        if args.approval:
            await session.set_approval_policy(args.approval)
        state = {
            "session": session.id,
            "mode": (await session.sandbox_mode()).value,
            "approval": (await session.approval_policy()).value,
            "events": len(await session.events()),
            "location": session.session.location,
        }
        print(json.dumps(state), flush=True)
        if args.hold:
            await trio.to_thread.run_sync(sys.stdin.read)
        await session.close()
    return 0


async def append_forever(session_id: str, seed: int) -> None:
    import os

    from stockade.sessionlog import open_session_log
    from stockade.sessionlog.stores.postgres import PostgresStore

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from tests.sessionlog._helpers import TEST_EVENTS, Note

    rng = random.Random(seed)
    store = PostgresStore(os.environ["STOCKADE_TEST_PG_DSN"], registry=TEST_EVENTS, pool_size=2)
    async with open_session_log(store) as log:
        await log.open(session_id)
        print("ready", flush=True)

        async def writer(k: int) -> None:
            while True:
                size = rng.choice((0, 100, 5_000, 50_000))
                (event,) = await log.append(session_id, Note(n=k, payload="x" * size))
                sys.stdout.write(f"{event.seq}\n")
                sys.stdout.flush()

        async with trio.open_nursery() as nursery:
            for k in range(4):
                nursery.start_soon(writer, k)


def main() -> int:
    parser = argparse.ArgumentParser()
    verbs = parser.add_subparsers(dest="verb", required=True)
    opener = verbs.add_parser("open")
    opener.add_argument("session")
    opener.add_argument("root")
    opener.add_argument("--mode")
    opener.add_argument("--approval")
    opener.add_argument("--hold", action="store_true")
    appender = verbs.add_parser("append")
    appender.add_argument("session")
    appender.add_argument("seed", type=int)
    args = parser.parse_args()
    if args.verb == "open":
        return trio.run(open_session, args)
    trio.run(append_forever, args.session, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

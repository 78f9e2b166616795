"""Running actors for the length of an `async with` block, in one nursery.

Leaving the block cancels the actors; an error raised in the block comes out as
itself, not wrapped in the nursery's ExceptionGroup.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

ActorRun = Callable[..., Awaitable[Any]]


@asynccontextmanager
async def running(*actor_runs: ActorRun) -> AsyncIterator[trio.Nursery]:
    """Start each actor's `run` in order (each `started()` before the next)."""
    try:
        async with trio.open_nursery() as nursery:
            for run in actor_runs:
                await nursery.start(run)
            try:
                yield nursery
            finally:
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # Actors answer errors as values and never raise, so a lone error is the
        # block's own: hand it back unwrapped, the way the caller raised it.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise

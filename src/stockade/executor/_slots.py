"""Running slots: the harness-wide bound on processes running at once, and each
session's cap on its running background jobs; waiters are served in start order."""

from __future__ import annotations

import attrs
import trio


@attrs.define(eq=False, repr=False)
class Slots:
    """A holder (a call or a job) takes a slot of the harness's bound and, for a
    session's background job under a cap, one of its session's: session first, so a
    job waiting behind its own session's cap holds nothing another session could use.
    trio's limiters wake waiters first come, first served: a queue keeps its order."""

    bound: int
    session_cap: int | None = None
    _harness: trio.CapacityLimiter = attrs.field(init=False)
    _sessions: dict[str, trio.CapacityLimiter] = attrs.field(factory=dict, init=False)
    # Per session, its holders still waiting, in the order they asked.
    _waiting: dict[str | None, dict[object, None]] = attrs.field(factory=dict, init=False)

    def __attrs_post_init__(self) -> None:
        self._harness = trio.CapacityLimiter(self.bound)

    @property
    def harness_full(self) -> bool:
        return self._harness.available_tokens == 0

    def _session(self, owner: str | None, job: bool) -> trio.CapacityLimiter | None:
        if not job or owner is None or self.session_cap is None:
            return None
        limiter = self._sessions.get(owner)
        if limiter is None:
            limiter = self._sessions[owner] = trio.CapacityLimiter(self.session_cap)
        return limiter

    def try_take(self, holder: object, owner: str | None, *, job: bool) -> bool:
        """Take both slots now, or none (False: the holder must `take` and wait). A
        holder that finds others of its session already waiting waits behind them."""
        session = self._session(owner, job)
        if job and owner in self._waiting:
            return False
        if session is not None:
            try:
                session.acquire_on_behalf_of_nowait(holder)
            except trio.WouldBlock:
                return False
        try:
            self._harness.acquire_on_behalf_of_nowait(holder)
        except trio.WouldBlock:
            if session is not None:
                session.release_on_behalf_of(holder)
            return False
        return True

    async def take(self, holder: object, owner: str | None, *, job: bool) -> None:
        """Wait for both slots (cancellable: then it holds none)."""
        session = self._session(owner, job)
        waiting = self._waiting.setdefault(owner, {}) if job and owner is not None else None
        if waiting is not None:
            waiting[holder] = None
        try:
            if session is not None:
                await session.acquire_on_behalf_of(holder)
            try:
                await self._harness.acquire_on_behalf_of(holder)
            except BaseException:
                if session is not None:
                    session.release_on_behalf_of(holder)
                raise
        finally:
            if waiting is not None:
                waiting.pop(holder, None)
                if not waiting:
                    self._waiting.pop(owner, None)

    def position(self, holder: object, owner: str | None) -> int | None:
        """How many of `owner`'s jobs wait ahead of `holder` (None: it is not waiting)."""
        waiting = self._waiting.get(owner)
        if waiting is None or holder not in waiting:
            return None
        return list(waiting).index(holder)

    def give_back(self, holder: object, owner: str | None, *, job: bool) -> None:
        self._harness.release_on_behalf_of(holder)
        session = self._session(owner, job)
        if session is not None:
            session.release_on_behalf_of(holder)
            if session.borrowed_tokens == 0 and owner not in self._waiting:
                assert owner is not None
                del self._sessions[owner]  # a closed session leaves nothing behind

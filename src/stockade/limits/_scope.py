"""Whose limit refused: the command's own, its session's (all the session's commands
together), or one above stockade's groups. A limit that exists at both scopes
(processes, memory) is held by two nested cgroups, and the kernel counts a refusal in
different places depending on its version, so the counters of both groups are judged
here, as plain facts (the cgroups layer reads them).

What each kernel tells (docs/limits.md, "Whose limit it was"):

- v1, and v2 before Linux 6.11 or with `pids_localevents`: `pids.events` counts a
  fork refused in the group of the process that forked, whichever group's limit
  refused it; `pids.peak` is a high-water mark that never passes the group's own
  `pids.max`. So a group whose peak is at its limit has been full, and one below it
  has not refused anything.
- v2 since 6.11: `pids.events.local` counts the refusals by that group's own limit.
- v1 memory: `memory.failcnt` counts the charges that failed at that group's own
  limit (the command's is reset when its group serves another call).
- v2 memory: `memory.events.local` "oom" counts the OOMs at that group's own limit.

An exact count (`refused`) outranks a group having been at its limit (`reached`);
when both groups were at their limits and nothing counts exactly, the lower limit is
named (it is the one a command meets first); when neither was, and each said so, a
limit above stockade's own groups refused (a container's, a service manager's).
"""

from __future__ import annotations

import enum

import msgspec


class Scope(enum.StrEnum):
    """Whose limit it was."""

    COMMAND = "command"
    SESSION = "session"
    # Above stockade's groups: the harness's own cgroup or one of its parents (a
    # container's or a service manager's limit), whose value stockade does not set.
    HOST = "host"


class AtLimit(msgspec.Struct, frozen=True, kw_only=True):
    """One group's evidence about one of its limits, for one call.

    `value`: the limit as asked (None: unlimited at this scope, so never the one that
    refused). `refused`: how many times this group's OWN limit refused during the call,
    where the kernel counts that per group (None: it does not here). `reached`: the
    group has been at its limit (during the call for a command's group; at some time
    for a session's, which its calls share), None when the host cannot tell. `used`:
    what the group used, for the person (its peak)."""

    value: int | float | None
    refused: int | None = None
    reached: bool | None = None
    used: int | float | None = None


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """Both groups' evidence about one limit; `session` None: no session group holds
    a limit of that name for this call."""

    command: AtLimit
    session: AtLimit | None = None

    def refused_here(self) -> bool:
        """Whether either group's own limit is counted as having refused during the
        call (the only sign of a session's refusal on v2 since Linux 6.11, where the
        command's group counts none of it)."""
        return any(at.refused for at in (self.command, self.session) if at is not None)


def reached_at(peak: int | None, ceiling: int | None) -> bool | None:
    """Whether a high-water mark shows its group full: `peak` at `ceiling` (the group's
    limit as written, a command's runner processes included). None: no peak here."""
    if ceiling is None:
        return False
    if peak is None:
        return None
    return peak >= ceiling


def whose(evidence: Evidence) -> tuple[Scope, ...]:
    """The scopes whose limit refused, for a call that had a refusal (or an OOM kill):
    every group that counted refusals of its own; failing any count, the one group that
    was at its limit (the lower limit when both were, the command's on a tie); failing
    that, the lower of the groups that cannot tell; and when every group with a limit
    says it was not at it, HOST."""
    scoped = [(Scope.COMMAND, evidence.command)]
    if evidence.session is not None:
        scoped.append((Scope.SESSION, evidence.session))
    limited = [(scope, at) for scope, at in scoped if at.value is not None]
    counted = tuple(scope for scope, at in limited if at.refused)
    if counted:
        return counted
    # A group that counts its own refusals and counted none did not refuse.
    open_ = [(scope, at) for scope, at in limited if at.refused is None]
    for candidates in (
        [(scope, at) for scope, at in open_ if at.reached],
        [(scope, at) for scope, at in open_ if at.reached is None],
    ):
        if candidates:
            return (_lowest(candidates),)
    return (Scope.HOST,)


def _lowest(candidates: list[tuple[Scope, AtLimit]]) -> Scope:
    # min() keeps the first of equals: the command's, listed first.
    return min(candidates, key=lambda pair: float(pair[1].value or 0))[0]

"""The hook a tool wraps around the part of a call that may write: the harness records
what the call changed in its root (issue 42) and hands back the `changed` facts.

The tools know only this shape; the history itself is the harness's.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import attrs

from ..reprs import fields_repr
from ..vocab import ExecutionPolicy


@attrs.define
class Recorded:
    """What a recording window found: the call's `changed` facts once the window closed
    (None: nothing was recorded, the policy could not write)."""

    __repr__ = fields_repr

    facts: dict[str, Any] | None = None


@attrs.define(eq=False)
class JobStart:
    """What a background job's start tells the hold on its roots: the executor's id of
    the job (None: not told; the hold then looks for it among the live jobs)."""

    __repr__ = fields_repr

    job: str | None = None


class CallRecorder(Protocol):
    """Opens the window around the one part of a call that may write under `policy`
    (the command's run, the file written); the snapshot is taken outside it."""

    def window(self, policy: ExecutionPolicy) -> AbstractAsyncContextManager[Recorded]: ...

    def starting(self, policy: ExecutionPolicy) -> AbstractAsyncContextManager[JobStart]:
        """Around the start of a background job that may write under `policy`: it waits
        while an undo of its root runs (an undo refuses while a job runs there); the
        caller sets `job` to the started job's id, which the hold then follows."""
        ...


def with_changed(facts: dict[str, Any], recorded: Recorded) -> dict[str, Any]:
    """`facts` with the window's `changed` facts, when it recorded any."""
    if recorded.facts is None:
        return facts
    return {**facts, "changed": recorded.facts}

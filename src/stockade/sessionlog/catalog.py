"""The catalog's values and protocol: the sessions a store holds, as `stockade session
list` and `prune` show them (verbs: `stockade.cli.sessions`; the JSON-lines catalog and
`catalog_of`: `stores/jsonl_catalog.py`).

A store that keeps a catalog lists and prunes through two methods,
`list_sessions(defaults=...)` and `prune_sessions(cutoff, dry_run=...)`, returning
these values (`policy_summary` folds a session's events for them). A catalog that
cannot be read raises `CatalogUnreadable`; a store that keeps none, `NoCatalog`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import msgspec

from ..errors import ConfigError, StockadeError
from ..events import SessionEvent, SessionHeader
from ..policy import PolicyDefaults, knob_state


class CatalogUnreadable(StockadeError):
    """The state directory cannot be listed (not a directory, or the system refused)."""


class NoCatalog(ConfigError):
    """A store that cannot list or prune its sessions."""


class SessionEntry(msgspec.Struct, kw_only=True):
    """One session as a listing shows it.

    `last_activity`: seconds since the epoch of the last append; `size`: bytes on disk
    (None for a store without files); `open`: a writer holds it now. The policy
    fields are the effective values (None when the log could not be read: `error`
    then says why, as {"code", "detail"}).
    """

    session: str
    location: str
    last_activity: float | None
    size: int | None
    open: bool
    events: int | None = None
    cwd: str | None = None
    sandbox_mode: str | None = None
    approval_policy: str | None = None
    network: str | None = None
    error: dict[str, str] | None = None


class PruneResult(msgspec.Struct, kw_only=True):
    """What a prune did (or, dry, would do): `removed`, the idle sessions it kept
    because they were open, and those it could not remove (each with its `error`)."""

    removed: list[SessionEntry]
    kept_open: list[SessionEntry]
    failed: list[SessionEntry]
    # `<id>.jsonl` files that do not start with a header the store wrote: never removed.
    skipped: list[SessionEntry] = msgspec.field(default_factory=list)


class Catalog(Protocol):
    """What `session list` and `session prune` need of a store."""

    def list_sessions(self, *, defaults: PolicyDefaults) -> list[SessionEntry]: ...

    def prune_sessions(self, cutoff: float, *, dry_run: bool) -> PruneResult: ...


def policy_summary(events: Sequence[SessionEvent], defaults: PolicyDefaults) -> dict[str, Any]:
    """cwd and the effective mode, approval policy and network of a session's events."""
    header = events[0] if events and isinstance(events[0], SessionHeader) else None
    state = knob_state(events, defaults)
    return {
        "cwd": header.cwd if header else None,
        "sandbox_mode": state.sandbox_mode.value,
        "approval_policy": state.approval_policy.value,
        "network": state.effective_network.value,
    }


# --- the JSON-lines store ------------------------------------------------------------

"""The event types every stockade session log holds: the header and the policy domain's."""

from __future__ import annotations

from typing import Final

from ..events import EventRegistry, SessionHeader
from ..policy import POLICY_EVENTS

#: The default registry. A harness that mounts more domains composes its own with
#: `BUILTIN_EVENTS.with_types(...)`; this value itself never changes.
BUILTIN_EVENTS: Final[EventRegistry] = EventRegistry.of(SessionHeader, *POLICY_EVENTS)

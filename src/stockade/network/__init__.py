"""The network room: the destination rules of `network: allowlist` (pure) and the
proxy that enforces them (a Trio shell), which the harness runs one of.

This is the room's public surface. Names load on first use, so importing the package
(or the pure rules) costs no event loop.
"""

from __future__ import annotations

from ..lazy import lazy_exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .proxy import ConnectionBudget as ConnectionBudget
    from .proxy import Endpoint as Endpoint
    from .proxy import NetworkProxy as NetworkProxy
    from .proxy import open_proxy as open_proxy
    from .rules import Decision as Decision
    from .rules import Entry as Entry
    from .rules import HostError as HostError
    from .rules import RuleError as RuleError
    from .rules import Rules as Rules
    from .rules import Verdict as Verdict
    from .rules import normalise_host as normalise_host
    from .rules import parse_entry as parse_entry

_LAZY = {
    "ConnectionBudget": "proxy",
    "Endpoint": "proxy",
    "NetworkProxy": "proxy",
    "open_proxy": "proxy",
    "Decision": "rules",
    "Entry": "rules",
    "HostError": "rules",
    "RuleError": "rules",
    "Rules": "rules",
    "Verdict": "rules",
    "normalise_host": "rules",
    "parse_entry": "rules",
}

__getattr__ = lazy_exports(__name__, _LAZY, globals())

__all__ = [
    "ConnectionBudget",
    "Decision",
    "Endpoint",
    "Entry",
    "HostError",
    "NetworkProxy",
    "RuleError",
    "Rules",
    "Verdict",
    "normalise_host",
    "open_proxy",
    "parse_entry",
]

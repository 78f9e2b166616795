"""The ProviderActor's room: pure profile builders, the platform chain, the probes, the
trust base applied to a call, THE confine sequence (`_confine`), and the actor.

This is the room's public surface: other folders import from here, never from a
`_module`. Every name is loaded on first use, so `stockade exec` (which imports this
package) pays only for the standard-library modules it asks for, never for trio,
attrs or msgspec.
"""

from __future__ import annotations

from ..lazy import lazy_exports

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from . import agents as agents
    from . import backends as backends
    from . import placeholders as placeholders
    from . import tool_caches as tool_caches
    from ._chain import Selection as Selection
    from ._confine import Call as Call
    from ._confine import Confined as Confined
    from ._confine import GuardRules as GuardRules
    from ._confine import Runner as Runner
    from ._confine import confine as confine
    from ._confine import guard_rules as guard_rules
    from ._confine import judge as judge
    from ._confine import placeholder_attempts as placeholder_attempts
    from ._confine import remembered_runner as remembered_runner
    from ._confine import runner_identity as runner_identity
    from ._probe import filter_launcher as filter_launcher
    from ._report import render_selection as render_selection
    from ._report import render_trust as render_trust
    from ._select import select_backend as select_backend
    from ._trustcheck import trust_checks as trust_checks
    from .actor import ProviderActor as ProviderActor
    from .actor import ProviderClient as ProviderClient
    from .actor import Selector as Selector
    from .actor import open_provider as open_provider
    from .backends.bwrap import has_filter_stage as has_filter_stage
    from .config import BACKEND_CHOICES as BACKEND_CHOICES
    from .config import ProviderConfig as ProviderConfig
    from .config import trusted_provider as trusted_provider
    from .private_tmp import PrivateTmp as PrivateTmp
    from .private_tmp import default_parent as default_parent
    from .private_tmp import host_temp as host_temp
    from .private_tmp import make_private_tmp as make_private_tmp
    from .private_tmp import remove_private_tmp as remove_private_tmp

# name -> the module of this room that defines it.
_LAZY = {
    "Call": "_confine",
    "Confined": "_confine",
    "GuardRules": "_confine",
    "Runner": "_confine",
    "confine": "_confine",
    "guard_rules": "_confine",
    "judge": "_confine",
    "placeholder_attempts": "_confine",
    "remembered_runner": "_confine",
    "runner_identity": "_confine",
    "Selection": "_chain",
    "filter_launcher": "_probe",
    "has_filter_stage": "backends.bwrap",
    "render_selection": "_report",
    "render_trust": "_report",
    "select_backend": "_select",
    "trust_checks": "_trustcheck",
    "ProviderActor": "actor",
    "ProviderClient": "actor",
    "Selector": "actor",
    "open_provider": "actor",
    "BACKEND_CHOICES": "config",
    "ProviderConfig": "config",
    "trusted_provider": "config",
    "PrivateTmp": "private_tmp",
    "default_parent": "private_tmp",
    "host_temp": "private_tmp",
    "make_private_tmp": "private_tmp",
    "remove_private_tmp": "private_tmp",
    # A public module of its own (standard library only: exec holds placeholders too).
    "placeholders": "",
    "tool_caches": "",
    "agents": "",
    # The backends, one module each, and the chain (standard library only).
    "backends": "",
}


__getattr__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "BACKEND_CHOICES",
    "Call",
    "Confined",
    "GuardRules",
    "PrivateTmp",
    "ProviderActor",
    "ProviderClient",
    "ProviderConfig",
    "Runner",
    "Selection",
    "Selector",
    "agents",
    "backends",
    "confine",
    "default_parent",
    "filter_launcher",
    "guard_rules",
    "has_filter_stage",
    "host_temp",
    "judge",
    "make_private_tmp",
    "open_provider",
    "placeholder_attempts",
    "placeholders",
    "remembered_runner",
    "remove_private_tmp",
    "render_selection",
    "render_trust",
    "runner_identity",
    "select_backend",
    "tool_caches",
    "trust_checks",
    "trusted_provider",
]

"""The ProviderActor's room: pure profile builders, the platform chain, the probes, the
trust base applied to a call, THE confine sequence (`_confine`), and the actor.

This is the room's public surface: other folders import from here, never from a
`_module`. Every name is loaded on first use, so `stockade exec` (which imports this
package) pays only for the standard-library modules it asks for, never for trio,
attrs or msgspec.
"""

from __future__ import annotations

from ..lazy import surface

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
    from .backends import has_filter_stage as has_filter_stage
    from .backends import namespace_init as namespace_init
    from .backends import reap_orphaned_init as reap_orphaned_init
    from .backends import started_option_at as started_option_at
    from .config import BACKEND_CHOICES as BACKEND_CHOICES
    from .config import ProviderConfig as ProviderConfig
    from .config import trusted_provider as trusted_provider
    from .private_tmp import PrivateTmp as PrivateTmp
    from .private_tmp import default_parent as default_parent
    from .private_tmp import host_temp as host_temp
    from .private_tmp import make_private_tmp as make_private_tmp
    from .private_tmp import remove_private_tmp as remove_private_tmp
    from .tool_caches import CacheSetting as CacheSetting


if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

"""The ExecutorActor's room: pure classification and buffers, spawn/drain/kill, jobs.

This is the room's public surface: other folders import from here, never from a
`_module`. Every name is loaded on first use, so importing the package costs nothing
until something of the room (and trio with it) is needed.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False  # as in the other rooms: importing typing is not free
if TYPE_CHECKING:
    from ._brokering import Brokered as Brokered
    from ._brokering import open_broker as open_broker
    from ._endpoints import AuditConnection as AuditConnection
    from ._limits import planned_here as planned_here
    from ._orphans import adopt_orphans as adopt_orphans
    from ._orphans import disown_orphans as disown_orphans
    from ._orphans import init_reaps as init_reaps
    from ._spawn import READ_SIZE as READ_SIZE
    from ._spawn import Sink as Sink
    from ._spawn import Source as Source
    from ._spawn import Streams as Streams
    from ._spawn import Terminal as Terminal
    from ._spawn import signal_group as signal_group
    from .actor import ExecutorActor as ExecutorActor
    from .actor import open_executor as open_executor
    from .client import ExecutorClient as ExecutorClient
    from .config import MIB as MIB
    from .config import ExecutorConfig as ExecutorConfig
    from .config import raise_open_files_limit as raise_open_files_limit
    from .environment import STOCKADE_OWN as STOCKADE_OWN
    from .environment import EnvPolicy as EnvPolicy
    from .environment import Withheld as Withheld
    from .environment import apply_policy as apply_policy
    from .environment import is_stockade_own as is_stockade_own
    from .environment import is_variable_name as is_variable_name
    from .environment import render_policy as render_policy
    from .render import protected_refusals as protected_refusals
    from .render import refused_destinations as refused_destinations
    from .render import refused_requests as refused_requests
    from .render import render_job as render_job
    from .render import render_result as render_result
    from .render import result_causes as result_causes


if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

"""The ExecutorActor's room: pure classification and buffers, spawn/drain/kill, jobs.

This is the room's public surface: other folders import from here, never from a
`_module`. Every name is loaded on first use, so importing the package costs nothing
until something of the room (and trio with it) is needed.
"""

from __future__ import annotations

from ..lazy import lazy_exports

TYPE_CHECKING = False  # as in the other rooms: importing typing is not free
if TYPE_CHECKING:
    from ._endpoints import AuditConnection as AuditConnection
    from ._limits import planned_here as planned_here
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
    from .environment import Withheld as Withheld
    from .render import protected_refusals as protected_refusals
    from .render import refused_destinations as refused_destinations
    from .render import render_job as render_job
    from .render import render_result as render_result
    from .render import result_causes as result_causes

# name -> the module of this room that defines it.
_LAZY = {
    "AuditConnection": "_endpoints",
    "planned_here": "_limits",
    "READ_SIZE": "_spawn",
    "Sink": "_spawn",
    "Source": "_spawn",
    "Streams": "_spawn",
    "Terminal": "_spawn",
    "signal_group": "_spawn",
    "ExecutorActor": "actor",
    "ExecutorClient": "client",
    "open_executor": "actor",
    "MIB": "config",
    "ExecutorConfig": "config",
    "Withheld": "environment",
    "render_job": "render",
    "protected_refusals": "render",
    "refused_destinations": "render",
    "render_result": "render",
    "result_causes": "render",
}


__getattr__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "MIB",
    "READ_SIZE",
    "AuditConnection",
    "ExecutorActor",
    "ExecutorClient",
    "ExecutorConfig",
    "Sink",
    "Source",
    "Streams",
    "Terminal",
    "Withheld",
    "open_executor",
    "planned_here",
    "protected_refusals",
    "refused_destinations",
    "render_job",
    "render_result",
    "result_causes",
    "signal_group",
]

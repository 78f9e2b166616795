"""The MCP face: `stockade mcp` serves the harness's tools to any MCP client and asks
escalations through the client's elicitation (docs/mcp.md).

Re-exports only; nothing here imports the MCP SDK (`server.py` does, from the
`stockade[mcp]` extra).
"""

from __future__ import annotations

from ..lazy import surface
from ._link import McpAnswerer as McpAnswerer

TYPE_CHECKING = False  # the command's module is loaded when it runs
if TYPE_CHECKING:
    from .command import run_mcp as run_mcp

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

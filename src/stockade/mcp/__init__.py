"""The MCP face: `stockade mcp` serves the harness's tools to any MCP client and asks
escalations through the client's elicitation (docs/mcp.md).

Re-exports only; nothing here imports the MCP SDK (`server.py` does, from the
`stockade[mcp]` extra).
"""

from __future__ import annotations

from ._link import McpAnswerer as McpAnswerer

__all__ = ["McpAnswerer"]

"""python -m examples.acp_agent [OPTIONS]: the ACP agent over stdio (see docs/acp.md)."""

from stockade.acp.main import console

raise SystemExit(console())

"""The example ACP agent: `python -m examples.acp_agent` from the checkout.

The agent itself ships inside the package (`stockade.acp.agent`, the console script
`stockade-acp-agent`) so an installed wheel runs it; this package is the runnable
wrapper the checkout offers. docs/acp.md: pointing an editor at it.
"""

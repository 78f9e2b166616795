"""The ACP face: escalations asked in the editor, and an ACP agent on the harness.

- `AcpAnswerer` (answerer.py): an answerer for the approval chain that asks the ACP
  client through `session/request_permission`.
- permission.py, modes.py, transcript.py, jsonrpc.py: the pure mappings between
  stockade's values and ACP's (no trio, no SDK).
- core.py (Trio) and agent.py (the `agent-client-protocol` SDK, asyncio, bridged
  with trio-asyncio): the agent; main.py: the `stockade-acp-agent` command.

Importing this package needs neither the SDK nor an event loop; `agent.py` needs
the SDK (the `acp` extra: docs/acp.md, "Install and run"). docs/acp.md describes the agent.
"""

from __future__ import annotations

from ..lazy import surface
from .answerer import AcpAnswerer as AcpAnswerer
from .answerer import AskContext as AskContext
from .answerer import AskFailed as AskFailed
from .answerer import PermissionChannel as PermissionChannel
from .events import ACP_EVENTS as ACP_EVENTS
from .events import CommandAnswered as CommandAnswered
from .events import PromptReceived as PromptReceived
from .events import ReplyGiven as ReplyGiven
from .permission import ALLOW_ONCE as ALLOW_ONCE
from .permission import REJECT as REJECT
from .permission import SWITCH_SESSION as SWITCH_SESSION
from .permission import Outcome as Outcome
from .permission import outcome as outcome
from .permission import permission_params as permission_params

TYPE_CHECKING = False  # the command's module is loaded when it runs
if TYPE_CHECKING:
    from . import main as main

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

"""The ACP face's session events: the person's prompt, the model's text replies, and
the agent's answers to the person's own commands.

They are defined in faces/ (`stockade.faces.events`), beside every event a shipped face
writes, so the CLI decodes an ACP session's log without importing this face.
"""

from __future__ import annotations

from ..faces import ACP_EVENTS as ACP_EVENTS
from ..faces import CommandAnswered as CommandAnswered
from ..faces import PromptReceived as PromptReceived
from ..faces import ReplyGiven as ReplyGiven

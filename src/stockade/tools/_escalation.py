"""Pure escalation rules and their model-facing texts: one approved wider retry.

Each non-grant outcome has its own text, and none of them runs anything.
"""

from __future__ import annotations

from ..vocab import SandboxMode, rejection_text

PAIRED = (
    "sandbox_permissions and justification go together: give both to ask the user for "
    "one wider retry, or neither. Nothing ran."
)
NOT_ADVERTISED = (
    "sandbox_permissions is not available here: this deployment runs commands without a "
    "sandbox, so there is nothing to widen. Nothing ran."
)
NO_SESSION = (
    "escalation needs a session to ask the user in; a direct caller cannot escalate. Nothing ran."
)
NO_APPROVAL_SERVICE = (
    "escalation is not available: this deployment has no approval service to ask the "
    "user through. Nothing ran; do not retry with sandbox_permissions."
)
CANCELLED = "the escalation request was cancelled before the user decided. Nothing ran."


def not_wider(requested: SandboxMode, current: SandboxMode) -> str | None:
    """The refusal text when `requested` does not widen THIS call's mode, else None."""
    if requested.is_wider_than(current):
        return None
    return (
        f'sandbox_permissions "{requested.value}" is not wider than this call\'s current '
        f'mode "{current.value}": nobody was asked and nothing ran. Run the command without '
        "sandbox_permissions."
    )


def rejected(requested: SandboxMode) -> str:
    return (
        f"{rejection_text(requested)}. Nothing ran. Do not ask again for this command in this turn."
    )


def already_rejected(requested: SandboxMode) -> str:
    return (
        f"{rejection_text(requested)} earlier in this turn; it may not be asked again. Nothing ran."
    )


def unavailable(requested: SandboxMode, detail: str | None) -> str:
    why = f" ({detail})" if detail else ""
    return (
        f'escalating to "{requested.value}" is unavailable{why}: the approval policy does '
        "not allow asking, or nobody can answer. Nothing ran; do not retry with "
        "sandbox_permissions."
    )


def granted(requested: SandboxMode) -> str:
    return f'[escalation granted once: this call ran under "{requested.value}"]'

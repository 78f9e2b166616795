"""The bash tool's model-facing vocabulary: JSON Schemas, descriptions, fixed texts (pure)."""

from __future__ import annotations

from typing import Any, Final

from ..vocab import WITH_NETWORK, SandboxMode, allowed_modes, denial_marker

BASH: Final = "bash"
JOB_OUTPUT: Final = "job_output"
KILL_JOB: Final = "kill_job"

BASH_DESCRIPTION: Final = (
    "Run a shell command with bash -c. Commands run under a file sandbox; the current "
    "mode is stated in the sandbox policy message. Attempt commands even when they may "
    "be refused: the kernel decides, not a guess. When the sandbox refuses a file "
    f"effect the result ends with a marker such as {denial_marker(SandboxMode.READ_ONLY)}: "
    "the command ran and the kernel refused that effect. Never try to work around a "
    "denial (other paths, other tools, copies, symlinks)."
)
# Only where commands are confined: there each session has a private temp directory.
TEMP_DESCRIPTION: Final = (
    " Put temporary files in $TMPDIR (the session's own directory, named in the sandbox "
    "policy message), not in /tmp."
)
# A command's listing shows the empty mount points that block protected paths it
# could otherwise create (issue 22): the model must not take them for its own.
PLACEHOLDER_DESCRIPTION: Final = (
    " Read-only files or directories you did not create (such as an empty stockade.yml, "
    ".vscode or .claude, or an .mcp.json naming no server, in the workspace) are the "
    "sandbox's placeholders: they keep repository metadata and tool settings from being "
    "created; leave them alone."
)
ESCALATION_DESCRIPTION: Final = (
    " If a command was denied and the effect is needed, retry the SAME command once "
    "with sandbox_permissions set to the narrowest sufficient mode and a justification "
    "the user will read; the user is asked, and a grant applies to that one call only."
    " When the policy message says network is off and a command needs the network, "
    f'run it with sandbox_permissions "{WITH_NETWORK}" and a justification (a refused '
    "connection leaves no marker, so ask up front); it runs once with network on if "
    "the user approves. When the result says network access to HOST:PORT was denied "
    f'(network allowlist), retry once with sandbox_permissions "{WITH_NETWORK}", '
    "network_destinations naming exactly those HOST:PORT, and a justification: if the "
    "user approves, that one call may also reach them."
)


def bash_schema(*, confines: bool) -> dict[str, Any]:
    """The bash tool's schema; escalation fields exist exactly when the executor confines."""
    properties: dict[str, Any] = {
        "command": {"type": "string", "description": "The command, run as bash -c COMMAND."},
        "workdir": {
            "type": "string",
            "description": "Working directory (relative to the workspace root); default: the root.",
        },
        "timeout_ms": {
            "type": "integer",
            "minimum": 1,
            "description": "Kill the command after this many milliseconds.",
        },
        "background": {
            "type": "boolean",
            "description": "Start as a background job and return its id at once; read it "
            "with job_output.",
        },
    }
    description = BASH_DESCRIPTION
    if confines:
        description += TEMP_DESCRIPTION + PLACEHOLDER_DESCRIPTION + ESCALATION_DESCRIPTION
        properties["sandbox_permissions"] = {
            "type": "string",
            "enum": [*allowed_modes(), WITH_NETWORK],
            "description": "Ask the user to run THIS call once under this wider mode (only "
            f'after a denial), or "{WITH_NETWORK}": once with network access, under the '
            "current mode. Requires justification.",
        }
        properties["network_destinations"] = {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": f'Only with sandbox_permissions "{WITH_NETWORK}": the '
            "destinations THIS call needs, each exactly `host:port` or `ip:port` (an IPv6 "
            "address in brackets: `[::1]:443`; no wildcard, CIDR or port-less entry). The "
            "user is asked for these; if approved, this one call reaches them in addition "
            "to the session's allowlist, and nothing else changes. Without it, "
            f'"{WITH_NETWORK}" asks for unrestricted network access.',
        }
        properties["justification"] = {
            "type": "string",
            "description": "Why the wider mode or the network is needed, shown to the user; "
            "requires sandbox_permissions.",
        }
    return {
        "name": BASH,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": ["command"],
            "additionalProperties": False,
        },
    }


def job_output_schema() -> dict[str, Any]:
    return {
        "name": JOB_OUTPUT,
        "description": "Output of a background job since the last read, and its status.",
        "parameters": {
            "type": "object",
            "properties": {"job_id": {"type": "string"}},
            "required": ["job_id"],
            "additionalProperties": False,
        },
    }


def kill_job_schema() -> dict[str, Any]:
    return {
        "name": KILL_JOB,
        "description": "Stop a background job and every process it started.",
        "parameters": {
            "type": "object",
            "properties": {"job_id": {"type": "string"}},
            "required": ["job_id"],
            "additionalProperties": False,
        },
    }


def escalation_hint() -> str:
    return (
        "To retry this exact command once with wider file access, call bash again with the "
        "same command, sandbox_permissions set to the narrowest sufficient mode, and a "
        "justification; the user will be asked."
    )


def network_escalation_hint(destinations: tuple[str, ...], *, denied: bool = False) -> str:
    """The sanctioned retry after the proxy refused `destinations` (network allowlist);
    `denied`: some refused destination matched a deny entry, which no grant lifts."""
    text = ""
    if destinations:
        listed = ", ".join(f'"{where}"' for where in destinations)
        text = (
            "To reach the refused destination once, call bash again with the same command, "
            f'sandbox_permissions "{WITH_NETWORK}", network_destinations [{listed}], and a '
            "justification; the user will be asked, and a grant applies to that one call only."
        )
    if denied:
        text += (" " if text else "") + (
            "A destination this deployment's network_deny names stays refused: no "
            "escalation reaches it."
        )
    return text

"""The harness's tools as MCP tools, its results as MCP results, and the status resource.

One source of truth: every MCP tool is `harness.tool_schemas()`'s entry with
`parameters` as its `inputSchema`, plus annotations (hints for clients; the sandbox,
not the hint, decides). A result's text is exactly what the harness gives the model;
its facts ride as structured content. Pure: dicts in, dicts out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..tools import ToolResult

# Per tool: MCP ToolAnnotations (wire names). A tool the harness adds later and this
# table does not know gets no annotations (clients then assume the worst).
ANNOTATIONS: Final[Mapping[str, Mapping[str, Any]]] = {
    "bash": {
        "title": "Run a shell command in the sandbox",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    },
    "job_output": {
        "title": "Read a background job's output",
        "readOnlyHint": True,
        "openWorldHint": False,
    },
    "kill_job": {
        "title": "Stop a background job",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    },
    "read_file": {"title": "Read a file", "readOnlyHint": True, "openWorldHint": False},
    "write_file": {
        "title": "Write a file",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    },
    "edit_file": {
        "title": "Edit a file",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    },
}

STATUS_URI: Final = "stockade://session/status"
STATUS_NAME: Final = "sandbox_status"


def mcp_tools(schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """MCP `Tool` objects (wire shape) for the harness's function-calling schemas."""
    tools = []
    for schema in schemas:
        tool: dict[str, Any] = {
            "name": schema["name"],
            "description": schema["description"],
            "inputSchema": schema["parameters"],
        }
        annotations = ANNOTATIONS.get(schema["name"])
        if annotations is not None:
            tool["annotations"] = dict(annotations)
        tools.append(tool)
    return tools


def call_result(result: ToolResult) -> dict[str, Any]:
    """An MCP `CallToolResult` (wire shape): the harness's text, its facts structured."""
    return {
        "content": [{"type": "text", "text": result.text}],
        "structuredContent": {"call_id": result.call_id, "tool": result.name, **result.facts},
        "isError": result.is_error,
    }


def fingerprint(name: str, arguments: Any) -> str:
    """A digest of one call's tool and arguments: a retried call that carries an
    answer must carry these exactly (key order aside)."""
    canonical = json.dumps([name, arguments], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def status(
    *,
    session_id: str,
    workspace_root: str | None,
    sandbox_mode: str,
    approval_policy: str,
    network: str | None,
    preset: str | None,
    confines: bool,
    policy_text: str | None,
) -> dict[str, Any]:
    """The `sandbox_status` resource: the session's effective policy, read-only.

    Changing it is the host's decision (`stockade mcp --mode/--approval/--preset`,
    or the composition), never a tool the model calls.
    """
    return {
        "session_id": session_id,
        "workspace_root": workspace_root,
        "sandbox_mode": sandbox_mode,
        "approval_policy": approval_policy,
        "network": network,
        "preset": preset,
        "sandboxed": confines,
        "escalation": "asked through the MCP client (elicitation)"
        if approval_policy == "ask"
        else "disabled by the approval policy",
        "policy": policy_text,
    }


def instructions(
    session_id: str | None, workspace_root: str | None, policy_text: str | None
) -> str:
    """The server's instructions: what the tools are, the session, its policy."""
    parts = [
        "stockade runs your shell commands and file edits under a kernel-enforced file "
        "sandbox. Use the bash, read_file, write_file and edit_file tools for work in the "
        "workspace; background jobs are read with job_output and stopped with kill_job."
    ]
    if session_id is not None:
        parts.append(
            f"stockade session: {session_id} (workspace root: {workspace_root}). "
            f"Its policy is readable as the resource {STATUS_URI}."
        )
    if policy_text:
        parts.append(policy_text)
    parts.append(
        "A request for wider access (sandbox_permissions with a justification) is put to "
        "the person through this client; only their approval runs it, once."
    )
    return "\n\n".join(parts)

"""Model-facing text of a shell result or a job report (pure)."""

from __future__ import annotations

from ..messages import ConnectionsRefused, JobReport, NetworkConnection, NetworkRequest, ShellResult
from ..vocab import (
    DENIAL_INSTRUCTION,
    READ_DENIED_HINT,
    Network,
    SandboxMode,
    denial_marker,
    network_denial_marker,
    request_refusal_marker,
)
from ._classify import fresh_view_causes, network_cause, tool_directory_causes


def refused_destinations(connections: tuple[NetworkConnection, ...]) -> tuple[str, ...]:
    """HOST:PORT of each destination the proxy refused, once each, in order."""
    return tuple(dict.fromkeys(c.destination for c in connections if not c.allowed))


# Refused requests a result names one by one; beyond, a count (the log has each).
MAX_REQUEST_MARKERS = 5


def refused_requests(requests: tuple[NetworkRequest, ...]) -> tuple[str, ...]:
    """The reason of each request to a ruled host the proxy refused, once each, in order."""
    return tuple(dict.fromkeys(r.reason for r in requests if not r.allowed))


def _request_markers(requests: tuple[NetworkRequest, ...]) -> list[str]:
    reasons = refused_requests(requests)
    markers = [request_refusal_marker(reason) for reason in reasons[:MAX_REQUEST_MARKERS]]
    if len(reasons) > MAX_REQUEST_MARKERS:
        more = len(reasons) - MAX_REQUEST_MARKERS
        markers.append(f"[sandbox: {more} more network request(s) refused for other reasons]")
    return markers


def _network_markers(
    connections: tuple[NetworkConnection, ...],
    refused: ConnectionsRefused | None = None,
    requests: tuple[NetworkRequest, ...] = (),
) -> list[str]:
    markers = [network_denial_marker(where) for where in refused_destinations(connections)]
    markers += _request_markers(requests)
    if refused is not None:
        many = "connection was" if refused.count == 1 else "connections were"
        markers.append(
            f"[sandbox: {refused.count} network {many} refused before anything of "
            f"{'it' if refused.count == 1 else 'them'} was read: {refused.reason}; close "
            "connections you no longer use]"
        )
    return markers


def _streams(stdout: str, stderr: str, stdout_dropped: int, stderr_dropped: int) -> list[str]:
    parts: list[str] = []
    if stdout:
        parts.append(stdout.rstrip("\n"))
    if stderr:
        parts.append(f"[stderr]\n{stderr.rstrip(chr(10))}")
    for name, dropped in (("stdout", stdout_dropped), ("stderr", stderr_dropped)):
        if dropped:
            parts.append(f"[{name}: {dropped} bytes dropped from the middle of the output]")
    return parts


def _causes(
    mode: SandboxMode,
    network: Network,
    stderr: str,
    connections: tuple[NetworkConnection, ...],
) -> list[str]:
    """The line naming the sandbox's network setting as a failure's cause, if any."""
    if not mode.confines:
        return []
    line = network_cause(network, stderr, connections)
    return [] if line is None else [line]


def render_result(result: ShellResult) -> str:
    """What the model sees; a denied result ends with the marker and the instruction."""
    parts = _streams(result.stdout, result.stderr, result.stdout_dropped, result.stderr_dropped)
    if result.timed_out:
        parts.append(
            f"[timed out after {result.duration:.1f}s; the command's processes were killed]"
        )
    parts.append(f"[exit code: {result.exit_code}]")
    if result.note:
        parts.append(result.note)
    parts += _network_markers(result.connections, result.connections_refused, result.requests)
    parts += _causes(result.mode, result.network, result.stderr, result.connections)
    if result.denied:
        parts.append(denial_marker(result.mode))
        parts.append(DENIAL_INSTRUCTION)
        if result.read_denied:
            parts.append(READ_DENIED_HINT)
        else:
            parts += tool_directory_causes(
                result.mode, result.stderr, result.stdout, result.writable
            )
        parts += fresh_view_causes(result.unseen, result.network)
    return "\n".join(parts)


def render_job(report: JobReport) -> str:
    """A background job's new output and status, in the same vocabulary."""
    if report.queue_position is not None:
        ahead = report.queue_position
        waiting = "next to start" if ahead == 0 else f"{ahead} of its session's jobs ahead"
        parts = [f"[job {report.id}: queued, {waiting}]"]
    else:
        parts = [f"[job {report.id}: {report.state}]"]
    if report.runner_failed and report.exit_code is not None:
        # Recognised in-band: the runner ran and printed its failure, so the command
        # may have started (docs/security.md); what it wrote follows.
        parts.append(
            f"[sandbox unavailable: {report.runner_failure}; the sandbox runner reported "
            "a failure after the command may have started; its output is below]"
        )
    parts += _streams(report.stdout, report.stderr, report.stdout_dropped, report.stderr_dropped)
    if report.runner_failed and report.exit_code is None:
        # The runner never started (its spawn failed): nothing ran.
        parts.append(f"[sandbox unavailable: {report.runner_failure}; the command did not run]")
    elif report.state not in ("running", "queued"):
        parts.append(f"[exit code: {report.exit_code}]")
    if report.note:
        parts.append(report.note)
    parts += _network_markers(report.connections, report.connections_refused, report.requests)
    parts += _causes(report.mode, report.network, report.stderr, report.connections)
    if report.denied:
        parts.append(denial_marker(report.mode))
        parts.append(DENIAL_INSTRUCTION)
        if report.read_denied:
            parts.append(READ_DENIED_HINT)
        else:
            parts += tool_directory_causes(
                report.mode, report.stderr, report.stdout, _policy_writable(report)
            )
        parts += fresh_view_causes(report.unseen, report.network)
    return "\n".join(parts)


def _policy_writable(report: JobReport) -> tuple[str, ...]:
    """The directories a job's policy lets it write (its report has no `writable`)."""
    policy = report.policy
    roots = (policy.workspace_root, policy.temp_dir, *policy.extra_roots, policy.tool_cache)
    return tuple(root for root in roots if root)


def result_causes(result: ShellResult) -> list[str]:
    """The cause lines `render_result` gives a result beside its output (the network
    setting behind a failure; for a denial, a toolchain's directory or a host path a
    fresh view hid): for a face that shows the output itself (`stockade run`)."""
    lines = _causes(result.mode, result.network, result.stderr, result.connections)
    if result.denied:
        if not result.read_denied:
            lines += tool_directory_causes(
                result.mode, result.stderr, result.stdout, result.writable
            )
        lines += fresh_view_causes(result.unseen, result.network)
    return lines


def protected_refusals(result: ShellResult, workdir: str) -> tuple[str, ...]:
    """The paths a denied workspace-write result names inside a root it could write
    (relative ones taken from `workdir`): what a protection refused (repository
    metadata, tool settings), which no confining mode lifts."""
    if not result.denied or result.read_denied or result.mode is not SandboxMode.WORKSPACE_WRITE:
        return ()
    import os

    from ._denials import named_paths

    found: list[str] = []
    for word in named_paths(result.stderr, result.stdout):
        path = os.path.normpath(os.path.join(workdir, word))
        inside = any(
            path == root or path.startswith(root.rstrip("/") + "/") for root in result.writable
        )
        if inside and path not in found:
            found.append(path)
    return tuple(found)

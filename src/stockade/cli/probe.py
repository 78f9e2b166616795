"""`stockade probe`: whether the composition's commands are confined at all, which
sandbox backends work here and why not, what each enforces in each mode, which one a
command gets, and the trust-base checks (text, or one JSON object).

What it finds on disk is named in it (the deny_read paths hidden under the root, a
`.env` a command made included; protected paths; the runner), so the whole text is
shown through `stockade.shown` (escaped, its line breaks kept) and the JSON with
the same characters as JSON escapes: a file name cannot act on the terminal.
"""

from __future__ import annotations

import os
import sys

import attrs

from ..errors import SandboxUnavailable
from ..executor import planned_here, render_policy
from ..faces import load_face_composition
from ..limits import Enforcement, HostLimits, SessionLimits, format_value
from ..modes import SandboxMode
from ..policy import knobs
from ..sandbox import (
    guard_rules,
    judge,
    render_selection,
    render_trust,
    select_backend,
    trust_checks,
)
from ..sessionlog import resolve_state_dir
from ..shown import escaped_lines, json_escaped
from ..trust import host_temp_roots, installation_paths
from ..trust import secrets as deny_read
from .errors import EXIT_UNAVAILABLE
from .settings import NO_PROVIDER, cli_settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from ..config import Plan
    from ..rules import Rule


def run_probe(args: argparse.Namespace) -> int:
    settings = cli_settings(
        load_face_composition(args.config), mode=None, root=None, backend=args.backend
    )
    provider, hidden = settings.provider, settings.deny_read
    if provider is None or hidden is None:
        detail = NO_PROVIDER
        if settings.unconfined is not None:
            # Nothing to probe, and the one line says what that means for its commands.
            detail += f", and its commands run WITHOUT a sandbox {_unconfined(settings.unconfined)}"
        raise SandboxUnavailable(detail)
    selection = select_backend(provider, probe_all=True)
    trust = trust_checks(
        root=settings.root,
        temp_roots=host_temp_roots(),
        state_dir=str(resolve_state_dir()),
        composition=next(iter(provider.trusted_files), None),
        bwrap_path=provider.bwrap_path,
        protected_extra=provider.protected_paths,
    )
    refused = None
    if selection.backend is not None:
        # What `run` and `exec` would ask before using it, here, in workspace-write.
        refused = judge(
            selection.backend.as_runner(),
            SandboxMode.WORKSPACE_WRITE,
            settings.root,
            host_temp_roots(),
            guard_rules(provider, installation_paths()),
        ).refusal
    limits_host, limits = planned_here(settings.executor.command_limits)
    beside = _beside_root(settings)
    rules, rules_refused = _rules_in_force(settings)
    if args.json:
        import msgspec

        from ..messages import ProviderReport

        report = ProviderReport(
            platform=selection.platform,
            chain=selection.chain,
            candidates=selection.candidates,
            selected=selection.backend.name if selection.backend else None,
            detail=None if selection.backend else selection.detail,
            trust=trust,
            refused_here=refused,
        )
        # The environment policy is the executor's, not the provider's: beside the report.
        reply = {
            **msgspec.to_builtins(report),
            "environment": settings.executor.env.describe(settings.executor.withheld),
            "deny_read": deny_read.describe(hidden, settings.root),
            "limits": {
                "cgroup": limits_host.cgroup,
                "controllers": sorted(limits_host.controllers),
                "detail": limits_host.reason,
                "command": [
                    {
                        "name": e.name,
                        "value": e.value,
                        "mechanism": str(e.mechanism),
                        "claim": str(e.claim),
                        "detail": e.detail,
                    }
                    for e in limits.values()
                ],
                "session": msgspec.to_builtins(attrs.asdict(settings.executor.session_limits)),
            },
            "beside_root": beside,
            "rules": _rules_json(rules, rules_refused),
            "network": _network(settings),
            "commands": _commands(settings),
        }
        sys.stdout.write(json_escaped(msgspec.json.encode(reply).decode()) + "\n")
    else:
        text = (
            _render_commands(_commands(settings))
            + render_selection(selection, refused_here=refused)
            + render_trust(trust)
            + render_policy(settings.executor.env, settings.executor.withheld)
            + deny_read.render(hidden, settings.root)
            + _render_limits(limits_host, limits, settings.executor.session_limits)
            + _render_beside(beside)
            + _render_rules(rules, rules_refused)
            + _render_network(_network(settings))
        )
        sys.stdout.write(escaped_lines(text))
    return 0 if selection.backend is not None else EXIT_UNAVAILABLE


def _commands(settings: Plan) -> dict[str, Any]:
    """Whether the composition's commands run in the sandbox below at all: one whose
    executor confines nothing (`stockade.bash.local`, or no executor entry) runs them
    WITHOUT one, whatever backend is usable here, and `run` and `exec` then default to
    danger-full-access. A fact of the whole configuration, so it is said here, once,
    not on every call."""
    return {
        "confined": settings.unconfined is None,
        "default_mode": settings.mode.value,
        "unconfined": settings.unconfined,
    }


def _render_commands(commands: dict[str, Any]) -> str:
    if commands["confined"]:
        return (
            "commands: in read-only and workspace-write, confined by the backend selected "
            f"below (the default mode: {commands['default_mode']})\n"
        )
    return (
        "commands: run WITHOUT a sandbox, whatever is usable below "
        f"{_unconfined(commands['unconfined'])}\n"
    )


def _unconfined(reason: str) -> str:
    """Why commands run unconfined, what they get instead, and the fix."""
    return (
        f"({reason}); they default to danger-full-access, and --mode read-only or "
        f"workspace-write is refused. To confine commands, mount "
        f"{knobs.CONFINING_EXECUTOR!r} as the executor beside a "
        f"{knobs.SANDBOX_PROVIDER!r} provider entry"
    )


def _beside_root(settings: Plan) -> dict[str, object]:
    """What a workspace-write call may write beside its root here: the extra writable
    roots (each judged as a session would), and the tool caches (where, for which
    tools, or why none). Nothing is made."""
    from ..errors import ConfigError
    from ..sandbox import tool_caches
    from ..trust import check_extra_roots

    provider, root = settings.provider, settings.root
    assert provider is not None  # run_probe refused a composition without one
    hidden = settings.hidden()
    roots: list[dict[str, object]] = []
    for path in provider.writable_roots:
        try:
            (real,) = check_extra_roots((path,), hidden)
            roots.append({"path": real, "refused": None})
        except ConfigError as error:
            roots.append({"path": path, "refused": str(error)})
    directory = None
    why = None
    if not provider.tool_caches:
        why = "off in the composition (tool_caches: off)"
    else:
        directory = provider.tool_cache_directory or tool_caches.default_directory()
        if directory is None:
            why = "no home directory to keep them in (set HOME or XDG_CACHE_HOME)"
        elif not tool_caches.clear_of(directory, (root,)):
            why = f"{directory} lies in or over the workspace root {root}: none for calls there"
            directory = None
    # The agents granted: where each is reached, or why it is not (nothing is launched
    # for a probe but what gpg would launch itself).
    from ..sandbox import agents

    granted = agents.grant(provider.agents) if provider.agents else agents.NO_GRANT
    reached = {agent: (host, view) for agent, host, view in granted.sockets}
    return {
        "writable_roots": roots,
        "agents": {
            agent: {
                "granted": agent in provider.agents,
                "socket": reached[agent][0] if agent in reached else None,
                "reached_at": reached[agent][1] if agent in reached else None,
            }
            for agent in agents.AGENTS
        },
        "agent_gaps": list(granted.gaps),
        "tool_caches": {
            "directory": directory,
            "tools": list(provider.tool_cache_tools) if directory else [],
            "why_none": why,
        },
    }


def _rules_in_force(settings: Plan) -> tuple[tuple[Rule, ...] | None, str | None]:
    """The command rules `run` and `exec` judge by here (docs/rules.md), or None and why
    the composition's cannot be used (`run` and `exec` then refuse with that reason)."""
    from ..errors import ConfigError

    try:
        return settings.rules.rules, None
    except ConfigError as error:
        return None, str(error)


def _rules_json(rules: tuple[Rule, ...] | None, refused: str | None) -> dict[str, Any]:
    shown = None
    if rules is not None:
        shown = [
            {"name": r.name, "decision": str(r.decision), "words": r.shown(), "reason": r.reason}
            for r in rules
        ]
    return {"in_force": shown, "refused": refused}


def _render_rules(rules: tuple[Rule, ...] | None, refused: str | None) -> str:
    if rules is None:
        return f"\ncommand rules: REFUSED: {refused}\n"
    if not rules:
        return "\ncommand rules: none (docs/rules.md)\n"
    from ..rules import render_rules

    lines = ["", "command rules (docs/rules.md; judge one: stockade rules check -- CMD):"]
    lines += [f"  {line}" for line in render_rules(rules)]
    return "\n".join(lines) + "\n"


def _network(settings: Plan) -> dict[str, Any]:
    """The network allowlist's rules here (docs/network.md): the destinations, and the
    ruled hosts of issue 41, their credentials by the names of their variables (never
    a value, which a probe does not read) and their request rules by name."""
    executor = settings.executor
    return {
        "default": settings.network.value,
        "allow": list(executor.network_allow),
        "deny": list(executor.network_deny),
        "credentials": [
            {
                "host": rule.host,
                "form": rule.form,
                "header": rule.header,
                "scheme": rule.scheme,
                "placeholder_env": rule.placeholder_env,
                "value_from": rule.value_from,
            }
            for rule in executor.network_credentials
        ],
        "requests": [
            {
                "name": rule.name,
                "host": rule.host,
                "methods": sorted(rule.methods) if rule.methods is not None else None,
                "paths": list(rule.paths) if rule.paths is not None else None,
            }
            for rule in executor.network_requests
        ],
        "upstream_ca": executor.network_upstream_ca,
        # Each harness names its own directory in it (`network.trust_directory`).
        "trust_directory_in": os.path.dirname(executor.network_trust_directory)
        if executor.network_trust_directory
        else None,
    }


def _render_network(network: dict[str, Any]) -> str:
    lines = ["", f"network (docs/network.md; the default here: {network['default']}):"]
    allow, deny = network["allow"], network["deny"]
    lines.append(f"  allowlist: {' '.join(allow) if allow else 'nothing (network_allow)'}")
    if deny:
        lines.append(f"  never: {' '.join(deny)}")
    credentials, requests = network["credentials"], network["requests"]
    if not (credentials or requests):
        lines.append("  ruled hosts: none (network_credentials, network_requests)")
        return "\n".join(lines) + "\n"
    lines.append(
        "  ruled hosts (their TLS terminated by the proxy, under network allowlist only; "
        "a placeholder reaches nothing under `on`):"
    )
    for rule in credentials:
        if rule["placeholder_env"] is not None:
            into = f"{rule['placeholder_env']} holds a placeholder, swapped"
            into += f" in {rule['header']}" if rule["header"] else " in its headers"
        else:
            scheme = f"{rule['scheme']} " if rule["scheme"] else ""
            into = f"{rule['header']}: {scheme}<credential> set on every request"
        lines.append(
            f"  credential for {rule['host']}: {into}; the value from the harness's "
            f"{rule['value_from']}, which no command gets"
        )
    for rule in requests:
        lines.append(f"  requests to {rule['host']}: {rule['name']}")
    upstream = network["upstream_ca"] or "the system's CA store"
    lines.append(f"  their origins checked against: {upstream}")
    if network["trust_directory_in"]:
        lines.append(
            "  the bundle a command trusts (SSL_CERT_FILE and the like): made in a new "
            f"stockade-trust-* directory of {network['trust_directory_in']} when the "
            "harness starts, read-only in every call"
        )
    return "\n".join(lines) + "\n"


def _render_beside(beside: dict[str, Any]) -> str:
    lines = ["", "Beside the root (workspace-write):"]
    roots = beside["writable_roots"]
    if not roots:
        lines.append("  extra writable roots: none (writable_roots, --writable DIR)")
    for entry in roots:
        if entry["refused"]:
            lines.append(f"  extra writable root {entry['path']}: REFUSED: {entry['refused']}")
        else:
            lines.append(f"  extra writable root: {entry['path']}")
    caches = beside["tool_caches"]
    if caches["directory"]:
        lines.append(
            f"  tool caches: {caches['directory']} ({', '.join(caches['tools'])}); "
            "read-only in read-only, never used by danger-full-access (stockade cache show)"
        )
    else:
        lines.append(f"  tool caches: none ({caches['why_none']})")
    for agent, key in (("ssh", "allow_ssh_agent"), ("gpg", "allow_gpg_agent")):
        found = beside["agents"][agent]
        if not found["granted"]:
            lines.append(f"  {agent} agent: out of reach ({key}: false)")
        elif found["socket"] is not None:
            restricted = "" if found["socket"] == found["reached_at"] else f" ({found['socket']})"
            lines.append(
                f"  {agent} agent: reachable at {found['reached_at']}{restricted}, its key "
                f"files hidden ({key}: true; every call's claim is partial for it)"
            )
    lines += [f"  {gap}" for gap in beside["agent_gaps"]]
    return "\n".join(lines) + "\n"


def _render_limits(host: HostLimits, limits: dict[str, Enforcement], session: SessionLimits) -> str:
    """Each command's limits as they would be held here, and the session's."""
    if host.cgroup is not None:
        where = f"cgroup {host.cgroup} ({', '.join(sorted(host.controllers))}): {host.reason}"
    else:
        where = f"no usable cgroup ({host.reason}): rlimits only"
    lines = [f"limits per command (docs/limits.md), held by {where}"]
    for e in limits.values():
        value = format_value(e.name, e.value)
        lines.append(f"  {e.name:<13} {value:<12} {e.mechanism:<10} {e.claim:<9} {e.detail}")
    shown = ", ".join(
        f"{name} {format_value(name, value)}" for name, value in attrs.asdict(session).items()
    )
    lines.append(f"limits per session: {shown}")
    return "\n".join(lines) + "\n"

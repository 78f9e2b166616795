"""The policy-context message: one sourced message stating the complete current policy.

Before each model step the host renders the one desired message (every knob's
effective value, explicit even when it is a default) and compares it with the
last `context/policy` event in the session's log. Only a difference is appended, so
several switches between two steps yield one message with the final state, and a
resumed session (or a default changed while the process was down) is told at its
first step. The log is the only "last told" record.

Pure: no trio, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..events import SessionEvent, find_last
from ..rules import DEFAULT_RULES, Rule, render_forbidden
from ..vocab import (
    WITH_NETWORK,
    ApprovalPolicy,
    Network,
    SandboxMode,
    allowed_modes,
    denial_marker,
)
from .knobs import PolicyDefaults, check_mode_available, knob_state, resolve_workspace_root

POLICY_SOURCE = "sandbox:policy"


class PolicyContext(SessionEvent, kw_only=True, frozen=True, tag="context/policy"):
    """The complete policy message as the model was given it.

    `text` is what the model saw; the other fields repeat its facts for readers of
    the log. Always written with `source` (e.g. "sandbox:policy").
    """

    text: str
    sandbox_mode: SandboxMode
    workspace_root: str
    approval_policy: ApprovalPolicy
    # The network a call gets (`on` under danger-full-access); None in messages
    # written before the network knob existed.
    network: Network | None = None
    # The session's private temp directory (its commands' TMPDIR) and the host temp
    # roots granted beside it, as the message states them; None / () when it has none.
    temp_dir: str | None = None
    host_temp: tuple[str, ...] = ()
    # The extra writable roots and the sandbox-private tool caches' directory, as the
    # message states them; () / None when there are none.
    writable_roots: tuple[str, ...] = ()
    tool_cache: str | None = None
    # The agents whose sockets its commands reach ("ssh", "gpg"), as it states them.
    agents: tuple[str, ...] = ()


_MODE_TEXT = {
    SandboxMode.READ_ONLY: (
        "Shell commands may read files but cannot create, change or delete any file: "
        "the kernel refuses every file write."
    ),
    SandboxMode.WORKSPACE_WRITE: (
        "Shell commands may read files, and may create, change and delete files only "
        "under the workspace root (and the temporary directory below); the kernel "
        "refuses file writes anywhere else, and to repository metadata and tool settings "
        "(.git/hooks, .git/config, .vscode, ...). Read-only placeholders you did not "
        "create (a 0-byte stockade.yml, an empty .vscode, an .mcp.json naming no server) "
        "keep those from being created: leave them alone."
    ),
    SandboxMode.DANGER_FULL_ACCESS: (
        "Shell commands run without file confinement: they may read and write every "
        "file the user can. No sandbox denial happens in this mode."
    ),
}


def _approval_text(mode: SandboxMode, policy: ApprovalPolicy) -> str:
    widest = mode is SandboxMode.DANGER_FULL_ACCESS
    if policy is ApprovalPolicy.ASK:
        if widest:
            return "There is no wider mode, so there is nothing to escalate to."
        return (
            "Escalation can be approved: when a command was denied a file effect it "
            "really needs, retry that same command once with sandbox_permissions set to "
            "the narrowest mode that suffices and a justification. The user is asked to "
            "approve that one run; every other command keeps this mode."
        )
    if widest:
        return "Escalation is disabled, and there is no wider mode anyway."
    return (
        "Escalation is disabled: a request for a wider mode fails closed without asking "
        "anyone, so do not request one. If a denied effect is needed, tell the user what "
        "was refused and why."
    )


def _network_text(mode: SandboxMode, network: Network, approval: ApprovalPolicy) -> str:
    if not mode.confines:
        return (
            "Network: on. danger-full-access allows everything, network included, whatever "
            "the network setting says."
        )
    if network is Network.ON:
        return "Network: on. Shell commands may use the network."
    if network is Network.ALLOWLIST:
        text = (
            "Network: allowlist. Shell commands reach only the destinations the operator "
            "listed, through a proxy set in HTTP_PROXY, HTTPS_PROXY and ALL_PROXY; "
            "connections to any other host fail."
        )
    else:
        text = (
            "Network: off. Shell commands run without network access: connections to "
            "other hosts fail. A refused connection shows only as the command's own error, "
            "with no sandbox marker."
        )
    if approval is ApprovalPolicy.ASK and network is Network.ALLOWLIST:
        return text + (
            " When a result says network access to HOST:PORT was denied and the command "
            f'needs it, run it once with sandbox_permissions "{WITH_NETWORK}", '
            "network_destinations naming those HOST:PORT, and a justification; the user is "
            "asked to approve that one run, and every other command keeps the allowlist."
        )
    if approval is ApprovalPolicy.ASK:
        return text + (
            " If a command really needs the network, run it once with sandbox_permissions "
            f'"{WITH_NETWORK}" and a justification; the user is asked to approve that one '
            "run, and every other command stays without network."
        )
    return text + " Network access cannot be requested in this session: do not ask for it."


def _temp_text(mode: SandboxMode, temp_dir: str | None, host_temp: Sequence[str]) -> str:
    if temp_dir is None:
        return "Temporary files: no temporary directory is writable; keep them in the workspace."
    text = (
        f"Temporary files: use $TMPDIR ({temp_dir}), a directory private to this session "
        "and removed when it ends (mktemp and most tools use it on their own)"
    )
    if mode is SandboxMode.READ_ONLY:
        return text + "; it is writable in workspace-write only."
    if host_temp:
        return text + (
            f". The host's shared temp directories ({', '.join(host_temp)}) are writable "
            "too, but every program on the host shares them: prefer $TMPDIR."
        )
    return text + (
        ". The host's shared temp directories (/tmp, /var/tmp) are not writable: do not use them."
    )


def _roots_text(mode: SandboxMode, writable_roots: Sequence[str]) -> str:
    where = ", ".join(writable_roots)
    if mode is SandboxMode.READ_ONLY:
        return f"Extra writable directories ({where}): writable in workspace-write only."
    return (
        f"Extra writable directories: {where}. Commands may create, change and delete "
        "files there as under the workspace root (repository metadata and tool settings "
        "inside them stay read-only)."
    )


def _cache_text(mode: SandboxMode, tool_cache: str) -> str:
    text = (
        f"Tool caches: package managers and build tools keep their caches in {tool_cache} "
        "(the cache variables set in every command's environment, such as $PIP_CACHE_DIR, "
        "$npm_config_cache, $CARGO_HOME, $GOCACHE and $XDG_CACHE_HOME, point there), "
        "private to the sandbox and shared by the user's sessions; do not point tools at "
        "~/.cache, ~/.npm or ~/.cargo"
    )
    if mode is SandboxMode.READ_ONLY:
        return text + "; they are readable here and writable in workspace-write only."
    return text + "."


_AGENT_TEXT = {
    "ssh": (
        "SSH agent: $SSH_AUTH_SOCK reaches the user's ssh agent, so ssh, scp and git "
        "over SSH authenticate with the user's keys; the key files in ~/.ssh stay "
        "unreadable (its config, known_hosts and *.pub are readable)."
    ),
    "gpg": (
        "GPG agent: gpg reaches the user's gpg-agent, so `git commit -S` and gpg "
        "--sign work with the user's keys; the secret keys in ~/.gnupg stay "
        "unreadable (its public keyring and settings are readable)."
    ),
}


def _rules_lines(rules: Sequence[Rule]) -> list[str]:
    """The command rules that forbid or ask, with their reasons (none: no line)."""
    listed = render_forbidden(rules)
    if not listed:
        return []
    return [
        "- Command rules, judged on every command before it runs, in every mode:",
        *(f"  {line}" for line in listed.split("\n")),
    ]


UNCONFINED_TEXT = (
    "This deployment runs shell commands WITHOUT a sandbox: nothing confines them, "
    "they may read, create, change and delete every file the user can, and no file "
    "effect is ever refused. No other sandbox mode is available here."
)


def render_policy_context(
    mode: SandboxMode,
    workspace_root: str,
    approval: ApprovalPolicy,
    *,
    sandboxed: bool = True,
    network: Network = Network.OFF,
    temp_dir: str | None = None,
    host_temp: Sequence[str] = (),
    writable_roots: Sequence[str] = (),
    tool_cache: str | None = None,
    agents: Sequence[str] = (),
    rules: Sequence[Rule] | None = None,
) -> str:
    """The message text for a model, stating every value explicitly.

    `sandboxed` False: the composition cannot confine (its only mode is
    danger-full-access), and the message says that commands run without a sandbox.
    `network` is the knob's value; under danger-full-access the message says `on`.
    `temp_dir`: the session's private temp directory (its commands' TMPDIR), and
    `host_temp` the host's shared temp roots the composition grants beside it;
    `writable_roots` the extra writable roots, `tool_cache` the tool caches' directory,
    `agents` the agents whose sockets commands reach. `rules`: the command rules in
    force (None: the default rules); those that forbid and those that ask are named.
    """
    told_rules = _rules_lines(DEFAULT_RULES if rules is None else rules)
    if not sandboxed:
        return "\n".join(
            [
                "Current sandbox and approval policy for this session "
                "(this replaces any earlier policy message):",
                f"- Sandbox: none. Sandbox mode: {mode.value}. Workspace root: {workspace_root}",
                f"  {UNCONFINED_TEXT}",
                "- Network: on. Nothing restricts network access.",
                f"- Approval policy: {approval.value}. {_approval_text(mode, approval)}",
                *told_rules,
            ]
        )
    lines = [
        "Current sandbox and approval policy for this session "
        "(this replaces any earlier policy message):",
        f"- Sandbox mode: {mode.value}. Workspace root: {workspace_root}",
        f"  {_MODE_TEXT[mode]}",
    ]
    if mode.confines:
        lines.append(f"  {_temp_text(mode, temp_dir, host_temp)}")
        if writable_roots:
            lines.append(f"  {_roots_text(mode, writable_roots)}")
        if tool_cache is not None:
            lines.append(f"  {_cache_text(mode, tool_cache)}")
        lines += [f"  {_AGENT_TEXT[agent]}" for agent in agents if agent in _AGENT_TEXT]
    lines += [
        f"- {_network_text(mode, network, approval)}",
        f"- Approval policy: {approval.value}. {_approval_text(mode, approval)}",
        *told_rules,
    ]
    if mode.confines:
        lines += [
            f"When the sandbox refuses a file effect, the command still runs and its "
            f"result carries {denial_marker(mode)}. Do not try to work around a denial.",
            "Do not avoid a command because you expect a denial: run it and let the "
            "sandbox decide.",
        ]
    lines.append(
        f"Modes from narrowest to widest: {' < '.join(allowed_modes())}. "
        "Modes govern file effects only; network access is the separate setting above."
    )
    return "\n".join(lines)


def desired_policy_context(
    events: Sequence[SessionEvent],
    defaults: PolicyDefaults,
    *,
    session_root: str | None,
    source: str = POLICY_SOURCE,
    temp_dir: str | None = None,
    host_temp: tuple[str, ...] = (),
    writable_roots: tuple[str, ...] = (),
    tool_cache: str | None = None,
    agents: tuple[str, ...] = (),
) -> PolicyContext:
    """The message the model should currently hold, as an (unstamped) event.

    `temp_dir`, `host_temp`: the session's private temp directory and the host temp
    roots granted beside it (the open session's; a log alone does not have them)."""
    state = knob_state(events, defaults)
    # A log that names a mode this composition cannot honour is never told as if it could.
    check_mode_available(state.sandbox_mode, defaults, f"sandbox mode {state.sandbox_mode.value!r}")
    root = resolve_workspace_root(session_root, defaults)
    return PolicyContext(
        text=render_policy_context(
            state.sandbox_mode,
            root,
            state.approval_policy,
            sandboxed=defaults.confines,
            network=state.network,
            temp_dir=temp_dir,
            host_temp=host_temp,
            writable_roots=writable_roots,
            tool_cache=tool_cache,
            agents=agents,
            rules=defaults.command_rules,
        ),
        sandbox_mode=state.sandbox_mode,
        workspace_root=root,
        approval_policy=state.approval_policy,
        network=state.effective_network,
        source=source,
        temp_dir=temp_dir,
        host_temp=host_temp,
        writable_roots=writable_roots if defaults.confines else (),
        tool_cache=tool_cache if defaults.confines else None,
        agents=agents if defaults.confines else (),
    )


def last_policy_context(
    events: Sequence[SessionEvent], source: str | None = None
) -> PolicyContext | None:
    """The last materialized policy message (from `source`, when given), or None."""
    found: PolicyContext | None = find_last(events, PolicyContext)
    if source is None or found is None or found.source == source:
        # The usual case, answered without walking the log: one source writes them.
        return found
    for event in reversed(events):
        if isinstance(event, PolicyContext) and event.source == source:
            return event
    return None


def policy_context_update(
    events: Sequence[SessionEvent],
    defaults: PolicyDefaults,
    *,
    session_root: str | None,
    source: str = POLICY_SOURCE,
    temp_dir: str | None = None,
    host_temp: tuple[str, ...] = (),
    writable_roots: tuple[str, ...] = (),
    tool_cache: str | None = None,
    agents: tuple[str, ...] = (),
) -> PolicyContext | None:
    """The message to append before the next step, or None when the last one still holds."""
    desired = desired_policy_context(
        events,
        defaults,
        session_root=session_root,
        source=source,
        temp_dir=temp_dir,
        host_temp=host_temp,
        writable_roots=writable_roots,
        tool_cache=tool_cache,
        agents=agents,
    )
    told = last_policy_context(events, source)
    if told is not None and told.text == desired.text:
        return None
    return desired

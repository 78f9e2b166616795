"""The agents' sockets a composition or session opts into (`allow_ssh_agent`,
`allow_gpg_agent`): where each agent listens, where the command reaches it, and which
files of its key directory stay readable while the keys themselves stay hidden.

The grant is a socket, never a key: the command can ask the agent to sign (ssh) or to
sign and decrypt (gpg), as the person's own tools do, and cannot read the key files
(deny_read keeps hiding everything in `~/.ssh` and `~/.gnupg` but the public parts
named here). For gpg the command is given the agent's *restricted* socket (its
`extra-socket`, made for forwarding to machines one trusts less) where the agent has
one: there the agent refuses to export a secret key, which the full socket would do
without asking for a key that has no passphrase. Standard library only.
"""

from __future__ import annotations

import os
import stat
import subprocess

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

SSH = "ssh"
GPG = "gpg"
AGENTS: tuple[str, ...] = (SSH, GPG)

# What stays readable in the key directories when their agent is granted: what ssh,
# gpg and git read to connect, sign and verify. Everything else there stays hidden
# (private keys have any name: `~/.ssh/github`, `~/.gnupg/private-keys-v1.d/`).
SSH_READABLE: tuple[str, ...] = ("config", "config.d", "known_hosts", "known_hosts2", "*.pub")
GNUPG_READABLE: tuple[str, ...] = (
    "pubring.kbx",
    "pubring.kbx~",
    "pubring.gpg",
    "trustdb.gpg",
    "tofu.db",
    "public-keys.d",
    "gpg.conf",
    "common.conf",
    "gpg-agent.conf",
    "dirmngr.conf",
    "S.gpg-agent",
)

# gpgconf is run by the harness, unconfined: only from the system's directories,
# never from a PATH a workspace directory may be on.
SYSTEM_BIN = ("/usr/bin", "/bin", "/usr/local/bin")


class AgentGrant:
    """What one call is granted: sockets (tuple[tuple[str, str, str], ...]: (agent,
    the host's socket, where the command reaches it), the host paths real), readable
    (tuple[tuple[str, tuple[str, ...]], ...]: (a key directory, the names in it that
    stay readable)), gaps (tuple[str, ...]: what each grant leaves open, or why an
    agent asked for is not granted; each said in the claim)."""

    __slots__ = ("gaps", "readable", "sockets")

    def __init__(
        self,
        sockets: tuple[tuple[str, str, str], ...] = (),
        readable: tuple[tuple[str, tuple[str, ...]], ...] = (),
        gaps: tuple[str, ...] = (),
    ) -> None:
        self.sockets, self.readable, self.gaps = sockets, readable, gaps

    def reachable(self, confined: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        """(agent, path the command reaches it at), from the confine sequence's
        (host socket, path) pairs (`Confined.agents`)."""
        where = dict(confined)
        return tuple(
            (agent, where.get(host, view)) for agent, host, view in self.sockets if host in where
        )


NO_GRANT = AgentGrant()


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def check_agents(names: Sequence[str]) -> tuple[str, ...]:
    """`names` as a grant list (known agents, in AGENTS' order), or ValueError."""
    unknown = [name for name in names if name not in AGENTS]
    if unknown:
        raise ValueError(f"unknown agent {unknown[0]!r} (known: {', '.join(AGENTS)})")
    return tuple(name for name in AGENTS if name in names)


def ssh_socket(environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the ssh agent's socket, real path; None) or (None, why there is none)."""
    named = environ.get("SSH_AUTH_SOCK", "")
    if not named:
        return None, "allow_ssh_agent: no ssh agent (SSH_AUTH_SOCK is not set), none granted"
    if not os.path.isabs(named) or not _is_socket(named):
        return None, f"allow_ssh_agent: SSH_AUTH_SOCK ({named}) names no socket, none granted"
    return os.path.realpath(named), None


def _gpgconf(environ: Mapping[str, str], *args: str) -> str:
    """gpgconf's output for `args` ("" without gpgconf or on failure), run with the
    caller's HOME and GNUPGHOME and the system's PATH alone."""
    found = (os.path.join(d, "gpgconf") for d in SYSTEM_BIN)
    gpgconf = next((path for path in found if os.access(path, os.X_OK)), None)
    if gpgconf is None:
        return ""
    env = {name: environ[name] for name in ("HOME", "GNUPGHOME", "LANG") if name in environ}
    env["PATH"] = ":".join(SYSTEM_BIN)
    try:
        done = subprocess.run(
            [gpgconf, *args], env=env, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout


_GPG_DIRS: dict[tuple[str, str, int], dict[str, str]] = {}


def gpg_dirs(environ: Mapping[str, str]) -> dict[str, str]:
    """`gpgconf --list-dirs` for this HOME and GNUPGHOME (kept per process: where gpg
    puts its sockets changes with neither); {} without gpgconf."""
    key = (environ.get("HOME", ""), environ.get("GNUPGHOME", ""), os.getuid())
    if key not in _GPG_DIRS:
        found: dict[str, str] = {}
        for line in _gpgconf(environ, "--list-dirs").splitlines():
            name, _, value = line.partition(":")
            found[name] = value.replace("%3a", ":").replace("%3A", ":")  # an escaped colon
        _GPG_DIRS[key] = found
    return _GPG_DIRS[key]


def gpg_socket(environ: Mapping[str, str]) -> tuple[tuple[str, str] | None, str | None]:
    """((the socket granted, real; where gpg looks for its agent), None), or (None,
    why none is). The restricted extra socket where the agent has one; the agent is
    started (`gpgconf --launch`, as gpg itself would) when it is not running."""
    dirs = gpg_dirs(environ)
    agent = dirs.get("agent-socket", "")
    if not os.path.isabs(agent):
        return None, "allow_gpg_agent: gpgconf is missing or names no agent socket, none granted"
    if not _is_socket(agent):
        _gpgconf(environ, "--launch", "gpg-agent")
        if not _is_socket(agent):
            return None, f"allow_gpg_agent: no gpg-agent listens at {agent}, none granted"
    extra = dirs.get("agent-extra-socket", "")
    if os.path.isabs(extra) and _is_socket(extra):
        return (os.path.realpath(extra), agent), None
    return (os.path.realpath(agent), agent), None


GPG_FULL_SOCKET_GAP = (
    "allow_gpg_agent: the gpg-agent has no restricted extra socket, so the command "
    "reaches its full socket, where a secret key without a passphrase can be exported"
)


def grant(
    agents: Sequence[str], environ: Mapping[str, str] = os.environ, *, home: str | None = None
) -> AgentGrant:
    """The sockets and readable key files of `agents` ("ssh", "gpg") for one call."""
    if not agents:
        return NO_GRANT
    home = home if home is not None else (environ.get("HOME") or os.path.expanduser("~"))
    sockets: list[tuple[str, str, str]] = []
    readable: list[tuple[str, tuple[str, ...]]] = []
    gaps: list[str] = []
    if SSH in agents:
        socket, why = ssh_socket(environ)
        if socket is None:
            gaps.append(why or "")
        else:
            sockets.append((SSH, socket, socket))
            readable.append((os.path.join(home, ".ssh"), SSH_READABLE))
    if GPG in agents:
        found, why = gpg_socket(environ)
        if found is None:
            gaps.append(why or "")
        else:
            source, view = found
            sockets.append((GPG, source, view))
            homedir = gpg_dirs(environ).get("homedir") or os.path.join(home, ".gnupg")
            readable.append((homedir, GNUPG_READABLE))
            if source == os.path.realpath(view):
                gaps.append(GPG_FULL_SOCKET_GAP)
    return AgentGrant(tuple(sockets), tuple(readable), tuple(gaps))


def claim(granted: AgentGrant, reachable: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """What the claim says of `granted` for one call, `reachable` being where the
    command reaches each agent (`AgentGrant.reachable`): each grant opens a door out
    of the sandbox (the agent acts for the command, unconfined), so each is a gap."""
    lines = list(granted.gaps)
    where = dict(reachable)
    for agent, host, view in granted.sockets:
        if agent not in where:
            continue
        if agent == SSH:
            lines.append(
                f"allow_ssh_agent: the command reaches the ssh agent at {where[agent]}: it "
                "can have it sign in with the person's keys (the key files stay hidden)"
            )
        else:
            if host != os.path.realpath(view) and where[agent] != view:
                # Not bound over the full socket (no mount namespace): gpg finds that one.
                lines.append(GPG_FULL_SOCKET_GAP)
            lines.append(
                f"allow_gpg_agent: the command reaches the gpg-agent at {view}: it can "
                "have it sign and decrypt with the person's keys (the key files stay hidden)"
            )
    return tuple(dict.fromkeys(lines))

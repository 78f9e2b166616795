"""The executor's configuration: the deployment default policy and process limits."""

from __future__ import annotations

import os
import resource

import attrs

from ..errors import ConfigError
from ..limits import Limits, SessionLimits
from ..modes import DEFAULT_MODE, DEFAULT_NETWORK
from ..reprs import fields_repr
from ..vocab import Network, SandboxMode
from .environment import EnvPolicy, Withheld

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..network import CredentialRule, RequestRule

MIB = 1024 * 1024
MAX_DERIVED_BOUND = 1024
# A running command keeps three descriptors (two pipes and its pidfd); spawning one
# briefly needs about four more (the pipes' other ends, exec's error pipe).
DESCRIPTORS_PER_PROCESS = 7
# Kept free for the harness itself: logs, probes, the event loop, and the placeholder
# locks a call holds while its sandbox may run (one per protected path it blocks: up
# to about 16 for a workspace root and its private temp directory).
DESCRIPTOR_HEADROOM = 32
# network allowlist: a quarter of the free descriptors is kept for the proxy's
# connections, two each (the command's side, the destination's).
PROXY_SHARE = 4
DESCRIPTORS_PER_CONNECTION = 2
MIN_PROXY_CONNECTIONS = 16
MAX_PROXY_CONNECTIONS = 16384


def _entries(value: object) -> tuple[str, ...]:
    """A list of network rule entries, each parsed once to refuse a bad one now."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigError("network_allow and network_deny take a list of entries")
    if not value:
        return ()
    from ..network import RuleError, parse_entry

    for entry in value:
        try:
            parse_entry(entry)
        except RuleError as error:
            raise ConfigError(f"network rule: {error}") from None
    return tuple(value)


def _credential_rules(value: object) -> tuple[CredentialRule, ...]:
    """Credential rules as given (CredentialRule), or mappings parsed now."""
    if isinstance(value, list | tuple) and not value:
        return ()  # none: the network room's rule modules stay unimported (`stockade run`)
    from ..network import CredentialRule, parse_credential_rules

    if isinstance(value, list | tuple) and all(isinstance(v, CredentialRule) for v in value):
        return tuple(value)
    return parse_credential_rules(value, "network_credentials")


def _request_rules(value: object) -> tuple[RequestRule, ...]:
    """Request rules as given (RequestRule), or mappings parsed now."""
    if isinstance(value, list | tuple) and not value:
        return ()
    from ..network import RequestRule, parse_request_rules

    if isinstance(value, list | tuple) and all(isinstance(v, RequestRule) for v in value):
        return tuple(value)
    return parse_request_rules(value, "network_requests")


@attrs.frozen(kw_only=True)
class ExecutorConfig:
    """`default_mode`/`default_network`/`fallback_root` serve a direct caller that brings
    no policy (and are the composition's defaults under every session).

    `fallback_root` None means the process's current directory at resolution time.
    """

    __repr__ = fields_repr

    # mypy's attrs plugin reads no classmethod as a converter (`converter=X.parse`):
    # ignored, it takes that argument as Any.
    default_mode: SandboxMode = attrs.field(
        default=DEFAULT_MODE,
        converter=SandboxMode.parse,  # type: ignore[misc]
    )
    default_network: Network = attrs.field(default=DEFAULT_NETWORK, converter=Network.parse)  # type: ignore[misc]
    fallback_root: str | None = None
    output_cap: int = MIB
    kill_grace: float = 2.0
    default_timeout: float | None = None
    # Processes running at once; further background jobs wait in a queue. None: sized
    # from RLIMIT_NOFILE (each process holds about three descriptors here).
    max_running: int | None = None
    # Each command's limits (docs/limits.md); `output_cap` and `default_timeout` are
    # its output_bytes and wall_seconds under their older names, and win here.
    limits: Limits = attrs.field(factory=Limits.defaults)
    # All of one session's live commands together, and its cap on running jobs.
    session_limits: SessionLimits = attrs.field(factory=SessionLimits.defaults)
    # Which of the harness's variables every command inherits (every mode).
    env: EnvPolicy = attrs.field(factory=EnvPolicy)
    # network allowlist: the destinations the proxy lets a call reach, and those it
    # never does (deny wins; an empty allow list allows nothing). Entries as in
    # docs/network.md; checked when the config is made.
    network_allow: tuple[str, ...] = attrs.field(default=(), converter=_entries)
    network_deny: tuple[str, ...] = attrs.field(default=(), converter=_entries)
    # network allowlist, issue 41 (docs/network.md): the hosts whose TLS the proxy
    # terminates, with the credentials it puts in their requests (the values read from
    # this process's environment when the executor starts, never a command's) and the
    # methods and paths it lets through; the CA bundle their origins are checked
    # against (None: the system's); and the directory the bundle a command trusts is
    # written to, which the composition plan names and keeps read-only in every call
    # (None: the executor makes one in the temporary directory).
    network_credentials: tuple[CredentialRule, ...] = attrs.field(
        default=(), converter=_credential_rules
    )
    network_requests: tuple[RequestRule, ...] = attrs.field(default=(), converter=_request_rules)
    network_upstream_ca: str | None = None
    network_trust_directory: str | None = None
    # The harness's own secrets (store credentials, MCP tokens): dropped from every
    # command's environment whatever `env` says (`withholding` adds them).
    withheld: Withheld = attrs.field(factory=Withheld)
    # The tools whose cache variables a confined call's environment points into its
    # policy's `tool_cache` (sandbox/tool_caches.py; the harness sets it from the
    # composition's tool_caches).
    tool_cache_tools: tuple[str, ...] = ()

    def withholding(self, withheld: Withheld) -> ExecutorConfig:
        """This config with `withheld` added; ConfigError when `env.set` would give a
        command one of them (a name or a value), rather than dropping it quietly."""
        merged = self.withheld.merged(withheld)
        problem = merged.set_problem(self.env)
        if problem is not None:
            raise ConfigError(problem)
        return attrs.evolve(self, withheld=merged)

    @property
    def has_ruled_hosts(self) -> bool:
        """Whether a credential or request rule names a host (the proxy then
        terminates TLS for those hosts, and a broker is made when the executor starts)."""
        return bool(self.network_credentials or self.network_requests)

    def caching(self, tools: tuple[str, ...]) -> ExecutorConfig:
        """This config with `tools` the tools whose cache variables a confined call's
        environment points into its policy's `tool_cache`."""
        return attrs.evolve(self, tool_cache_tools=tools)

    @property
    def command_limits(self) -> Limits:
        """The limits every command runs under: `limits` with the capture cap and the
        default timeout in place of its output_bytes and wall_seconds."""
        return attrs.evolve(
            self.limits, output_bytes=self.output_cap, wall_seconds=self.default_timeout
        )

    def running_bound(self) -> int:
        """max_running, else what the descriptors still free allow (at least one),
        beside the share kept for the proxy's connections (`proxy_connections`)."""
        if self.max_running is not None:
            return max(1, self.max_running)
        free = _free_descriptors()
        if free is None:
            return MAX_DERIVED_BOUND
        free -= free // PROXY_SHARE
        return max(1, min(MAX_DERIVED_BOUND, free // DESCRIPTORS_PER_PROCESS))

    def proxy_connections(self) -> int:
        """How many connections the harness's proxy may hold open at once, all calls
        together: its share of the descriptors still free (two a connection), so that
        a flood of them leaves running commands theirs, and no fewer than
        MIN_PROXY_CONNECTIONS."""
        free = _free_descriptors()
        if free is None:
            return MAX_PROXY_CONNECTIONS
        share = free // PROXY_SHARE // DESCRIPTORS_PER_CONNECTION
        return max(MIN_PROXY_CONNECTIONS, min(MAX_PROXY_CONNECTIONS, share))


def _free_descriptors() -> int | None:
    """The descriptors this process may still open beside its headroom (None: no limit)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        open_now = len(os.listdir("/proc/self/fd"))
    except OSError:
        open_now = 64
    return max(0, soft - open_now - DESCRIPTOR_HEADROOM)


def raise_open_files_limit() -> tuple[int, int]:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit (a service manager's
    default soft limit, 1024, is what the harness's proxy and commands would share
    otherwise); its (soft, hard) after. Children get their own limits (docs/limits.md)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError):
            pass
    return soft, hard

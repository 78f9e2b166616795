"""The closed vocabulary's enums and fixed texts: modes, network, approval policies, enforcement.

Standard library only, so `stockade exec` can use it without importing msgspec.
"""

from __future__ import annotations

import enum

from .errors import ConfigError

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from typing import TypeVar

    _E = TypeVar("_E", bound=enum.Enum)


def _parse(kind: type[_E], value: object, what: str) -> _E:
    """`value` as a member of `kind` (members pass through), or a ConfigError that
    names the allowed values in their declared order."""
    if isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise ConfigError(f"unknown {what} {value!r} (allowed: {allowed})") from None


class SandboxMode(enum.Enum):
    """What file effects a command may have. FILE effects only: no network claim."""

    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    DANGER_FULL_ACCESS = "danger-full-access"

    @classmethod
    def parse(cls, value: str | SandboxMode) -> SandboxMode:
        """The mode named `value`, or a ConfigError listing the allowed values."""
        return _parse(cls, value, "sandbox mode")

    @property
    def rank(self) -> int:
        """Position in the order read-only < workspace-write < danger-full-access."""
        return _MODE_ORDER.index(self)

    def is_wider_than(self, other: SandboxMode) -> bool:
        """True when this mode permits strictly more file effects than `other`."""
        return self.rank > other.rank

    @property
    def confines(self) -> bool:
        """Whether a command under this mode goes through a sandbox backend at all."""
        return self is not SandboxMode.DANGER_FULL_ACCESS

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, SandboxMode):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, SandboxMode):
            return NotImplemented
        return self.rank <= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, SandboxMode):
            return NotImplemented
        return self.rank > other.rank

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, SandboxMode):
            return NotImplemented
        return self.rank >= other.rank


_MODE_ORDER = (
    SandboxMode.READ_ONLY,
    SandboxMode.WORKSPACE_WRITE,
    SandboxMode.DANGER_FULL_ACCESS,
)


def allowed_modes() -> tuple[str, ...]:
    return tuple(mode.value for mode in _MODE_ORDER)


class Network(enum.Enum):
    """Whether a confined command may use the network: `off`, `allowlist` (only the
    destinations the operator lists, through stockade's proxy: docs/network.md) or
    `on`.

    A knob beside the sandbox mode, not a mode: it says nothing about files. Under
    danger-full-access everything is allowed, so such a call has network `on`
    whatever the knob says (`network_under`).
    """

    OFF = "off"
    ALLOWLIST = "allowlist"
    ON = "on"

    @property
    def confined(self) -> bool:
        """Whether a call with this network has no route of its own out (`off`, and
        `allowlist`, whose one way out is the proxy)."""
        return self is not Network.ON

    @classmethod
    def parse(cls, value: str | Network) -> Network:
        """The value named `value`, or a ConfigError listing the allowed values."""
        return _parse(cls, value, "network setting")


def allowed_networks() -> tuple[str, ...]:
    return tuple(network.value for network in Network)


def network_under(mode: SandboxMode, network: Network) -> Network:
    """The network a call under `mode` gets when the knob says `network`: `on` under
    danger-full-access (nothing confines it), else the knob's value."""
    return network if mode.confines else Network.ON


# A session's mode and network when nothing chose them (ExecutorConfig's defaults).
DEFAULT_MODE = SandboxMode.WORKSPACE_WRITE
DEFAULT_NETWORK = Network.OFF


class ApprovalPolicy(enum.Enum):
    """Whether an escalation may ask a person (`ask`) or fails closed (`never`)."""

    ASK = "ask"
    NEVER = "never"

    @classmethod
    def parse(cls, value: str | ApprovalPolicy) -> ApprovalPolicy:
        """The policy named `value`, or a ConfigError listing the allowed values."""
        return _parse(cls, value, "approval policy")


class Enforcement(enum.Enum):
    """`full` only when the backend governs every file effect the mode promises."""

    FULL = "full"
    PARTIAL = "partial"


class SpawnTrait(enum.Enum):
    """What the executor (and `stockade exec`) must know of a backend's runner to spawn
    it, said by the backend (sandbox/backends/) as data in its reply (`Wrapped.traits`,
    `Confined.traits`): nobody outside the sandbox compares a backend's name.

    Each trait is one meaning a spawn acts on, fixed per backend (computed once)."""

    # argv[0] is the shipped launcher itself: it reads the call's limit options (its
    # cgroup, its rlimits) in its own argv, right after argv[0] (the Landlock launcher).
    LIMITS_IN_RUNNER = "limits-in-runner"
    # The shipped launcher's `--limits-only` stage may stand before the runner: it sets
    # the call's limits, then executes the runner (bwrap, joined to the group before it
    # starts). An unconfined command gets the same stage (the executor's own facts).
    LIMITS_STAGE = "limits-stage"
    # The runner takes `--info-fd FD` right after argv[0] and reports there the init of
    # the PID namespace it makes; it returns as soon as its command has, before that
    # namespace is gone, so its caller waits for the namespace's end too (bwrap).
    INFO_FD = "info-fd"
    # The runner ends every process it started before it exits, leaving the call's
    # cgroup empty: the group may serve the session's next call (the Landlock launcher).
    REAPS_ALL = "reaps-all"
    # A one-shot caller (`stockade exec`) runs it as a child and waits for it, instead
    # of becoming it (the Landlock launcher dies with its caller: --die-with-parent).
    CALLER_WAITS = "caller-waits"
    # argv[0] is the shipped launcher, which execs the command: it takes `--started-fd
    # FD` right after argv[0] and says there, out of band, that the command starts, so
    # a line of the command's own that reads like the runner's failure is never taken
    # for one (the Landlock launcher; `sandbox.started_option_at`).
    STARTED_FD = "started-fd"
    # The same of the runner's filter stage, the shipped launcher run inside it
    # (`--filters-only`), when its argv has one: right after that word (bwrap).
    STAGE_STARTED_FD = "stage-started-fd"


def denial_marker(mode: SandboxMode) -> str:
    """The fixed text a result carries when the kernel refused a file effect."""
    return f"[sandbox: file access denied under {mode.value} mode]"


DENIAL_INSTRUCTION = (
    "The sandbox refused a file effect. Do not try to work around the denial "
    "(other paths, copies, symlinks, other tools)."
)


def network_denial_marker(destination: str) -> str:
    """The fixed text a result carries for each destination the proxy refused
    (network allowlist): `destination` is HOST:PORT as the command asked."""
    return f"[sandbox: network access to {destination} denied]"


def request_refusal_marker(reason: str) -> str:
    """The text a result carries for each request to a ruled host the proxy refused
    (network allowlist, issue 41): `reason` is the proxy's one line, which names the
    method, the path and the host."""
    return f"[sandbox: network request refused: {reason}]"


# After the marker, when the refused effect was on a deny_read path.
READ_DENIED_HINT = (
    "The refused path is one no sandbox mode may read (deny_read): a wider retry under "
    "workspace-write or with network access is refused the same way; only "
    "danger-full-access lifts it."
)


# What a result says, in one line after its output, when the sandbox's setting is
# what an error message blames on something else (executor/_classify.py decides).
def network_off_cause(what: str) -> str:
    """Network `off`: `what` ("a name lookup", "a connection", or both) failed
    because nothing leaves the sandbox, not because of the name or the remote."""
    return (
        f"[sandbox: network is off for this command, so {what} failed: no name resolves "
        "and no connection leaves the sandbox (the host's own servers included). If the "
        "command "
        f'needs the network, retry it once with sandbox_permissions "{WITH_NETWORK}" and a '
        "justification]"
    )


def network_allowlist_cause(what: str) -> str:
    """Network `allowlist`: `what` failed outside the proxy (no destination of it was
    decided by the proxy), so the client did not use it."""
    return (
        f"[sandbox: network is allowlist for this command, so {what} outside stockade's "
        "proxy failed: only clients using $HTTPS_PROXY, $HTTP_PROXY or $ALL_PROXY reach "
        "the allowed destinations, and the proxy resolves their names. Make the tool use "
        f'the proxy, or retry once with sandbox_permissions "{WITH_NETWORK}", '
        "network_destinations and a justification]"
    )


def tool_directory_cause(directory: str, tool: str, variable: str, *, read_only: bool) -> str:
    """A refused write under `tool`'s own directory in the home (`~/.npm`, ...):
    outside the writable roots; the sandbox's tool cache is `$variable`."""
    if read_only:
        return (
            f"[sandbox: a write under {directory} ({tool}'s directory) was refused: "
            f"read-only mode writes no directory; under workspace-write {tool} keeps its "
            f"cache in the sandbox's tool cache (${variable})]"
        )
    return (
        f"[sandbox: a write under {directory} ({tool}'s directory) was refused: it is "
        f"outside this command's writable directories. Leave {tool} on the sandbox's tool "
        f"cache (${variable}, set when the policy message names tool caches) instead of "
        f"pointing it at {directory}; if {directory} itself is needed, ask the user to add "
        "it as a writable root]"
    )


def fresh_view_cause(path: str, directory: str, network: str) -> str:
    """A 'No such file or directory' the sandbox caused: `path` is the host's, beneath
    `directory` (/tmp, /run, $XDG_RUNTIME_DIR), which the command saw fresh and empty
    because its network was `network` (off or allowlist)."""
    return (
        f"[sandbox: {path} lies in {directory}, which this command sees fresh and empty "
        f"(network {network}), so the host's {path} was out of its sight. Keep its files "
        "under $TMPDIR or the workspace; if it needs the host's path, ask for a wider "
        f'retry: with sandbox_permissions "{WITH_NETWORK}" it can read there, only '
        '"danger-full-access" writes there]'
    )


def rejection_text(mode: SandboxMode) -> str:
    return f'the user rejected escalating this command to "{mode.value}"'


NETWORK_REJECTION_TEXT = "the user rejected running this command with network access"

# The bash tool's `sandbox_permissions` value that asks for one run with network on.
WITH_NETWORK = "with_network"


def held_repository_cause(root: str, held: tuple[str, ...], moved_to: tuple[str, ...]) -> str:
    """What a result says when the repository a confined command made in the workspace
    root `root` (which had none) would have run something in the person's own git:
    `held` names it (config keys, hooks), `moved_to` where it went (trust/new_repository.py)."""
    return (
        f"[sandbox: the repository this command made in {root} held what git would run "
        f"({'; '.join(held)}): moved to {' and '.join(moved_to)}, so no git run later on "
        "the host runs it; review them before moving them back]"
    )

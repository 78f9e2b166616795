"""The one protocol every backend module of this folder is (`Backend`): mypy holds
each module to it (backends/__init__.py), as trio's `_subprocess_platform/` and
httpcore's `_backends/` hold theirs.

A backend module owns everything stockade knows of its runner: how it is found and
probed, the argv (or profile) it is given for a `SandboxPolicy`, what it claims and
leaves open, its denial signatures and runner-failure rules, and its spawn traits.
Nothing outside the sandbox's room compares a backend's name: the executor and
`stockade exec` act on the traits its reply carries (`Wrapped.traits`).

Runner facts come as keywords, the same for every backend, each module reading the
ones it has: `launcher` (bwrap's filter stage: the shipped launcher run inside it, or
None), `private_ipc` and `tier` (the Landlock launcher's: an IPC namespace of the
call's own is possible; its tier, None meaning its strongest), `abi` (the Landlock
ABI the probe found, 0 when unknown).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...modes import Network, SandboxMode, SpawnTrait
from .._argv import FreshPlan, Grants
from .._claims import FailureRule
from .._probe import Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...messages import TierReport
    from ...trust import DenyRead, Hidden, Protection


class Backend(Protocol):
    """A backend module (bwrap, landlock, seatbelt, fake)."""

    # Its name: in the chain's list, the configuration, every result and event.
    NAME: str
    # Its tiers, strongest first (the Landlock launcher's); () when it has none.
    TIERS: tuple[str, ...]
    # What the executor (and `stockade exec`) must know to spawn its runner.
    TRAITS: frozenset[SpawnTrait]
    # It runs the shipped launcher inside it as a filter stage (`--filters-only`).
    FILTER_STAGE: bool
    # It keeps the protected paths read-only inside the writable roots in every tier
    # (a bind, or a rule); without it, only where `mounts` says.
    PROTECTS: bool
    # It has a way out for network allowlist (the launcher's bridge to the proxy).
    ALLOWLIST: bool
    # stockade states its claims at probe time (not for an operator's runner).
    CLAIMED: bool

    # --- finding and probing its runner ----------------------------------------------

    def probe(
        self, timeout: float, *, explicit: str | None = None, roots: Sequence[str] = ()
    ) -> Verdict:
        """Its functional probe (`explicit`: the operator's bwrap_path; `roots`: the
        workspace roots a call may write, where no runner may lie)."""
        ...

    def locate(self) -> str | None:
        """The runner file a remembered verdict is keyed on (None: none is remembered)."""
        ...

    def sealed_copy(self, runner: str, timeout: float) -> tuple[str, int] | None:
        """A sealed in-memory copy of its runner to run instead, and the descriptor
        holding it (the shipped launcher's); None: the file itself, identity-pinned."""
        ...

    def configured(self, verdict: Verdict, tier: str) -> Verdict:
        """The verdict as the composition shapes it (`landlock_tier`: "auto" or "plain")."""
        ...

    # --- one call ----------------------------------------------------------------------

    def mounts(self, *, tier: str | None) -> bool:
        """Whether it binds the protected paths in the call's own mount namespace (and
        so mounts over the placeholders the guard makes)."""
        ...

    def allowlist_problem(self, *, launcher: str | None) -> str | None:
        """Why a call with network allowlist cannot run here (when `ALLOWLIST` holds)."""
        ...

    def hides_sockets(self, *, launcher: str | None, private_ipc: bool) -> bool:
        """Whether it can cover the host's named Unix sockets (`_argv.may_hide_sockets`
        says when a call has them covered)."""
        ...

    def freshens(self, *, tier: str | None, private_ipc: bool) -> bool:
        """Whether a call with its network confined sees the runtime directories fresh."""
        ...

    def in_sight(self, *, launcher: str | None) -> tuple[str, ...]:
        """What its fresh runtime directories must keep in sight besides the call's
        own paths (the files its filter stage runs from)."""
        ...

    def read_grants(
        self, deny: DenyRead, unreadable: Hidden, writable: Sequence[str], *, tier: str | None
    ) -> tuple[Hidden, Grants | None]:
        """How it hides deny_read's paths: `unreadable` as found, covered (no grants);
        or read grants around them where nothing can be covered, and what that leaves."""
        ...

    def argv(
        self,
        runner: str,
        mode: SandboxMode,
        root: str,
        temp_roots: Sequence[str],
        argv: Sequence[str],
        /,
        *,
        new_session: bool,
        protections: Sequence[Protection],
        launcher: str | None,
        private_ipc: bool,
        network: Network,
        hidden_sockets: Sequence[str],
        unreadable: Sequence[str],
        proxy: str | None,
        tier: str | None,
        grants: Grants | None,
        fresh: FreshPlan,
        agents: bool,
        swaps: Sequence[tuple[str, str]],
    ) -> tuple[str, ...]:
        """The argv to spawn instead of `argv` (the confine sequence's arguments:
        `_dispatch.confined_argv`)."""
        ...

    # --- its reply ----------------------------------------------------------------------

    def denials(self, *, tier: str | None) -> tuple[str, ...]:
        """The stderr texts its refusal of a file effect produces."""
        ...

    def failure_rules(
        self, *, launcher: str | None, operator: tuple[FailureRule, ...]
    ) -> tuple[FailureRule, ...]:
        """Its runner-failure rules (`operator`: the composition's signatures)."""
        ...

    def deny_read_gap(self, *, launcher: str | None) -> str | None:
        """What deny_read leaves when it has nothing to cover paths with (None: it can)."""
        ...

    def file_gaps(
        self,
        mode: SandboxMode,
        network: Network,
        *,
        abi: int,
        launcher: str | None,
        private_ipc: bool,
        tier: str | None,
        agents: bool,
    ) -> tuple[str, ...]:
        """What it leaves ungoverned under `mode` (network effects included while the
        network is confined); `agents`: the call is granted agent sockets."""
        ...

    def network_claim(
        self,
        mode: SandboxMode,
        network: Network,
        *,
        abi: int,
        launcher: str | None,
        private_ipc: bool,
        tier: str | None,
        agents: bool,
    ) -> tuple[dict[str, str], tuple[str, ...]]:
        """How it governs each network effect with `network` confined (never `on`),
        and the gaps it leaves (`_profiles.network_claim`)."""
        ...

    # --- `stockade probe` ----------------------------------------------------------------

    def report_gaps(self, mode: SandboxMode, *, tier: str | None) -> tuple[str, ...]:
        """What `probe` adds to its file claim under `mode` that a call's guard states
        per call (the protected paths a tier cannot keep)."""
        ...

    def tier_reports(self, verdict: Verdict) -> tuple[TierReport, ...]:
        """Its tiers as `probe` reports them (none without tiers)."""
        ...

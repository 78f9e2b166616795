"""An operator's `runner_command`: a runner the operator asserts is bwrap-compatible,
which replaces the platform chain and its probes; `stockade.testing.fake_runner` is
one (it runs every command as it is), and so is the test hook for a fake runner.

Given bwrap's argv without its filter stage (what it can see inside is its own
business): no covers, no allowlist bridge, no fresh runtime directories; its failures
are what the operator's `runner_failure_signatures` say.

Standard library only: `stockade exec` builds its argv with this module.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...modes import Network, SandboxMode
from .._argv import NO_FRESH, FreshPlan, Grants
from .._claims import FailureRule
from .._probe import Verdict
from .bwrap import BWRAP_DENIAL, bwrap_argv, bwrap_network_claim

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from typing import Final

    from ...messages import TierReport
    from ...modes import SpawnTrait
    from ...trust import DenyRead, Hidden, Protection

NAME: Final = "runner-command"
TIERS: tuple[str, ...] = ()
# Nothing is known of it: no `--info-fd`, no place for the launcher's limits.
TRAITS: frozenset[SpawnTrait] = frozenset()
FILTER_STAGE = False
# bwrap's binds keep the protected paths read-only, as under bwrap.
PROTECTS = True
ALLOWLIST = False
# What it enforces is the operator's assertion: `probe` states no claim for it.
CLAIMED = False


def probe(timeout: float, *, explicit: str | None = None, roots: Sequence[str] = ()) -> Verdict:
    """Never probed: the operator's `runner_command` is taken as it is (the chain's
    `choose` makes its verdict from the path)."""
    raise ValueError("an operator's runner_command is never probed")


def locate() -> str | None:
    return None


def sealed_copy(runner: str, timeout: float) -> tuple[str, int] | None:
    """None: its runner is run from its file (identity-pinned)."""
    return None


def configured(verdict: Verdict, tier: str) -> Verdict:
    return verdict


# --- one call ------------------------------------------------------------------------


def mounts(*, tier: str | None) -> bool:
    """bwrap's binds, as bwrap mounts them."""
    return True


def allowlist_problem(*, launcher: str | None) -> str | None:
    return None


def hides_sockets(*, launcher: str | None, private_ipc: bool) -> bool:
    """No filter stage to cover them with."""
    return False


def freshens(*, tier: str | None, private_ipc: bool) -> bool:
    return False


def in_sight(*, launcher: str | None) -> tuple[str, ...]:
    return ()


def read_grants(
    deny: DenyRead, unreadable: Hidden, writable: Sequence[str], *, tier: str | None
) -> tuple[Hidden, Grants | None]:
    return unreadable, None


def argv(
    runner: str,
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
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
    """bwrap's argv without its filter stage: no covers, no bridge, no fresh views."""
    return bwrap_argv(
        runner,
        mode,
        root,
        temp_roots,
        argv,
        new_session=new_session,
        protections=protections,
        launcher=None,
        network=network,
        hidden_sockets=hidden_sockets,
        unreadable=(),
        proxy=None,
        fresh=NO_FRESH,
        agents=agents,
        swaps=swaps,
    )


# --- its reply -----------------------------------------------------------------------


def denials(*, tier: str | None) -> tuple[str, ...]:
    """bwrap's texts: the operator asserts a bwrap-compatible runner."""
    return BWRAP_DENIAL


def failure_rules(
    *, launcher: str | None, operator: tuple[FailureRule, ...]
) -> tuple[FailureRule, ...]:
    """The operator's own signatures are the only runner-failure evidence."""
    return operator


DENY_READ_RUNNER_COMMAND_GAP: Final = (
    "deny_read: its paths stay readable (an operator's runner_command cannot be told to hide them)"
)


def deny_read_gap(*, launcher: str | None) -> str | None:
    return DENY_READ_RUNNER_COMMAND_GAP


def network_claim(
    mode: SandboxMode,
    network: Network,
    *,
    abi: int,
    launcher: str | None,
    private_ipc: bool,
    tier: str | None,
    agents: bool,
) -> tuple[dict[str, str], tuple[str, ...]]:
    """bwrap's without the filter stage: what that stage would refuse stays open."""
    return bwrap_network_claim(mode, network, filtered=False, agents=agents)


def file_gaps(
    mode: SandboxMode,
    network: Network,
    *,
    abi: int,
    launcher: str | None,
    private_ipc: bool,
    tier: str | None,
    agents: bool,
) -> tuple[str, ...]:
    """The network it leaves open (network off) and nothing else: the operator asserts
    the rest."""
    return network_claim(
        mode,
        network,
        abi=abi,
        launcher=launcher,
        private_ipc=private_ipc,
        tier=tier,
        agents=agents,
    )[1]


# --- `stockade probe` ------------------------------------------------------------------


def report_gaps(mode: SandboxMode, *, tier: str | None) -> tuple[str, ...]:
    return ()


def tier_reports(verdict: Verdict) -> tuple[TierReport, ...]:
    return ()

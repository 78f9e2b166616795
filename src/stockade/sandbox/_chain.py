"""The provider's view of a selection: each candidate's report (with what it governs
per mode) and the one backend selected, built on the probes in `_probe`.
"""

from __future__ import annotations

from typing import Final

import attrs

from ..messages import CandidateReport, NetworkClaim, TierReport
from ..trust import DEFAULT_PROTECTED, NEW_REPOSITORY_GAP
from ..vocab import Enforcement, Network, SandboxMode
from ._argv import NAMESPACED, PLAIN, TIERS
from ._probe import Chosen, Verdict, filter_launcher
from ._profiles import (
    BWRAP,
    LANDLOCK,
    RUNNER_COMMAND,
    Backend,
    bwrap_gaps,
    landlock_enforcement,
    network_claim,
)

CONFINING_MODES: Final = (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE)


# What the plain tier leaves open in workspace-write, besides its kernel's gaps: it
# has no mount namespace to bind the protected paths in.
PLAIN_PROTECTED_GAP: Final = "protected paths (" + ", ".join(DEFAULT_PROTECTED) + ")"
# A standing limit of every backend, said once by `probe` (not by every call).
STANDING_LIMITS: Final = (NEW_REPOSITORY_GAP,)


def _claim(
    verdict: Verdict, mode: SandboxMode, network: Network, tier: str | None = None
) -> tuple[Enforcement, tuple[str, ...]]:
    if verdict.backend == LANDLOCK:
        tier = tier or verdict.tier or NAMESPACED
        claim, gaps = landlock_enforcement(
            mode,
            verdict.abi or 0,
            private_ipc=verdict.ipc == "private" and tier == NAMESPACED,
            network=network,
            tier=tier,
        )
        if mode is SandboxMode.WORKSPACE_WRITE and tier == PLAIN:
            claim, gaps = Enforcement.PARTIAL, (*gaps, PLAIN_PROTECTED_GAP)
        return claim, gaps
    if verdict.backend == BWRAP:
        gaps = bwrap_gaps(mode, filter_launcher(), network=network)
    else:
        _, gaps = network_claim(verdict.backend, mode, network)
    return (Enforcement.PARTIAL if gaps else Enforcement.FULL), gaps


def tier_reports(verdict: Verdict) -> tuple[TierReport, ...]:
    """The Landlock launcher's tiers, strongest first: which this host allows, and
    what each would claim per confining mode (network off)."""
    reports = []
    for tier in TIERS:
        usable = verdict.usable and (tier == PLAIN or verdict.tier == NAMESPACED)
        why_not = None
        if not verdict.usable:
            why_not = verdict.why_not
        elif not usable:
            why_not = verdict.tier_why
        enforcement: dict[str, Enforcement] = {}
        ungoverned: dict[str, tuple[str, ...]] = {}
        network_off: dict[str, NetworkClaim] = {}
        if verdict.usable:
            for mode in CONFINING_MODES:
                claim, gaps = _claim(verdict, mode, Network.ON, tier)
                enforcement[mode.value] = claim
                if gaps:
                    ungoverned[mode.value] = gaps
                effects, net_gaps = network_claim(
                    LANDLOCK,
                    mode,
                    Network.OFF,
                    abi=verdict.abi or 0,
                    private_ipc=verdict.ipc == "private" and tier == NAMESPACED,
                    tier=tier,
                )
                network_off[mode.value] = NetworkClaim(
                    enforcement=Enforcement.PARTIAL if net_gaps else Enforcement.FULL,
                    ungoverned=net_gaps,
                    effects=effects,
                )
        reports.append(
            TierReport(
                tier=tier,
                usable=usable,
                why_not=why_not,
                selected=usable and (verdict.tier or NAMESPACED) == tier,
                enforcement=enforcement,
                ungoverned=ungoverned,
                network_off=network_off,
            )
        )
    return tuple(reports)


def candidate_report(verdict: Verdict) -> CandidateReport:
    """A verdict with the claims its backend makes in each confining mode: the file
    sandbox's (`enforcement`, `ungoverned`), and apart from it the network's with
    network off (`network_off`: its claim, what it leaves open, how each effect is
    governed)."""
    enforcement: dict[str, Enforcement] = {}
    ungoverned: dict[str, tuple[str, ...]] = {}
    network_off: dict[str, NetworkClaim] = {}
    allowlist: dict[str, NetworkClaim] = {}
    if verdict.usable and verdict.backend != RUNNER_COMMAND:
        for mode in CONFINING_MODES:
            claim, gaps = _claim(verdict, mode, Network.ON)
            enforcement[mode.value] = claim
            if gaps:
                ungoverned[mode.value] = gaps
            # The network claims stand apart from the file claim (`enforcement`).
            for network, claims in ((Network.OFF, network_off), (Network.ALLOWLIST, allowlist)):
                if network is Network.ALLOWLIST and verdict.backend not in (BWRAP, LANDLOCK):
                    continue
                effects, gaps = network_claim(
                    verdict.backend,
                    mode,
                    network,
                    abi=verdict.abi or 0,
                    launcher=filter_launcher() if verdict.backend == BWRAP else None,
                    private_ipc=verdict.ipc == "private",
                    tier=verdict.tier or NAMESPACED,
                )
                claims[mode.value] = NetworkClaim(
                    enforcement=Enforcement.PARTIAL if gaps else Enforcement.FULL,
                    ungoverned=gaps,
                    effects=effects,
                )
    return CandidateReport(
        backend=verdict.backend,
        usable=verdict.usable,
        runner=verdict.runner,
        why_not=verdict.why_not,
        abi=verdict.abi,
        enforcement=enforcement,
        ungoverned=ungoverned,
        probed=verdict.probed,
        network_off=network_off,
        network_allowlist=allowlist,
        tiers=tier_reports(verdict) if verdict.backend == LANDLOCK else (),
    )


@attrs.frozen
class Selection:
    """The verdict of one provider lifetime: every candidate looked at, and the winner."""

    platform: str
    chain: tuple[str, ...]
    candidates: tuple[CandidateReport, ...]
    backend: Backend | None
    detail: str
    # Nothing usable only because a probe could not run just now (EMFILE, ENOMEM...).
    worth_retrying: bool = False

    @classmethod
    def of(cls, chosen: Chosen, backend: Backend | None) -> Selection:
        return cls(
            platform=chosen.platform,
            chain=chosen.chain,
            candidates=tuple(candidate_report(verdict) for verdict in chosen.verdicts),
            backend=backend,
            detail=chosen.detail,
            worth_retrying=chosen.worth_retrying,
        )

"""The provider's view of a selection: each candidate's report (with what it governs
per mode) and the one backend selected, built on the probes in `_probe`.
"""

from __future__ import annotations

from typing import Final

import msgspec

from ..messages import CandidateReport, NetworkClaim
from ..trust import NEW_REPOSITORY_GAP
from ..vocab import Enforcement, Network, SandboxMode
from . import _probe
from ._probe import Verdict
from ._profiles import Backend
from .backends import Chosen, known

CONFINING_MODES: Final = (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE)

# A standing limit of every backend, said once by `probe` (not by every call).
STANDING_LIMITS: Final = (NEW_REPOSITORY_GAP,)


def candidate_report(verdict: Verdict) -> CandidateReport:
    """A verdict with the claims its backend makes in each confining mode: the file
    sandbox's (`enforcement`, `ungoverned`), and apart from it the network's with
    network off (`network_off`: its claim, what it leaves open, how each effect is
    governed), and its tiers (`Backend.tier_reports`)."""
    enforcement: dict[str, Enforcement] = {}
    ungoverned: dict[str, tuple[str, ...]] = {}
    network_off: dict[str, NetworkClaim] = {}
    allowlist: dict[str, NetworkClaim] = {}
    # None for a backend no module is (one named that its platform's chain lacks).
    kind = known(verdict.backend)
    if kind is not None and verdict.usable and kind.CLAIMED:
        # The runner as the verdict found it (bwrap: with the shipped filter stage).
        abi = verdict.abi or 0
        launcher = _probe.filter_launcher() if kind.FILTER_STAGE else None
        private_ipc = verdict.ipc == "private"
        for mode in CONFINING_MODES:
            gaps = (
                *kind.file_gaps(
                    mode,
                    Network.ON,
                    abi=abi,
                    launcher=launcher,
                    private_ipc=private_ipc,
                    tier=verdict.tier,
                    agents=False,
                ),
                *kind.report_gaps(mode, tier=verdict.tier),
            )
            enforcement[mode.value] = Enforcement.PARTIAL if gaps else Enforcement.FULL
            if gaps:
                ungoverned[mode.value] = gaps
            # The network claims stand apart from the file claim (`enforcement`).
            for network, claims in ((Network.OFF, network_off), (Network.ALLOWLIST, allowlist)):
                if network is Network.ALLOWLIST and not kind.ALLOWLIST:
                    continue
                effects, gaps = kind.network_claim(
                    mode,
                    network,
                    abi=abi,
                    launcher=launcher,
                    private_ipc=private_ipc,
                    tier=verdict.tier,
                    agents=False,
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
        tiers=kind.tier_reports(verdict) if kind is not None else (),
    )


class Selection(msgspec.Struct, frozen=True):
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

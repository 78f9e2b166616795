"""Seatbelt (`sandbox-exec`): darwin's sole candidate, selected without a probe
(nothing to arbitrate); its failures surface at spawn or by its fatal signature.

Standard library only: `stockade exec` builds its argv with this module.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...modes import Network, SandboxMode
from .._argv import FreshPlan, Grants, writable_roots
from .._claims import NETWORK_EFFECTS, FailureRule
from .._probe import Verdict

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from typing import Final

    from ...messages import TierReport
    from ...modes import SpawnTrait
    from ...trust import DenyRead, Hidden, Protection

NAME: Final = "seatbelt"
TIERS: tuple[str, ...] = ()
# Nothing the executor must do for it: no place for the launcher's limits either.
TRAITS: frozenset[SpawnTrait] = frozenset()
FILTER_STAGE = False
# Its profile denies writes beneath each protected path (the last matching rule wins).
PROTECTS = True
ALLOWLIST = False
CLAIMED = True

SEATBELT_EXEC = "/usr/bin/sandbox-exec"


# --- finding it ----------------------------------------------------------------------


def probe(timeout: float, *, explicit: str | None = None, roots: Sequence[str] = ()) -> Verdict:
    """darwin's sole candidate: selected without a probe (nothing to arbitrate)."""
    return Verdict(NAME, True, SEATBELT_EXEC, probed=False)


def locate() -> str | None:
    """None: its verdict is never remembered (nothing is probed)."""
    return None


def sealed_copy(runner: str, timeout: float) -> tuple[str, int] | None:
    """None: its runner is run from its file (identity-pinned)."""
    return None


def configured(verdict: Verdict, tier: str) -> Verdict:
    return verdict


# --- one call ------------------------------------------------------------------------


def mounts(*, tier: str | None) -> bool:
    """It denies by rule; it mounts nothing."""
    return False


def allowlist_problem(*, launcher: str | None) -> str | None:
    return None


def hides_sockets(*, launcher: str | None, private_ipc: bool) -> bool:
    """(deny network*) refuses every named socket; nothing is covered."""
    return False


def freshens(*, tier: str | None, private_ipc: bool) -> bool:
    return False


def in_sight(*, launcher: str | None) -> tuple[str, ...]:
    return ()


def read_grants(
    deny: DenyRead, unreadable: Hidden, writable: Sequence[str], *, tier: str | None
) -> tuple[Hidden, Grants | None]:
    """Its profile denies reading each path (no grants)."""
    return unreadable, None


def seatbelt_profile(
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    protections: Sequence[Protection] = (),
    network: Network = Network.OFF,
    unreadable: Sequence[str] = (),
) -> tuple[str, dict[str, str]]:
    """SBPL text and its parameters: everything allowed but file writes off the grants
    (and, network off, every network operation, Unix sockets by name included).

    `file-write*` covers data, create, unlink, mode, owner, times and xattrs, so
    Seatbelt governs every promised file effect.
    """
    roots = writable_roots(mode, root, temp_roots)
    params = {f"WRITABLE_ROOT_{index}": path for index, path in enumerate(roots)}
    lines = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        '(allow file-write* (literal "/dev/null"))',
    ]
    if network.confined:
        lines.append("(deny network*)")
    lines += [f'(allow file-write* (subpath (param "{name}")))' for name in params]
    # The last matching rule wins: protected paths stay unwritable inside the grants.
    for index, protection in enumerate(p for p in protections if p.kind != "pin"):
        name = f"PROTECTED_{index}"
        params[name] = protection.path
        lines.append(f'(deny file-write* (subpath (param "{name}")))')
    for index, path in enumerate(unreadable):
        name = f"UNREADABLE_{index}"
        params[name] = path
        lines.append(f'(deny file-read* file-write* (subpath (param "{name}")))')
    return "\n".join(lines) + "\n", params


def seatbelt_argv(
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    protections: Sequence[Protection] = (),
    network: Network = Network.OFF,
    unreadable: Sequence[str] = (),
) -> tuple[str, ...]:
    profile, params = seatbelt_profile(mode, root, temp_roots, protections, network, unreadable)
    defines = [f"-D{name}={value}" for name, value in params.items()]
    return (SEATBELT_EXEC, "-p", profile, *defines, "--", *argv)


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
    """`seatbelt_argv`: SBPL text and its parameters."""
    return seatbelt_argv(mode, root, temp_roots, argv, protections, network, unreadable)


# --- its reply -----------------------------------------------------------------------

SEATBELT_DENIAL: Final = ("Operation not permitted",)
# sandbox-exec reserves no status, so only its line prefix is evidence.
SEATBELT_RULES: Final = (FailureRule(None, ("sandbox-exec:",)),)


def denials(*, tier: str | None) -> tuple[str, ...]:
    return SEATBELT_DENIAL


def failure_rules(
    *, launcher: str | None, operator: tuple[FailureRule, ...]
) -> tuple[FailureRule, ...]:
    return SEATBELT_RULES


def deny_read_gap(*, launcher: str | None) -> str | None:
    return None


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
    """`file-write*` covers data, create, unlink, mode, owner, times and xattrs: it
    governs every promised file effect, and (deny network*) every network one."""
    return ()


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
    return dict.fromkeys(NETWORK_EFFECTS, "refused: (deny network*) (not exercised here)"), ()


# --- `stockade probe` ------------------------------------------------------------------


def report_gaps(mode: SandboxMode, *, tier: str | None) -> tuple[str, ...]:
    return ()


def tier_reports(verdict: Verdict) -> tuple[TierReport, ...]:
    return ()

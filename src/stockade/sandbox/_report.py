"""Pure rendering of a runner selection for people (`stockade probe`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..messages import NetworkClaim, TierReport, TrustCheck
from ._chain import STANDING_LIMITS, Selection


def render_selection(selection: Selection, *, refused_here: str | None = None) -> str:
    """The chain, each candidate, and the selected one; `refused_here`: why a call made
    here would refuse that one all the same (a trust check)."""
    lines = [
        f"platform: {selection.platform}",
        f"chain: {', '.join(selection.chain) or '(empty)'}",
    ]
    for candidate in selection.candidates:
        status = "usable" if candidate.usable else "unusable"
        selected = selection.backend is not None and candidate.backend == selection.backend.name
        if refused_here is not None and candidate.usable and selected:
            status = "usable, but refused here"
        head = f"  {candidate.backend}: {status}"
        if candidate.runner:
            head += f" ({candidate.runner})"
        if candidate.abi is not None:
            head += f", Landlock ABI {candidate.abi}"
        if not candidate.probed:
            head += ", not probed"
        lines.append(head)
        if candidate.why_not:
            lines.append(f"    why not: {candidate.why_not}")
        for mode, enforcement in candidate.enforcement.items():
            line = f"    {mode}: {enforcement.value} file enforcement"
            gaps = candidate.ungoverned.get(mode)
            if gaps:
                line += f" (ungoverned: {', '.join(gaps)})"
            lines.append(line)
            for network, claims in (
                ("off", candidate.network_off),
                ("allowlist", candidate.network_allowlist),
            ):
                claim = claims.get(mode)
                if claim is None:
                    continue
                line = (
                    f"    {mode}, network {network}: {claim.enforcement.value} network enforcement"
                )
                if claim.ungoverned:
                    line += f" (ungoverned: {', '.join(claim.ungoverned)})"
                lines.append(line)
        lines += _network_effects(candidate.network_off)
        lines += _tiers(candidate.tiers)
    if selection.backend is None:
        lines.append(f"selected: none: {selection.detail}")
    elif refused_here is not None:
        lines.append(f"selected: {selection.backend.name}, but refused here: {refused_here}")
    else:
        chosen = selection.backend.name
        if selection.backend.tier is not None:
            chosen += f", tier {selection.backend.tier}"
            if selection.backend.tier_why:
                chosen += f" (not namespaced: {selection.backend.tier_why})"
        lines.append(f"selected: {chosen}")
    lines.append(f"standing limits of every backend: {'; '.join(STANDING_LIMITS)}")
    return "\n".join(lines) + "\n"


def _tiers(tiers: Sequence[TierReport]) -> list[str]:
    """One line per tier of the Landlock launcher (strongest first): usable or not and
    why, what it would claim per mode, and which one this host's calls get."""
    lines = []
    for report in tiers:
        state = "usable" if report.usable else f"unusable: {report.why_not}"
        if report.selected:
            state += " (selected: every call here runs in it)"
        lines.append(f"    tier {report.tier}: {state}")
        if not report.usable:
            continue
        for mode, enforcement in report.enforcement.items():
            claim = report.network_off.get(mode)
            line = f"      {mode}: {enforcement.value} file enforcement"
            gaps = report.ungoverned.get(mode)
            if gaps:
                line += f" (ungoverned: {', '.join(gaps)})"
            if claim is not None:
                line += f"; network off: {claim.enforcement.value}"
                if claim.ungoverned:
                    line += f" (ungoverned: {', '.join(claim.ungoverned)})"
            lines.append(line)
    return lines


def _network_effects(claims: Mapping[str, NetworkClaim]) -> list[str]:
    """How each network effect is governed with network off: one line per effect,
    split by mode where the modes differ."""
    if not claims:
        return []
    lines = ["    network off:"]
    effects = dict.fromkeys(e for claim in claims.values() for e in claim.effects)
    for effect in effects:
        hows = {mode: claim.effects.get(effect, "?") for mode, claim in claims.items()}
        if len(set(hows.values())) == 1:
            lines.append(f"      {effect}: {next(iter(hows.values()))}")
        else:
            lines.append(
                f"      {effect}: " + "; ".join(f"{mode}: {how}" for mode, how in hows.items())
            )
    return lines


def render_trust(checks: Sequence[TrustCheck]) -> str:
    """The trust base's checks, one per line, failures marked."""
    lines = ["trust checks:"]
    for check in checks:
        mark = {"trusted": "ok", "protected": "protected", "off": "off"}.get(
            check.status, "UNTRUSTED"
        )
        where = f" {check.path}" if check.path else ""
        lines.append(f"  [{mark}] {check.item}{where}: {check.how}")
    return "\n".join(lines) + "\n"

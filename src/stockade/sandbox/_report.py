"""Pure rendering of a runner selection for people (`stockade probe`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import TrustCheck
from ._chain import Selection


def render_selection(selection: Selection) -> str:
    lines = [
        f"platform: {selection.platform}",
        f"chain: {', '.join(selection.chain) or '(empty)'}",
    ]
    for candidate in selection.candidates:
        status = "usable" if candidate.usable else "unusable"
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
            line = f"    {mode}: {enforcement.value} enforcement"
            gaps = candidate.ungoverned.get(mode)
            if gaps:
                line += f" (ungoverned: {', '.join(gaps)})"
            lines.append(line)
    if selection.backend is None:
        lines.append(f"selected: none: {selection.detail}")
    else:
        lines.append(f"selected: {selection.backend.name}")
    return "\n".join(lines) + "\n"


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

"""Pure chain logic: which backends a platform tries, how each probe is built and judged.

The probes themselves run in `_select.py`; here only argv in, verdict out.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from ..messages import CandidateReport
from ..vocab import Enforcement, SandboxMode, SandboxPolicy
from ._profiles import (
    BWRAP,
    BWRAP_DENIAL,
    LANDLOCK,
    SEATBELT,
    SEATBELT_EXEC,
    Backend,
    HostPaths,
    bwrap_argv,
    landlock_enforcement,
)

PLATFORM_CHAINS: Final[dict[str, tuple[str, ...]]] = {
    "linux": (BWRAP, LANDLOCK),
    "darwin": (SEATBELT,),
    # Reserved and empty: no Windows runner yet, so confine() fails closed.
    "win32": (),
}
CONFINING_MODES: Final = (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE)
PROBE_MARKER: Final = "stockade-probe-ran"

# Runs inside the read-only profile: proves the command ran, reports the privilege
# facts with shell builtins only, then attempts the write that must be refused.
BWRAP_PROBE_SCRIPT: Final = (
    f"echo {PROBE_MARKER}; "
    'while read -r key value; do case $key in CapEff:|NoNewPrivs:) echo "$key $value";; '
    'esac; done < /proc/self/status; : > "$1"'
)


def chain_for(platform: str, forced: str | None = None) -> tuple[str, ...]:
    """The candidates to try on `platform`; unknown platforms get the empty chain."""
    chain = PLATFORM_CHAINS.get(platform, ())
    if forced is None or forced == "auto":
        return chain
    return (forced,) if forced in chain else ()


def bwrap_probe_argv(bwrap: str, scratch: str, target: str) -> tuple[str, ...]:
    policy = SandboxPolicy(mode=SandboxMode.READ_ONLY, workspace_root=scratch)
    inner = ("/bin/sh", "-c", BWRAP_PROBE_SCRIPT, "sh", target)
    return bwrap_argv(bwrap, policy, HostPaths(temp_roots=()), inner)


def _tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"


def judge_bwrap_probe(
    bwrap: str, returncode: int, stdout: str, stderr: str, target_exists: bool
) -> CandidateReport:
    """Usable only if the profile ran, held no privilege, and refused the write."""
    facts = dict(line.split(" ", 1) for line in stdout.splitlines() if line.count(" ") == 1)

    def refuse(why: str) -> CandidateReport:
        return CandidateReport(backend=BWRAP, usable=False, runner=bwrap, why_not=why)

    if PROBE_MARKER not in stdout:
        return refuse(f"bwrap could not start a sandbox (exit {returncode}): {_tail(stderr)}")
    if target_exists or returncode == 0:
        return refuse("bwrap ran the probe but did not refuse a write under read-only")
    if not any(signature in stderr for signature in BWRAP_DENIAL):
        return refuse(f"bwrap refused the probe write without its denial text: {_tail(stderr)}")
    if facts.get("CapEff:", "").strip("0") or facts.get("NoNewPrivs:") != "1":
        return refuse(
            "bwrap left privileges inside the sandbox "
            f"(CapEff {facts.get('CapEff:')}, NoNewPrivs {facts.get('NoNewPrivs:')})"
        )
    enforcement = {mode.value: Enforcement.FULL for mode in CONFINING_MODES}
    return CandidateReport(backend=BWRAP, usable=True, runner=bwrap, enforcement=enforcement)


_LANDLOCK_PROBE_LINE: Final = re.compile(
    r"^landlock-run: probe ok: abi=(?P<abi>\d+) enforcement=(?P<enforcement>full|partial)$",
    re.MULTILINE,
)


def judge_landlock_probe(
    launcher: str, returncode: int, stdout: str, stderr: str
) -> CandidateReport:
    """Usable when `landlock-run --probe` exits 0 with its report line."""
    match = _LANDLOCK_PROBE_LINE.search(stdout)
    if returncode != 0 or match is None:
        return CandidateReport(
            backend=LANDLOCK,
            usable=False,
            runner=launcher,
            why_not=f"landlock-run --probe failed (exit {returncode}): {_tail(stderr or stdout)}",
        )
    abi = int(match["abi"])
    enforcement: dict[str, Enforcement] = {}
    ungoverned: dict[str, tuple[str, ...]] = {}
    for mode in CONFINING_MODES:
        enforcement[mode.value], ungoverned[mode.value] = landlock_enforcement(mode, abi)
    return CandidateReport(
        backend=LANDLOCK,
        usable=True,
        runner=launcher,
        abi=abi,
        enforcement=enforcement,
        ungoverned={mode: effects for mode, effects in ungoverned.items() if effects},
    )


def seatbelt_candidate() -> CandidateReport:
    """darwin's sole candidate: selected without a probe (nothing to arbitrate)."""
    return CandidateReport(
        backend=SEATBELT,
        usable=True,
        runner=SEATBELT_EXEC,
        enforcement={mode.value: Enforcement.FULL for mode in CONFINING_MODES},
        probed=False,
    )


@attrs.frozen
class Selection:
    """The verdict of one provider lifetime: every candidate looked at, and the winner."""

    platform: str
    chain: tuple[str, ...]
    candidates: tuple[CandidateReport, ...]
    backend: Backend | None

    @property
    def detail(self) -> str:
        """Why nothing was selected, naming each candidate's reason."""
        if self.backend is not None:
            return f"selected {self.backend.name}"
        if not self.chain:
            return (
                f"no sandbox backend exists for platform {self.platform!r}; "
                "stockade never runs a command unconfined"
            )
        reasons = "; ".join(f"{c.backend}: {c.why_not}" for c in self.candidates if not c.usable)
        return f"no usable sandbox backend on {self.platform} ({reasons})"


def backend_of(report: CandidateReport) -> Backend:
    assert report.usable and report.runner is not None
    return Backend(name=report.backend, runner=report.runner, abi=report.abi)

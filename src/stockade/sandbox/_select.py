"""Selecting the provider's runner: the probes of `_probe` plus the operator's config.

Synchronous on purpose: the ProviderActor runs it once, in a worker thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Mapping

from ..trust import host_temp_roots
from ._argv import BWRAP, FORCED_PLAIN, LANDLOCK, PLAIN
from ._chain import Selection
from ._confine import runner_identity
from ._probe import (
    PROBES,
    Probe,
    choose,
    filter_launcher,
    judge_landlock_probe,
    run_probe,
)
from ._profiles import Backend, HostPaths, runner_command_rules
from .config import ProviderConfig

SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


def host_paths(environ: Mapping[str, str] = os.environ) -> HostPaths:
    """The host temp roots: /tmp, and $TMPDIR when set, absolute and existing."""
    return HostPaths(temp_roots=host_temp_roots(environ))


def select_backend(
    config: ProviderConfig, *, probe_all: bool = False, probes: Mapping[str, Probe] = PROBES
) -> Selection:
    """Probe the platform chain in order (or take the operator's runner_command)."""
    chosen = choose(
        config.platform,
        config.backend,
        runner_command=config.runner_command,
        timeout=config.probe_timeout,
        probe_all=probe_all,
        probes=probes,
        bwrap_path=config.bwrap_path,
        writable_roots=config.probe_roots,
    )
    winner = chosen.selected
    backend = None
    if winner is not None and winner.backend == LANDLOCK and config.landlock_tier == PLAIN:
        winner = winner._replace(ipc="filtered", tier=PLAIN, tier_why=FORCED_PLAIN)
        chosen = chosen._replace(
            selected=winner,
            verdicts=tuple(winner if v.backend == LANDLOCK else v for v in chosen.verdicts),
        )
    if winner is not None:
        assert winner.runner is not None
        runner, source, sealed_fd = winner.runner, None, None
        if winner.backend == LANDLOCK:
            sealed = sealed_copy(winner.runner, config.probe_timeout)
            if sealed is not None:
                (runner, sealed_fd), source = sealed, winner.runner
        backend = Backend(
            name=winner.backend,
            runner=runner,
            abi=winner.abi,
            extra_rules=runner_command_rules(config.runner_failure_signatures),
            identity=None if source is not None else runner_identity(winner.runner),
            source=source,
            sealed_fd=sealed_fd,
            launcher=filter_launcher() if winner.backend == BWRAP else None,
            private_ipc=winner.ipc == "private",
            tier=winner.tier,
            tier_why=winner.tier_why,
        )
    return Selection.of(chosen, backend)


def sealed_copy(path: str, timeout: float) -> tuple[str, int] | None:
    """A sealed in-memory copy of the launcher, run as `/proc/<pid>/fd/<n>`.

    The harness execs this copy for its whole life, so replacing the launcher file
    on disk afterwards changes nothing it runs. The copy is probed once; None (use
    the file, identity-pinned) where the kernel refuses to run a memfd
    (`vm.memfd_noexec`) or the copy cannot be made. Returns the path and the
    descriptor, which the provider closes when it stops.
    """
    try:
        fd = os.memfd_create("stockade-landlock-run", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError:
        return None
    try:
        with open(path, "rb") as source:
            data = source.read()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, 0o500)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    except OSError:
        os.close(fd)
        return None
    copy = f"/proc/{os.getpid()}/fd/{fd}"
    ran = run_probe((copy, "--probe"), timeout)
    if isinstance(ran, tuple) and judge_landlock_probe(copy, *ran).usable:
        return copy, fd
    with contextlib.suppress(OSError):
        os.close(fd)
    return None

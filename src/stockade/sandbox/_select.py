"""Selecting the provider's runner: the probes of `_probe` plus the operator's config.

Synchronous on purpose: the ProviderActor runs it once, in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ._chain import Selection
from ._probe import PROBES, Probe, choose, host_temp_roots
from ._profiles import Backend, HostPaths, runner_command_rules
from .config import ProviderConfig


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
    )
    winner = chosen.selected
    backend = None
    if winner is not None:
        assert winner.runner is not None
        backend = Backend(
            name=winner.backend,
            runner=winner.runner,
            abi=winner.abi,
            extra_rules=runner_command_rules(config.runner_failure_signatures),
        )
    return Selection.of(chosen, backend)

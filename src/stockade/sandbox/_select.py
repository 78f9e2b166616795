"""Selecting the provider's runner: the probes of `_probe` plus the operator's config.

Synchronous on purpose: the ProviderActor runs it once, in a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..trust import host_temp_roots
from . import _probe
from ._chain import Selection
from ._confine import runner_identity
from ._profiles import Backend, HostPaths, runner_command_rules
from .backends import PROBES, choose, named
from .config import ProviderConfig

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._probe import Probe


def host_paths(environ: Mapping[str, str] = os.environ) -> HostPaths:
    """The host temp roots: /tmp, and $TMPDIR when set, absolute and existing."""
    return HostPaths(temp_roots=host_temp_roots(environ))


def select_backend(
    config: ProviderConfig, *, probe_all: bool = False, probes: Mapping[str, Probe] = PROBES
) -> Selection:
    """Probe the platform chain in order (or take the operator's runner_command; or a
    verdict remembered per user, `remember_verdict`)."""
    remember = config.remember_verdict and not probe_all
    roots = config.probe_roots
    if remember:
        # The trust base counts the host's temp roots writable whatever a call gets.
        roots = (*roots, *host_temp_roots())
    chosen = choose(
        config.platform,
        config.backend,
        runner_command=config.runner_command,
        timeout=config.probe_timeout,
        probe_all=probe_all,
        probes=probes,
        remember=remember,
        bwrap_path=config.bwrap_path,
        writable_roots=roots,
    )
    winner = chosen.selected
    backend = None
    if winner is not None:
        # As the composition shapes it (`landlock_tier`), in the report too.
        kind = named(winner.backend)
        shaped = kind.configured(winner, config.landlock_tier)
        if shaped is not winner:
            chosen = chosen._replace(
                selected=shaped,
                verdicts=tuple(shaped if v is winner else v for v in chosen.verdicts),
            )
            winner = shaped
        assert winner.runner is not None
        runner, source, sealed_fd = winner.runner, None, None
        sealed = kind.sealed_copy(winner.runner, config.probe_timeout)
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
            launcher=_probe.filter_launcher() if kind.FILTER_STAGE else None,
            private_ipc=winner.ipc == "private",
            tier=winner.tier,
            tier_why=winner.tier_why,
        )
    return Selection.of(chosen, backend)

"""The sandbox's backends, one module each, and the chain that picks one.

Each backend module (bwrap, landlock, seatbelt, fake: an operator's runner_command)
owns everything stockade knows of its runner, behind one protocol (`Backend`,
_protocol.py), as trio's `_subprocess_platform/` and httpcore's `_backends/` do: how
it probes itself, its argv or profile for a `SandboxPolicy`, its claims, denial
signatures and runner-failure rules, and its spawn traits. Nothing outside the
sandbox's room compares a backend's name; the rest of the room reaches a backend
through `named`.

THE chain's list is `PLATFORM_CHAINS`: every backend a platform tries, in order,
each named as its module is. Adding a backend: its module, its tests, that table.

Standard library only: `stockade exec` picks its runner here (with a verdict
remembered across processes), and a backend module is imported on first use, so exec
loads only the one it runs.
"""

from __future__ import annotations

from ...lazy import surface
from ...modes import SpawnTrait

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Sequence

    from . import bwrap, fake, landlock, seatbelt
    from ._choose import CACHE_ENV_OFF as CACHE_ENV_OFF
    from ._choose import PROBES as PROBES
    from ._choose import RUNNER_LOCATORS as RUNNER_LOCATORS
    from ._choose import Chosen as Chosen
    from ._choose import cache_file as cache_file
    from ._choose import cache_problem as cache_problem
    from ._choose import choose as choose
    from ._choose import remembered as remembered
    from ._protocol import Backend as Backend
    from .bwrap import BWRAP_LOCATIONS as BWRAP_LOCATIONS
    from .bwrap import bwrap_candidates as bwrap_candidates
    from .bwrap import has_filter_stage as has_filter_stage
    from .bwrap import namespace_init as namespace_init
    from .bwrap import reap_orphaned_init as reap_orphaned_init
    from .bwrap import runner_problem as runner_problem

    # mypy holds every backend module to the protocol here.
    _MODULES_ARE_BACKENDS: tuple[Backend, ...] = (bwrap, fake, landlock, seatbelt)

# THE chain's list: per platform, the backends it tries, in order, each the module of
# this folder of that name.
PLATFORM_CHAINS: dict[str, tuple[str, ...]] = {
    "linux": ("bwrap", "landlock"),
    "darwin": ("seatbelt",),
    # Reserved and empty: no Windows runner yet, so confine() fails closed.
    "win32": (),
}
# Every backend a chain may pick, in the chain's order: the one list of backend names
# (the composition's `backend` and the command line's `--backend` choose among them,
# or "auto").
NAMES: tuple[str, ...] = tuple(
    dict.fromkeys(name for chain in PLATFORM_CHAINS.values() for name in chain)
)
# An operator's runner_command (stockade.testing's fake runner is one): no chain, no
# probe; its module is `fake`.
RUNNER_COMMAND = "runner-command"
_MODULES = {**{name: name for name in NAMES}, RUNNER_COMMAND: "fake"}


def named(name: str) -> Backend:
    """The module of the backend called `name`, imported on first use; ValueError
    when no backend has that name."""
    module = _MODULES.get(name)
    if module is None:
        raise ValueError(f"unknown sandbox backend {name!r}")
    found: Backend | None = globals().get(module)  # bound here once imported
    if found is None:
        __import__(f"{__name__}.{module}")
        found = globals()[module]
    return found


def known(name: str) -> Backend | None:
    """`named`, or None when no backend has that name."""
    return named(name) if name in _MODULES else None


if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())


def started_option_at(argv: Sequence[str], traits: frozenset[SpawnTrait]) -> int | None:
    """Where `--started-fd FD` goes in a runner's `argv` (counted from its argv[0]):
    right after argv[0] when the runner is the launcher itself (STARTED_FD), right
    after the filter stage's `--filters-only` when it runs one (STAGE_STARTED_FD);
    None when nothing in it takes the option."""
    if SpawnTrait.STARTED_FD in traits:
        return 1
    if SpawnTrait.STAGE_STARTED_FD in traits:
        from .bwrap import filter_stage_at

        stage = filter_stage_at(argv)
        return None if stage is None else stage + 1
    return None


def chain_for(platform: str, forced: str | None = None) -> tuple[str, ...]:
    """The candidates to try on `platform`; unknown platforms get the empty chain."""
    chain = PLATFORM_CHAINS.get(platform, ())
    if forced is None or forced == "auto":
        return chain
    return (forced,) if forced in chain else ()

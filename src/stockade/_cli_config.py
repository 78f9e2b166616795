"""Which composition the CLI verbs use: --config, $STOCKADE_CONFIG, ./stockade.yml.

Only a file that exists is loaded (that costs the YAML and cattrs imports); with
none, the verbs keep the embedded defaults and `exec` stays on its fast path.
"""

from __future__ import annotations

import os
from collections import namedtuple

from ._modes import SandboxMode

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from .config import Composition
    from .sandbox.config import ProviderConfig

CONFIG_ENV = "STOCKADE_CONFIG"
CONFIG_FILENAME = "stockade.yml"


def names_a_config(explicit: str | None) -> bool:
    """Whether a composition file is named or present (a cheap check: no YAML import)."""
    return bool(explicit or os.environ.get(CONFIG_ENV) or os.path.isfile(CONFIG_FILENAME))


def load_cli_composition(explicit: str | None) -> Composition | None:
    """The composition the user named or left in the cwd, or None for the defaults."""
    if not names_a_config(explicit):
        return None
    from .config import find_config, load_composition

    path = find_config(explicit)
    return None if path is None else load_composition(path)


class CliSettings(namedtuple("CliSettings", "provider executor confines mode root")):
    """What a verb needs from the composition, with the user's flags laid over it:
    provider (ProviderConfig | None), executor (ExecutorConfig), confines (bool),
    mode (SandboxMode), root (str)."""

    __slots__ = ()


def cli_settings(
    composition: Composition | None,
    *,
    mode: str | None,
    root: str | None,
    backend: str,
) -> CliSettings:
    from .executor.config import ExecutorConfig
    from .sandbox.config import ProviderConfig

    if composition is None:
        provider: ProviderConfig | None = ProviderConfig(backend=backend)
        executor = ExecutorConfig()
        confines = True
    else:
        entry = composition.provider
        provider = None if entry is None else entry.config.provider_config()
        if provider is not None and backend != "auto":
            import attrs

            provider = attrs.evolve(provider, backend=backend)
        executor_entry = composition.executor
        executor = (
            ExecutorConfig() if executor_entry is None else executor_entry.config.executor_config()
        )
        confines = composition.confines
    chosen = SandboxMode.parse(mode) if mode is not None else executor.default_mode
    workspace = root or executor.fallback_root or os.getcwd()
    return CliSettings(
        provider=provider,
        executor=executor,
        confines=confines,
        mode=chosen,
        root=os.path.realpath(workspace),
    )

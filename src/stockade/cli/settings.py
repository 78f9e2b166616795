"""Which composition the CLI verbs use: --config or $STOCKADE_CONFIG (a ./stockade.yml
that is only present is refused: the trust base, docs/security.md).

Only a file that exists is loaded (that costs the YAML and cattrs imports); with
none, the verbs keep the embedded defaults and `exec` stays on its fast path.
"""

from __future__ import annotations

import os
from collections import namedtuple

from ..modes import Network, SandboxMode
from ..trust import CONFIG_ENV as CONFIG_ENV
from ..trust import names_a_config as names_a_config

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from ..config import Composition
    from ..executor import ExecutorConfig
    from ..sandbox import ProviderConfig

# Said by every verb that needs a provider the composition lacks.
NO_PROVIDER = "the composition mounts no sandbox provider (stockade.sandbox.local)"


def load_cli_composition(explicit: str | None) -> Composition | None:
    """`stockade.faces.load_face_composition`, for `exec`'s fast path: it imports
    faces/ only once `names_a_config` has said a composition is in play."""
    from ..faces.composition import load_face_composition

    return load_face_composition(explicit)


class CliSettings(
    namedtuple("CliSettings", "provider executor confines mode root network root_explicit")
):
    """What a verb needs from the composition, with the user's flags laid over it:
    provider (ProviderConfig | None), executor (ExecutorConfig), confines (bool),
    mode (SandboxMode), root (str), network (Network: the flag, else the composition's
    default; a call under danger-full-access has it `on` whatever this says),
    root_explicit (bool: --root or the composition's fallback_root named the root,
    rather than the current directory)."""

    __slots__ = ()


def _withholding_store_secrets(
    executor: ExecutorConfig, composition: Composition
) -> ExecutorConfig:
    """`executor` with the session store's credentials withheld from every command (as
    the harness does). Cheap for `stockade exec`: the store's answer from its config
    (`store_secrets`) loads no store, and psycopg only to find a password the DSN
    itself may carry."""
    log = composition.session_log
    if log is None:
        return executor
    from ..sessionlog import store_secrets

    names, values = store_secrets(log.config)
    if not (names or values):
        return executor
    from ..executor.environment import Withheld

    return executor.withholding(Withheld(names, values))


def _hiding_store_files(provider: ProviderConfig, composition: Composition) -> ProviderConfig:
    """`provider` with the session store's own paths in deny_read, as the harness has
    them: where its logs are (`config_protected_paths`: the `state` item), and the
    files holding its login (`config_credential_files`: every file libpq would read for
    a postgres store's DSN, its password, service and TLS files). A verb opens no log,
    but its commands run beside the harness's."""
    log = composition.session_log
    if log is None:
        return provider
    from ..sessionlog import config_credential_files, config_protected_paths

    state = config_protected_paths(log.config)
    files = config_credential_files(log.config)
    if not (state or files):
        return provider
    import attrs

    return attrs.evolve(
        provider,
        secret_state=(*provider.secret_state, *state),
        secret_tokens=(*provider.secret_tokens, *files),
    )


def cli_settings(
    composition: Composition | None,
    *,
    mode: str | None,
    root: str | None,
    backend: str,
    network: str | None = None,
) -> CliSettings:
    from ..executor import ExecutorConfig
    from ..sandbox import ProviderConfig, trusted_provider
    from ..trust import host_temp_roots

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
        executor = _withholding_store_secrets(executor, composition)
        confines = composition.confines
    if mode is not None:
        chosen = SandboxMode.parse(mode)
    elif confines:
        chosen = executor.default_mode
    else:
        # A composition that runs commands without a sandbox has one true mode; a
        # confining mode asked for by flag is refused by the verb (unconfined_refusal).
        chosen = SandboxMode.DANGER_FULL_ACCESS
    if network is not None:
        networked = Network.parse(network)
    elif confines:
        networked = executor.default_network
    else:
        # Nothing cuts an unconfined command's network off: `on` is its one true value.
        networked = Network.ON
    workspace = os.path.realpath(root or executor.fallback_root or os.getcwd())
    if provider is not None and composition is not None:
        provider = trusted_provider(provider, composition.path, (workspace, *host_temp_roots()))
        provider = _hiding_store_files(provider, composition)
    return CliSettings(
        provider=provider,
        executor=executor,
        confines=confines,
        mode=chosen,
        root=workspace,
        network=networked,
        root_explicit=bool(root or executor.fallback_root),
    )


def broad_root_problem(settings: CliSettings, *, may_widen: bool = False) -> str | None:
    """Why `settings` must not run: an implicit root of `/` or the home directory under
    workspace-write (or a mode `--ask` may widen to it); None when it may."""
    if settings.mode is not SandboxMode.WORKSPACE_WRITE and not (
        may_widen and settings.mode is SandboxMode.READ_ONLY
    ):
        return None
    from ..trust import broad_root_refusal

    return broad_root_refusal(
        settings.root, explicit=settings.root_explicit, home=os.environ.get("HOME")
    )


def unconfined_refusal(composition: Composition | None, settings: CliSettings) -> str | None:
    """Why `settings` cannot be honoured by `composition` (it runs commands without a
    sandbox but the mode confines, or the network is off), or None when it can."""
    if composition is None or settings.confines:
        return None
    mode_lies = settings.mode.confines
    if not mode_lies and not settings.network.confined:
        return None
    from ..policy import knobs

    executor = composition.executor
    reason = knobs.unconfined_reason(executor.name if executor is not None else None)
    if mode_lies:
        return knobs.unconfined_refusal(f"sandbox mode {settings.mode.value!r}", reason).detail
    return knobs.unconfined_refusal(
        f"network {settings.network.value!r}", reason, network=True
    ).detail

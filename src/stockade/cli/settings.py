"""Which composition the CLI verbs use: --config or $STOCKADE_CONFIG (a ./stockade.yml
that is only present is refused: the trust base, docs/security.md).

Only a file that exists is loaded (that costs the YAML and cattrs imports); with
none, the verbs keep the embedded defaults and `exec` stays on its fast path.
"""

from __future__ import annotations

import os

from ..modes import SandboxMode
from ..trust import CONFIG_ENV as CONFIG_ENV
from ..trust import names_a_config as names_a_config

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from ..config import Composition, Plan

# Said by every verb that needs a provider the composition lacks.
NO_PROVIDER = "the composition mounts no sandbox provider (stockade.sandbox.local)"


def load_cli_composition(explicit: str | None) -> Composition | None:
    """`stockade.faces.load_face_composition`, for `exec`'s fast path: it imports
    faces/ only once `names_a_config` has said a composition is in play."""
    from ..faces import load_face_composition

    return load_face_composition(explicit)


def cli_settings(
    composition: Composition | None,
    *,
    mode: str | None,
    root: str | None,
    backend: str,
    network: str | None = None,
) -> Plan:
    """The composition's plan (None: the embedded defaults) with the user's flags laid
    over it, and the session store's facts learnt from its entry's config: a verb opens
    no log, but its commands run beside the harness's, confined as the harness's are."""
    from ..config import facts_of_config, plan

    log = composition.session_log if composition is not None else None
    return plan(
        composition,
        store=facts_of_config(log.config if log is not None else None),
        root=root,
        backend=backend,
        mode=mode,
        network=network,
    )


def broad_root_problem(settings: Plan, *, may_widen: bool = False) -> str | None:
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


def unconfined_refusal(settings: Plan) -> str | None:
    """Why `settings` cannot be honoured (its composition runs commands without a
    sandbox but the mode confines, or the network is off), or None when it can."""
    reason = settings.unconfined
    if reason is None:
        return None
    from ..policy import knobs

    if settings.mode.confines:
        return knobs.unconfined_refusal(f"sandbox mode {settings.mode.value!r}", reason).detail
    if not settings.network.confined:
        return None
    return knobs.unconfined_refusal(
        f"network {settings.network.value!r}", reason, network=True
    ).detail

"""Which composition a face serves: the one named by --config or $STOCKADE_CONFIG, else
the embedded defaults (None). A ./stockade.yml that is only present is refused: the
trust base, docs/security.md.

Standard library until a file is named: only then are the YAML and cattrs imported.
"""

from __future__ import annotations

import os

from ..trust import CONFIG_ENV, implicit_config_refusal, names_a_config

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from ..config import Composition


def load_face_composition(explicit: str | None) -> Composition | None:
    """The composition the user named, or None for the defaults.

    A `./stockade.yml` that is only present, not named, is refused (ConfigError):
    nothing a confined command could have written steers a later call.
    """
    if not names_a_config(explicit):
        return None
    from ..config import find_config, load_composition
    from ..errors import ConfigError

    path = find_config(explicit)
    if path is None:
        return None
    if not explicit and not os.environ.get(CONFIG_ENV):
        if os.path.getsize(path) == 0:
            return None  # bwrap's placeholder for a protected stockade.yml: nothing

        raise ConfigError(implicit_config_refusal(os.path.abspath(path)))
    return load_composition(path)

"""Composition: stockade.yml (or a Python list) -> validated entries naming plugins, and
THE composition plan (`plan`) the harness, the CLI and the faces share.

Re-exports only, each loaded on first use: `loader` reads and checks (YAML, cattrs),
`builtins` holds the built-in plugins, `plan` decides (standard library only).
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._plan import Plan as Plan
    from ._plan import StoreFacts as StoreFacts
    from ._plan import facts_of_config as facts_of_config
    from ._plan import facts_of_store as facts_of_store
    from ._plan import plan as plan
    from ._problems import CompositionError as CompositionError
    from .builtins import BUILTIN_PLUGINS as BUILTIN_PLUGINS
    from .builtins import ApprovalConfig as ApprovalConfig
    from .builtins import FsConfig as FsConfig
    from .builtins import LocalBashConfig as LocalBashConfig
    from .builtins import McpFaceConfig as McpFaceConfig
    from .builtins import PresetsConfig as PresetsConfig
    from .builtins import PresetSpec as PresetSpec
    from .builtins import RejectRule as RejectRule
    from .builtins import SandboxBashConfig as SandboxBashConfig
    from .builtins import SandboxLocalConfig as SandboxLocalConfig
    from .builtins import SessionLogConfig as SessionLogConfig
    from .builtins import default_plugins as default_plugins
    from .loader import CONFIG_ENV as CONFIG_ENV
    from .loader import CONFIG_FILENAME as CONFIG_FILENAME
    from .loader import Composition as Composition
    from .loader import Entry as Entry
    from .loader import default_composition_text as default_composition_text
    from .loader import find_config as find_config
    from .loader import load_composition as load_composition
    from .loader import loads_composition as loads_composition
    from .plugins import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
    from .plugins import KINDS as KINDS
    from .plugins import Plugin as Plugin
    from .plugins import PluginActor as PluginActor
    from .plugins import PluginLoadError as PluginLoadError
    from .plugins import PluginTable as PluginTable


if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

"""The trust base: whether a file a later decision trusts could have been written by a
confined command (`check`), what every confined command must find read-only (`protect`),
the host facts every room asks (`host`), and what no command may read (`secrets`).
Standard library only; every name is loaded on first use.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from . import new_repository as new_repository
    from . import secrets as secrets
    from .check import CONFIG_ENV as CONFIG_ENV
    from .check import CONFIG_FILENAME as CONFIG_FILENAME
    from .check import INSTALL_FIX as INSTALL_FIX
    from .check import PathFacts as PathFacts
    from .check import Untrusted as Untrusted
    from .check import check_trusted as check_trusted
    from .check import containing_root as containing_root
    from .check import implicit_config_refusal as implicit_config_refusal
    from .check import is_under as is_under
    from .check import names_a_config as names_a_config
    from .check import path_prefixes as path_prefixes
    from .check import paths_inside as paths_inside
    from .host import broad_root_refusal as broad_root_refusal
    from .host import check_extra_roots as check_extra_roots
    from .host import check_temp_roots as check_temp_roots
    from .host import extra_root_refusal as extra_root_refusal
    from .host import host_temp_roots as host_temp_roots
    from .host import installation_links as installation_links
    from .host import installation_paths as installation_paths
    from .host import resolve_workspace_root as resolve_workspace_root
    from .protect import BLOCK as BLOCK
    from .protect import DEFAULT_PROTECTED as DEFAULT_PROTECTED
    from .protect import DIRECTORY_NAMES as DIRECTORY_NAMES
    from .protect import GITDIR_PROTECTED as GITDIR_PROTECTED
    from .protect import HOME_PROTECTED as HOME_PROTECTED
    from .protect import NESTED_DEPTH as NESTED_DEPTH
    from .protect import NEW_REPOSITORY_GAP as NEW_REPOSITORY_GAP
    from .protect import PIN as PIN
    from .protect import PLACEHOLDER_TEXT as PLACEHOLDER_TEXT
    from .protect import POINTER_LIMIT as POINTER_LIMIT
    from .protect import READ_ONLY as READ_ONLY
    from .protect import ROOT_PROTECTED as ROOT_PROTECTED
    from .protect import SCAN_BUDGET as SCAN_BUDGET
    from .protect import UNPROTECTABLE as UNPROTECTABLE
    from .protect import XDG_PROTECTED as XDG_PROTECTED
    from .protect import ProtectedSet as ProtectedSet
    from .protect import Protection as Protection
    from .protect import first_missing as first_missing
    from .protect import placeholder_text as placeholder_text
    from .protect import protected_paths as protected_paths
    from .protect import protected_set as protected_set
    from .protect import protections as protections
    from .protect import relinkable as relinkable
    from .protect import repository_made as repository_made
    from .protect import startup_files as startup_files
    from .secrets import DenyRead as DenyRead
    from .secrets import Hidden as Hidden
    from .secrets import check_pattern as check_pattern
    from .secrets import deny_read_for as deny_read_for
    from .secrets import glob_match as glob_match
    from .secrets import state_directories as state_directories
    from .workdir import JudgedDirectory as JudgedDirectory
    from .workdir import check_approved as check_approved
    from .workdir import enter_judged as enter_judged
    from .workdir import judge_workdir as judge_workdir
    from .workdir import spawn_cwd as spawn_cwd
    from .workdir import workdir_note as workdir_note

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

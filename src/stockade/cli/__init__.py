"""The `stockade` command line, one module per job: `parser`, `fastpath` (exec,
standard library only), `settings`, `errors`, and a module per verb. The program that
dispatches the words is `stockade.entry`, above the faces.

This is the folder's public surface. Every name is loaded on first use, so the
program loads only the verb's module it runs.
"""

from __future__ import annotations

from ..lazy import surface

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from .cache import run_cache as run_cache
    from .demo import run_demo as run_demo
    from .errors import EXIT_BROKEN_PIPE as EXIT_BROKEN_PIPE
    from .errors import EXIT_UNAVAILABLE as EXIT_UNAVAILABLE
    from .errors import EXIT_USAGE as EXIT_USAGE
    from .errors import emit_error as emit_error
    from .errors import say as say
    from .errors import silence as silence
    from .fastpath import ends_as_exec as ends_as_exec
    from .fastpath import fast_args as fast_args
    from .fastpath import run_exec as run_exec
    from .parser import build_parser as build_parser
    from .parser import wants_json as wants_json
    from .probe import run_probe as run_probe
    from .rules_check import run_rules_check as run_rules_check
    from .run import run_command as run_command
    from .session_show import run_show as run_show
    from .session_undo import run_undo as run_undo
    from .sessions import run_list as run_list
    from .sessions import run_prune as run_prune
    from .sessions import session_store as session_store

if not TYPE_CHECKING:  # the names above are read as text (stockade.lazy)
    __getattr__ = surface(__name__, globals())

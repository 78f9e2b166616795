"""`stockade session show PATH_OR_ID [--json] [--state-dir DIR]`: replay a log for a person.

The rendering is every face's (`stockade.faces.show_session`); this module reads the
verb's arguments and tells an error as the command line does: one line on stderr, or
with `--json` one object on stdout (`{"error": {"code", "detail"}}`, docs/cli.md).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ..events import EventRegistry
from ..faces import Unshowable, show_session
from ..policy import DEFAULT_PRESETS, PolicyDefaults, PresetTable
from ..sessionlog import BUILTIN_EVENTS, SessionStore
from .errors import CliError, report


def run_show(
    args: argparse.Namespace,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    registry: EventRegistry = BUILTIN_EVENTS,
    defaults: PolicyDefaults | None = None,
    presets: PresetTable = DEFAULT_PRESETS,
    store: SessionStore | None = None,
) -> int:
    """Print the log named by `args.path_or_id`; 0 on success, 1 when it cannot be read.

    `args` needs `path_or_id`, and optionally `json` and `state_dir`. A log file's path
    is read as that file; an id (or a unique prefix of one) is read from `store`
    (None: the JSON-lines directory `state_dir`, else $STOCKADE_STATE_DIR, else the
    default). An error is one line on stderr, or with `json` one object on stdout
    (`{"error": {"code", "detail"}}`, the codes in docs/cli.md).
    """
    out = sys.stdout if stdout is None else stdout
    as_json = bool(getattr(args, "json", False))
    try:
        show_session(
            args.path_or_id,
            out,
            as_json=as_json,
            state_dir=getattr(args, "state_dir", None),
            registry=registry,
            defaults=defaults,
            presets=presets,
            store=store,
        )
    except Unshowable as error:
        return report(
            CliError(error.code, error.detail), as_json=as_json, stdout=out, stderr=stderr
        )
    return 0

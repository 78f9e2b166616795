"""`stockade session list` and `stockade session prune`, and the store `session` reads.

The verbs of the session log's catalog (`stockade.sessionlog.catalog`) for a person
or a script: a table or `--json`, durations (`--older-than 7d`) and sizes rendered,
the catalog's errors told as the command line's codes. `session_store` picks the
store the `session` verbs read from the composition named on the command line.
What a log or a file name holds (a session's cwd, an error's path) is shown escaped
by `stockade.shown`, and `--json` writes the same characters as JSON escapes.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

import msgspec

from ..events import EventRegistry
from ..policy import PolicyDefaults
from ..sessionlog import (
    BUILTIN_EVENTS,
    CatalogUnreadable,
    NoCatalog,
    SessionEntry,
    SessionStore,
    build_store,
    catalog_of,
    check_store_files,
    store_files,
)
from ..shown import json_escaped, one_line
from .errors import CliError, report


def session_store(args: argparse.Namespace, registry: EventRegistry) -> SessionStore | None:
    """For the `session` verbs: the store of the composition named by `--config` (or
    $STOCKADE_CONFIG), `--state-dir` standing in for a JSON-lines store's directory.
    None when no composition is named (the verbs then read the JSON-lines directory
    `--state-dir`, $STOCKADE_STATE_DIR or the default).
    """
    from ..faces import load_face_composition
    from ..trust import CONFIG_ENV, host_temp_roots

    named = getattr(args, "config", None)
    if not named and not os.environ.get(CONFIG_ENV):
        return None  # a ./stockade.yml that is only present is never read (the trust base)
    composition = load_face_composition(named)
    entry = composition.session_log if composition is not None else None
    if composition is None or entry is None:
        return None
    store = build_store(
        entry.config,
        registry,
        composition_path=composition.path,
        state_dir=getattr(args, "state_dir", None),
    )
    check_store_files(store_files(store), (os.path.realpath(os.getcwd()), *host_temp_roots()))
    return store


@contextmanager
def _told_as_cli_errors() -> Iterator[None]:
    """The catalog's own errors as the command line's codes."""
    try:
        yield
    except CatalogUnreadable as error:
        raise CliError("ENVIRONMENT", str(error)) from None
    except NoCatalog as error:
        raise CliError("CONFIG", str(error)) from None


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """`7d`, `12h`, `30m`, `45s`, `2w`, `0s`, or a sum such as `1d12h`: seconds."""
    pieces = _DURATION.findall(text)
    if not text or "".join(number + unit for number, unit in pieces) != text:
        raise ValueError(
            f"a duration is a number and a unit (s, m, h, d, w), e.g. 7d, 12h or 0s; got {text!r}"
        )
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in pieces)


def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    moment = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    moment = datetime.datetime.fromtimestamp(ts, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _size(size: int | None) -> str:
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def _json_entry(entry: SessionEntry) -> dict[str, Any]:
    facts: dict[str, Any] = msgspec.to_builtins(entry)
    facts["last_activity"] = _iso(entry.last_activity)
    return facts


def _table(entries: Sequence[SessionEntry]) -> str:
    header = (
        "SESSION",
        "LAST ACTIVITY (UTC)",
        "SIZE",
        "MODE",
        "APPROVAL",
        "NETWORK",
        "OPEN",
        "CWD",
    )
    # Each cell escaped before the widths are taken: a column is as wide as it shows.
    rows = [
        tuple(
            one_line(cell)
            for cell in (
                entry.session,
                _when(entry.last_activity),
                _size(entry.size),
                entry.sandbox_mode or "-",
                entry.approval_policy or "-",
                entry.network or "-",
                "yes" if entry.open else "no",
                (entry.cwd or "-") if entry.error is None else f"({entry.error['code']})",
            )
        )
        for entry in entries
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
    return "\n".join(lines) + "\n"


def run_list(
    args: argparse.Namespace,
    *,
    store: Any = None,
    registry: EventRegistry = BUILTIN_EVENTS,
    defaults: PolicyDefaults | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """`stockade session list [--json]`; `args` needs `json` and `state_dir`."""
    out = sys.stdout if stdout is None else stdout
    as_json = bool(getattr(args, "json", False))
    try:
        with _told_as_cli_errors():
            catalog, where = catalog_of(store, getattr(args, "state_dir", None), registry)
            entries = catalog.list_sessions(
                defaults=PolicyDefaults() if defaults is None else defaults
            )
    except CliError as error:
        return report(error, as_json=as_json, stdout=out, stderr=stderr)
    if as_json:
        reply = {"location": where, "sessions": [_json_entry(entry) for entry in entries]}
        out.write(json_escaped(msgspec.json.encode(reply).decode()) + "\n")
        return 0
    if not entries:
        out.write(f"no sessions in {one_line(where)}\n")
        return 0
    out.write(_table(entries))
    for entry in entries:
        if entry.error is not None:
            out.write(one_line(f"{entry.session}: {entry.error['detail']}") + "\n")
    return 0


def run_prune(
    args: argparse.Namespace,
    *,
    store: Any = None,
    registry: EventRegistry = BUILTIN_EVENTS,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    now: float | None = None,
) -> int:
    """`stockade session prune --older-than DURATION [--dry-run] [--json]`: 0 when every
    idle session was removed (or there was none), 1 when one could not be."""
    out = sys.stdout if stdout is None else stdout
    as_json = bool(getattr(args, "json", False))
    dry_run = bool(getattr(args, "dry_run", False))
    older_than = args.older_than
    try:
        seconds = parse_duration(older_than)
    except ValueError as error:
        return report(CliError("USAGE", f"--older-than: {error}"), as_json=as_json, stdout=out)
    cutoff = (time.time() if now is None else now) - seconds
    try:
        with _told_as_cli_errors():
            catalog, where = catalog_of(store, getattr(args, "state_dir", None), registry)
            result = catalog.prune_sessions(cutoff, dry_run=dry_run)
    except CliError as error:
        return report(error, as_json=as_json, stdout=out, stderr=stderr)
    status = 1 if result.failed else 0
    if as_json:
        reply = {
            "location": where,
            "older_than": older_than,
            "cutoff": _iso(cutoff),
            "dry_run": dry_run,
            "removed": [_json_entry(entry) for entry in result.removed],
            "kept_open": [_json_entry(entry) for entry in result.kept_open],
            "failed": [_json_entry(entry) for entry in result.failed],
            "skipped": [_json_entry(entry) for entry in result.skipped],
        }
        out.write(json_escaped(msgspec.json.encode(reply).decode()) + "\n")
        return status
    verb = "would remove" if dry_run else "removed"
    for entry in result.removed:
        out.write(
            f"{verb} {one_line(entry.session)} (last activity {_when(entry.last_activity)} "
            f"UTC, {_size(entry.size)})\n"
        )
    for entry in result.kept_open:
        out.write(f"kept {one_line(entry.session)}: open (a session holds it now)\n")
    for entry in result.skipped:
        out.write(f"skipped {one_line(entry.location)}: not a stockade session log (no header)\n")
    for entry in result.failed:
        detail = entry.error["detail"] if entry.error else "unknown error"
        print(f"stockade: {one_line(detail)}", file=sys.stderr if stderr is None else stderr)
    freed = sum(entry.size or 0 for entry in result.removed)
    if not (result.removed or result.kept_open or result.failed or result.skipped):
        out.write(
            f"nothing to prune: no session in {one_line(where)} idle for "
            f"{one_line(older_than)} or more\n"
        )
    else:
        count = len(result.removed)
        rest = [
            *([f"kept {len(result.kept_open)} open"] if result.kept_open else []),
            *([f"{len(result.failed)} could not be removed"] if result.failed else []),
            *([f"skipped {len(result.skipped)} not a session log"] if result.skipped else []),
        ]
        if count == 0:
            # Not "removed 0 sessions (0 B)": nothing was, and the line says why not.
            nothing = "nothing would be removed" if dry_run else "nothing was removed"
            out.write(f"{nothing} from {one_line(where)}: {'; '.join(rest)}\n")
        else:
            # A store that does not know its sessions' sizes (a database) shows none.
            known = all(entry.size is not None for entry in result.removed)
            size = f" ({_size(freed)})" if known else ""
            out.write(
                f"{verb} {count} session{'s' if count != 1 else ''}{size} from "
                f"{one_line(where)}" + "".join(f"; {part}" for part in rest) + "\n"
            )
    return status

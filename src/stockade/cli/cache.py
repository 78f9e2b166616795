"""`stockade cache show|prune`: where confined commands keep their tools' caches, how
big each is, and emptying them (sandbox/tool_caches.py owns the directory's layout)."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..faces import load_face_composition
from ..sandbox import tool_caches
from ..shown import escaped_lines
from .errors import say

if TYPE_CHECKING:
    import argparse


def _where(config: str | None) -> tuple[str | None, tuple[str, ...], str]:
    """(the directory or None, its tools, why none) as the composition's plan sets them
    (so a composition file that may not name a directory names none here either)."""
    from .settings import cli_settings

    settings = cli_settings(load_face_composition(config), mode=None, root=None, backend="auto")
    setting = settings.tool_caches()
    if setting is None:
        why = "tool caches are off in the composition (tool_caches: off)"
        if not settings.confines:
            why = "the composition runs commands unconfined: no call uses tool caches"
        return None, (), why
    directory = setting.directory or tool_caches.default_directory()
    if directory is None:
        return None, setting.tools, "no home directory to keep them in (set HOME or XDG_CACHE_HOME)"
    return directory, setting.tools, ""


def run_cache(args: argparse.Namespace) -> int:
    directory, tools, why = _where(args.config)
    if args.cache_verb == "show":
        return _show(directory, tools, why, as_json=args.json)
    chosen = tuple(args.tools) or tools
    try:
        chosen = tool_caches.check_tools(chosen)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return _prune(directory, chosen, why, dry_run=args.dry_run, as_json=args.json)


def _show(directory: str | None, tools: tuple[str, ...], why: str, *, as_json: bool) -> int:
    rows = tool_caches.usage(directory) if directory is not None else []
    if as_json:
        say(
            sys.stdout,
            json.dumps(
                {
                    "directory": directory,
                    "tools": list(tools),
                    "why_none": why or None,
                    "entries": [{"name": name, "bytes": size} for name, size in rows],
                    "total_bytes": sum(size for _, size in rows),
                }
            )
            + "\n",
        )
        return 0
    if directory is None:
        say(sys.stdout, f"tool caches: none ({why})\n")
        return 0
    lines = [f"tool caches: {directory} (tools: {', '.join(tools)})"]
    if not rows:
        lines.append("  (empty: nothing cached yet)")
    for name, size in rows:
        lines.append(f"  {name:<12} {_size(size):>10}")
    lines.append(f"  {'total':<12} {_size(sum(size for _, size in rows)):>10}")
    say(sys.stdout, escaped_lines("\n".join(lines)) + "\n")
    return 0


def _prune(
    directory: str | None, tools: tuple[str, ...], why: str, *, dry_run: bool, as_json: bool
) -> int:
    if directory is None:
        raise ConfigError(f"no tool caches to prune: {why}")
    if dry_run:
        gone = [
            os.path.join(directory, sub)
            for sub in dict.fromkeys(tool_caches.subdirectories(tools))
            if os.path.lexists(os.path.join(directory, sub))
        ]
    else:
        try:
            gone = tool_caches.prune(directory, tools)
        except OSError as error:
            say(sys.stderr, escaped_lines(f"stockade: cannot empty a cache: {error}") + "\n")
            return 1
    if as_json:
        say(sys.stdout, json.dumps({"removed": gone, "dry_run": dry_run}) + "\n")
    else:
        verb = "would remove" if dry_run else "removed"
        text = "\n".join(f"{verb} {path}" for path in gone) or "nothing to remove"
        say(sys.stdout, escaped_lines(text) + "\n")
    return 0


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    amount = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        amount /= 1024
        if amount < 1024 or unit == "GiB":
            break
    return f"{amount:.1f} {unit}"

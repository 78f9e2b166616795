"""The impure step of denial attribution: host facts about the paths refusals name.

Only lines that carry a denial signature get here, so a call whose output has none
costs nothing; a call that prints many is bounded by MAX_PATHS. Everything is asked
as the caller (this process's effective ids): what the command could have done with
no sandbox at all. The decision itself is pure (`_denials.attribute`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from ._denials import HostSight, Missing, PathFacts, Refusal

# Distinct paths examined per call; a line naming a path beyond it stays unknown
# (for stderr: the signature alone decides, the rule for unrecoverable lines).
MAX_PATHS = 256

_EFFECTIVE = os.access in os.supports_effective_ids


def _access(path: str, mode: int) -> bool:
    try:
        return os.access(path, mode, effective_ids=_EFFECTIVE)
    except (OSError, ValueError):
        return False


def _nearest_existing(path: str) -> str:
    current = path
    while not os.path.lexists(current) and current != "/":
        current = os.path.dirname(current) or "/"
    return current


def _sticky_refuses(directory: str, entry: str) -> bool:
    """A sticky directory (like /var/tmp) lets only the owners remove or rename."""
    euid = os.geteuid()
    try:
        info = os.stat(directory)
        if euid == 0 or not info.st_mode & stat.S_ISVTX or info.st_uid == euid:
            return False
        return os.lstat(entry).st_uid != euid
    except OSError:
        return False


def _read_only_mount(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return True


def path_facts(path: str, cwd: str) -> PathFacts | None:
    """Facts for `path` as a line printed it, resolved against `cwd`; None when it
    cannot be what a refusal named (its directory does not exist: a write refused
    with EACCES or EROFS got as far as the last component)."""
    try:
        joined = os.path.join(cwd, path)
        name = os.path.basename(joined.rstrip("/"))
        directory = os.path.realpath(os.path.dirname(joined.rstrip("/")) or "/")
        if not os.path.isdir(directory):
            return None
        entry = (
            os.path.realpath(joined) if name in ("", ".", "..") else os.path.join(directory, name)
        )
        target = os.path.realpath(joined)
        exists = os.path.exists(target)
        if exists:
            writable = _access(target, os.W_OK)
        else:
            parent = _nearest_existing(os.path.dirname(target))
            writable = os.path.isdir(parent) and _access(parent, os.W_OK | os.X_OK)
        entry_changeable = (
            _access(directory, os.W_OK | os.X_OK)
            and not _sticky_refuses(directory, entry)
            and not (os.path.lexists(entry) and os.path.ismount(entry))
        )
        metadata_changeable = False
        unexecutable = False
        if exists:
            info = os.stat(target)
            metadata_changeable = os.geteuid() in (0, info.st_uid) and not _read_only_mount(target)
            unexecutable = stat.S_ISREG(info.st_mode) and not _access(target, os.X_OK)
        return PathFacts(
            target=target,
            entry=entry,
            exists=exists,
            writable=writable,
            entry_changeable=entry_changeable,
            metadata_changeable=metadata_changeable,
            unexecutable=unexecutable,
        )
    except (OSError, ValueError):
        return None


def gather(found: Iterable[Refusal], cwd: str) -> dict[str, PathFacts]:
    """Facts for every path the refusals name (at most MAX_PATHS), keyed as printed."""
    facts: dict[str, PathFacts] = {}
    seen: set[str] = set()
    for refusal in found:
        for path in refusal.paths or ():
            if path in seen:
                continue
            if len(seen) >= MAX_PATHS:
                return facts
            seen.add(path)
            result = path_facts(path, cwd)
            if result is not None:
                facts[path] = result
    return facts


def read_denied(words: Iterable[str], cwd: str, unreadable: Iterable[str]) -> bool:
    """Whether one of `words` (`_denials.named_paths`), resolved against `cwd` (links
    followed, as the command's open did), lies at or under a covered deny_read path
    that the caller could read without the sandbox (so the sandbox is what refused)."""
    covered = tuple(unreadable)
    for word in list(words)[:MAX_PATHS]:
        try:
            target = os.path.realpath(os.path.join(cwd, word))
        except (OSError, ValueError):
            continue
        for path in covered:
            under = target == path or target.startswith(path.rstrip("/") + "/")
            if under and _access(path, os.R_OK):
                return True
    return False


def _fresh_prefix(path: str, fresh: frozenset[str]) -> tuple[str, str] | None:
    """(fresh directory, the rest below it) when a prefix of the absolute, normalised
    `path` leads to one of `fresh` on the host (`/var/run` to `/run`): the prefixes
    above a fresh directory are the host's in the command's view too."""
    parts = [part for part in path.split("/") if part]
    for end in range(1, len(parts)):
        prefix = "/" + "/".join(parts[:end])
        real = prefix if prefix in fresh else os.path.realpath(prefix)
        if real in fresh:
            return real, "/".join(parts[end:])
    return None


def sight(found: Iterable[Missing], cwd: str, fresh: Iterable[str]) -> dict[str, HostSight]:
    """For every path the `Missing` lines name (at most MAX_PATHS) that lies strictly
    beneath one of the call's `fresh` directories: what the host has there (stat, links
    followed, as this process; nothing is opened). Paths beneath none are left out."""
    dirs = frozenset(fresh)
    facts: dict[str, HostSight] = {}
    seen: set[str] = set()
    for line in found:
        if line.path in seen:
            continue
        if len(seen) >= MAX_PATHS:
            break
        seen.add(line.path)
        try:
            beneath = _fresh_prefix(os.path.normpath(os.path.join(cwd, line.path)), dirs)
            if beneath is None:
                continue
            top, rest = beneath
            location = os.path.join(top, rest)
            facts[line.path] = HostSight(
                location=location,
                fresh=top,
                exists=os.path.exists(location),
                directory=os.path.isdir(os.path.dirname(location)),
            )
        except (OSError, ValueError):
            continue
    return facts

"""The three in-process file tools (read_file, write_file, edit_file) and their result.

Writes go through the path fence in `_fence` and land atomically; every outcome, bad
input and OS errors included, is an FsResult with the exact text the model sees.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Final

from ..trust import DenyRead
from ..vocab import (
    ExecutionPolicy,
    SandboxMode,
)
from . import _protected
from ._fence import (
    FenceRefused,
    PathProblem,
    Target,
    absolute_path,
    locate,
    parts_of,
    replace_atomically,
    write_target,
)
from ._fs_result import (
    FsResult,
    _denied,
    _error,
    _not_regular,
    _os_error,
    _replaced,
    _secret,
)
from ._roots import PinnedRoots, RootReplaced

DEFAULT_READ_CAP: Final = 256 * 1024
BINARY_PROBE: Final = 8 * 1024
EDIT_CAP: Final = 64 * 1024 * 1024  # edit_file holds the whole file in memory
_READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_NO_FOLLOW_READ: Final = _READ_FLAGS | os.O_NOFOLLOW


def _denies(
    policy: ExecutionPolicy,
    deny_read: DenyRead | None,
    real: str | None,
    temp_roots: Sequence[str] | None = None,
) -> bool:
    """Whether deny_read names `real` (where the open landed) in this policy's mode."""
    if deny_read is None or real is None or policy.mode is SandboxMode.DANGER_FULL_ACCESS:
        return False
    roots = policy.temp_roots if temp_roots is None else tuple(temp_roots)
    return deny_read.denies(real, (policy.workspace_root, *roots))


@contextmanager
def _pinned(
    pinned: PinnedRoots | None, policy: ExecutionPolicy, temp_roots: Sequence[str] | None
) -> Iterator[PinnedRoots]:
    """The session's pinned roots held for this call, or roots pinned now for this call
    alone (no session: nothing was pinned earlier to compare with)."""
    if pinned is not None and pinned.workspace.path == policy.workspace_root:
        with pinned.use() as held:
            yield held
        return
    roots = policy.temp_roots if temp_roots is None else tuple(temp_roots)
    with PinnedRoots.pin(
        policy.workspace_root, roots, strict=False, since="the call started"
    ) as transient:
        yield transient


# -- read ----------------------------------------------------------------------------


def _positive(name: str, value: object, *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"{name} must be a positive integer (lines are numbered from 1), got {value!r}"
    return None


def read_file(
    policy: ExecutionPolicy,
    cwd: str,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    *,
    read_cap: int = DEFAULT_READ_CAP,
    roots: PinnedRoots | None = None,
    deny_read: DenyRead | None = None,
) -> FsResult:
    """Read a text file (in every mode, but for what `deny_read` names), at most
    `read_cap` bytes.

    Lines are 1-based and inclusive; a binary file is reported with its size, a cut
    is announced with the size and where to continue. With a session's pinned `roots`,
    a fenced mode first checks them, and a path under one is opened from its pinned fd.
    """
    mode = policy.mode
    try:
        shown = absolute_path(cwd, path)
    except PathProblem as problem:
        return _error(mode, str(path), f"read_file: {problem}.")
    for name, value, optional in (
        ("start_line", start_line, True),
        ("end_line", end_line, True),
        ("read_cap", read_cap, False),
    ):
        if (wrong := _positive(name, value, optional=optional)) is not None:
            return _error(mode, shown, f"read_file: {wrong}.")
    if start_line is not None and end_line is not None and end_line < start_line:
        return _error(
            mode, shown, f"read_file: end_line {end_line} is before start_line {start_line}."
        )
    try:
        fd = _open_for_reading(policy, shown, roots)
    except RootReplaced as refusal:
        return _replaced("read_file", mode, shown, refusal)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a socket, or a device without a driver
            return _error(mode, shown, f"read_file: {shown} is not a regular file; refused.")
        return _os_error("read_file", mode, shown, error, cwd)
    try:
        # Judged where the open landed (links followed, as the kernel did).
        if _denies(policy, deny_read, _protected.dir_location(fd) or os.path.realpath(shown)):
            return _secret("read_file", mode, shown)
        st = os.fstat(fd)
        if (refused := _not_regular("read_file", mode, shown, st)) is not None:
            return refused
        return _read_open(mode, shown, fd, st.st_size, start_line, end_line, read_cap)
    except OSError as error:
        return _os_error("read_file", mode, shown, error, cwd)
    finally:
        os.close(fd)


def _open_for_reading(policy: ExecutionPolicy, shown: str, roots: PinnedRoots | None) -> int:
    """Open `shown` to read; under a pinned root, from its pinned fd (the rest of the
    path resolves as the kernel resolves it: reads are not fenced)."""
    if roots is None or policy.mode is SandboxMode.DANGER_FULL_ACCESS:
        return os.open(shown, _READ_FLAGS)
    if roots.workspace.path != policy.workspace_root:
        return os.open(shown, _READ_FLAGS)  # pinned for another root: nothing to compare
    with roots.use():
        roots.check()
        held = roots.held()
        located = locate(parts_of(shown), roots.spellings([pin.path for pin in held]))
        if located is None:
            return os.open(shown, _READ_FLAGS)
        pin, rest = located
        if pin.fd < 0:  # (only a root pinned for one call; a session's refuses above)
            return os.open(shown, _READ_FLAGS)
        return os.open("/".join(rest) or ".", _READ_FLAGS, dir_fd=pin.fd)


def _past_end(mode: SandboxMode, shown: str, first: int, lines: int, size: int) -> FsResult:
    return _error(
        mode,
        shown,
        f"read_file: start_line {first} is past the end: {shown} has {lines} "
        f"line{'' if lines == 1 else 's'}.",
        size=size,
    )


def _read_open(
    mode: SandboxMode,
    shown: str,
    fd: int,
    size: int,
    start_line: int | None,
    end_line: int | None,
    cap: int,
) -> FsResult:
    reader = io.BufferedReader(io.FileIO(fd, "rb", closefd=False), 64 * 1024)
    head = reader.peek(BINARY_PROBE)[:BINARY_PROBE]
    if not head:  # (a /proc or /sys file says size 0 and still has content: look first)
        return FsResult(text="[empty file: 0 bytes]", mode=mode, path=shown, size=0)
    of_size = f"a {size}-byte file" if size else "a file of unreported size"
    binary = FsResult(
        text=f"{shown} is a binary file ({size} bytes); its content is not shown. Inspect it "
        "with bash (e.g. file, or xxd | head).",
        mode=mode,
        path=shown,
        size=size,
        binary=True,
    )
    if b"\0" in head:
        return binary
    first = start_line or 1
    line = 1  # the number of the line the reader is in
    ended_newline = True
    while line < first:
        piece = reader.readline(64 * 1024)
        if not piece:
            return _past_end(mode, shown, first, line - 1 if ended_newline else line, size)
        ended_newline = piece.endswith(b"\n")
        line += ended_newline
    out = bytearray()
    truncated = eof = False
    while end_line is None or line <= end_line:
        piece = reader.readline(cap - len(out) + 1)
        if not piece:
            eof = True
            break
        if len(out) + len(piece) > cap:
            out += piece[: cap - len(out)]
            truncated = True
            break
        out += piece
        ended_newline = piece.endswith(b"\n")
        line += ended_newline
    if not out and eof:
        lines = line - 1 if ended_newline else line
        return _error(
            mode,
            shown,
            f"read_file: start_line {first} is past the end: {shown} has {lines} lines.",
        )
    partial_cut = truncated and b"\n" in out
    if partial_cut:
        del out[out.rindex(b"\n") + 1 :]
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(bytes(out), final=not truncated)
    except UnicodeDecodeError:
        return binary
    last = first + out.count(b"\n") - (1 if out.endswith(b"\n") else 0)
    notes: list[str] = []
    if truncated and partial_cut:
        notes.append(
            f"[truncated: showed lines {first}-{last} ({len(out)} bytes) of {of_size}; "
            f"read on with start_line={last + 1}]"
        )
    elif truncated:
        notes.append(
            f"[truncated: line {first} is longer than {cap} bytes; showed its first "
            f"{len(out)} bytes of {of_size}. Use bash (e.g. cut or head -c) for the rest]"
        )
    elif eof and end_line is not None and end_line > last:
        notes.append(f"[end_line {end_line} is past the end: the file ends at line {last}]")
    if notes and not text.endswith("\n"):
        text += "\n"
    return FsResult(
        text=text + "\n".join(notes),
        mode=mode,
        path=shown,
        size=size,
        truncated=truncated,
        first_line=first,
        last_line=last,
    )


# -- write and edit --------------------------------------------------------------------


def _landed(target: Target) -> str | None:
    """The real path a write target names: its directory's location, and its name."""
    where = _protected.dir_location(target.dir_fd)
    return None if where is None else os.path.join(where, target.name)


def _hard_linked(links: int) -> FenceRefused:
    return FenceRefused(
        f"it has {links} hard links and may be linked from outside the writable roots"
    )


def _entry_problem(tool: str, mode: SandboxMode, path: str, target: Target) -> FsResult | None:
    """A directory or special file is an error; a hard-linked file is a fence refusal."""
    if target.stat is None:
        return None
    if (refused := _not_regular(tool, mode, path, target.stat)) is not None:
        return refused
    if target.root is not None and target.stat.st_nlink > 1:
        raise _hard_linked(target.stat.st_nlink)
    return None


def _prepare(
    tool: str, policy: ExecutionPolicy, cwd: str, path: object
) -> tuple[str, FsResult | None]:
    try:
        shown = absolute_path(cwd, path)
    except PathProblem as problem:
        return str(path), _error(policy.mode, str(path), f"{tool}: {problem}.")
    if isinstance(path, str) and path.endswith("/"):
        return shown, _error(
            policy.mode, shown, f"{tool}: {path} ends with '/'; name a file, not a directory."
        )
    return shown, None


def write_file(
    policy: ExecutionPolicy,
    cwd: str,
    path: str,
    content: str,
    *,
    temp_roots: Sequence[str] | None = None,
    protected_extra: Sequence[str] = (),
    roots: PinnedRoots | None = None,
    deny_read: DenyRead | None = None,
) -> FsResult:
    """Create or replace a file with `content` (UTF-8), atomically, if the mode allows it.

    `roots`: the session's pinned roots (the workspace root and its temp roots); without
    them the roots are pinned for this call, `temp_roots` defaulting to the policy's (its
    session's private temp directory, and the host's temp roots where the composition
    restores them). Missing directories are not created; an existing file keeps its mode
    (and owner, when root). `protected_extra` adds protected paths (relative to each
    writable root, or absolute) to the defaults.
    """
    mode = policy.mode
    shown, problem = _prepare("write_file", policy, cwd, path)
    if problem is not None:
        return problem
    if not isinstance(content, str):
        return _error(mode, shown, "write_file: content must be a string.")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as error:
        return _error(mode, shown, f"write_file: content is not encodable as UTF-8: {error}.")
    try:
        with (
            _pinned(roots, policy, temp_roots) as pinned,
            write_target(policy, shown, pinned, protected_extra=protected_extra) as target,
        ):
            if _denies(policy, deny_read, _landed(target), temp_roots):
                return _secret("write_file", mode, shown)
            if (refused := _entry_problem("write_file", mode, shown, target)) is not None:
                return refused
            replace_atomically(target, data, target.stat)
    except RootReplaced as refusal:
        return _replaced("write_file", mode, shown, refusal)
    except FenceRefused as refusal:
        return _denied("write_file", mode, shown, refusal.reason)
    except OSError as error:
        return _os_error("write_file", mode, shown, error, cwd)
    created = target.stat is None
    unit = "byte" if len(data) == 1 else "bytes"
    return FsResult(
        text=f"Wrote {len(data)} {unit} to {shown} ({'created' if created else 'replaced'}).",
        mode=mode,
        path=shown,
        size=len(data),
        bytes_written=len(data),
        created=created,
    )


def edit_file(
    policy: ExecutionPolicy,
    cwd: str,
    path: str,
    old: str,
    new: str,
    replace_all: bool = False,
    *,
    temp_roots: Sequence[str] | None = None,
    protected_extra: Sequence[str] = (),
    roots: PinnedRoots | None = None,
    deny_read: DenyRead | None = None,
) -> FsResult:
    """Replace `old` with `new` in a UTF-8 file, atomically, if the mode allows writing it.

    `old` must occur exactly once unless `replace_all`; otherwise nothing is written.
    `roots` and `temp_roots` as for write_file.
    """
    mode = policy.mode
    shown, problem = _prepare("edit_file", policy, cwd, path)
    if problem is not None:
        return problem
    if not isinstance(old, str) or not isinstance(new, str):
        return _error(mode, shown, "edit_file: old and new must be strings.")
    if not old:
        return _error(
            mode,
            shown,
            "edit_file: old is empty; give the exact text to replace (to create "
            "or overwrite a whole file, use write_file).",
        )
    if not isinstance(replace_all, bool):
        return _error(mode, shown, "edit_file: replace_all must be true or false.")
    if old == new:
        return _error(mode, shown, "edit_file: old and new are identical; nothing to change.")
    try:
        new.encode("utf-8")
    except UnicodeEncodeError as error:
        return _error(mode, shown, f"edit_file: new is not encodable as UTF-8: {error}.")
    try:
        with (
            _pinned(roots, policy, temp_roots) as pinned,
            write_target(policy, shown, pinned, protected_extra=protected_extra) as target,
        ):
            if target.stat is None:
                return _error(
                    mode,
                    shown,
                    f"edit_file: {shown} does not exist; check the path, or create the file "
                    "with write_file.",
                    os_error="ENOENT",
                )
            if _denies(policy, deny_read, _landed(target), temp_roots):
                return _secret("edit_file", mode, shown)
            if (refused := _entry_problem("edit_file", mode, shown, target)) is not None:
                return refused
            return _edit_open(mode, shown, target, old, new, replace_all)
    except RootReplaced as refusal:
        return _replaced("edit_file", mode, shown, refusal)
    except FenceRefused as refusal:
        return _denied("edit_file", mode, shown, refusal.reason)
    except OSError as error:
        return _os_error("edit_file", mode, shown, error, cwd)


def _edit_open(
    mode: SandboxMode, shown: str, target: Target, old: str, new: str, replace_all: bool
) -> FsResult:
    fd = os.open(target.name, _NO_FOLLOW_READ, dir_fd=target.dir_fd)
    try:
        st = os.fstat(fd)
        if (refused := _not_regular("edit_file", mode, shown, st)) is not None:
            return refused
        if target.root is not None and st.st_nlink > 1:
            raise _hard_linked(st.st_nlink)
        if st.st_size > EDIT_CAP:
            return _error(
                mode,
                shown,
                f"edit_file: {shown} is {st.st_size} bytes, over the {EDIT_CAP}-byte edit "
                "limit; edit it with bash (e.g. sed).",
                size=st.st_size,
            )
        with io.FileIO(fd, "rb", closefd=False) as raw:
            data = raw.readall()
    finally:
        os.close(fd)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _error(
            mode,
            shown,
            f"edit_file: {shown} is not UTF-8 text ({len(data)} bytes); edit it with bash.",
            binary=True,
            size=len(data),
        )
    count = text.count(old)
    if count == 0:
        return _error(
            mode,
            shown,
            f"edit_file: old text not found in {shown} (0 matches). Read the file and copy the "
            "exact text, including whitespace and indentation.",
            replacements=0,
        )
    if count > 1 and not replace_all:
        return _error(
            mode,
            shown,
            f"edit_file: old text occurs {count} times in {shown}. Include more surrounding "
            "context so it matches exactly once, or set replace_all to replace every one.",
            replacements=0,
        )
    edited = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    encoded = edited.encode("utf-8")
    now = os.stat(target.name, dir_fd=target.dir_fd, follow_symlinks=False)
    if (now.st_ino, now.st_dev, now.st_mtime_ns, now.st_size) != (
        st.st_ino,
        st.st_dev,
        st.st_mtime_ns,
        st.st_size,
    ):
        return _error(
            mode, shown, f"edit_file: {shown} changed while it was being edited; read it again."
        )
    replace_atomically(target, encoded, st)
    done = "occurrence" if count == 1 else "occurrences"
    return FsResult(
        text=f"Replaced {count} {done} in {shown} (now {len(encoded)} bytes).",
        mode=mode,
        path=shown,
        size=len(encoded),
        bytes_written=len(encoded),
        replacements=count,
        created=False,
    )

"""The fs tools' outcomes: FsResult, and the exact text the model sees for a refusal,
a denial or an OS error (the tools in `fs` decide which one a call gets).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

import attrs

from ..reprs import fields_repr
from ..vocab import DENIAL_INSTRUCTION, READ_DENIED_HINT, SandboxMode, denial_marker
from ._roots import RootReplaced


@attrs.frozen(kw_only=True)
class FsResult:
    """One fs tool outcome: `text` is exactly what the model sees; the rest are facts.

    `denied` means the fence refused a file effect (the text ends with the denial
    marker and instruction); `os_error` names the errno when the OS refused instead.
    """

    __repr__ = fields_repr

    text: str
    mode: SandboxMode
    path: str
    is_error: bool = False
    denied: bool = False
    # The refused path is one no mode may read (deny_read): only danger-full-access.
    read_denied: bool = False
    os_error: str | None = None
    size: int | None = None
    bytes_written: int | None = None
    created: bool | None = None
    replacements: int | None = None
    truncated: bool = False
    binary: bool = False
    first_line: int | None = None
    last_line: int | None = None

    def facts(self) -> dict[str, Any]:
        """The structured facts for a session log event: everything but `text`, no Nones."""
        facts = attrs.asdict(self, filter=lambda field, value: value is not None)
        facts.pop("text")
        facts["mode"] = self.mode.value
        return facts


def _error(mode: SandboxMode, path: str, text: str, **facts: Any) -> FsResult:
    return FsResult(text=text, mode=mode, path=path, is_error=True, **facts)


def _denied(tool: str, mode: SandboxMode, path: str, reason: str) -> FsResult:
    text = f"{tool} refused {path}: {reason}.\n{denial_marker(mode)}\n{DENIAL_INSTRUCTION}"
    return FsResult(text=text, mode=mode, path=path, is_error=True, denied=True)


def _secret(tool: str, mode: SandboxMode, path: str) -> FsResult:
    text = (
        f"{tool} refused {path}: it is a path no sandbox mode may read (deny_read).\n"
        f"{denial_marker(mode)}\n{DENIAL_INSTRUCTION}\n{READ_DENIED_HINT}"
    )
    return FsResult(text=text, mode=mode, path=path, is_error=True, denied=True, read_denied=True)


def _replaced(tool: str, mode: SandboxMode, path: str, refusal: RootReplaced) -> FsResult:
    """A pinned root changed: an error, not a denial (no wider mode would mean the same)."""
    return _error(mode, path, f"{tool} refused {path}: {refusal.reason}")


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "fifo (named pipe)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISLNK, "symbolic link"),
    ):
        if test(mode):
            return name
    return "special file"


def _not_regular(tool: str, mode: SandboxMode, path: str, st: os.stat_result) -> FsResult | None:
    """The error for a directory or special file, or None for a regular file."""
    if stat.S_ISREG(st.st_mode):
        return None
    if stat.S_ISDIR(st.st_mode):
        hint = "list it with bash (ls)" if tool == "read_file" else "name a file inside it"
        return _error(mode, path, f"{tool}: {path} is a directory, not a file; {hint}.")
    return _error(
        mode,
        path,
        f"{tool}: {path} is a {_kind(st.st_mode)}, not a regular file; {tool} refuses it "
        "(opening it could block or have side effects). Use bash if you really mean it.",
    )


def _os_error(tool: str, mode: SandboxMode, path: str, error: OSError, cwd: str) -> FsResult:
    """An OS refusal in words the model can act on; never a sandbox denial."""
    code = error.errno or 0
    name = errno.errorcode.get(code, str(code))
    why = f"{error.strerror or 'error'} ({name})"
    if code == errno.ENOENT and tool == "write_file":
        parent = os.path.dirname(path)
        text = (
            f"write_file: the directory {parent} does not exist (or a component of it is "
            f"missing). write_file does not create directories: create it first (e.g. with "
            f"bash: mkdir -p {parent}), then retry."
        )
    elif code == errno.ENOENT:
        text = (
            f"{tool}: {path} does not exist. Check the path (a relative path resolves "
            f"against the session cwd {cwd})."
        )
    elif code == errno.ENOTDIR:
        text = f"{tool}: a component of {path} is not a directory. Check the path."
    elif code == errno.EISDIR:
        hint = "list it with bash (ls)" if tool == "read_file" else "name a file inside it"
        text = f"{tool}: {path} is a directory, not a file; {hint}."
    elif code in (errno.EACCES, errno.EPERM, errno.EROFS):
        text = (
            f"{tool}: the operating system refused access to {path}: {why}. This is a "
            "file permission or a read-only file system, not the sandbox, so "
            "sandbox_permissions will not help; choose a path you can access."
        )
    else:
        text = f"{tool}: cannot access {path}: {why}."
    return _error(mode, path, text, os_error=name)

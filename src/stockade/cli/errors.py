"""The command line's error codes, and how an error is told: one line on stderr, or,
with --json, one object on stdout: `{"error": {"code": CODE, "detail": TEXT}}`.

The codes are stable (scripts branch on them); the details are for people and may
change. `stockade run` adds its own (docs/executor.md); docs/cli.md lists them all.
A detail may quote a path found on disk or what a log holds: it is shown escaped by
`stockade.shown` (its line breaks kept), and `--json` writes the same characters as
JSON escapes. Standard library only: an error must not cost the imports the verb
avoided.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from typing import TextIO

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 125
# A command rule stopped the command before it ran (docs/rules.md): it asks a person
# first, and this verb did not ask (or was not allowed to); or it forbids the command.
# Near 125 and below the shells' and coreutils' own (123 xargs, 124 timeout).
EXIT_ASK_FIRST = 121
EXIT_FORBIDDEN = 122
# What a shell reports for a writer whose reader went away (128 + SIGPIPE).
EXIT_BROKEN_PIPE = 141

#: code -> (exit status of the verbs in this module's care, what it means)
CODES = {
    "USAGE": (EXIT_USAGE, "the command line is wrong: an unknown option, a missing or bad value"),
    "CONFIG": (EXIT_USAGE, "the composition (--config, $STOCKADE_CONFIG) cannot be used"),
    "SANDBOX_UNAVAILABLE": (EXIT_UNAVAILABLE, "no sandbox backend can confine a command here"),
    "FORBIDDEN": (EXIT_FORBIDDEN, "a command rule forbids the command; nothing ran"),
    "APPROVAL_REQUIRED": (
        EXIT_ASK_FIRST,
        "a command rule asks a person first, and nobody was asked or approved; nothing ran",
    ),
    "SESSION_NOT_FOUND": (EXIT_FAILURE, "no session log at that path, or with that id"),
    "INVALID_SESSION_ID": (EXIT_FAILURE, "not a session id: 1-128 letters, digits, '.', '_', '-'"),
    "NOT_A_SESSION_LOG": (EXIT_FAILURE, "the path names a directory, or a file that is no log"),
    "LOG_CORRUPT": (EXIT_FAILURE, "a session log with a line that cannot be read as written"),
    "STORE_UNAVAILABLE": (EXIT_FAILURE, "the log store (a database) cannot be reached or read"),
    "ENVIRONMENT": (EXIT_FAILURE, "the operating system refused: a permission, a full disk"),
    "SESSION_LOCKED": (
        EXIT_FAILURE,
        "another process holds the session open (only its holder may write its log)",
    ),
    "UNDO_REFUSED": (
        EXIT_FAILURE,
        "the undo or restore would overwrite a later change; nothing was touched",
    ),
}


def silence(stream: TextIO) -> None:
    """Point `stream`'s descriptor at /dev/null: its reader is gone, and the
    interpreter's flush at exit must not print a BrokenPipeError of its own."""
    import os

    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


def say(stream: TextIO, text: str) -> None:
    """Write and flush `text`; a reader that went away ends it quietly (EPIPE)."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        silence(stream)


def status_of(code: str) -> int:
    return CODES.get(code, (EXIT_FAILURE, ""))[0]


class CliError(Exception):
    """An error a verb reports and exits on: a stable `code` and a `detail` for people."""

    def __init__(self, code: str, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status_of(code) if status is None else status


def emit_error(
    code: str,
    detail: str,
    *,
    as_json: bool,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> None:
    """Tell one error: JSON on stdout with --json, else `stockade: DETAIL` on stderr
    (`stockade: SANDBOX_UNAVAILABLE: DETAIL` for that code, as scripts grep for it)."""
    from ..shown import escaped_lines, json_escaped

    if as_json:
        import json

        reply = json.dumps({"error": {"code": code, "detail": detail}}, ensure_ascii=False)
        say(sys.stdout if stdout is None else stdout, json_escaped(reply) + "\n")
        return
    detail = escaped_lines(detail)
    shown = f"{code}: {detail}" if code == "SANDBOX_UNAVAILABLE" else detail
    say(sys.stderr if stderr is None else stderr, f"stockade: {shown}\n")


def report(
    error: CliError,
    *,
    as_json: bool,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """`emit_error` for `error`; its exit status."""
    emit_error(error.code, error.detail, as_json=as_json, stdout=stdout, stderr=stderr)
    return error.status

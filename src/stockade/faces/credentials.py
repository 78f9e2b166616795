"""Credential-bound sessions, for any face served over a network: the bearer tokens
(one made per start and written 0600 to the state directory, or those an operator keeps
in a `--token-file`), and which principal a presented token is. Standard library.

A session is bound to the principal that opened it (`Tokens.principal`): a face answers
any other principal's request for it as for an unknown session (MCP's HTTP face through
its SDK, which keys sessions by the principal's `client_id`).

Whoever holds a token may ask for, and answer, its own escalations, so a token is as
strong as running commands unconfined: it lives only where the trust base's check 1
holds (outside every writable root, owned by the caller or root, written by nobody
else) and is never readable by group or others.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Sequence
from typing import Final

from ..trust import check_trusted

# 256 random bits, URL-safe (43 characters): a header value every client can send.
TOKEN_BYTES: Final = 32
# What `--token-file` must give at least: 32 characters (128 bits as hex).
MIN_TOKEN_CHARS: Final = 32
TOKEN_FIX: Final = (
    "keep it outside every workspace root and temp directory, owned by you or root, mode 600"
)


class TokenProblem(Exception):
    """A token file that cannot be used; the message is one line saying what to do."""


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_path(directory: str, host: str, port: int) -> str:
    """Where the server on HOST:PORT keeps its token (one file per address)."""
    label = "".join(c if c.isalnum() or c in ".-" else "_" for c in host)
    return os.path.join(directory, f"mcp-{label}-{port}.token")


def prepare_directory(directory: str, writable_roots: Sequence[str]) -> None:
    """Make the token's directory (0700) if missing, and hold it to check 1."""
    problem = check_trusted(
        directory, writable_roots, what="the MCP token's directory", must_exist=False
    )
    if problem is None:
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as error:
            raise TokenProblem(f"cannot make {directory}: {error.strerror}") from None
        problem = check_trusted(directory, writable_roots, what="the MCP token's directory")
    if problem is not None:
        raise TokenProblem(
            problem.message(
                "set STOCKADE_STATE_DIR (where the token is written) outside every "
                "workspace root and temp directory, or pass --token-file"
            )
        )


def write_token(path: str, token: str) -> None:
    """Write `token` to `path`, mode 0600, whole or not at all (a new file renamed in)."""
    partial = f"{path}.{os.getpid()}.new"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(partial, flags, 0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask says
            os.write(fd, f"{token}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(partial, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise TokenProblem(f"cannot write the MCP token to {path}: {error.strerror}") from None


def remove_token(path: str, token: str) -> None:
    """Remove the token file if it still holds `token` (not another server's)."""
    try:
        with open(path, encoding="ascii") as file:
            held = file.read().strip()
    except (OSError, UnicodeDecodeError):
        return
    if hmac.compare_digest(held.encode(), token.encode()):
        with contextlib.suppress(OSError):
            os.unlink(path)


def read_token_file(path: str, writable_roots: Sequence[str]) -> tuple[str, ...]:
    """The tokens of `--token-file` (one a line; blank lines and `#` lines skipped),
    after check 1 on the file and every parent, and no read bit for group or others."""
    problem = check_trusted(path, writable_roots, what="the --token-file")
    if problem is not None:
        raise TokenProblem(problem.message(TOKEN_FIX))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise TokenProblem(f"cannot read the --token-file {path}: {error.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise TokenProblem(f"the --token-file {path} is not a regular file")
        if info.st_mode & 0o077:
            mode = stat.S_IMODE(info.st_mode)
            raise TokenProblem(
                f"the --token-file {path} is readable by group or others (mode {mode:o}): "
                f"chmod 600 {path}"
            )
        data = file.read(65536)
    try:
        return parse_tokens(data.decode("ascii"), path)
    except UnicodeDecodeError:
        raise TokenProblem(f"the --token-file {path} is not ASCII text") from None


def parse_tokens(text: str, path: str) -> tuple[str, ...]:
    """One token a line; each one at least MIN_TOKEN_CHARS visible ASCII characters."""
    tokens: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        token = line.strip()
        if not token or token.startswith("#"):
            continue
        if len(token) < MIN_TOKEN_CHARS or not all("!" <= c <= "~" for c in token):
            raise TokenProblem(
                f"{path}:{number}: a token is at least {MIN_TOKEN_CHARS} visible ASCII "
                "characters with no spaces (e.g. from: python -c 'import secrets; "
                "print(secrets.token_urlsafe(32))')"
            )
        tokens[token] = None
    if not tokens:
        raise TokenProblem(f"the --token-file {path} holds no token")
    return tuple(tokens)


class Tokens:
    """The tokens a server accepts, kept as digests; `match` compares in constant time
    (equal-length digests, every token compared whichever matches)."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self._digests = tuple(_digest(token) for token in tokens)

    def principal(self, presented: str) -> str | None:
        """Who presents `presented`: `token-N` for the server's Nth token, or None (a
        token it does not hold). Each token is its own principal, never its value."""
        index = self.match(presented)
        return None if index is None else f"token-{index + 1}"

    def match(self, presented: str) -> int | None:
        """The index of the token `presented` is, or None."""
        digest = _digest(presented)
        found = None
        for index, known in enumerate(self._digests):
            if hmac.compare_digest(digest, known) and found is None:
                found = index
        return found


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()

"""The errors stockade raises at its public boundary.

Each says what went wrong and what to do; none leaks a traceback from deep inside.
"""

from __future__ import annotations


class StockadeError(Exception):
    """Base of every error stockade raises on purpose."""


def brief(value: str, limit: int = 120) -> str:
    """`value` quoted for an error message, cut to `limit` characters (a model may send
    megabytes; the error must not echo them back)."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value)} characters)"


class SandboxUnavailable(StockadeError):
    """No confinement could be established; the command was not run.

    `code` is the stable machine-readable tag, `detail` the human reason (a probe's
    stderr, a runner's fatal line, a spawn error).
    """

    code = "SANDBOX_UNAVAILABLE"

    def __init__(self, detail: str, *, runner_started: bool = False) -> None:
        super().__init__(f"{self.code}: {detail}")
        self.detail = detail
        # True when the evidence is a fatal line the started runner printed: in-band,
        # so the command cannot be proven not to have run (docs/security.md).
        self.runner_started = runner_started


class ConfigError(StockadeError, ValueError):
    """A configuration value is wrong; the message says where and what is allowed."""


class InvalidPolicy(StockadeError, ValueError):
    """An execution policy cannot be honoured as given (e.g. its root does not exist)."""


class NotUnderTrio(StockadeError, RuntimeError):
    """A Trio API of stockade's was awaited from another event loop (plain asyncio)."""


class CommandStartError(StockadeError):
    """The command could not be started (bad workdir, no resources); nothing ran."""


class SessionNotFound(StockadeError, LookupError):
    """A session was to be resumed, but no log holds a session under that id."""

    def __init__(self, session_id: str, location: str | None = None) -> None:
        where = f" (nothing is logged at {location})" if location else ""
        super().__init__(
            f"no session {session_id!r} to resume{where}; check the id (`stockade session "
            "list`), or open a new session"
        )
        self.session_id = session_id


class SessionExists(StockadeError):
    """A new session was asked for under an id that already names one."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id!r} already exists; resume it with "
            f"harness.resume_session({session_id!r}) (or open_session(..., resume=True)), "
            "or choose another id"
        )
        self.session_id = session_id


class UnknownJob(StockadeError, KeyError):
    """No background job has that id in this executor."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown job"

"""Probing one runner, standard library only: a verdict, running a probe, the shipped
launcher. Each backend's own probe is in its module (backends/); the chain that tries
them in order, and the verdict cache of `stockade exec`, is backends/_choose.py.
"""

from __future__ import annotations

import errno
import os
from collections import namedtuple

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    # A backend's probe: its verdict within a timeout (seconds).
    Probe = Callable[[float], "Verdict"]

# Plain namedtuples, not typing.NamedTuple: importing typing would be a fifth of
# `stockade exec`'s whole run. Field types are in each docstring.


class Verdict(
    namedtuple(
        "Verdict",
        "backend usable runner why_not abi probed transient ipc tier tier_why",
        defaults=(None, None, None, True, False, None, None, None),
    )
):
    """One candidate as its probe found it: backend (str), usable (bool), runner
    (str | None), why_not (str | None), abi (int | None), probed (bool),
    transient (bool): the probe could not run for a passing reason (out of
    descriptors, memory or processes), so the failure is worth probing again later,
    ipc (str | None, Landlock): "private" when the launcher can give commands an
    IPC namespace of their own, "filtered" (or None: not known) when it cannot,
    tier (str | None, Landlock): NAMESPACED or PLAIN, the strongest this caller can
    have, and tier_why (str | None): why not the stronger, for PLAIN.
    """

    __slots__ = ()


TRANSIENT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN})


class Unfinished(namedtuple("Unfinished", "why transient", defaults=(False,))):
    """A probe that could not run to its end: why (str), transient (bool)."""

    __slots__ = ()


def launcher_path() -> str:
    """The Landlock launcher shipped inside this package."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    return os.path.join(here, "_bin", "landlock-run")


def filter_launcher() -> str | None:
    """The launcher as bwrap's filter stage (`--filters-only`), or None when missing."""
    path = launcher_path()
    return path if os.access(path, os.X_OK) else None


def run_probe(
    argv: Sequence[str], timeout: float, pass_fds: Sequence[int] = ()
) -> tuple[int, str, str] | Unfinished:
    """(status, stdout, stderr) of a probe, or why it could not finish; `pass_fds`:
    descriptors the runner is given (bwrap's --info-fd).

    The probe runs in a session of its own, so a timeout kills whatever the runner
    started too, not only the runner.
    """
    # Imported here: a remembered verdict (stockade exec) never needs them (`signal`
    # builds its enums as it loads).
    import signal
    import subprocess

    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    except OSError as error:
        return Unfinished(f"probe could not start: {error}", error.errno in TRANSIENT_ERRNOS)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        return Unfinished(f"probe timed out after {timeout:g}s")
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"

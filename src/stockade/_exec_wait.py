"""`stockade exec` when it holds placeholders: run the runner as a child and wait,
ending as an exec would have. Standard library only (exec's fast path).
"""

from __future__ import annotations

import _signal  # `signal` would import enum, which costs exec's fast path
import contextlib
import os

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn


def run_holding(argv: list[str], held: list[int], blockers: Sequence[str] = ()) -> NoReturn:
    """Run the runner as a child and wait for it, holding `held` (placeholder locks,
    CLOEXEC) until the sandbox is gone: bwrap closes every descriptor it is handed, so
    they cannot travel with an exec. Then each placeholder at `blockers` that no other
    process holds is removed (placeholders.sweep), leaving the workspace as it was.

    As with an exec, the runner stays in this process group: the terminal's SIGINT and
    SIGQUIT reach it directly (ignored here meanwhile), SIGTERM and SIGHUP sent to this
    process are passed on, and its end becomes ours: the same code, or the same signal.
    A signal ignored on entry (`nohup`) stays ignored for the runner too; SIGPIPE and
    SIGXFSZ, which Python ignores, are the defaults again, as after an exec from a shell.
    """
    child = 0
    passed_on = (_signal.SIGTERM, _signal.SIGHUP)
    ignored_here = (_signal.SIGINT, _signal.SIGQUIT)

    def pass_on(signum: int, _frame: object) -> None:
        if child:
            os.kill(child, signum)

    handled = (*passed_on, *ignored_here)
    kept_ignored = {s for s in handled if _signal.getsignal(s) == _signal.SIG_IGN}
    defaults = [s for s in handled if s not in kept_ignored]
    defaults += [_signal.SIGPIPE, _signal.SIGXFSZ]
    # Blocked until the child's pid is known, so none is lost in between.
    blocked = _signal.pthread_sigmask(_signal.SIG_BLOCK, passed_on)
    for signum in ignored_here:
        _signal.signal(signum, _signal.SIG_IGN)
    for signum in passed_on:
        if signum not in kept_ignored:
            _signal.signal(signum, pass_on)
    try:
        # An OSError (no such runner) is the caller's to report, as execvp's would be.
        child = os.posix_spawnp(argv[0], argv, os.environ, setsigdef=defaults, setsigmask=blocked)
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, blocked)
    _, status = os.waitpid(child, 0)
    child = 0
    for fd in held:
        os.close(fd)
    if blockers:
        from .sandbox.placeholders import sweep

        for path in blockers:
            sweep(path)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        # SIGKILL and SIGSTOP cannot be set, and keep their default anyway.
        with contextlib.suppress(OSError, ValueError):
            _signal.signal(signum, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, (signum,))
        os.kill(os.getpid(), signum)
        raise SystemExit(128 + signum)
    raise SystemExit(os.waitstatus_to_exitcode(status))

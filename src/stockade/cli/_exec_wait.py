"""`stockade exec` when it holds placeholders: run the runner as a child and wait,
ending as an exec would have. Standard library only (exec's fast path).
"""

from __future__ import annotations

import _signal  # `signal` would import enum, which costs exec's fast path
import os

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import NoReturn


# How long exec waits, after bwrap has returned, for the sandbox's PID namespace to be
# torn down (the kernel kills what is left; under load that takes milliseconds).
TEARDOWN = 5.0


def run_holding(
    argv: list[str],
    held: list[int],
    sweep: Sequence[str] = (),
    *,
    bwrap: bool = False,
    done: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
) -> NoReturn:
    """Run the runner as a child and wait for it, holding `held` (placeholder locks,
    CLOEXEC) until the sandbox is gone, then let go of them and remove the placeholders
    at `sweep` that no other process holds (sandbox/placeholders.py: only a marked,
    empty one), so none outlives its last holder. The locks cannot travel with an
    exec: a lock the command could reach would be one it could drop.

    `bwrap`: argv is bwrap's, and this also waits until the sandbox's PID namespace is
    gone. bwrap returns the command's status as soon as the command ends, while the
    kernel is still ending what the command left in the namespace (setsid, a double
    fork): its `--info-fd` names the namespace's init, whose end is the namespace's.

    As with an exec, the runner stays in this process group: the terminal's SIGINT and
    SIGQUIT reach it directly (ignored here meanwhile), SIGTERM and SIGHUP sent to this
    process are passed on, and its end becomes ours: the same code, or the same signal.
    A bwrap runner with a filter stage holds SIGINT and SIGQUIT blocked, which the
    filter stage unblocks for the command alone: bwrap would die of the terminal's
    Ctrl-C (its sandbox with it) before the command could handle it.
    A signal ignored on entry (`nohup`) stays ignored for the runner too; SIGPIPE and
    SIGXFSZ, which Python ignores, are the defaults again, as after an exec from a shell.
    `done` runs once the runner is gone, before this process ends as it did (the
    command's private temp directory is removed there); `env`: the runner's
    environment (default: this process's).
    """
    child = 0
    # The runner's pidfd: a signal passed on after its reap reaches nobody, where a
    # kill() by pid could reach whatever process was given that number since.
    runner = -1
    # Without a pidfd (before Linux 5.3, or no descriptor left): by pid, until the reap.
    by_pid = False
    passed_on = (_signal.SIGTERM, _signal.SIGHUP)
    ignored_here = (_signal.SIGINT, _signal.SIGQUIT)

    def pass_on(signum: int, _frame: object) -> None:
        try:
            if runner >= 0:
                _signal.pidfd_send_signal(runner, signum)
            elif by_pid:
                os.kill(child, signum)
        except ProcessLookupError:
            pass

    handled = (*passed_on, *ignored_here)
    kept_ignored = {s for s in handled if _signal.getsignal(s) == _signal.SIG_IGN}
    defaults = [s for s in handled if s not in kept_ignored]
    defaults += [_signal.SIGPIPE, _signal.SIGXFSZ]
    held_for_command: set[int] = set()
    if bwrap:
        from ..sandbox import has_filter_stage  # loaded already: confine's

        if has_filter_stage(argv):
            held_for_command = {_signal.SIGINT, _signal.SIGQUIT}
    info = os.pipe() if bwrap else None  # both ends close-on-exec
    if info is not None:
        os.set_inheritable(info[1], True)
        argv = [argv[0], "--info-fd", str(info[1]), *argv[1:]]
    # Blocked until the child's pid is known, so none is lost in between.
    blocked = _signal.pthread_sigmask(_signal.SIG_BLOCK, passed_on)
    # The terminal's keys this process saw while the runner ran (bwrap with a filter
    # stage): bwrap says a command Ctrl-C ended as exit 130, which a calling shell's
    # loop would take for a command that handled the key and go on.
    keys: set[int] = set()

    def note(signum: int, _frame: object) -> None:
        keys.add(signum)

    for signum in ignored_here:
        noted = held_for_command and signum not in kept_ignored
        _signal.signal(signum, note if noted else _signal.SIG_IGN)
    for signum in passed_on:
        if signum not in kept_ignored:
            _signal.signal(signum, pass_on)
    try:
        # An OSError (no such runner) is the caller's to report, as execvp's would be.
        environ = os.environ if env is None else env
        mask = {*blocked, *held_for_command}
        child = os.posix_spawnp(argv[0], argv, environ, setsigdef=defaults, setsigmask=mask)
        # The runner runs now: whatever follows, it is waited for and cleaned up after
        # (an OSError here would have ended this process with the command still running
        # and its private temp directory removed under it).
        try:
            runner = os.pidfd_open(child)
        except OSError:
            by_pid = True
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, blocked)
        if info is not None:
            os.close(info[1])
    init = _namespace_init(info[0]) if info is not None else None
    _, status = os.waitpid(child, 0)
    by_pid = False
    held_runner, runner = runner, -1
    if held_runner >= 0:
        os.close(held_runner)
    if init is not None:
        _wait_gone(init)
    for fd in held:
        os.close(fd)
    # The command ran: a clean-up that fails is said, and the command's status stands
    # (an OSError raised from here would read as a runner that could not start).
    try:
        if sweep:
            from ..sandbox import placeholders

            # The innermost first; each is removed only by the last of its holders.
            placeholders.sweep_all(sweep[::-1])
        if done is not None:
            done()
    except OSError as error:
        _told(f"stockade: cleaning up after the command failed: {error}\n")
    code = os.waitstatus_to_exitcode(status)
    if os.WIFSIGNALED(status) or code - 128 in keys:
        # Ended by the signal, or (bwrap) by the key this process saw too: as a shell
        # tells it, this process ends by that signal.
        signum = -code if code < 0 else code - 128
        # SIGKILL and SIGSTOP cannot be set, and keep their default anyway.
        try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
            _signal.signal(signum, _signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, (signum,))
        os.kill(os.getpid(), signum)
        raise SystemExit(128 + signum)
    raise SystemExit(code)


def _told(line: str) -> None:
    """`line` on stderr, unbuffered; nothing when stderr's reader is gone."""
    try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
        os.write(2, line.encode(errors="replace"))
    except OSError:
        pass


def _namespace_init(info: int) -> int | None:
    """A pidfd of the sandbox's init, from bwrap's --info-fd report (`{"child-pid":
    N, ...}`, written once its init is made, then closed); None when bwrap made none
    or the init is gone already (reaped: the namespace is gone). Read as soon as bwrap
    writes it, while the sandbox starts, so its pid cannot have been reused meanwhile
    (that would take the system's whole pid range; TEARDOWN bounds it anyway)."""
    report = b""
    try:
        while chunk := os.read(info, 4096):
            report += chunk
    except OSError:
        pass
    finally:
        os.close(info)
    from ..sandbox import namespace_init  # loaded already: bwrap's argv was built

    return namespace_init(report)


def _wait_gone(pidfd: int) -> None:
    """Until the process `pidfd` names has ended (bounded by TEARDOWN)."""
    import select

    from ..sandbox import reap_orphaned_init

    try:
        waiting = select.poll()
        waiting.register(pidfd, select.POLLIN)
        waiting.poll(int(TEARDOWN * 1000))
        # This process is the init's reaper only as a container's pid 1 (docker run
        # IMAGE stockade exec ...), or as pid 1's child made a subreaper
        # (`executor.adopt_orphans`): where no one else would reap it.
        reap_orphaned_init(pidfd)
    except OSError:
        pass
    finally:
        os.close(pidfd)

"""Pure argv builders for each backend: a mode, a root and the temp roots -> the argv.

Standard library only: `stockade exec` builds its argv with these and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .._modes import SandboxMode

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from ..trust import Protection

BWRAP = "bwrap"
LANDLOCK = "landlock"
SEATBELT = "seatbelt"
RUNNER_COMMAND = "runner-command"

SEATBELT_EXEC = "/usr/bin/sandbox-exec"

# /proc entries whose writes change host state even from a fresh procfs; bound
# read-only over bwrap's own /proc (the "-try" form tolerates their absence).
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")


def writable_roots(mode: SandboxMode, root: str, temp_roots: Sequence[str]) -> tuple[str, ...]:
    """Directories the mode lets a command write under, in order, without repeats."""
    if mode is SandboxMode.READ_ONLY:
        return ()
    return tuple(dict.fromkeys((root, *temp_roots)))


def bwrap_argv(
    bwrap: str,
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    *,
    new_session: bool = False,
    protections: Sequence[Protection] = (),
    launcher: str | None = None,
) -> tuple[str, ...]:
    """bwrap: the host read-only, a private /dev, /proc and IPC namespace, no capabilities.

    `protections` (the trust base) are re-bound read-only after the writable binds:
    an existing path at itself, a missing one as an empty read-only directory (or
    file) at its first missing component, so it cannot be created either.

    As root, bwrap alone would leave every capability (remount / rw) and host
    sysctls writable through /proc/sys; --cap-drop ALL and the read-only /proc
    binds close both (FACTS.md). `new_session` is for a caller that keeps its
    terminal (`stockade exec`): it denies the command TIOCSTI on it. The executor
    instead spawns the runner in a session of its own, and keeps bwrap's inner
    processes in that one process group so a kill reaches them all, even while
    bwrap is still setting up.

    `launcher` (the shipped `landlock-run`, on disk: the host file system is visible
    read-only inside) runs between bwrap and the command as `--filters-only`: the
    same seccomp filters as under the Landlock launcher (no setuid/setgid bits, no
    TIOCSTI, no i386 or x32 calls), none of its Landlock or capability work.
    """
    args: list[str] = [
        bwrap,
        "--die-with-parent",
        # A user namespace leaves a root caller an empty capability bounding set
        # (without one, only no_new_privs stands between uid 0 and its capabilities);
        # "-try" keeps bwrap usable where user namespaces are disabled.
        "--unshare-user-try",
        "--unshare-pid",
        # SysV objects and POSIX message queues of the host stay out of reach.
        "--unshare-ipc",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    if new_session:
        args.append("--new-session")
    for entry in PROC_READ_ONLY:
        args += ["--ro-bind-try", entry, entry]
    if mode is SandboxMode.READ_ONLY:
        # bwrap's /dev is a private tmpfs; read-only keeps /dev/shm refused, as on
        # Landlock, so the model sees a denial rather than a write that vanishes.
        args += ["--remount-ro", "/dev"]
    for writable in writable_roots(mode, root, temp_roots):
        args += ["--bind", writable, writable]
    for protection in protections:
        args += protection_args(protection)
    if launcher is not None:
        # The mount table already refuses every metadata change and inode ioctl in
        # read-only (EROFS, bwrap's own denial text), so no --seal-metadata here.
        args += ["--", launcher, "--filters-only"]
    return (*args, "--", *argv)


# Missing protected names that are directories (`.git`, git's `hooks`, or a configured
# path ending in "/"): blocked by an empty read-only directory, which git's discovery
# skips. Every other missing name is blocked by an empty read-only FILE (the
# package's own `_data/empty`): a write to it is refused with the same
# `Read-only file system` as any other, and an empty `config` or `stockade.yml`
# means nothing to git or to stockade.
DIRECTORY_BLOCKERS = (".git", "hooks")
EMPTY_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "_data", "empty")


def protection_args(protection: Protection) -> list[str]:
    path = protection.path
    if protection.kind == "pin":
        return ["--bind", path, path]
    if protection.kind == "read-only":
        return ["--ro-bind", path, path]
    if protection.directory or path.rsplit("/", 1)[-1] in DIRECTORY_BLOCKERS:
        return ["--tmpfs", path, "--remount-ro", path]
    return ["--ro-bind", EMPTY_FILE, path]


def landlock_argv(
    launcher: str,
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    *,
    private_ipc: bool = True,
) -> tuple[str, ...]:
    """The shipped launcher: read and execute everywhere, write only the grants.

    `private_ipc` (the probe found it possible): the command gets an IPC namespace of
    its own, or the launcher fails; without it the launcher refuses creating, removing
    and changing host IPC objects, and the claim names what stays open.
    """
    args: list[str] = [launcher, "--ro", "/", "--rw", "/dev/null"]
    if mode is SandboxMode.READ_ONLY:
        args.append("--seal-metadata")
    for writable in writable_roots(mode, root, temp_roots):
        args += ["--rw", writable]
    if private_ipc:
        args.append("--private-ipc")
    return (*args, "--", *argv)


def seatbelt_profile(
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    protections: Sequence[Protection] = (),
) -> tuple[str, dict[str, str]]:
    """SBPL text and its parameters: everything allowed but file writes off the grants.

    `file-write*` covers data, create, unlink, mode, owner, times and xattrs, so
    Seatbelt governs every promised file effect.
    """
    roots = writable_roots(mode, root, temp_roots)
    params = {f"WRITABLE_ROOT_{index}": path for index, path in enumerate(roots)}
    lines = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        '(allow file-write* (literal "/dev/null"))',
    ]
    lines += [f'(allow file-write* (subpath (param "{name}")))' for name in params]
    # The last matching rule wins: protected paths stay unwritable inside the grants.
    for index, protection in enumerate(p for p in protections if p.kind != "pin"):
        name = f"PROTECTED_{index}"
        params[name] = protection.path
        lines.append(f'(deny file-write* (subpath (param "{name}")))')
    return "\n".join(lines) + "\n", params


def seatbelt_argv(
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    protections: Sequence[Protection] = (),
) -> tuple[str, ...]:
    profile, params = seatbelt_profile(mode, root, temp_roots, protections)
    defines = [f"-D{name}={value}" for name, value in params.items()]
    return (SEATBELT_EXEC, "-p", profile, *defines, "--", *argv)


def confined_argv(
    backend: str,
    runner: str,
    mode: SandboxMode,
    root: str,
    temp_roots: Sequence[str],
    argv: Sequence[str],
    *,
    new_session: bool = False,
    protections: Sequence[Protection] = (),
    launcher: str | None = None,
    private_ipc: bool = True,
) -> tuple[str, ...]:
    """The argv to spawn instead of `argv`, for the selected backend and runner.

    The Landlock launcher cannot carve read-only holes out of a writable grant:
    the caller refuses or claims `partial` for the protections it would need.
    `launcher` is bwrap's filter stage (not an operator's runner_command: what it can
    see inside is its own business); `private_ipc` is the Landlock launcher's.
    """
    if backend in (BWRAP, RUNNER_COMMAND):
        return bwrap_argv(
            runner,
            mode,
            root,
            temp_roots,
            argv,
            new_session=new_session,
            protections=protections,
            launcher=launcher if backend == BWRAP else None,
        )
    if backend == LANDLOCK:
        return landlock_argv(runner, mode, root, temp_roots, argv, private_ipc=private_ipc)
    if backend == SEATBELT:
        return seatbelt_argv(mode, root, temp_roots, argv, protections)
    raise ValueError(f"unknown sandbox backend {backend!r}")

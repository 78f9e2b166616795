"""Pure builders: a SandboxPolicy plus host paths -> the confined argv of each backend.

Also each backend's denial dialect and runner-failure rules. No I/O here: host facts
(temp roots, runner paths) are passed in.
"""

from __future__ import annotations

from typing import Final

import attrs

from ..messages import RunnerFailureRule, Wrapped
from ..vocab import Enforcement, SandboxMode, SandboxPolicy

BWRAP: Final = "bwrap"
LANDLOCK: Final = "landlock"
SEATBELT: Final = "seatbelt"
RUNNER_COMMAND: Final = "runner-command"

SEATBELT_EXEC: Final = "/usr/bin/sandbox-exec"

LANDLOCK_PARTIAL_NOTICE: Final = "landlock-run: partial enforcement (older Landlock ABI)"

# The stderr text each kernel path produces on a refused write (measured, FACTS.md).
BWRAP_DENIAL: Final = ("Read-only file system",)
LANDLOCK_DENIAL: Final = ("Permission denied",)
SEATBELT_DENIAL: Final = ("Operation not permitted",)

# The launcher reserves 125 for its own failures and always prints one fatal line;
# bwrap and sandbox-exec reserve no status, so only their line prefix is evidence.
LANDLOCK_RULES: Final = (
    RunnerFailureRule(
        exit_codes=frozenset({125}),
        fatal_signatures=("landlock-run:",),
        informational_lines=(LANDLOCK_PARTIAL_NOTICE,),
    ),
)
BWRAP_RULES: Final = (RunnerFailureRule(exit_codes=None, fatal_signatures=("bwrap:",)),)
SEATBELT_RULES: Final = (RunnerFailureRule(exit_codes=None, fatal_signatures=("sandbox-exec:",)),)

# /proc entries whose writes change host state even from a fresh procfs; bound
# read-only over bwrap's own /proc (the "-try" form tolerates their absence).
PROC_READ_ONLY: Final = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")

# Effects Landlock cannot govern on any ABI: the launcher seals them with seccomp in
# read-only mode, but workspace-write must allow them inside the root, so there they
# stay ungoverned outside it too (tests/launcher: test_landlock_does_not_govern_...).
LANDLOCK_METADATA_EFFECTS: Final = ("chmod", "chown", "utimes", "xattr")
LANDLOCK_FULL_ABI: Final = 5  # truncate from ABI 3, device ioctl from ABI 5


@attrs.frozen
class HostPaths:
    """Host facts a profile needs: the temp roots workspace-write may also write."""

    temp_roots: tuple[str, ...] = ("/tmp",)


def writable_roots(policy: SandboxPolicy, host: HostPaths) -> tuple[str, ...]:
    """Directories the mode lets a command write under, in order, without repeats."""
    if policy.mode is SandboxMode.READ_ONLY:
        return ()
    return tuple(dict.fromkeys((policy.workspace_root, *host.temp_roots)))


def bwrap_argv(
    bwrap: str,
    policy: SandboxPolicy,
    host: HostPaths,
    argv: tuple[str, ...],
    *,
    new_session: bool = False,
) -> tuple[str, ...]:
    """bwrap: the host read-only, a private /dev and /proc, no capabilities.

    As root, bwrap alone would leave every capability (remount / rw) and host
    sysctls writable through /proc/sys; --cap-drop ALL and the read-only /proc
    binds close both (FACTS.md). `new_session` is for a caller that keeps its
    terminal (`stockade exec`): it denies the command TIOCSTI on it. The executor
    instead spawns the runner in a session of its own, and keeps bwrap's inner
    processes in that one process group so a kill reaches them all, even while
    bwrap is still setting up.
    """
    args: list[str] = [
        bwrap,
        "--die-with-parent",
        "--unshare-pid",
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
    if policy.mode is SandboxMode.READ_ONLY:
        # bwrap's /dev is a private tmpfs; read-only keeps /dev/shm refused, as on
        # Landlock, so the model sees a denial rather than a write that vanishes.
        args += ["--remount-ro", "/dev"]
    for root in writable_roots(policy, host):
        args += ["--bind", root, root]
    return (*args, "--", *argv)


def landlock_argv(
    launcher: str, policy: SandboxPolicy, host: HostPaths, argv: tuple[str, ...]
) -> tuple[str, ...]:
    """The shipped launcher: read and execute everywhere, write only the grants."""
    args: list[str] = [launcher, "--ro", "/", "--rw", "/dev/null"]
    if policy.mode is SandboxMode.READ_ONLY:
        args.append("--seal-metadata")
    for root in writable_roots(policy, host):
        args += ["--rw", root]
    return (*args, "--", *argv)


def seatbelt_profile(policy: SandboxPolicy, host: HostPaths) -> tuple[str, dict[str, str]]:
    """SBPL text and its parameters: everything allowed but file writes off the grants.

    `file-write*` covers data, create, unlink, mode, owner, times and xattrs, so
    Seatbelt governs every promised file effect.
    """
    roots = writable_roots(policy, host)
    params = {f"WRITABLE_ROOT_{index}": root for index, root in enumerate(roots)}
    lines = [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        '(allow file-write* (literal "/dev/null"))',
    ]
    lines += [f'(allow file-write* (subpath (param "{name}")))' for name in params]
    return "\n".join(lines) + "\n", params


def seatbelt_argv(policy: SandboxPolicy, host: HostPaths, argv: tuple[str, ...]) -> tuple[str, ...]:
    profile, params = seatbelt_profile(policy, host)
    defines = [f"-D{name}={value}" for name, value in params.items()]
    return (SEATBELT_EXEC, "-p", profile, *defines, "--", *argv)


def landlock_enforcement(mode: SandboxMode, abi: int) -> tuple[Enforcement, tuple[str, ...]]:
    """What the launcher governs under `mode` on `abi`, and the effects it leaves open."""
    ungoverned: list[str] = []
    if abi < 3:
        ungoverned.append("truncate")
    if abi < LANDLOCK_FULL_ABI:
        ungoverned.append("device ioctl")
    if mode is not SandboxMode.READ_ONLY:
        ungoverned += [
            f"{effect} outside the writable roots" for effect in LANDLOCK_METADATA_EFFECTS
        ]
    return (Enforcement.PARTIAL if ungoverned else Enforcement.FULL), tuple(ungoverned)


@attrs.frozen
class Backend:
    """A selected runner: its name and path, and (Landlock) the kernel ABI it found."""

    name: str
    runner: str
    abi: int | None = None
    extra_rules: tuple[RunnerFailureRule, ...] = ()


def wrap(
    backend: Backend,
    policy: SandboxPolicy,
    host: HostPaths,
    argv: tuple[str, ...],
    *,
    new_session: bool = False,
) -> Wrapped:
    """The Wrapped reply for `argv` under `policy` on the selected `backend`.

    `new_session` (bwrap dialects) detaches the command from a terminal the caller
    keeps; the Landlock launcher refuses TIOCSTI itself.
    """
    match backend.name:
        case "bwrap":
            return Wrapped(
                argv=bwrap_argv(backend.runner, policy, host, argv, new_session=new_session),
                backend=BWRAP,
                enforcement=Enforcement.FULL,
                denial_signatures=BWRAP_DENIAL,
                runner_failure_rules=BWRAP_RULES,
            )
        case "runner-command":
            # The operator asserts a bwrap-compatible runner; its own signatures
            # are the only runner-failure evidence.
            return Wrapped(
                argv=bwrap_argv(backend.runner, policy, host, argv, new_session=new_session),
                backend=RUNNER_COMMAND,
                enforcement=Enforcement.FULL,
                denial_signatures=BWRAP_DENIAL,
                runner_failure_rules=backend.extra_rules,
            )
        case "landlock":
            enforcement, _ = landlock_enforcement(policy.mode, backend.abi or 0)
            return Wrapped(
                argv=landlock_argv(backend.runner, policy, host, argv),
                backend=LANDLOCK,
                enforcement=enforcement,
                denial_signatures=LANDLOCK_DENIAL,
                runner_failure_rules=LANDLOCK_RULES,
            )
        case "seatbelt":
            return Wrapped(
                argv=seatbelt_argv(policy, host, argv),
                backend=SEATBELT,
                enforcement=Enforcement.FULL,
                denial_signatures=SEATBELT_DENIAL,
                runner_failure_rules=SEATBELT_RULES,
            )
        case other:
            raise ValueError(f"unknown sandbox backend {other!r}")


def runner_command_rules(signatures: tuple[str, ...]) -> tuple[RunnerFailureRule, ...]:
    """The operator's signatures as one fatal rule (none when there are none)."""
    if not signatures:
        return ()
    return (RunnerFailureRule(exit_codes=None, fatal_signatures=signatures),)

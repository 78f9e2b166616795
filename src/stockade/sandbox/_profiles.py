"""Each backend's dialect: the Wrapped reply, denial signatures, runner-failure rules,
and the truthful enforcement claim. The argv itself comes from `_argv`. No I/O here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from ..messages import RunnerFailureRule, Wrapped
from ..vocab import Enforcement, SandboxMode, SandboxPolicy
from ._argv import BWRAP as BWRAP
from ._argv import LANDLOCK as LANDLOCK
from ._argv import RUNNER_COMMAND as RUNNER_COMMAND
from ._argv import SEATBELT as SEATBELT
from ._argv import confined_argv, writable_roots
from ._probe import launcher_path

if TYPE_CHECKING:
    from ..trust import Protection

LANDLOCK_PARTIAL_NOTICE: Final = "landlock-run: partial enforcement (older Landlock ABI)"

# The stderr text each kernel path produces on a refused write (measured, FACTS.md).
# "Device or resource busy": renaming over or removing a protected path, which bwrap
# keeps as a mount point (the trust base's binds).
BWRAP_DENIAL: Final = ("Read-only file system", "Device or resource busy")
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
# bwrap runs the launcher as its filter stage (`--filters-only`): its failures too.
BWRAP_FILTERED_RULES: Final = (
    *BWRAP_RULES,
    RunnerFailureRule(exit_codes=frozenset({125}), fatal_signatures=("landlock-run:",)),
)
SEATBELT_RULES: Final = (RunnerFailureRule(exit_codes=None, fatal_signatures=("sandbox-exec:",)),)

# Effects Landlock cannot govern on any ABI: the launcher seals them with seccomp in
# read-only mode, but workspace-write must allow them inside the root, so there they
# stay ungoverned outside it too (tests/launcher: test_landlock_does_not_govern_...).
LANDLOCK_METADATA_EFFECTS: Final = ("chmod", "chown", "utimes", "xattr", "inode flags")
# Truncate from ABI 3, device ioctl from ABI 5, signal and abstract-socket scoping from 6.
LANDLOCK_FULL_ABI: Final = 6
# Without a private IPC namespace the launcher refuses creating, removing and changing
# host IPC objects (seccomp); using the ones that exist is not refused.
LANDLOCK_SHARED_IPC_GAP: Final = (
    "existing host IPC objects (sending to and receiving from message queues, "
    "attaching shared memory, semaphore operations)"
)
# bwrap without its filter stage (the launcher is missing): nothing refuses the bits.
BWRAP_UNFILTERED_GAP: Final = "setuid and setgid bits inside the writable roots"


@attrs.frozen
class HostPaths:
    """Host facts a profile needs: the temp roots workspace-write may also write."""

    temp_roots: tuple[str, ...] = ("/tmp",)


def landlock_enforcement(
    mode: SandboxMode, abi: int, *, private_ipc: bool = True
) -> tuple[Enforcement, tuple[str, ...]]:
    """What the launcher governs under `mode` on `abi`, and the effects it leaves open.

    `private_ipc`: the probe found the launcher can give commands an IPC namespace of
    their own (CAP_SYS_ADMIN, or a user namespace), so `--private-ipc` is passed.
    """
    ungoverned: list[str] = []
    if abi < 3:
        ungoverned.append("truncate")
    if abi < 5:
        ungoverned.append("device ioctl")
    if abi < LANDLOCK_FULL_ABI:
        ungoverned += ["signals to host processes", "abstract unix sockets"]
    if not private_ipc:
        ungoverned.append(LANDLOCK_SHARED_IPC_GAP)
    if mode is not SandboxMode.READ_ONLY:
        ungoverned += [
            f"{effect} outside the writable roots" for effect in LANDLOCK_METADATA_EFFECTS
        ]
    return (Enforcement.PARTIAL if ungoverned else Enforcement.FULL), tuple(ungoverned)


def bwrap_gaps(mode: SandboxMode, launcher: str | None) -> tuple[str, ...]:
    """What bwrap leaves open under `mode`: nothing with its filter stage; without it,
    setuid bits where something is writable (read-only binds refuse them elsewhere)."""
    if launcher or mode is SandboxMode.READ_ONLY:
        return ()
    return (BWRAP_UNFILTERED_GAP,)


@attrs.frozen
class Backend:
    """A selected runner: its name and path, and (Landlock) the kernel ABI it found.

    `identity` pins the runner file found at probe time (device, inode, size, mtime):
    it is checked again before every spawn. `source` is the file on disk when `runner`
    is a sealed in-memory copy of it (then nothing on disk can change what runs).
    """

    name: str
    runner: str
    abi: int | None = None
    extra_rules: tuple[RunnerFailureRule, ...] = ()
    identity: tuple[int, ...] | None = None
    source: str | None = None
    # The descriptor holding the sealed copy (`runner` names it); the provider closes
    # it when it stops.
    sealed_fd: int | None = None
    # bwrap: the launcher run inside it as its filter stage, on disk (the shipped one
    # unless given; None: there is none, and the claim says what that leaves open).
    launcher: str | None = attrs.field(
        default=attrs.Factory(
            lambda self: launcher_path() if self.name == BWRAP else None, takes_self=True
        )
    )
    # Landlock: the probe found a private IPC namespace possible (`--private-ipc`).
    private_ipc: bool = True


def wrap(
    backend: Backend,
    policy: SandboxPolicy,
    host: HostPaths,
    argv: tuple[str, ...],
    *,
    new_session: bool = False,
    protections: tuple[Protection, ...] = (),
    gaps: tuple[str, ...] = (),
    blockers: tuple[str, ...] = (),
) -> Wrapped:
    """The Wrapped reply for `argv` under `policy` on the selected `backend`.

    `new_session` (bwrap dialects) detaches the command from a terminal the caller
    keeps; the Landlock launcher refuses TIOCSTI itself. `protections` and `gaps`
    come from the trust base (`_guard`): binds to add, and what stays unenforced;
    `blockers` are the mount points the runner will create on the host.
    """
    confined = confined_argv(
        backend.name,
        backend.runner,
        policy.mode,
        policy.workspace_root,
        host.temp_roots,
        argv,
        new_session=new_session,
        protections=protections,
        launcher=backend.launcher,
        private_ipc=backend.private_ipc,
    )
    rules: tuple[RunnerFailureRule, ...]
    ungoverned: tuple[str, ...] = ()
    match backend.name:
        case "bwrap":
            enforcement, denial = Enforcement.FULL, BWRAP_DENIAL
            rules = BWRAP_FILTERED_RULES if backend.launcher else BWRAP_RULES
            ungoverned = bwrap_gaps(policy.mode, backend.launcher)
        case "runner-command":
            # The operator asserts a bwrap-compatible runner; its own signatures
            # are the only runner-failure evidence.
            enforcement, denial, rules = Enforcement.FULL, BWRAP_DENIAL, backend.extra_rules
        case "landlock":
            enforcement, ungoverned = landlock_enforcement(
                policy.mode, backend.abi or 0, private_ipc=backend.private_ipc
            )
            denial, rules = LANDLOCK_DENIAL, LANDLOCK_RULES
        case _:
            enforcement, denial, rules = Enforcement.FULL, SEATBELT_DENIAL, SEATBELT_RULES
    all_gaps = (*ungoverned, *gaps)
    return Wrapped(
        argv=confined,
        backend=backend.name,
        enforcement=Enforcement.PARTIAL if all_gaps else enforcement,
        denial_signatures=denial,
        runner_failure_rules=rules,
        gaps=all_gaps,
        blockers=blockers if backend.name in ("bwrap", "runner-command") else (),
        writable=writable_roots(policy.mode, policy.workspace_root, host.temp_roots),
        protected=tuple(p.path for p in protections if p.kind != "pin"),
    )


def runner_command_rules(signatures: tuple[str, ...]) -> tuple[RunnerFailureRule, ...]:
    """The operator's signatures as one fatal rule (none when there are none)."""
    if not signatures:
        return ()
    return (RunnerFailureRule(exit_codes=None, fatal_signatures=signatures),)

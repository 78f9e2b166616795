"""In-process request/reply messages: one closed tagged union per actor inbox.

Plain data only: a reply channel rides beside a message in its envelope
(`_mailbox.Envelope`), never inside it, so every message can be logged and replayed.
"""

from __future__ import annotations

import msgspec

from .vocab import Enforcement, ExecutionPolicy, Network, SandboxMode, SandboxPolicy


class RunnerFailureRule(msgspec.Struct, frozen=True):
    """Evidence that the sandbox runner itself failed, not the command.

    A settled process matches when its exit code is in `exit_codes` (no gate when
    None) AND some stderr line, after removing lines equal to an
    `informational_lines` entry, starts with one of `fatal_signatures`.
    """

    exit_codes: frozenset[int] | None
    fatal_signatures: tuple[str, ...]
    informational_lines: tuple[str, ...] = ()


# --- ProviderActor inbox ---------------------------------------------------------


class Confine(msgspec.Struct, frozen=True, tag="confine"):
    """Turn `argv` into the argv to spawn instead, confined under `policy`."""

    argv: tuple[str, ...]
    policy: SandboxPolicy


class Describe(msgspec.Struct, frozen=True, tag="describe"):
    """Report the platform chain, every candidate's verdict and the selection."""


ProviderRequest = Confine | Describe


class Wrapped(msgspec.Struct, frozen=True, tag="wrapped"):
    """The confined argv plus the facts needed to classify what it does."""

    argv: tuple[str, ...]
    backend: str
    enforcement: Enforcement
    denial_signatures: tuple[str, ...]
    runner_failure_rules: tuple[RunnerFailureRule, ...]
    # What this call leaves unenforced (each makes the claim partial), said plainly.
    gaps: tuple[str, ...] = ()
    # Placeholders the runner mounts over to block a missing protected path, and which
    # of them are directories: the executor makes and holds each before spawning and
    # removes it when no process uses it any more (sandbox/placeholders.py).
    blockers: tuple[str, ...] = ()
    directory_blockers: tuple[str, ...] = ()
    # The real paths this call may write under, and the protected paths inside them
    # that the backend keeps read-only: what a denial is judged against.
    writable: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()


class NetworkClaim(msgspec.Struct, frozen=True):
    """What a backend claims for a call with network off under one mode: the claim,
    every effect it leaves open (file and network), and how it governs each network
    effect (one it does not govern reads "not governed: ..."; docs/security.md)."""

    enforcement: Enforcement
    ungoverned: tuple[str, ...] = ()
    effects: dict[str, str] = {}


class CandidateReport(msgspec.Struct, frozen=True):
    """One backend of the chain as its probe found it."""

    backend: str
    usable: bool
    runner: str | None = None
    why_not: str | None = None
    abi: int | None = None
    # Per confining mode: what this backend governs there with network on, where only
    # file effects are promised (see docs/security.md).
    enforcement: dict[str, Enforcement] = {}
    ungoverned: dict[str, tuple[str, ...]] = {}
    probed: bool = True
    # Per confining mode, with network off (the default): the claim and its gaps,
    # network effects included, and how each network effect is governed.
    network_off: dict[str, NetworkClaim] = {}


class TrustCheck(msgspec.Struct, frozen=True):
    """One check of the trust base (`stockade probe`): what was checked, where, whether
    it holds, and how (or why not)."""

    item: str
    path: str | None
    holds: bool
    how: str
    # "trusted" (check 1), "protected" (check 2: bwrap binds it read-only; the Landlock
    # launcher refuses or claims partial), "untrusted" (refused), or "off".
    status: str = "trusted"


class ProviderReport(msgspec.Struct, frozen=True, tag="provider-report"):
    platform: str
    chain: tuple[str, ...]
    candidates: tuple[CandidateReport, ...]
    selected: str | None
    detail: str | None = None
    trust: tuple[TrustCheck, ...] = ()
    # Why `run`/`exec` here (this root, workspace-write) would refuse the selected
    # backend all the same (a trust check), or None.
    refused_here: str | None = None


# --- ExecutorActor inbox ---------------------------------------------------------


class ShellSpec(msgspec.Struct, frozen=True):
    """A resolved shell call: the command and the complete policy it runs under.

    `workdir` defaults to the policy's workspace root; `env` entries are laid over
    the inherited environment; `stdin` is closed unless given.
    """

    command: str
    policy: ExecutionPolicy
    workdir: str | None = None
    timeout: float | None = None
    stdin: bytes | None = None
    env: dict[str, str] | None = None
    # The session a background job belongs to: only it may read or kill the job.
    owner: str | None = None


class Run(msgspec.Struct, frozen=True, tag="run"):
    """Run in the foreground; the reply is the settled ShellResult."""

    spec: ShellSpec


class Start(msgspec.Struct, frozen=True, tag="start"):
    """Start a background job; the reply is its JobHandle, at once."""

    spec: ShellSpec


class JobOutput(msgspec.Struct, frozen=True, tag="job-output"):
    """Output since the last read, plus status."""

    job_id: str
    owner: str | None = None


class WaitJob(msgspec.Struct, frozen=True, tag="wait-job"):
    """Reply when the job has settled, with its last report.

    `read` False leaves the unread output for the next `JobOutput`.
    """

    job_id: str
    owner: str | None = None
    read: bool = True


class KillJob(msgspec.Struct, frozen=True, tag="kill-job"):
    job_id: str
    owner: str | None = None


class ListJobs(msgspec.Struct, frozen=True, tag="list-jobs"):
    owner: str | None = None


ExecutorRequest = Run | Start | JobOutput | WaitJob | KillJob | ListJobs


class ShellResult(msgspec.Struct, frozen=True):
    """A settled command and the facts of how it ran.

    `denied` means the kernel refused a file effect: the command RAN, and the fact
    is independent of `exit_code`. Output beyond the cap is counted in `*_dropped`.
    """

    exit_code: int | None
    stdout: str
    stderr: str
    denied: bool
    runner_failed: bool
    timed_out: bool
    cancelled: bool
    mode: SandboxMode
    backend: str
    enforcement: Enforcement | None
    duration: float
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    runner_failure: str | None = None
    # Why `enforcement` is partial: the effects this call left ungoverned.
    gaps: tuple[str, ...] = ()
    # Whether this call had the network: its policy's effective value (`on` under
    # danger-full-access and without a sandbox). The default claims no confinement.
    network: Network = Network.ON


class JobHandle(msgspec.Struct, frozen=True):
    id: str
    command: str
    policy: ExecutionPolicy
    started_at: float


JobState = str  # "running" | "exited" | "timed-out" | "killed" | "runner-failed"


class JobReport(msgspec.Struct, frozen=True):
    """A background job as seen now: output since the last read, and its status."""

    id: str
    command: str
    policy: ExecutionPolicy
    state: JobState
    started_at: float
    ended_at: float | None
    stdout: str
    stderr: str
    stdout_dropped: int
    stderr_dropped: int
    mode: SandboxMode
    backend: str
    enforcement: Enforcement | None
    exit_code: int | None = None
    denied: bool = False
    runner_failed: bool = False
    runner_failure: str | None = None
    timed_out: bool = False
    gaps: tuple[str, ...] = ()
    # As ShellResult.network: the network this job's command had.
    network: Network = Network.ON

"""In-process request/reply messages: one closed union per actor inbox (provider,
executor, approval, session log), each inbox's Structs and their replies, here alone.

Plain data (one exception, `AttachedRun`, says why): a reply rides beside a message in
its envelope (`actors.mailbox.Envelope`), never inside it, so a message can be logged
and replayed. An actor's dispatch `match` ends in `assert_never`, which mypy checks
against the union its typed inbox carries.
"""

from __future__ import annotations

import contextlib
import enum
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import attrs
import msgspec

from .vocab import (
    ApprovalPolicy,
    Enforcement,
    ExecutionPolicy,
    Network,
    SandboxMode,
    SandboxPolicy,
    SpawnTrait,
)

if TYPE_CHECKING:
    # The session log's messages carry events; no message is decoded, so the name is
    # needed by the type checker only (and `stockade run` need not build the events).
    from .events import SessionEvent


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
    # network allowlist: the Unix socket of this call's proxy endpoint (the executor's).
    proxy: str | None = None
    # The real path of the directory the command starts in, judged through a
    # descriptor (trust.judge_workdir); None: the workspace root.
    workdir: str | None = None


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
    # What this call leaves unenforced of the FILE sandbox (each makes `enforcement`
    # partial), said plainly.
    gaps: tuple[str, ...] = ()
    # The network claim, apart from the file claim: None when the call has the
    # network (nothing is promised); else full, or partial with `network_gaps`.
    network_enforcement: Enforcement | None = None
    network_gaps: tuple[str, ...] = ()
    # Placeholders the runner mounts over to block a missing protected path, and which
    # of them are directories: the executor makes and holds each before spawning and
    # removes it when no process uses it any more (sandbox/placeholders.py).
    blockers: tuple[str, ...] = ()
    directory_blockers: tuple[str, ...] = ()
    # The real paths this call may write under, and the protected paths inside them
    # that the backend keeps read-only: what a denial is judged against.
    writable: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    # The deny_read paths this call covers (real paths): a refused read there is a
    # denial that only danger-full-access lifts.
    unreadable: tuple[str, ...] = ()
    # The Landlock launcher's tier ("namespaced" or "plain"); None for other backends.
    tier: str | None = None
    # The runtime directories the command sees fresh and empty (network off or
    # allowlist): a path below one names the host's only outside this call.
    fresh: tuple[str, ...] = ()
    # Each granted agent socket: (which agent, "ssh" or "gpg"; the path the command
    # reaches it at). The ssh one is the command's SSH_AUTH_SOCK.
    agents: tuple[tuple[str, str], ...] = ()
    # The workspace root (real) when it had no repository as the call was guarded:
    # its `.git` is not blocked, and what git would run of a repository the call makes
    # there is held when it ends (trust/new_repository.py).
    new_repository: str | None = None
    # What the executor must know of the runner to spawn it (its backend says, once per
    # backend: sandbox/backends/); none for a runner nothing is known of.
    traits: frozenset[SpawnTrait] = frozenset()


class NetworkClaim(msgspec.Struct, frozen=True):
    """What a backend claims for the NETWORK with network off under one mode (apart
    from the file claim): the claim, the network effects it leaves open, and how it
    governs each (one it does not govern reads "not governed: ..."; docs/security.md)."""

    enforcement: Enforcement
    ungoverned: tuple[str, ...] = ()
    effects: dict[str, str] = {}


class TierReport(msgspec.Struct, frozen=True):
    """One tier of the Landlock launcher: whether this caller can have it (and why
    not), and what it would claim per confining mode, network off (file claim, then
    the network's)."""

    tier: str
    usable: bool
    why_not: str | None = None
    selected: bool = False
    enforcement: dict[str, Enforcement] = {}
    ungoverned: dict[str, tuple[str, ...]] = {}
    network_off: dict[str, NetworkClaim] = {}


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
    # Per confining mode: the same for network allowlist (only where the launcher's
    # bridge carries it: bwrap, the Landlock launcher).
    network_allowlist: dict[str, NetworkClaim] = {}
    # The Landlock launcher: each tier, strongest first, as this host allows it.
    tiers: tuple[TierReport, ...] = ()


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


class AskedWorkdir(msgspec.Struct, frozen=True):
    """Where an asked call's command will start, judged before the person was asked
    (`trust.judge_workdir`, as the executor judges it at start): what the person is
    shown, and what the start is bound to (`ShellSpec.expected_workdir`).

    `named`: the call's `workdir` as the model wrote it (None: the root); `spelled`:
    that joined to the root, unresolved (what it looks like); `real`, `device`,
    `inode`: the directory it led to when asked; `note`: one line for the person when
    `real` is not where `named` reads (a symlink on the way, outside the root), else
    None.
    """

    named: str | None
    spelled: str
    real: str
    device: int
    inode: int
    note: str | None = None


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
    # network allowlist: `host:port` destinations a person granted for THIS call only
    # (`with_network` + `network_destinations`), added to the operator's allow list
    # for this call's proxy endpoint (deny still wins). `network_allow_alone`: the
    # session's network was off, so the call reaches these and nothing else.
    network_allow: tuple[str, ...] = ()
    network_allow_alone: bool = False
    # The tool call this command serves (its network decisions are logged under it).
    call_id: str | None = None
    # An asked call: the directory the person was shown. The start refuses (nothing
    # runs) when `workdir` leads anywhere else by then (None: not asked, not bound).
    expected_workdir: AskedWorkdir | None = None


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


class CloseSession(msgspec.Struct, frozen=True, tag="close-session"):
    """The session `owner` closes: its jobs are killed (their cause session-closed),
    forgotten, and its cgroup removed; answered with how many jobs were ended."""

    owner: str


# An output sink takes each chunk as it is read; raising BrokenPipeError says its reader
# is gone. A stdin source returns the next chunk, b"" at its end.
Sink = Callable[[bytes], Awaitable[None]]
Source = Callable[[], Awaitable[bytes]]


class Streams(msgspec.Struct, frozen=True):
    """A foreground caller's own streams (`stockade run` on a terminal or in a pipe).

    The bounded capture is kept as always (classification and the result read it);
    the sinks see every byte, live. A sink that raises BrokenPipeError stops being fed
    and the command's pipe is closed, so the command meets the closed pipe as it would
    in a shell pipeline. `stdin` is pumped chunk by chunk (never read whole) until its
    end, the command's exit, or the command closing its stdin.
    """

    stdout: Sink | None = None
    stderr: Sink | None = None
    stdin: Source | None = None
    # The command's stdout (and stdin) on a terminal the caller opened (see Terminal).
    terminal: Terminal | None = None


@attrs.define(eq=False, repr=False)
class Terminal:
    """A pseudo-terminal a foreground caller opened for the command (`stockade run` on
    a person's terminal), in place of its stdout pipe (and stdin's, when `stdin`).

    `slave` is what the command gets as fd 1 (and 0), and becomes its controlling
    terminal; stderr stays a pipe. `master` is drained like the stdout pipe, through
    a duplicate: the caller keeps its own, to type into and to close. The slave is
    handed over: `spawn` closes it once the command holds it, so the drain sees the
    end of the output when the command's processes are gone.
    """

    slave: int
    master: int
    stdin: bool = False
    _released: bool = False

    def release(self) -> None:
        """Close the command's end (once; also when it never started)."""
        if not self._released:
            self._released = True
            with contextlib.suppress(OSError):
                os.close(self.slave)


# Not plain data, though a Struct: its `streams` are this process's callables and file
# descriptors, which no encoder can carry and no replay can restore. It has no tag, so
# no decoder of the inbox's union can even be built. A Struct only because an attrs
# class costs some twenty times as much to build at import (docs/performance.md,
# "Value records as msgspec Structs"), and `stockade run` imports it. It still belongs
# to the union, so the executor's dispatch is checked over every message its inbox can
# carry; only `ExecutorClient.run(streams=...)`, inside the process, builds one.
class AttachedRun(msgspec.Struct, frozen=True):
    """A foreground run whose output also goes, live, to the caller's `streams`
    (in-process only: the streams are callables, so this is no wire message)."""

    spec: ShellSpec
    streams: Streams


ExecutorRequest = (
    Run | AttachedRun | Start | JobOutput | WaitJob | KillJob | ListJobs | CloseSession
)


class NetworkConnection(msgspec.Struct, frozen=True, kw_only=True):
    """One connection a call asked the proxy for (network allowlist), as it decided:
    the destination as asked, the address used (None: none was), the verdict and the
    rule that gave it, in plain words for `reason`."""

    host: str
    port: int
    address: str | None
    allowed: bool
    rule: str | None
    reason: str
    protocol: str

    @property
    def destination(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


class NetworkRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One request a call sent to a ruled host (network allowlist, issue 41: a host a
    credential or request rule names, whose TLS the proxy terminates), as the proxy
    judged it before it went anywhere: the method, the host and port, the normalised
    path without its query (a query may hold what a log must not), the verdict and the
    rule that gave it, `reason` in one line; the names of the credentials put into it
    (never a value) and, for a placeholder seen where it does not belong, one line
    each (the request was then refused). `status`: the origin's answer, when known.
    `scrubbed`: how many times the origin's answer held a credential's value, replaced
    by its placeholder before the command read it (a record of its own, as the answer
    ends)."""

    method: str
    host: str
    port: int
    path: str
    allowed: bool
    reason: str
    rule: str | None = None
    credentials: tuple[str, ...] = ()
    misplaced: tuple[str, ...] = ()
    status: int | None = None
    protocol: str = "https"
    scrubbed: int = 0


class ConnectionsRefused(msgspec.Struct, frozen=True, kw_only=True):
    """network allowlist: connections the proxy refused as it accepted them, before
    reading anything, because the call, its session or the harness held its bound of
    open connections (docs/limits.md, "Proxy connections"); why, the last time."""

    count: int
    reason: str


class LimitHit(msgspec.Struct, frozen=True, kw_only=True):
    """A limit the command reached (stockade.limits): its name, its value, and what the
    command used when known (bytes, seconds or processes, as the limit counts).
    `scope`: whose limit it was, "command" (its own), "session" (all its session's
    commands together: `value` and `used` are the session's) or "host" (one above
    stockade's, a container's or a service manager's: neither is known)."""

    name: str
    value: float | None
    used: float | None = None
    scope: str = "command"


class LimitClaim(msgspec.Struct, frozen=True, kw_only=True):
    """How one limit held this call: `mechanism` ("cgroup-v2", "cgroup-v1", "rlimit",
    "harness", "none") and `claim` ("enforced", "partial", "none", "unlimited"), with
    why when it is not simply enforced."""

    name: str
    value: float | None
    mechanism: str
    claim: str
    detail: str = ""


class ResourceUse(msgspec.Struct, frozen=True, kw_only=True):
    """What the command's processes used, from its cgroup where there is one (None:
    not measured here)."""

    cpu_seconds: float | None = None
    memory_peak: int | None = None
    processes_peak: int | None = None


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
    # The Landlock launcher's tier ("namespaced" or "plain"), beside `backend`.
    tier: str | None = None
    stderr_dropped: int = 0
    # The directories this call could write (its root, temp directory, extra writable
    # roots and tool caches), real paths; () when it wrote nowhere or ran unconfined.
    writable: tuple[str, ...] = ()
    runner_failure: str | None = None
    # Why `enforcement` (the FILE sandbox's claim) is partial: the effects this call
    # left ungoverned.
    gaps: tuple[str, ...] = ()
    # The network claim (None: the call had the network, nothing is promised) and
    # what it leaves open; apart from the file claim.
    network_enforcement: Enforcement | None = None
    network_gaps: tuple[str, ...] = ()
    # Whether this call had the network: its policy's effective value (`on` under
    # danger-full-access and without a sandbox). The default claims no confinement.
    network: Network = Network.ON
    # The names (never the values) of the harness's variables the environment
    # policy kept from the command (executor/environment.py).
    env_dropped: tuple[str, ...] = ()
    # The refusal was of a path no mode may read (deny_read): no wider sandbox mode
    # lifts it, only danger-full-access.
    read_denied: bool = False
    # (host path, fresh runtime directory) for each "No such file or directory" the
    # call's fresh views caused (network off or allowlist: Wrapped.fresh): the host has
    # the path, the command saw that directory empty. A denial (`denied` is set).
    unseen: tuple[tuple[str, str], ...] = ()
    # What git would run in a repository this call made in a root that had none (its
    # config keys, hooks), held aside when it ended (trust/new_repository.py).
    held: tuple[str, ...] = ()
    # network allowlist: every connection the proxy decided for this call, in order,
    # and those it refused unread over a bound of open connections.
    connections: tuple[NetworkConnection, ...] = ()
    connections_refused: ConnectionsRefused | None = None
    # network allowlist: every request to a ruled host (issue 41) the proxy judged for
    # this call, in order.
    requests: tuple[NetworkRequest, ...] = ()
    # How it ended, exactly one of stockade.limits.Cause's values ("exited", "signal",
    # "limit", "timeout", "killed", "session-closed", "host-oom", "runner-failed",
    # "not-started"); the limit it reached, if any; its one-line note for the model.
    cause: str = "exited"
    limit: LimitHit | None = None
    note: str | None = None
    # What it used, and how each limit held it (docs/limits.md).
    usage: ResourceUse | None = None
    limits: tuple[LimitClaim, ...] = ()


class JobHandle(msgspec.Struct, frozen=True):
    id: str
    command: str
    policy: ExecutionPolicy
    started_at: float
    # "queued" | "running" | how it ended (JobState): as it was when the handle was made.
    state: str = "running"


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
    # As ShellResult.tier.
    tier: str | None = None
    denied: bool = False
    read_denied: bool = False
    # As ShellResult.unseen and .held, once the job has ended.
    unseen: tuple[tuple[str, str], ...] = ()
    held: tuple[str, ...] = ()
    runner_failed: bool = False
    runner_failure: str | None = None
    timed_out: bool = False
    gaps: tuple[str, ...] = ()
    network_enforcement: Enforcement | None = None
    network_gaps: tuple[str, ...] = ()
    # As ShellResult.network: the network this job's command had.
    network: Network = Network.ON
    # As ShellResult.env_dropped: the variables' names this job's command did not get.
    env_dropped: tuple[str, ...] = ()
    # As ShellResult.connections: those decided so far; those refused unread so far.
    connections: tuple[NetworkConnection, ...] = ()
    connections_refused: ConnectionsRefused | None = None
    # As ShellResult.requests: those judged since the last report.
    requests: tuple[NetworkRequest, ...] = ()
    # As ShellResult's, once the job has ended (cause None while it runs or waits).
    cause: str | None = None
    limit: LimitHit | None = None
    note: str | None = None
    usage: ResourceUse | None = None
    limits: tuple[LimitClaim, ...] = ()
    # While queued: how many of its session's jobs wait ahead of it (0: next).
    queue_position: int | None = None


# --- ApprovalActor inbox ---------------------------------------------------------


class Decision(enum.Enum):
    ALLOWED_ONCE = "allowed-once"
    # A command rule's prompt answered with "allow for this session": this run, and a
    # session rule (the request's `session_prefix`) for the session's later ones.
    ALLOWED_FOR_SESSION = "allowed-for-session"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    UNAVAILABLE = "unavailable"


class ApprovalRequest(msgspec.Struct, frozen=True):
    """One escalation to decide: this command, once, under `requested_mode`.

    `policy` is the session's effective approval policy, resolved by the caller.
    `with_network`: the request is for network access for this one run (the mode
    stays: `requested_mode` equals `current_mode`); show the person that it is.
    `network_destinations`: with `with_network`, the `host:port` destinations asked
    for (the call keeps network allowlist, these added); empty: network `on`.
    `rule`, `rule_reason`: a command rule's prompt (docs/rules.md): the person is asked
    whether the command may run at all, nothing widens (`requested_mode` equals
    `current_mode`); `session_prefix`: the exact words "allow for this session" would
    allow for the rest of the session (empty: not offered).
    `allowed_by_rule`: a command rule allows this escalation; the chain approves it
    without asking a person, after the reject rules (`stockade.approval`).
    `workdir`: where the command will start, judged when it was asked (the bash tool
    sets it; None: the asker did not judge one, a face shows what it can).
    """

    session_id: str
    command: str
    justification: str
    current_mode: SandboxMode
    requested_mode: SandboxMode
    policy: ApprovalPolicy
    reason: str
    call_id: str | None = None
    with_network: bool = False
    network_destinations: tuple[str, ...] = ()
    rule: str | None = None
    rule_reason: str | None = None
    session_prefix: tuple[str, ...] = ()
    allowed_by_rule: str | None = None
    workdir: AskedWorkdir | None = None


class AskApproval(msgspec.Struct, frozen=True, tag="ask-approval"):
    request: ApprovalRequest


ApprovalInbox = AskApproval


class Answer(msgspec.Struct, frozen=True):
    """A decision and who made it. `detail` reaches the model (keep it short and
    harmless); `error` (an answerer that failed) reaches only the log and logging."""

    decision: Decision
    answerer: str
    detail: str | None = None
    error: str | None = None


# --- SessionLogActor inbox -------------------------------------------------------


class OpenLog(msgspec.Struct, frozen=True, tag="open-log"):
    """Hold `session_id`'s log open (shared by every opener in this actor; counted)."""

    session_id: str


class AppendEvents(msgspec.Struct, frozen=True, tag="append-events"):
    """Append `events` contiguously; with `after_seq`, only if the log still ends there."""

    session_id: str
    events: tuple[SessionEvent, ...]
    after_seq: int | None = None


class ReadLog(msgspec.Struct, frozen=True, tag="read-log"):
    """Every committed event of an open session, in order."""

    session_id: str


class CloseLog(msgspec.Struct, frozen=True, tag="close-log"):
    """Drop one hold; the last one drains pending appends and releases the lock."""

    session_id: str


class FindLog(msgspec.Struct, frozen=True, tag="find-log"):
    """Whether the store holds `session_id`'s log, and where: asked of the store
    without opening (and so without creating) the log."""

    session_id: str


SessionLogRequest = OpenLog | AppendEvents | ReadLog | CloseLog | FindLog


class LogOpened(msgspec.Struct, frozen=True, tag="log-opened"):
    """Reply to OpenLog: the log's events and whether a torn tail was cut on open.

    `events` is the log's view at that moment (an `EventView`: shared, not copied).
    """

    session_id: str
    location: str
    events: Sequence[SessionEvent]
    torn_lines_cut: int = 0


class LogFound(msgspec.Struct, frozen=True, tag="log-found"):
    """Reply to FindLog: whether the store holds the session's log, and where it is
    (or would be)."""

    session_id: str
    exists: bool
    location: str

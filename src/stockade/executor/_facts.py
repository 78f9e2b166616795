"""Per-process wrap facts, and the pure step from a settled process to its result."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import msgspec

from ..messages import (
    ConnectionsRefused,
    NetworkConnection,
    NetworkRequest,
    RunnerFailureRule,
    ShellResult,
    Wrapped,
)
from ..trust import JudgedDirectory, is_under
from ..vocab import Enforcement, Network, SandboxMode, SpawnTrait
from ._buffer import OutputBuffer
from ._classify import Evidence, Verdict, classify, command_exec_status, runner_failure_line

if TYPE_CHECKING:
    from ._denials import HostSight, Missing

UNCONFINED = "none"
# An unconfined command (danger-full-access) runs after the launcher's `--limits-only`
# stage, as bwrap does; its argv[0] is the command, no runner.
UNCONFINED_TRAITS = frozenset({SpawnTrait.LIMITS_STAGE})


class WrapFacts(msgspec.Struct, frozen=True, eq=False):
    """How one process was confined; kept with its handle, so overlapping jobs keep theirs.

    A Struct, not an attrs class (decisions.md, "Frozen value records"): built for every
    call, and its class is built on every `stockade run`'s path. Compared by identity (no
    caller compares two); its repr leaves out `environment`, which holds values.
    """

    mode: SandboxMode
    backend: str
    enforcement: Enforcement | None
    # The Landlock launcher's tier, beside `backend` (None for other backends).
    tier: str | None = None
    # What the spawn must know of the runner (its backend says: `Wrapped.traits`); a
    # backend's name is for display, events and results, never compared.
    traits: frozenset[SpawnTrait] = frozenset()
    denial_signatures: tuple[str, ...] = ()
    runner_failure_rules: tuple[RunnerFailureRule, ...] = ()
    gaps: tuple[str, ...] = ()
    network_enforcement: Enforcement | None = None
    network_gaps: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    # deny_read's paths this call covered (real paths).
    unreadable: tuple[str, ...] = ()
    # The runtime directories the command saw fresh, and its granted agent sockets
    # (Wrapped.fresh, Wrapped.agents).
    fresh: tuple[str, ...] = ()
    agents: tuple[tuple[str, str], ...] = ()
    # A workspace-write call's root (real) when it had no `.git` as the call started:
    # what git would run in one the call makes there is held when it ends.
    new_repository: str | None = None
    # Where the command ran and what it was: a relative path in a denial line is
    # resolved against `workdir`, unless `command` may have changed directory.
    # None: no attribution (the signature alone decides).
    workdir: str | None = None
    command: str = ""
    # The network the call's policy gives it (`on` when nothing confines it).
    network: Network = Network.ON
    # What the runner executes inside the sandbox (argv[0] after the runner's own
    # arguments): bwrap failing to execute it is a command result (127/126).
    program: str | None = None
    # The environment policy's result for this call: the command's base environment
    # (never in a repr: it holds values) and the names of the harness's it dropped.
    environment: Mapping[str, str] = msgspec.field(default_factory=dict)
    env_dropped: tuple[str, ...] = ()
    # network allowlist: the key of this call's proxy endpoint (its connections).
    proxy_call: str | None = None
    # The working directory as judged for a confined call, or an asked one
    # (trust.judge_workdir): the spawn enters that very directory, or nothing runs.
    judged: JudgedDirectory | None = None

    def __repr__(self) -> str:
        shown = (
            f"{name}={getattr(self, name)!r}"
            for name in self.__struct_fields__
            if name != "environment"
        )
        return f"WrapFacts({', '.join(shown)})"

    @classmethod
    def from_wrapped(
        cls,
        mode: SandboxMode,
        wrapped: Wrapped,
        *,
        workdir: str | None = None,
        command: str = "",
        network: Network = Network.ON,
        program: str | None = None,
    ) -> WrapFacts:
        return cls(
            mode=mode,
            backend=wrapped.backend,
            enforcement=wrapped.enforcement,
            tier=wrapped.tier,
            traits=wrapped.traits,
            denial_signatures=wrapped.denial_signatures,
            runner_failure_rules=wrapped.runner_failure_rules,
            gaps=wrapped.gaps,
            network_enforcement=wrapped.network_enforcement,
            network_gaps=wrapped.network_gaps,
            blockers=wrapped.blockers,
            writable=wrapped.writable,
            protected=wrapped.protected,
            unreadable=wrapped.unreadable,
            fresh=wrapped.fresh,
            agents=wrapped.agents,
            new_repository=wrapped.new_repository,
            workdir=workdir,
            command=command,
            network=network,
            program=program,
        )

    @classmethod
    def unconfined(cls) -> WrapFacts:
        return cls(
            mode=SandboxMode.DANGER_FULL_ACCESS,
            backend=UNCONFINED,
            enforcement=None,
            traits=UNCONFINED_TRAITS,
        )

    @property
    def confined(self) -> bool:
        return self.backend != UNCONFINED

    def judge(self, exit_code: int | None, stderr: str, stdout: str = "") -> Verdict:
        """Classify a settled process; host facts are gathered only for the paths of
        lines that carry a denial signature (usually none: then nothing is asked).
        A command that printed nothing has no line to attribute and nothing hidden to
        name: the classification alone, without importing the denial reading."""
        if not stderr and not stdout:
            return classify(
                self.runner_failure_rules, self.denial_signatures, exit_code, stderr, stdout=stdout
            )
        from ._denials import merges_stderr, named_paths
        from ._evidence import read_denied

        evidence = None
        if (
            self.workdir is not None
            and self._mentions_signature(stderr, stdout)
            and runner_failure_line(self.runner_failure_rules, exit_code, stderr) is None
        ):
            evidence = self.evidence(stderr, stdout)
        verdict = classify(
            self.runner_failure_rules,
            self.denial_signatures,
            exit_code,
            stderr,
            stdout=stdout,
            evidence=evidence,
        )
        if verdict.runner_failed or self.workdir is None:
            return verdict
        hidden = self.unseen(stderr, stdout)
        if hidden:
            # A deny_read path the view hid is refused the same with network on: it
            # reads as deny_read's (only danger-full-access lifts it), not as hidden.
            covered = tuple(
                entry
                for entry in hidden
                if any(is_under(entry[0], path) for path in self.unreadable)
            )
            verdict = msgspec.structs.replace(
                verdict,
                denied=True,
                read_denied=verdict.read_denied or bool(covered),
                unseen=tuple(entry for entry in hidden if entry not in covered),
            )
        if not self.unreadable:
            return verdict
        words = named_paths(stderr, stdout if merges_stderr(self.command) else "")
        if words and read_denied(words, self.workdir, self.unreadable):
            return msgspec.structs.replace(verdict, denied=True, read_denied=True)
        return verdict

    def unseen(self, stderr: str, stdout: str = "") -> tuple[tuple[str, str], ...]:
        """What the call's fresh runtime directories hid from it (`_denials.unseen`):
        the host is asked only when a line says "No such file or directory"."""
        if not self.fresh or self.workdir is None:
            return ()
        from ._denials import MISSING, changes_directory, merges_stderr, missing_lines, unseen

        if not any(MISSING in text or "ENOENT" in text for text in (stderr, stdout)):
            return ()
        merged = merges_stderr(self.command)
        found = missing_lines(stderr, stdout if merged else "", self.command)
        if not found:
            return ()
        return unseen(
            found,
            sight(found, self.workdir, self.fresh),
            tuple(os.path.realpath(root) for root in self.writable),
            moved=changes_directory(self.command),
            merged=merged,
        )

    def _mentions_signature(self, stderr: str, stdout: str) -> bool:
        from ._denials import mentions, merges_stderr

        seen = (stderr, stdout) if merges_stderr(self.command) else (stderr,)
        return any(mentions(self.denial_signatures, text) for text in seen)

    def evidence(self, stderr: str, stdout: str) -> Evidence:
        """The impure part of attribution: facts about the paths signature lines name."""
        assert self.workdir is not None
        from ._denials import changes_directory, merges_stderr, refusals
        from ._evidence import gather

        merged = merges_stderr(self.command)
        found = refusals(self.denial_signatures, stderr, stdout if merged else "")
        if not found:
            return Evidence(writable=self.writable, protected=self.protected)
        return Evidence(
            writable=tuple(os.path.realpath(root) for root in self.writable),
            protected=tuple(os.path.realpath(path) for path in self.protected),
            paths=gather(found, self.workdir),
            moved=changes_directory(self.command),
            merged=merged,
        )


def sight(found: Iterable[Missing], cwd: str, fresh: Iterable[str]) -> dict[str, HostSight]:
    """`_evidence.sight`, that module (and the denial reading it needs) imported only
    when a line said something was missing."""
    from ._evidence import sight as look

    return look(found, cwd, fresh)


def settled_result(
    facts: WrapFacts,
    *,
    exit_code: int | None,
    stdout: OutputBuffer,
    stderr: OutputBuffer,
    timed_out: bool,
    cancelled: bool,
    duration: float,
    connections: tuple[NetworkConnection, ...] = (),
    connections_refused: ConnectionsRefused | None = None,
    requests: tuple[NetworkRequest, ...] = (),
    started: bool | None = None,
) -> ShellResult:
    """The ShellResult of a settled process, classified by its own wrap facts, with
    the connections its proxy decided and refused unread, and the requests to ruled
    hosts it judged (network allowlist). `started`: the launcher's word that the
    command started (`_spawn.command_started`): then nothing it wrote reads as the
    runner's failure, however its lines look."""
    if started:
        facts = msgspec.structs.replace(facts, runner_failure_rules=())
    stderr_text, stdout_text = stderr.text(), stdout.text()
    shell_status = command_exec_status(facts.program, exit_code, stderr_text)
    if shell_status is not None:
        exit_code, verdict = shell_status, Verdict(runner_failure=None, denied=False)
    else:
        verdict = facts.judge(exit_code, stderr_text, stdout_text)
    return ShellResult(
        exit_code=exit_code,
        stdout=stdout_text,
        stderr=stderr_text,
        denied=verdict.denied,
        read_denied=verdict.read_denied,
        unseen=verdict.unseen,
        runner_failed=verdict.runner_failed,
        runner_failure=verdict.runner_failure,
        timed_out=timed_out,
        cancelled=cancelled,
        mode=facts.mode,
        backend=facts.backend,
        tier=facts.tier,
        enforcement=facts.enforcement,
        network=facts.network,
        duration=duration,
        stdout_dropped=stdout.dropped,
        stderr_dropped=stderr.dropped,
        gaps=facts.gaps,
        network_enforcement=facts.network_enforcement,
        network_gaps=facts.network_gaps,
        env_dropped=facts.env_dropped,
        writable=facts.writable if facts.confined else (),
        connections=connections,
        connections_refused=connections_refused,
        requests=requests,
    )


def unstarted_result(
    facts: WrapFacts, *, detail: str, runner_failed: bool, cancelled: bool = False
) -> ShellResult:
    """The result of a job whose process never started (spawn failed, or killed while queued)."""
    return ShellResult(
        exit_code=None,
        stdout="",
        stderr="" if runner_failed or cancelled else detail,
        # Killed while it waited for a slot (by its caller, or the harness stopping).
        cause="runner-failed" if runner_failed else "killed" if cancelled else "not-started",
        denied=False,
        runner_failed=runner_failed,
        runner_failure=detail if runner_failed else None,
        timed_out=False,
        cancelled=cancelled,
        mode=facts.mode,
        backend=facts.backend,
        tier=facts.tier,
        enforcement=facts.enforcement,
        network=facts.network,
        duration=0.0,
        gaps=facts.gaps,
        network_enforcement=facts.network_enforcement,
        network_gaps=facts.network_gaps,
        env_dropped=facts.env_dropped,
        writable=facts.writable if facts.confined else (),
    )


def waited_out_result(
    facts: WrapFacts, *, waited: float, busy: bool = True, limit: float | None = None
) -> ShellResult:
    """A call whose timeout passed before it could start: nothing ran. `busy`: every
    running slot was taken (else the timeout was too short to start at all, e.g. 0)."""
    if busy:
        why = "every running slot stayed busy until its timeout"
    else:
        of = "" if limit is None else f" of {limit:g}s"
        why = f"its timeout{of} ran out before it could start"
    return ShellResult(
        exit_code=None,
        stdout="",
        stderr=f"[the command did not start: {why}]",
        cause="not-started",
        denied=False,
        runner_failed=False,
        timed_out=True,
        cancelled=False,
        mode=facts.mode,
        backend=facts.backend,
        tier=facts.tier,
        enforcement=facts.enforcement,
        network=facts.network,
        duration=waited,
        gaps=facts.gaps,
        network_enforcement=facts.network_enforcement,
        network_gaps=facts.network_gaps,
        env_dropped=facts.env_dropped,
        writable=facts.writable if facts.confined else (),
    )

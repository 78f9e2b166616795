"""The model-facing bash, job_output and kill_job tools: arguments in, ToolResult out.

Policy (mode and network) is resolved per call from the session (escalation >
session override > default) and stamped on the spec before the executor runs;
escalation (a wider mode, or `with_network`) asks the ApprovalActor once and never
persists a grant.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, Literal

import attrs
import msgspec

from ..approval import Answer, ApprovalClient, ApprovalRequest
from ..errors import CommandStartError, SandboxUnavailable, StockadeError
from ..executor import ExecutorClient, refused_destinations, render_job, render_result
from ..messages import AskedWorkdir, JobReport, NetworkConnection, ShellResult, ShellSpec
from ..reprs import fields_repr
from ..trust import check_approved, judge_workdir, workdir_note
from ..vocab import WITH_NETWORK, ExecutionPolicy, Network, SandboxMode
from . import _escalation as texts
from ._approve import Escalation, ToolSession, request_escalation, tool_error
from ._bash_schema import BASH, JOB_OUTPUT, KILL_JOB, escalation_hint, network_escalation_hint
from ._record import CallRecorder, Recorded, with_changed
from ._rule_gate import Gate, judge_call
from .result import ToolResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..rules import RuleSet

# What `sandbox_permissions` takes: a sandbox mode, or one run with network on. One
# Literal (msgspec allows one string-like type per union), kept equal to
# `(*allowed_modes(), WITH_NETWORK)` by tests/harness/test_network.py.
Permission = Literal["read-only", "workspace-write", "danger-full-access", "with_network"]


class BashArguments(msgspec.Struct, forbid_unknown_fields=True):
    command: str
    workdir: str | None = None
    # Past LONGEST_TIMEOUT_MS a timeout never fires; past ABSURD_TIMEOUT_MS it is
    # refused (msgspec bounds must fit in 64 bits, so that check is in the tool).
    timeout_ms: Annotated[int, msgspec.Meta(ge=1)] | None = None
    background: bool = False
    sandbox_permissions: Permission | None = None
    justification: str | None = None
    # With "with_network" only: `host:port` destinations for this one call (checked
    # by `_escalation.parse_destinations`); the call keeps network allowlist.
    network_destinations: list[str] | None = None


class JobArguments(msgspec.Struct, forbid_unknown_fields=True):
    job_id: str


@attrs.frozen
class BashTool:
    __repr__ = fields_repr
    executor: ExecutorClient
    approval: ApprovalClient | None = None
    # The command rules judged on every call before it runs (None: none at all).
    rules: RuleSet | None = None

    @property
    def confines(self) -> bool:
        return self.executor.confines

    async def call(
        self,
        call_id: str,
        arguments: Any,
        session: ToolSession | None,
        *,
        record: CallRecorder | None = None,
    ) -> ToolResult:
        """Run one bash call. `record`: the harness's window around a foreground run that
        may write (what it changed in the root becomes the `changed` facts)."""
        try:
            args = msgspec.convert(arguments, BashArguments)
        except msgspec.ValidationError as error:
            return _error(call_id, BASH, f"invalid arguments for bash: {error}")
        try:
            return await self._call(call_id, args, session, record)
        except SandboxUnavailable as error:
            return _error(
                call_id,
                BASH,
                f"{error.code}: {error.detail}. "
                + (
                    "The sandbox runner reported that it could not set up the sandbox, "
                    "so the command is not known to have run"
                    if error.runner_started
                    else "The sandbox could not be set up, so the command did not run"
                )
                + "; this is not a denial of the command.",
                code=error.code,
            )
        except (CommandStartError, StockadeError) as error:
            return _error(call_id, BASH, f"the command could not start: {error}. Nothing ran.")

    async def _call(
        self,
        call_id: str,
        args: BashArguments,
        session: ToolSession | None,
        record: CallRecorder | None = None,
    ) -> ToolResult:
        for name, text in (("command", args.command), ("workdir", args.workdir)):
            problem = unspawnable(name, text)
            if problem is not None:
                return _error(call_id, BASH, problem)
        if args.timeout_ms is not None and args.timeout_ms > ABSURD_TIMEOUT_MS:
            return _error(call_id, BASH, "timeout_ms is out of range. Nothing ran.")
        destinations: tuple[str, ...] = ()
        if args.network_destinations is not None:
            if args.sandbox_permissions != WITH_NETWORK:
                return _error(call_id, BASH, texts.DESTINATIONS_WITHOUT_NETWORK)
            destinations, problem = texts.parse_destinations(args.network_destinations)
            if problem is not None:
                return _error(call_id, BASH, problem)
        policy = await self._policy(session)
        workdir = _workdir(args.workdir, policy.workspace_root)
        # Every question about this call shows where it will start, judged when first
        # asked; the start is then bound to that directory (an unasked call is not).
        approval = None
        if self.approval is not None:
            root = policy.workspace_root
            approval = _AskingClient(self.approval.inbox, args.workdir, workdir or root, root, [])
        gate = Gate()
        if self.rules is not None:
            gate = await judge_call(
                self.rules,
                args.command,
                call_id=call_id,
                tool=BASH,
                mode=policy.mode,
                session=session,
                approval=approval,
            )
            if gate.refusal is not None:
                return gate.refusal
        # What an approved escalation granted this one call: a mode's value, or
        # WITH_NETWORK (network on, the mode unchanged; with `destinations`, network
        # allowlist with those added for this call).
        grant: str | None = None
        alone = False
        if args.sandbox_permissions is not None or args.justification is not None:
            with_network = args.sandbox_permissions == WITH_NETWORK
            refusal, granted = await request_escalation(
                Escalation(
                    call_id=call_id,
                    tool=BASH,
                    command=args.command,
                    requested=None
                    if with_network or args.sandbox_permissions is None
                    else SandboxMode(args.sandbox_permissions),
                    justification=args.justification,
                    current=policy.mode,
                    with_network=with_network,
                    current_network=policy.network,
                    network_destinations=destinations,
                    allowed_by_rule=gate.allowed_by,
                ),
                session=session,
                approval=approval,
                confines=self.confines,
            )
            if refusal is not None:
                return refusal
            assert granted is not None
            grant = WITH_NETWORK if with_network else granted.value
            network = policy.network
            if with_network:
                # Named destinations keep the session's allowlist (or, from network
                # off, make one of them alone): never network on.
                network = Network.ALLOWLIST if destinations else Network.ON
            # The same call, wider: its root and temp directory stay the session's.
            alone = bool(destinations) and policy.network is not Network.ALLOWLIST
            policy = ExecutionPolicy(
                mode=granted,
                workspace_root=policy.workspace_root,
                network=network,
                temp_dir=policy.temp_dir,
                host_temp=policy.host_temp,
                extra_roots=policy.extra_roots,
                tool_cache=policy.tool_cache,
                agents=policy.agents,
            )
        spec = ShellSpec(
            command=args.command,
            policy=policy,
            workdir=workdir,
            timeout=_seconds(args.timeout_ms),
            owner=None if session is None else session.id,
            network_allow=destinations if grant is not None else (),
            network_allow_alone=alone,
            call_id=call_id,
            expected_workdir=None if approval is None else approval.asked,
        )
        if args.background:
            if record is None:
                handle = await self.executor.start(spec)
            else:
                async with record.starting(policy) as started:
                    handle = await self.executor.start(spec)
                    started.job = handle.id
            text = (
                f"started background job {handle.id} under {policy.mode.value}; read its "
                f"output with job_output(job_id={handle.id!r})."
            )
            if grant is not None:
                text += "\n" + texts.grant_text(grant, destinations)
            facts: dict[str, Any] = {
                "job_id": handle.id,
                "mode": policy.mode.value,
                "network": policy.network.value,
                "command": args.command,
            }
            if grant is not None:
                facts["granted"] = grant
                if destinations:
                    facts["granted_destinations"] = list(destinations)
            return ToolResult(call_id=call_id, name=BASH, text=text, facts=facts | gate.facts)
        recorded = Recorded()
        if record is None:
            result = await self.executor.run(spec)
        else:
            # The snapshot before and after is outside the command's own time.
            async with record.window(policy) as recorded:
                result = await self.executor.run(spec)
        return ToolResult(
            call_id=call_id,
            name=BASH,
            text=self._render(result, grant, destinations),
            facts=with_changed(
                _facts(result, args.command, grant, destinations) | gate.facts, recorded
            ),
        )

    async def _policy(self, session: ToolSession | None) -> ExecutionPolicy:
        if session is None:
            return self.executor.resolve("").policy
        return await session.execution_policy()

    def _render(self, result: ShellResult, grant: str | None, destinations: tuple[str, ...]) -> str:
        text = render_result(result)
        if grant is not None:
            text += "\n" + texts.grant_text(grant, destinations)
        elif self.confines:
            # The sanctioned retry is offered where the model decides, not only in the
            # description it may not recall.
            text += _hints(result.denied, result.connections)
        return text

    async def job_output(
        self, call_id: str, arguments: Any, session: ToolSession | None
    ) -> ToolResult:
        return await self._job(call_id, JOB_OUTPUT, arguments, session)

    async def kill_job(
        self, call_id: str, arguments: Any, session: ToolSession | None
    ) -> ToolResult:
        return await self._job(call_id, KILL_JOB, arguments, session)

    async def _job(
        self, call_id: str, name: str, arguments: Any, session: ToolSession | None
    ) -> ToolResult:
        try:
            args = msgspec.convert(arguments, JobArguments)
        except msgspec.ValidationError as error:
            return _error(call_id, name, f"invalid arguments for {name}: {error}")
        owner = None if session is None else session.id
        try:
            if name == KILL_JOB:
                report = await self.executor.kill(args.job_id, owner=owner)
            else:
                report = await self.executor.job_output(args.job_id, owner=owner)
        except StockadeError as error:
            return _error(call_id, name, str(error))
        text = render_job(report)
        if self.confines:
            text += _hints(report.denied, report.connections)
        return ToolResult(call_id=call_id, name=name, text=text, facts=_job_facts(report))


# Beyond this a timeout means nothing (about 285,000 years): no timeout at all.
LONGEST_TIMEOUT_MS = 2**53
ABSURD_TIMEOUT_MS = 10**300


def _seconds(timeout_ms: int | None) -> float | None:
    if timeout_ms is None or timeout_ms > LONGEST_TIMEOUT_MS:
        return None
    return timeout_ms / 1000


def unspawnable(name: str, text: str | None) -> str | None:
    """Why `text` cannot reach a process (a NUL byte, or not UTF-8), else None."""
    if text is None:
        return None
    if "\x00" in text:
        return f"the {name} contains a NUL byte, which no process can receive. Nothing ran."
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return f"the {name} is not valid UTF-8 text (it holds a lone surrogate). Nothing ran."
    if size >= _ARGUMENT_LIMIT:
        # Refused before the rules judge it (or a person is asked about it): no process
        # could be given it.
        return (
            f"the {name} is {size:,} bytes, more than one argument of a process may be "
            f"({_ARGUMENT_LIMIT:,}: Argument list too long); write it to a file in the "
            "workspace and run that. Nothing ran."
        )
    return None


# The largest string one argument may be: Linux's MAX_ARG_STRLEN (32 pages, its NUL
# included); elsewhere the whole argument list's bound.
_ARGUMENT_LIMIT = 131072 if sys.platform == "linux" else os.sysconf("SC_ARG_MAX")


def _workdir(workdir: str | None, root: str) -> str | None:
    if workdir is None:
        return None
    return os.path.normpath(os.path.join(root, workdir))


class _AskingClient(ApprovalClient, frozen=True):
    """The approval client as one bash call uses it: each question it sends carries
    where the command will start (`ApprovalRequest.workdir`), so every face shows the
    directory the answer binds, not the text the model wrote. `named` is the model's
    `workdir`, `spelled` that joined to the root; `judged` holds what the first
    question showed (empty: nobody was asked; a list, the struct being frozen like its
    base: one small object per call, and no system call until a question is asked)."""

    named: str | None
    spelled: str
    root: str
    judged: list[AskedWorkdir]

    @property
    def asked(self) -> AskedWorkdir | None:
        """What the call's questions showed, which its start is bound to."""
        return self.judged[0] if self.judged else None

    async def ask(self, ask: ApprovalRequest) -> Answer:
        return await super().ask(msgspec.structs.replace(ask, workdir=self._judge()))

    def _judge(self) -> AskedWorkdir:
        """The directory the call leads to, judged as the executor judges it at start
        (`judge_workdir`); CommandStartError, before anyone is asked, when it leads to
        no directory a command could start in, or (a later question of the same call)
        to another than an earlier question showed."""
        judged = judge_workdir(self.spelled)
        if self.judged:
            asked = self.judged[0]
            check_approved(judged, self.spelled, asked.real, (asked.device, asked.inode))
            return asked
        asked = AskedWorkdir(
            named=self.named,
            spelled=self.spelled,
            real=judged.real,
            device=judged.identity[0],
            inode=judged.identity[1],
            note=workdir_note(self.named, self.spelled, judged.real, self.root),
        )
        self.judged.append(asked)
        return asked


def _hints(denied: bool, connections: tuple[NetworkConnection, ...]) -> str:
    """The sanctioned retries after a refusal: a wider mode for a file denial, the
    refused destinations for a network one (those a deny entry refused excepted: no
    grant lifts a deny)."""
    text = ""
    if denied:
        text += "\n" + escalation_hint()
    refused = refused_destinations(connections)
    if refused:
        liftable = refused_destinations(
            tuple(c for c in connections if not c.allowed and c.rule is None)
        )
        text += "\n" + network_escalation_hint(liftable, denied=len(liftable) < len(refused))
    return text


def _facts(
    result: ShellResult, command: str, grant: str | None, destinations: tuple[str, ...] = ()
) -> dict[str, Any]:
    facts: dict[str, Any] = msgspec.to_builtins(result)
    del facts["stdout"], facts["stderr"]
    facts["command"] = command
    if grant is not None:
        facts["granted"] = grant
        if destinations:
            facts["granted_destinations"] = list(destinations)
    return facts


def _job_facts(report: JobReport) -> dict[str, Any]:
    facts: dict[str, Any] = msgspec.to_builtins(report)
    del facts["stdout"], facts["stderr"]
    facts["policy"] = {
        "mode": report.policy.mode.value,
        "workspace_root": report.policy.workspace_root,
        "network": report.policy.network.value,
        "extra_roots": list(report.policy.extra_roots),
        "tool_cache": report.policy.tool_cache,
    }
    return facts


_error = tool_error

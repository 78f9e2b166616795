"""Pure classification: was it the runner that failed, the kernel that refused, or neither.

Runner failure outranks denial, which outranks an ordinary result; a spawn error is
blamed on the runner only with attributable evidence (see docs/executor.md). Whether
a denial signature means the sandbox refused is `_denials`' question (imported when
a call has output to read: its patterns and classes cost every process that runs a
command, `stockade run` too, and a silent command needs none of them).
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import msgspec

from ..messages import NetworkConnection, RunnerFailureRule
from ..modes import (
    Network,
    SandboxMode,
    fresh_view_cause,
    network_allowlist_cause,
    network_off_cause,
    tool_directory_cause,
)

if TYPE_CHECKING:
    from ._denials import PathFacts

RUNNER_SPAWN_ERRNOS = frozenset({errno.ENOENT, errno.EACCES})
# bwrap's one line when it set the sandbox up but could not execute the command in it
# (it exits 1): the shell's statuses for what it means.
BWRAP_EXEC_FAILURE = "bwrap: execvp {program}: "
SHELL_EXEC_STATUS = {"No such file or directory": 127, "Permission denied": 126}


def spawn_failure_is_runner(error: OSError, runner: str, workdir_usable: bool) -> bool:
    """True when a spawn rejection proves the sandbox runner itself could not start.

    It must be ENOENT or EACCES naming the wrapped argv[0] (Python reports the exec
    target in `filename`; a bad cwd is reported under the cwd's name instead), and
    the caller's workdir must be independently usable, or the workdir is to blame.
    """
    return (
        workdir_usable
        and error.errno in RUNNER_SPAWN_ERRNOS
        and error.filename is not None
        and str(error.filename) == runner
    )


def command_exec_status(program: str | None, exit_code: int | None, stderr: str) -> int | None:
    """127 or 126 when bwrap could not execute `program` (the command it was given):
    a command result, as a shell reports it, not a runner failure. Only bwrap's exit 1
    with that one line and nothing else (nothing ran to print anything)."""
    if program is None or exit_code != 1:
        return None
    prefix = BWRAP_EXEC_FAILURE.format(program=program)
    line = stderr.strip("\n")
    if "\n" in line or not line.startswith(prefix):
        return None
    return SHELL_EXEC_STATUS.get(line.removeprefix(prefix))


def runner_failure_line(
    rules: Iterable[RunnerFailureRule], exit_code: int | None, stderr: str
) -> str | None:
    """The fatal stderr line of the first rule that matches, or None.

    A rule matches when its exit-code gate (if any) admits `exit_code` AND a stderr
    line, after dropping lines exactly equal to an informational line, starts with
    one of its fatal signatures.
    """
    lines = stderr.splitlines()
    for rule in rules:
        if rule.exit_codes is not None and exit_code not in rule.exit_codes:
            continue
        informational = set(rule.informational_lines)
        for line in lines:
            if line in informational:
                continue
            if any(line.startswith(signature) for signature in rule.fatal_signatures):
                return line
    return None


def is_denied(denial_signatures: Iterable[str], stderr: str) -> bool:
    """The signature alone: the backend's denial text is somewhere in stderr.

    What a line decides when no path can be recovered from it (and the whole rule
    when no evidence is given)."""
    return any(signature in stderr for signature in denial_signatures)


class Evidence(msgspec.Struct, frozen=True):
    """What attributes a signature line to the sandbox besides its text: the call's
    writable roots and protected paths (real paths, as the profile was built), the
    host facts about the paths the lines name, whether the command may have left its
    workdir (`moved`) and whether it sends stderr to stdout (`merged`)."""

    writable: tuple[str, ...]
    protected: tuple[str, ...]
    paths: Mapping[str, PathFacts] = msgspec.field(default_factory=dict)
    moved: bool = False
    merged: bool = False


class Verdict(msgspec.Struct, frozen=True):
    """What a settled process means: runner failure, else denial, else ordinary."""

    runner_failure: str | None
    denied: bool
    # The refusal was of a deny_read path: only danger-full-access lifts it.
    read_denied: bool = False
    # (host path, fresh runtime directory) for each "No such file or directory" the
    # call's fresh views caused (`_denials.unseen`): a denial too.
    unseen: tuple[tuple[str, str], ...] = ()

    @property
    def runner_failed(self) -> bool:
        return self.runner_failure is not None


def classify(
    rules: Iterable[RunnerFailureRule],
    denial_signatures: Iterable[str],
    exit_code: int | None,
    stderr: str,
    *,
    stdout: str = "",
    evidence: Evidence | None = None,
) -> Verdict:
    """Runner failure outranks denial; a denial is a fact beside any exit code.

    Without `evidence` a signature in stderr is a denial. With it, a signature line
    is a denial when `_denials.attribute` finds the sandbox refused it (a stdout line
    too, when the command merged stderr into it); an unrecoverable stderr line still
    is one.
    """
    line = runner_failure_line(rules, exit_code, stderr)
    if line is not None:
        return Verdict(runner_failure=line, denied=False)
    if evidence is None:
        return Verdict(runner_failure=None, denied=is_denied(denial_signatures, stderr))
    from ._denials import attribute, refusals

    denied = attribute(
        refusals(denial_signatures, stderr, stdout),
        evidence.paths,
        evidence.writable,
        evidence.protected,
        exit_code=exit_code,
        moved=evidence.moved,
        merged=evidence.merged,
    )
    return Verdict(runner_failure=None, denied=denied)


# --- what a failure that names something else was (one line for the model) ---------------

# A failed name lookup, in the wording of the resolvers and clients that print one:
# glibc (EAI_AGAIN, EAI_NONAME, EAI_NODATA), curl and git, ssh, wget, Node, urllib3
# (pip, requests), Go, Rust (cargo), apt, macOS. Group `host`: the name, when said.
# Both patterns are compiled on first use (re's cache): most calls never need them,
# and compiling them cost every `stockade run` a millisecond of its start.
_LOOKUP = (
    r"Could not resolve host(?:name)?:? (?P<host>[^\s:'\"]+)"
    r"|getaddrinfo (?:EAI_AGAIN|ENOTFOUND|EAI_NONAME|EAI_FAIL) (?P<host2>[^\s:'\"]+)"
    r"|Failed to resolve '(?P<host3>[^'\s]+)'"
    r"|lookup (?P<host4>[^\s:]+)(?: on \S+)?: (?:.*no such host|.*server misbehaving"
    r"|.*network is unreachable|.*i/o timeout)"
    r"|Temporary failure in name resolution|Name or service not known"
    r"|No address associated with hostname|nodename nor servname provided"
    r"|unable to resolve host address|Temporary failure resolving"
    r"|failed to lookup address information|NameResolutionError|\bEAI_AGAIN\b"
)
# A connection the network refused or never routed: no route (a namespace's lone
# loopback), no socket family (the Landlock launcher's plain tier), nothing
# listening (the command's own loopback, where the host's servers are not).
_CONNECT = (
    r"Network is unreachable|network is unreachable|\bENETUNREACH\b"
    r"|No route to host|\bEHOSTUNREACH\b"
    r"|Address family not supported by protocol|\bEAFNOSUPPORT\b"
    r"|Connection refused|connection refused|\bECONNREFUSED\b"
    r"|Couldn't connect to server|Failed to establish a new connection"
)


class NetworkFailures(msgspec.Struct, frozen=True):
    """What a command's error output says failed on the network: name lookups (with
    the names said, when said) and connections."""

    lookups: bool = False
    hosts: tuple[str, ...] = ()
    connections: bool = False

    @property
    def any(self) -> bool:
        return self.lookups or self.connections

    @property
    def what(self) -> str:
        if self.lookups and self.connections:
            return "a name lookup and a connection"
        return "a name lookup" if self.lookups else "a connection"


def network_failures(stderr: str) -> NetworkFailures:
    """The network failures `stderr` reports (stdout is data: never read for them)."""
    if not stderr:
        return NetworkFailures()
    lookups, hosts = False, dict[str, None]()
    for match in re.finditer(_LOOKUP, stderr):
        lookups = True
        host = match["host"] or match["host2"] or match["host3"] or match["host4"]
        if host:
            hosts[host.lower().rstrip(".")] = None
    connections = re.search(_CONNECT, stderr) is not None
    return NetworkFailures(lookups=lookups, hosts=tuple(hosts), connections=connections)


def network_cause(
    network: Network, stderr: str, connections: tuple[NetworkConnection, ...] = ()
) -> str | None:
    """The one line that says a network failure in `stderr` was the sandbox's setting,
    or None. Network `off`: every lookup and connection out fails, so any reported is
    named. `allowlist`: only when the proxy decided nothing for it (a client that
    bypassed the proxy); a destination the proxy refused has its own marker, and one
    it allowed failed on its own. `on`: never (the failure is the network's)."""
    if network is Network.ON:
        return None
    failed = network_failures(stderr)
    if not failed.any:
        return None
    if network is Network.OFF:
        return network_off_cause(failed.what)
    decided = {c.host.lower().rstrip(".") for c in connections}
    if failed.hosts:
        if all(host in decided for host in failed.hosts):
            return None
    elif connections:
        return None  # nothing says which client failed: the proxy's decisions stand
    return network_allowlist_cause(failed.what)


# Lines per kind of explanation: enough for the directories of one build's tools.
MAX_TOOL_LINES = 3


def tool_directory_causes(
    mode: SandboxMode, stderr: str, stdout: str, writable: tuple[str, ...]
) -> tuple[str, ...]:
    """For a result judged denied: one line per toolchain directory (`~/.npm`,
    `~/.cache/pip`, `~/.cargo`, ...) a refused write was under, outside `writable`."""
    from ._denials import refused_tool_directories

    found = refused_tool_directories(
        stderr, stdout, () if mode is SandboxMode.READ_ONLY else writable
    )
    return tuple(
        tool_directory_cause(
            where.directory,
            where.tool,
            where.variable,
            read_only=mode is SandboxMode.READ_ONLY,
        )
        for where in found[:MAX_TOOL_LINES]
    )


def fresh_view_causes(unseen: tuple[tuple[str, str], ...], network: Network) -> tuple[str, ...]:
    """For a result judged denied: one line per host path a fresh runtime directory
    hid from the command (`Verdict.unseen`), at most MAX_TOOL_LINES."""
    return tuple(
        fresh_view_cause(path, directory, network.value)
        for path, directory in unseen[:MAX_TOOL_LINES]
    )

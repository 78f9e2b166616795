"""Pure classification: was it the runner that failed, the kernel that refused, or neither.

Runner failure outranks denial, which outranks an ordinary result; a spawn error is
blamed on the runner only with attributable evidence (see docs/executor.md). Whether
a denial signature means the sandbox refused is `_denials`' question.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable, Mapping

import attrs

from ..messages import RunnerFailureRule
from ._denials import PathFacts, attribute, refusals

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


@attrs.frozen
class Evidence:
    """What attributes a signature line to the sandbox besides its text: the call's
    writable roots and protected paths (real paths, as the profile was built), the
    host facts about the paths the lines name, whether the command may have left its
    workdir (`moved`) and whether it sends stderr to stdout (`merged`)."""

    writable: tuple[str, ...]
    protected: tuple[str, ...]
    paths: Mapping[str, PathFacts] = attrs.field(factory=dict)
    moved: bool = False
    merged: bool = False


@attrs.frozen
class Verdict:
    """What a settled process means: runner failure, else denial, else ordinary."""

    runner_failure: str | None
    denied: bool
    # The refusal was of a deny_read path: only danger-full-access lifts it.
    read_denied: bool = False

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

"""`stockade session undo ID [--call N | --to SEQ] [--json]`: a person puts back what
a session's calls changed (issue 42).

Alone it lists the session's undoable calls; `--call N` undoes call N, `--to SEQ`
restores the workspace to before seq SEQ. It opens a harness on the composition the
other `session` verbs read (`--config`, $STOCKADE_CONFIG, else the embedded default;
`--state-dir` over its JSON-lines directory) and resumes session ID, so the undo is
logged in that session as its own event. A session another process holds open is
refused (`SESSION_LOCKED`): only its holder may write its log. The words are the
faces' own (`stockade.faces`: the same rows and lines the MCP tool and ACP commands
give).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import attrs
import msgspec
import trio

from ..config import Composition, load_composition
from ..errors import ConfigError, InvalidPolicy, SandboxUnavailable, SessionNotFound, StockadeError
from ..faces import (
    FACE_EVENTS,
    call_facts,
    calls_table,
    load_face_composition,
    outcome_facts,
    outcome_line,
    refusal_facts,
    refusal_line,
)
from ..harness import UndoRefused, open_harness
from ..sessionlog import InvalidSessionId, SessionLocked
from ..shown import json_escaped, one_line
from .errors import EXIT_UNAVAILABLE, CliError, report, say, status_of


def run_undo(
    args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """The verb; `args` needs `session_id`, and optionally `call`, `to`, `json`,
    `state_dir` and `config`. 0 when listed or done; 1 refused or not found; 2 usage."""
    out = sys.stdout if stdout is None else stdout
    as_json = bool(getattr(args, "json", False))
    try:
        composition = _composition(args)
        return trio.run(_undo, args, composition, out)
    except UndoRefused as refused:
        return _refused(refused, as_json=as_json, stdout=out, stderr=stderr)
    except CliError as error:
        return report(error, as_json=as_json, stdout=out, stderr=stderr)
    except BaseExceptionGroup as group:
        single = _single(group)
        if isinstance(single, UndoRefused):
            return _refused(single, as_json=as_json, stdout=out, stderr=stderr)
        if single is None:
            raise
        return report(_told(single), as_json=as_json, stdout=out, stderr=stderr)
    except StockadeError as error:
        return report(_told(error), as_json=as_json, stdout=out, stderr=stderr)


def _single(group: BaseExceptionGroup[Any]) -> BaseException | None:
    """The one error a nest of groups holds (the harness's nursery wraps what its
    body raised), or None when it holds several or something else."""
    errors: list[BaseException] = []

    def walk(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                walk(inner)
        else:
            errors.append(error)

    walk(group)
    if len(errors) == 1 and isinstance(errors[0], StockadeError | CliError):
        return errors[0]
    return None


def _told(error: BaseException) -> CliError:
    """A harness error as the command line's code."""
    if isinstance(error, CliError):
        return error
    if isinstance(error, SessionLocked):
        return CliError("SESSION_LOCKED", str(error))
    if isinstance(error, SessionNotFound):
        return CliError("SESSION_NOT_FOUND", str(error))
    if isinstance(error, InvalidSessionId):
        return CliError("INVALID_SESSION_ID", str(error))
    if isinstance(error, SandboxUnavailable):
        return CliError(error.code, error.detail, EXIT_UNAVAILABLE)
    if isinstance(error, InvalidPolicy):
        return CliError("USAGE", str(error))
    if isinstance(error, ConfigError):
        return CliError("CONFIG", str(error))
    return CliError("ENVIRONMENT", str(error))


def _composition(args: argparse.Namespace) -> Composition:
    """The composition the `session` verbs read, its JSON-lines directory replaced by
    `--state-dir` when given (as `session list` reads it)."""
    try:
        composition = load_face_composition(getattr(args, "config", None))
        if composition is None:
            composition = load_composition(None)
    except ConfigError as error:
        raise CliError("CONFIG", str(error)) from None
    state_dir = getattr(args, "state_dir", None)
    entry = composition.session_log
    if not state_dir or entry is None or getattr(entry.config, "store", "jsonl") != "jsonl":
        return composition
    config = attrs.evolve(entry.config, state_dir=os.path.abspath(state_dir))
    changed = attrs.evolve(entry, config=config)
    return attrs.evolve(
        composition,
        entries=tuple(changed if other is entry else other for other in composition.entries),
    )


async def _undo(args: argparse.Namespace, composition: Composition, out: TextIO) -> int:
    as_json = bool(getattr(args, "json", False))
    session_id = args.session_id
    # Nobody is asked anything here: the person asked by running the verb. The log may
    # be any face's (an ACP session's conversation): decoded with every face's events.
    async with open_harness(composition, answerers=(), extra_events=FACE_EVENTS) as harness:
        session = await harness.resume_session(session_id)
        try:
            if args.call is not None:
                outcome = await session.undo(args.call)
            elif args.to is not None:
                outcome = await session.restore(args.to)
            else:
                calls = await session.undoable_calls()
                _listed(session_id, calls, as_json=as_json, out=out)
                return 0
        finally:
            with trio.CancelScope(shield=True):
                await session.close()
    if as_json:
        reply = {"session": session_id, "outcome": outcome_facts(outcome)}
        say(out, json_escaped(msgspec.json.encode(reply).decode()) + "\n")
    else:
        say(out, outcome_line(outcome) + "\n")
    return 0


def _listed(session_id: str, calls: Sequence[Any], *, as_json: bool, out: TextIO) -> None:
    if as_json:
        reply = {"session": session_id, "calls": [call_facts(call) for call in calls]}
        say(out, json_escaped(msgspec.json.encode(reply).decode()) + "\n")
    elif not calls:
        say(out, f"session {one_line(session_id)} has no call that changed a file\n")
    else:
        say(out, calls_table(calls))


def _refused(refused: UndoRefused, *, as_json: bool, stdout: TextIO, stderr: TextIO | None) -> int:
    """`UNDO_REFUSED`: one line naming the conflicting calls; with --json the error
    object carries the conflicts and the calls as lists too."""
    status = status_of("UNDO_REFUSED")
    if as_json:
        reply = {
            "error": {"code": "UNDO_REFUSED", "detail": str(refused), **refusal_facts(refused)}
        }
        say(stdout, json_escaped(msgspec.json.encode(reply).decode()) + "\n")
    else:
        say(sys.stderr if stderr is None else stderr, f"stockade: {refusal_line(refused)}\n")
    return status

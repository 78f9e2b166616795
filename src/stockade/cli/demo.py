"""`stockade demo`: a scripted agent session on the real sandbox, printed as a transcript.

No network, no key, no prompts (unless --interactive): denial, escalation, grant,
rejection, a background job, a mode switch, and the session log replayed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

from ..approval import ScriptedAnswerer, TerminalAnswerer
from ..harness import AgentSession, harness_registry, open_harness
from ..shown import one_line, visible
from .session_show import run_show
from .sessions import session_store


class Transcript:
    """Plain text, with colour only when stdout is a terminal."""

    def __init__(self, out: Any = sys.stdout) -> None:
        self.out = out
        self.colour = out.isatty() and os.environ.get("NO_COLOR") is None

    def _paint(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def step(self, title: str) -> None:
        self.out.write("\n" + self._paint("1;36", f"== {title}") + "\n")

    # What the agent sent and what came back is shown through stockade.shown: a
    # person answering an escalation (--interactive) reads these lines first.

    def agent(self, tool: str, arguments: dict[str, Any]) -> None:
        shown = ", ".join(f"{key}={_argument(value)}" for key, value in arguments.items())
        self.out.write(self._paint("33", f"agent  -> {tool}({shown})") + "\n")

    def tool(self, text: str) -> None:
        for line in visible(text.removesuffix("\n")).lines if text else ():
            painted = self._paint("31", line) if line.startswith("[sandbox:") else line
            self.out.write(f"   <- {painted}\n")

    def note(self, text: str) -> None:
        self.out.write(self._paint("2", text) + "\n")


def _argument(value: Any) -> str:
    return f"'{one_line(value)}'" if isinstance(value, str) else one_line(repr(value))


async def _call(show: Transcript, session: AgentSession, tool: str, **arguments: Any) -> Any:
    show.agent(tool, arguments)
    result = await session.run_tool(tool, arguments)
    show.tool(result.text)
    return result


async def _demo(
    show: Transcript, project: Path, interactive: bool, config: str | None = None
) -> tuple[str, str]:
    answerers = (
        [TerminalAnswerer()]
        if interactive
        else [ScriptedAnswerer(["allowed-once", "rejected"], name="scripted-user")]
    )
    async with open_harness(config, answerers=answerers, cwd=project) as harness:
        session = await harness.open_session(cwd=project)
        await session.set_sandbox_mode("read-only")

        show.step("A session in read-only mode: the policy message the model is given")
        context = await session.pre_step()
        show.tool(context.text if context else "(unchanged)")

        show.step("The agent runs a command that writes: the kernel refuses it")
        denied = await _call(show, session, "bash", command="echo 'hello' > notes.txt")
        show.note(
            f"enforced by {denied.facts['backend']} ({denied.facts['enforcement']} enforcement); "
            f"notes.txt exists: {(project / 'notes.txt').exists()}"
        )

        show.step("The agent asks once to retry that command under workspace-write")
        if not interactive:
            show.note("(the scripted user answers: allow once)")
        granted = await _call(
            show,
            session,
            "bash",
            command="echo 'hello' > notes.txt",
            sandbox_permissions="workspace-write",
            justification="save the notes the user asked for",
        )
        show.note(
            f"ran under {granted.facts.get('mode')}; notes.txt exists: "
            f"{(project / 'notes.txt').exists()}"
        )

        show.step("A neighbouring call: the grant did not persist")
        await _call(show, session, "bash", command="echo 'more' >> notes.txt")

        if interactive:
            show.step("A wider request, asked of you: danger-full-access for one command")
        else:
            show.step("A wider request the user rejects")
            show.note("(the scripted user answers: reject)")
        await _call(
            show,
            session,
            "bash",
            command="rm -f notes.txt",
            sandbox_permissions="danger-full-access",
            justification="clean up",
        )

        show.step("A background job, read with job_output")
        started = await _call(
            show, session, "bash", command="for i in 1 2 3; do echo tick $i; done", background=True
        )
        await session.shell.wait(started.facts["job_id"], read=False)
        await _call(show, session, "job_output", job_id=started.facts["job_id"])

        show.step("The user switches the session to workspace-write: one new policy message")
        await session.set_sandbox_mode("workspace-write")
        await session.set_approval_policy("never")
        await session.set_approval_policy("ask")
        fresh = await session.pre_step()
        show.tool(fresh.text.splitlines()[1] if fresh else "(unchanged)")
        again = await session.pre_step()
        show.note(f"a second pre_step with nothing changed: {again!r}")
        await _call(show, session, "bash", command="echo 'now allowed' >> notes.txt")
        location = session.session.location
        await session.close()
    return location, session.id


def run_demo(*, interactive: bool = False, config: str | None = None) -> int:
    """The scripted session; `config` names a composition to run it on (its log store,
    e.g. PostgreSQL, among the rest), else the embedded default."""
    from .run import RunError, _interruptible

    show = Transcript()
    with tempfile.TemporaryDirectory(prefix="stockade-demo-", dir=_project_parent()) as project:
        show.note(f"project: {project} (temporary)")
        try:
            # Ctrl-C (at the --interactive prompt too), SIGTERM or SIGHUP: the session
            # closes, its processes are killed, and the demo ends quietly with 128+N,
            # as `stockade run --ask` does.
            location, session_id = trio.run(
                _interruptible, _demo, show, Path(project), interactive, config
            )
        except RunError as error:
            sys.stdout.flush()
            return error.status
    show.step("The session log, replayed (stockade session show)")
    registry = harness_registry()
    args = argparse.Namespace(path_or_id=location, json=False, state_dir=None, config=config)
    store = session_store(args, registry) if config else None
    replay = f"stockade session show {location}"
    if store is not None and not os.path.isfile(location):
        # A log no file holds (a database's): shown by its id, from the composition's store.
        args.path_or_id = session_id
        replay = f"stockade session show {session_id} --config {config}"
    try:
        status = run_show(args, registry=registry, store=store)
    finally:
        if store is not None:
            store.close()
    show.note(f"\nsession log: {location}\nreplay it: {replay}")
    return status


def _project_parent() -> str:
    # Outside /tmp: /tmp is a temp root that workspace-write may write anyway, which
    # would blur what the demo shows.
    for candidate in ("/var/tmp", os.path.expanduser("~")):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK):
            return candidate
    return tempfile.gettempdir()

"""Every text a command or the model controls that stockade prints to a person is
escaped by one function, `stockade.shown` (issue 35, hole 8).

Each surface is fed the same hostile strings: the line eraser that made stockade's
own refusal line read "stockade: all clear", a window-title OSC, cursor moves, a
carriage return, backspaces, a bidi override, a line separator, zero-width
characters, a NUL, a one-byte C1 CSI, a conceal attribute, a DCS string. What is
judged is what a person would see: the text is fed to a terminal emulator (pyte),
whose rows must be exactly the text's lines, character for character (nothing in it
acted on the terminal), and no raw control or invisible character may be in it at
all; and the hostile value must be there, escaped (shown, not dropped).

The same decision on the real kernel, end to end: test_refused_name_escaped.py.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import types
import unicodedata
from pathlib import Path

import msgspec
import pyte
import pytest

from stockade import entry
from stockade.acp import permission
from stockade.approval._chain import ApprovalRequest
from stockade.approval.render import render_prompt, terminal_prompt
from stockade.cli import errors as cli_errors
from stockade.cli import fastpath
from stockade.cli import run as cli_run
from stockade.cli.demo import Transcript
from stockade.cli.probe import run_probe
from stockade.cli.session_show import run_show
from stockade.cli.sessions import run_list
from stockade.harness import harness_registry
from stockade.harness.session import Session
from stockade.mcp import _ask
from stockade.messages import NetworkConnection, ShellResult
from stockade.network import serve
from stockade.network.rules import Decision
from stockade.policy import PolicyDefaults
from stockade.sessionlog import JsonlStore, open_session_log
from stockade.shown import (
    TERMINAL_STATE_RESET,
    Visible,
    escaped_lines,
    json_escaped,
    one_line,
    visible,
)
from stockade.tools.events import NetworkConnected, ToolCalled, ToolResulted
from stockade.vocab import ApprovalPolicy, SandboxMode

# The line that, printed raw in stockade's marker, erased it and wrote its own.
ALL_CLEAR = "\x1b[2K\rstockade: all clear"
HOSTILE = [
    ALL_CLEAR,
    "\x1b]0;stockade: all clear\x07title",  # OSC: the window's title
    "up\x1b[1A\x1b[2K\x1b[1;1Hhome",  # CSI: cursor up, erase, cursor home
    "real\rfake",
    "real\x08\x08\x08\x08fake",
    "\u202eraelc lla :edakcots",  # right-to-left override: reads "stockade: all clear"
    "one\u2028two\u2029three",  # line and paragraph separators
    "zero\u200bwidth\u200d\u2060\ufeffjoin",
    "nul\x00byte",
    "\x9b2K\x9b1Gone-byte csi",  # C1 CSI: an escape sequence without ESC
    "\x1b[8mconcealed\x1b[0m",
    "\x1bPq#0;2;0;0;0\x1b\\dcs",
    "tab\there\x0bvt\x0cff\x7fdel\x85nel",
]
IDS = [f"hostile{n}" for n in range(len(HOSTILE))]


def as_name(hostile: str) -> str:
    """`hostile` as a file name can hold it (no NUL, no slash)."""
    return hostile.replace("\x00", "").replace("/", "")


# The characters a terminal acts on or draws as nothing, judged here apart from the
# code under test (unicodedata's categories, as the terminal's own tables are).
HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def raw_controls(text: str) -> list[str]:
    """The characters of `text` a terminal would act on or hide (a newline is the one
    a report may hold)."""
    return [
        char
        for char in text
        if char != "\n"
        and (
            unicodedata.category(char) in HIDDEN
            or (unicodedata.category(char) == "Zs" and char != " ")
        )
    ]


def screen_rows(text: str) -> list[str]:
    """What a terminal shows after `text` is written to it (pyte), row by row, up to
    the last row written; one wide enough that no row of the text wraps."""
    lines = text.split("\n")
    screen = pyte.Screen(max(map(len, lines)) + 8, len(lines) + 8)
    pyte.Stream(screen).feed(text.replace("\n", "\r\n"))
    rows = [row.rstrip() for row in screen.display]
    while rows and not rows[-1]:
        rows.pop()
    return rows


def assert_shown_as_written(text: str) -> None:
    """Nothing in `text` acts on a terminal: no raw control or invisible character, and
    the screen shows exactly its lines."""
    assert raw_controls(text) == [], repr(text)
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    rows = screen_rows(text)
    assert rows == lines, repr(text)
    assert not any(row.startswith("stockade: all clear") for row in rows)


def test_the_control_printed_raw_the_line_says_all_clear():
    """Without the escaping, the refusal line a person reads is the command's."""
    marker = f"stockade: the proxy refused network access to {ALL_CLEAR}:80\n"
    assert screen_rows(marker) == ["stockade: all clear:80"]
    assert screen_rows("a\n" + escaped_lines(marker)) == [
        "a",
        "stockade: the proxy refused network access to \\x1b[2K\\rstockade: all clear:80",
    ]


# --- the one function ------------------------------------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_the_escaping_shows_every_character_and_is_stable(hostile):
    shown = one_line(hostile)
    assert_shown_as_written(shown)
    assert one_line(shown) == shown  # escaping what is escaped changes nothing
    assert visible(hostile).escaped > 0
    assert escaped_lines(hostile) == "\n".join(visible(hostile).lines)


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_json_escaped_is_the_same_value_harmless(hostile):
    encoded = msgspec.json.encode({"host": hostile, "list": [hostile, "\U0001d54aplain"]})
    text = json_escaped(encoded.decode())
    assert raw_controls(text) == []
    assert json.loads(text) == {"host": hostile, "list": [hostile, "\U0001d54aplain"]}


def test_an_astral_invisible_character_is_a_json_surrogate_pair():
    tag = "\U000e0041"  # a tag character: format, drawn as nothing
    assert json_escaped(msgspec.json.encode(tag).decode()) == '"\\udb40\\udc41"'
    assert json.loads(json_escaped(msgspec.json.encode(tag).decode())) == tag


def test_the_approval_renderer_is_the_same_function():
    from stockade.approval import render

    assert render.visible is visible and render.one_line is one_line
    assert render.Visible is Visible


# --- stockade run: the report after the output, the retry's reason, --json, errors -----


def _result(hostile: str, **changes) -> ShellResult:
    connection = NetworkConnection(
        host=hostile,
        port=80,
        address=None,
        allowed=False,
        rule=None,
        reason=f"the name {hostile} is not a valid host name",
        protocol="socks5",
    )
    facts = {
        "exit_code": 0,
        "stdout": hostile,
        "stderr": hostile,
        "denied": False,
        "runner_failed": False,
        "timed_out": False,
        "cancelled": False,
        "mode": SandboxMode.WORKSPACE_WRITE,
        "backend": "bwrap",
        "enforcement": None,
        "duration": 0.1,
        "connections": (connection,),
        "note": f"[sandbox: a note quoting {hostile}]",
    }
    facts.update(changes)
    return ShellResult(**facts)


def _invocation(*, json_out: bool = False) -> cli_run._Invocation:
    args = argparse.Namespace(ask=False, json=json_out)
    settings = types.SimpleNamespace(
        executor=types.SimpleNamespace(default_timeout=None, output_cap=1024)
    )
    return cli_run._Invocation(args, "true", None, settings)  # type: ignore[arg-type]


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_run_report_marker_and_notes(hostile, terminal, capsys, monkeypatch):
    monkeypatch.setattr(os, "isatty", lambda fd: terminal)
    result = _result(hostile)
    _invocation().report(result)
    err = capsys.readouterr().err
    if terminal:
        # On a terminal, the reset of what the command's output may have set comes
        # first, on purpose; the rest is shown as written.
        assert err.startswith(TERMINAL_STATE_RESET)
        err = err.removeprefix(TERMINAL_STATE_RESET)
        expected = f"stockade: the proxy refused network access to {one_line(result.connections[0].destination)}"
    else:
        expected = (
            f"[sandbox: network access to {one_line(result.connections[0].destination)} denied]"
        )
    assert_shown_as_written(err)
    assert expected in err.splitlines()


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_run_report_of_a_command_that_never_started(hostile, capsys, monkeypatch):
    monkeypatch.setattr(os, "isatty", lambda fd: False)
    _invocation().report(_result(hostile, exit_code=None, stderr=f"[{hostile}]", connections=()))
    err = capsys.readouterr().err
    assert_shown_as_written(err)
    assert f"stockade: {one_line(hostile)}" in err.splitlines()


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_run_json_is_the_exact_value_harmless(hostile, capsys):
    _invocation(json_out=True).json(_result(hostile))
    out = capsys.readouterr().out
    assert raw_controls(out) == []
    facts = json.loads(out)
    assert facts["stdout"] == hostile and facts["connections"][0]["host"] == hostile


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_run_errors_and_the_retrys_reason(hostile, capsys):
    for json_out in (False, True):
        args = argparse.Namespace(json=json_out)
        cli_run._report_error(args, cli_run.RunError("ENVIRONMENT", f"{hostile}: gone", 1))
    out, err = capsys.readouterr()
    assert_shown_as_written(err)
    assert err == f"stockade: {escaped_lines(hostile)}: gone\n"
    assert raw_controls(out) == [] and json.loads(out)["error"]["detail"] == f"{hostile}: gone"


# --- stockade exec: its proxy process's marker, its own refusals ------------------------


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_exec_proxy_marker(hostile, capsys):
    serve._refused(
        Decision(
            call_id="exec",
            host=hostile,
            port=443,
            address=None,
            allowed=False,
            rule=None,
            reason="invalid",
            protocol="socks5",
        )
    )
    err = capsys.readouterr().err
    assert_shown_as_written(err)
    destination = NetworkConnection(
        host=hostile, port=443, address=None, allowed=False, rule=None, reason="", protocol=""
    ).destination
    assert err == f"[sandbox: network access to {one_line(destination)} denied]\n"


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_a_message_given_to_exit(hostile, capsys, monkeypatch):
    def leave(_argv):
        raise SystemExit(f"stockade: cannot use {hostile}")

    monkeypatch.setattr(entry, "_main", leave)
    assert entry.main([]) == 1
    err = capsys.readouterr().err
    assert_shown_as_written(err)
    assert err == f"stockade: cannot use {escaped_lines(hostile)}\n"


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_exec_and_the_verbs_refusals(hostile, capsys):
    with pytest.raises(SystemExit):
        fastpath._fail(f"the directory {hostile} lies beneath a cover")
    cli_errors.emit_error("ENVIRONMENT", f"cannot read {hostile}", as_json=False)
    cli_errors.emit_error("ENVIRONMENT", f"cannot read {hostile}", as_json=True)
    out, err = capsys.readouterr()
    assert_shown_as_written(err)
    assert f"stockade: the directory {escaped_lines(hostile)} lies beneath a cover" in err
    assert f"stockade: cannot read {escaped_lines(hostile)}" in err
    assert raw_controls(out) == [] and json.loads(out)["error"]["detail"].endswith(hostile)


# --- stockade session show and list ----------------------------------------------------


async def _log_with(state_dir: Path, hostile: str) -> None:
    """A session log whose every field the model or a command chooses holds `hostile`."""
    store = JsonlStore(state_dir, registry=harness_registry())
    async with open_session_log(store) as log:
        session = await Session.open(
            log, session_id="hostile", cwd=f"/work/{as_name(hostile)}", defaults=PolicyDefaults()
        )
        await session.append(
            ToolCalled(
                call_id=f"call-{hostile}",
                name="bash",
                arguments={"command": f"echo {hostile}", "workdir": hostile, hostile: [hostile]},
            ),
            NetworkConnected(
                call_id="c1",
                host=hostile,
                port=80,
                allowed=False,
                reason=f"the name {hostile!r} is not valid",
                protocol="socks5",
            ),
            ToolResulted(
                call_id="c1",
                name="bash",
                text=f"{hostile}\n[exit code: 0]",
                facts={"job_id": hostile, "connections": [{"host": hostile, "port": 80}]},
            ),
            ToolResulted(call_id=hostile, name="bash", text=hostile),
        )
        await session.close()


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
async def test_session_show(hostile, tmp_path):
    await _log_with(tmp_path, hostile)
    registry = harness_registry()
    out, err = io.StringIO(), io.StringIO()
    args = argparse.Namespace(path_or_id="hostile", state_dir=str(tmp_path), json=False)
    assert run_show(args, stdout=out, stderr=err, registry=registry) == 0, err.getvalue()
    text = out.getvalue()
    assert_shown_as_written(text)
    assert f"host={one_line(hostile)}" in text or f"host='{one_line(hostile)}'" in text
    assert f"workspace root   {one_line('/work/' + as_name(hostile))}" in text
    assert "control or invisible characters of this log shown as escapes" in text
    # --json: the same values, exactly, and harmless on a terminal.
    out = io.StringIO()
    args.json = True
    assert run_show(args, stdout=out, registry=registry) == 0
    assert raw_controls(out.getvalue()) == []
    events = json.loads(out.getvalue())["events"]
    assert [e["host"] for e in events if e["type"] == "network/connect"] == [hostile]


async def test_session_show_without_escapes_says_nothing_of_them(tmp_path):
    await _log_with(tmp_path, "plain\\x1b-is-a-literal-backslash")
    out = io.StringIO()
    args = argparse.Namespace(path_or_id="hostile", state_dir=str(tmp_path), json=False)
    assert run_show(args, stdout=out, registry=harness_registry()) == 0
    assert "shown as escapes" not in out.getvalue()
    assert "host=plain\\x1b-is-a-literal-backslash" in out.getvalue()


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
async def test_session_list(hostile, tmp_path):
    await _log_with(tmp_path, hostile)
    for json_out in (False, True):
        out = io.StringIO()
        args = argparse.Namespace(state_dir=str(tmp_path), json=json_out)
        assert run_list(args, stdout=out, registry=harness_registry()) == 0
        if json_out:
            assert raw_controls(out.getvalue()) == []
            cwd = json.loads(out.getvalue())["sessions"][0]["cwd"]
            assert cwd == f"/work/{as_name(hostile)}"
        else:
            assert_shown_as_written(out.getvalue())
            assert one_line(f"/work/{as_name(hostile)}") in out.getvalue()


# --- stockade probe: paths it finds on disk ---------------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_probe_names_a_hidden_env_file_escaped(hostile, scratch, capsys, monkeypatch):
    """A command in the root may make a `.env` under any name; probe lists it hidden."""
    directory = Path(scratch) / as_name(hostile)
    directory.mkdir()
    (directory / ".env").write_text("SECRET=1\n")
    monkeypatch.chdir(scratch)
    run_probe(argparse.Namespace(config=None, backend="auto", json=False))
    out = capsys.readouterr().out
    assert_shown_as_written(out)
    assert f"    {one_line(str(directory / '.env'))}" in out.splitlines()
    run_probe(argparse.Namespace(config=None, backend="auto", json=True))
    out = capsys.readouterr().out
    assert raw_controls(out) == []
    assert str(directory / ".env") in json.loads(out)["deny_read"]["hidden_here"]


# --- the approval prompts: --ask's terminal, MCP's elicitation, ACP's card --------------


def _request(hostile: str, *, destinations: tuple[str, ...] = ()) -> ApprovalRequest:
    return ApprovalRequest(
        session_id="s1",
        command=f"echo {hostile}",
        justification=hostile,
        current_mode=SandboxMode.READ_ONLY,
        requested_mode=SandboxMode.WORKSPACE_WRITE,
        policy=ApprovalPolicy.ASK,
        reason=hostile,
        with_network=bool(destinations),
        network_destinations=destinations,
    )


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_the_ask_prompt_on_a_terminal(hostile):
    prompt = terminal_prompt(_request(hostile))
    reset = terminal_prompt(_request("x")).removesuffix(render_prompt(_request("x"))[1:])
    body = prompt.removeprefix(reset)
    assert_shown_as_written(body)
    assert f"  command:   echo {one_line(hostile)}" in body.splitlines()
    assert "control or invisible" in body


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_the_mcp_elicitation(hostile):
    for request in (_request(hostile), _request(hostile, destinations=(f"{hostile}:443",))):
        message = _ask.ask_message(
            request, _ask.Shown(cwd=f"/work/{hostile}", extra=(("content", hostile),))
        )
        assert_shown_as_written(message)
        assert f"  cwd:       /work/{one_line(hostile)}" in message.splitlines()


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_the_acp_permission_card(hostile):
    for request in (_request(hostile), _request(hostile, destinations=(f"{hostile}:443",))):
        params = permission.permission_params(
            request,
            session_id="s",
            tool_call_id="t",
            cwd=f"/work/{hostile}",
            allow_always=True,
        )
        call = params["toolCall"]
        card = call["content"][0]["content"]["text"]
        for text in (card, call["title"], *(option["name"] for option in params["options"])):
            assert_shown_as_written(text)
        assert f"  cwd:       /work/{one_line(hostile)}" in card.splitlines()
        assert "the cwd holds" in card
        # For a client that renders its own view: the exact text, as the rawInput.
        assert call["rawInput"]["command"] == f"echo {hostile}"


# --- stockade demo: the transcript a person reads -----------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE, ids=IDS)
def test_the_demo_transcript(hostile):
    out = io.StringIO()
    show = Transcript(out)
    show.agent("bash", {"command": hostile, "background": False})
    show.tool(f"{hostile}\n[sandbox: network access to {hostile}:80 denied]")
    assert_shown_as_written(out.getvalue())
    assert one_line(hostile) in out.getvalue()

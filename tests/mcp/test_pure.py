"""The MCP face's pure parts: the question, the answer mapping, the tool mapping, the
retry binding; and the hint when the SDK is missing."""

from __future__ import annotations

import argparse

import pytest
from mcp_types import ClientCapabilities, ElicitationCapability, FormElicitationCapability, Tool
from mcp_types import UrlElicitationCapability as UrlCapability

from stockade.approval._chain import ApprovalRequest, Decision
from stockade.mcp import _ask, _tools
from stockade.mcp._http import is_loopback, parse_http
from stockade.messages import AskedWorkdir
from stockade.tools.result import ToolResult
from stockade.vocab import ApprovalPolicy, SandboxMode


def request(command: str, **extra) -> ApprovalRequest:
    fields = {
        "session_id": "s",
        "command": command,
        "justification": "needed",
        "current_mode": SandboxMode.READ_ONLY,
        "requested_mode": SandboxMode.WORKSPACE_WRITE,
        "policy": ApprovalPolicy.ASK,
        "reason": "denied",
        **extra,
    }
    return ApprovalRequest(**fields)


def test_the_question_shows_the_judged_workdir_and_why_it_is_not_where_it_reads():
    # The bash tool's request says where the command will start: that is the cwd,
    # never the joined text `shown_for` made of the arguments; the warning says why.
    note = 'the workdir "b\x1b" leads through a symlink to /o/v, outside the workspace root /w'
    where = AskedWorkdir(
        named="b\x1b", spelled="/w/b\x1b", real="/o/v", device=1, inode=2, note=note
    )
    shown = _ask.shown_for("bash", {"workdir": "b\x1b"}, "/w")
    for asked in (request("rm -rf ./*", workdir=where), request("x", workdir=where, rule="r")):
        message = _ask.ask_message(asked, shown)
        assert '  cwd:       /o/v\n  warning:   the workdir "b\\x1b" leads through' in message
        assert "/w/b" not in message.replace("root /w", "") and "\x1b" not in message
        assert "warning:   the workdir holds 1 control or invisible character" in message
    plain = AskedWorkdir(named="sub", spelled="/w/sub", real="/w/sub", device=1, inode=2)
    message = _ask.ask_message(request("x", workdir=plain), _ask.Shown(cwd="/w/elsewhere"))
    assert "  cwd:       /w/sub\n" in message and "warning" not in message


def test_the_question_shows_every_character_and_never_cuts_the_command():
    command = "echo safe\r\x1b[2Krm -rf ~\u202e" + "x" * 5000
    message = _ask.ask_message(request(command), _ask.Shown(cwd="/w/\x1bdir"))
    assert "\x1b" not in message and "\r" not in message and "\u202e" not in message
    assert "echo safe\\r\\x1b[2Krm -rf ~\\u202e" in message
    assert "x" * 5000 in message
    assert "cwd:       /w/\\x1bdir" in message
    assert "read-only -> workspace-write" in message
    assert "warning:   the command holds 3 control or invisible characters" in message
    assert "warning:   the cwd holds 1 control or invisible character," in message


def test_a_command_of_several_lines_is_shown_one_numbered_row_per_line():
    message = _ask.ask_message(request("true\nrm -rf ~"), _ask.Shown(cwd="/w"))
    assert "    1 | true" in message and "    2 | rm -rf ~" in message


def test_network_and_full_access_requests_say_so():
    network = request("curl x", requested_mode=SandboxMode.READ_ONLY, with_network=True)
    assert "network access" in _ask.ask_message(network, _ask.Shown(cwd="/w"))
    full = request("x", requested_mode=SandboxMode.DANGER_FULL_ACCESS)
    assert "danger-full-access allows everything" in _ask.ask_message(full, _ask.Shown(cwd="/w"))


def test_shown_for_joins_the_workdir_and_carries_file_contents():
    assert _ask.shown_for("bash", {"workdir": "sub/../src"}, "/w").cwd == "/w/src"
    assert _ask.shown_for("bash", {}, "/w").cwd == "/w"
    shown = _ask.shown_for("write_file", {"path": "a", "content": "hi"}, "/w")
    assert shown.extra == (("content", "hi"),)
    long = _ask.ask_message(request("write_file a"), _ask.Shown("/w", (("content", "y" * 3000),)))
    assert "(1000 more characters not shown)" in long


def test_the_form_is_a_flat_spec_valid_schema_that_defaults_to_reject():
    from mcp.server.elicitation import _PRIMITIVE_SCHEMA_ADAPTER

    schema = _ask.ask_schema()
    assert schema["required"] == ["decision"]
    for prop in schema["properties"].values():
        _PRIMITIVE_SCHEMA_ADAPTER.validate_python(prop)
    assert schema["properties"]["decision"]["default"] == "reject"


@pytest.mark.parametrize(
    ("action", "content", "decision"),
    [
        ("accept", {"decision": "approve once"}, Decision.ALLOWED_ONCE),
        ("accept", {"decision": "reject"}, Decision.REJECTED),
        ("accept", {"decision": "APPROVE ONCE"}, Decision.CANCELLED),
        ("accept", {}, Decision.CANCELLED),
        ("accept", None, Decision.CANCELLED),
        ("decline", None, Decision.REJECTED),
        ("cancel", None, Decision.CANCELLED),
        ("something else", {"decision": "approve once"}, Decision.CANCELLED),
    ],
)
def test_only_an_explicit_approval_grants(action, content, decision):
    answer = _ask.decide(action, content)
    assert answer.decision is decision and answer.answerer == "mcp-elicitation"


def test_form_elicitation_capability():
    def caps(**elicitation) -> ClientCapabilities:
        return ClientCapabilities(elicitation=ElicitationCapability(**elicitation))

    assert _ask.can_elicit_form(caps(form=FormElicitationCapability()))
    assert _ask.can_elicit_form(caps())  # `elicitation: {}` before 2025-11-25 means form
    assert not _ask.can_elicit_form(caps(url=UrlCapability()))
    assert not _ask.can_elicit_form(ClientCapabilities())
    assert not _ask.can_elicit_form(None)


def test_tools_are_the_harness_schemas_with_hints():
    schemas = [
        {"name": "bash", "description": "d", "parameters": {"type": "object"}},
        {"name": "future_tool", "description": "f", "parameters": {"type": "object"}},
    ]
    tools = [Tool.model_validate(t, by_name=False) for t in _tools.mcp_tools(schemas)]
    assert tools[0].input_schema == {"type": "object"}
    assert tools[0].annotations.destructive_hint is True
    assert tools[1].annotations is None


def test_a_result_keeps_the_models_text_and_its_facts():
    result = ToolResult(call_id="c", name="bash", text="hi\n", is_error=True, facts={"a": 1})
    wire = _tools.call_result(result)
    assert wire["content"] == [{"type": "text", "text": "hi\n"}]
    assert wire["structuredContent"] == {"call_id": "c", "tool": "bash", "a": 1}
    assert wire["isError"] is True


def test_fingerprint_binds_tool_and_arguments_not_key_order():
    one = _tools.fingerprint("bash", {"command": "a", "workdir": "x"})
    assert one == _tools.fingerprint("bash", {"workdir": "x", "command": "a"})
    assert one != _tools.fingerprint("bash", {"command": "b", "workdir": "x"})
    assert one != _tools.fingerprint("write_file", {"command": "a", "workdir": "x"})


def test_parse_http():
    assert parse_http("8765") == ("127.0.0.1", 8765)
    assert parse_http("localhost:0") == ("localhost", 0)
    assert parse_http("[::1]:9") == ("::1", 9)
    for bad in ("", "host", "host:", "host:99999", "[::1]"):
        with pytest.raises(ValueError):
            parse_http(bad)
    assert is_loopback("127.0.0.2") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.com")


def test_a_missing_sdk_gets_a_one_line_hint(monkeypatch, capsys):
    from stockade.mcp import command

    monkeypatch.setattr(command.importlib.util, "find_spec", lambda name: None)
    args = argparse.Namespace(http=None)
    assert command.run_mcp(args) == 2
    from stockade.install_hint import install_line

    assert capsys.readouterr().err.strip() == (
        "stockade: stockade mcp needs the MCP SDK: install the mcp extra: "
        f"{install_line('mcp')} (cannot import mcp)"
    )


async def test_a_retry_is_bound_to_the_call_that_asked(root, state_dir, monkeypatch):
    """Link level: an answer goes only to the parked call whose tool and arguments
    the retry repeats exactly; its token is used once."""
    import trio

    from stockade import open_harness
    from stockade.mcp._link import McpAnswerer, Unbound, open_link

    monkeypatch.setenv("STOCKADE_STATE_DIR", str(state_dir))
    answerer = McpAnswerer(timeout=30)
    async with open_harness(None, answerers=[answerer], cwd=str(root)) as harness:
        session = await harness.open_session(cwd=str(root))
        await session.set_sandbox_mode("read-only")
        async with open_link(session, answerer.calls) as link:
            arguments = {
                "command": "echo ok > out.txt",
                "sandbox_permissions": "workspace-write",
                "justification": "j",
            }
            call = link.start("bash", arguments)
            with trio.fail_after(30):
                ask = await call.next()
            assert not isinstance(ask, ToolResult | str)
            token = link.park(call, ask)
            with pytest.raises(Unbound):
                link.resume(token, "bash", {**arguments, "command": "echo evil > out.txt"})
            with pytest.raises(Unbound):
                link.resume(token, "write_file", arguments)
            resumed, same = link.resume(token, "bash", dict(reversed(arguments.items())))
            assert resumed is call and same is ask
            with pytest.raises(Unbound):
                link.resume(token, "bash", arguments)
            same.resolve(_ask.decide("accept", {"decision": "approve once"}))
            with trio.fail_after(30):
                result = await call.next()
    assert isinstance(result, ToolResult) and result.facts["granted"] == "workspace-write"
    assert (root / "out.txt").read_text() == "ok\n"

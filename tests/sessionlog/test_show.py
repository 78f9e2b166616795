"""`stockade session show`: rendering a real log written through a session."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import msgspec
import pytest

from stockade.cli.parser import build_parser
from stockade.cli.session_show import run_show
from stockade.harness.session import Session
from stockade.sessionlog import JsonlStore, open_session_log

from ._helpers import DEFAULTS


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["session", "show", *argv])


def show(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_show(parse(*argv), stdout=out, stderr=err, defaults=DEFAULTS)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
async def state_dir(tmp_path: Path) -> Path:
    async with open_session_log(JsonlStore(tmp_path)) as log:
        session = await Session.open(log, session_id="demo", cwd="/work/demo", defaults=DEFAULTS)
        await session.pre_step()
        await session.set_sandbox_mode("read-only")
        await session.select_preset("danger-full-access")
        await session.set_sandbox_mode("read-only")
        await session.pre_step()
        child = await session.fork_child(session_id="demo-child")
        await child.close()
        await session.close()
    return tmp_path


async def test_text_lists_events_and_effective_values(state_dir: Path) -> None:
    status, out, err = show("demo", "--state-dir", str(state_dir))
    assert status == 0 and err == ""
    assert f"log      {state_dir / 'demo.jsonl'}" in out
    rows = [line.split() for line in out.splitlines() if line[:5].strip().isdigit()]
    assert [row[0] for row in rows] == [str(n) for n in range(1, 9)]
    assert [row[3] for row in rows] == [
        "session/header",
        "context/policy",
        "sandbox/mode",
        "permission/preset",
        "sandbox/mode",
        "approval/policy",
        "sandbox/mode",
        "context/policy",
    ]
    assert "cwd=/work/demo" in out and "mode=read-only" in out and "name=danger-full-access" in out
    assert "| - Sandbox mode: read-only. Workspace root: /work/demo" in out
    assert "sandbox mode     read-only            override (seq 7)" in out
    assert "approval policy  never                override (seq 6)" in out
    assert "workspace root   /work/demo           session" in out
    assert "preset           custom" in out
    assert "policy message   current (seq 8)" in out


async def test_json_is_one_object(state_dir: Path) -> None:
    status, out, _ = show(str(state_dir / "demo-child.jsonl"), "--json")
    assert status == 0 and out.count("\n") == 1
    summary = msgspec.json.decode(out)
    assert summary["session"] == "demo-child" and summary["parent"] == "demo"
    assert [e["type"] for e in summary["events"]] == [
        "session/header",
        "sandbox/mode",
        "approval/policy",
    ]
    assert summary["events"][1]["source"] == "inherited:demo"
    assert summary["effective"] == {
        "sandbox_mode": "read-only",
        "sandbox_mode_from": "override (seq 2)",
        "approval_policy": "never",
        "approval_policy_from": "override (seq 3)",
        "network": "off",
        "network_from": "default",
        "workspace_root": "/work/demo",
        "workspace_root_from": "session",
        "preset": "custom",
        "policy_message": "never told",
    }


async def test_the_state_dir_comes_from_the_environment(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STOCKADE_STATE_DIR", str(state_dir))
    status, out, _ = show("demo")
    assert status == 0 and "session  demo" in out


async def test_a_torn_tail_is_reported_and_left_alone(state_dir: Path) -> None:
    path = state_dir / "demo.jsonl"
    torn = path.read_bytes() + b'{"type":"sandbox/mo'
    path.write_bytes(torn)
    status, out, _ = show(str(path))
    assert status == 0
    assert "line 9: torn tail of 19 bytes" in out
    assert path.read_bytes() == torn


async def test_unreadable_logs_fail_with_a_message(state_dir: Path) -> None:
    status, _, err = show("nope", "--state-dir", str(state_dir))
    assert status == 1 and f"no session log at {state_dir / 'nope.jsonl'}" in err

    path = state_dir / "demo.jsonl"
    rows = path.read_bytes().split(b"\n")
    rows[2] = b"not json"
    path.write_bytes(b"\n".join(rows))
    status, _, err = show(str(path))
    assert status == 1 and f"{path}:3: line is not JSON" in err

    status, _, err = show("../escape", "--state-dir", str(state_dir))
    assert status == 1


async def test_an_acp_sessions_log_is_shown_by_the_command(tmp_path: Path) -> None:
    """A log the ACP agent wrote (its `acp/prompt` and `acp/reply` events) is shown
    like any other by `stockade session show`, in a process of its own."""
    from stockade.acp.events import ACP_EVENTS, PromptReceived, ReplyGiven
    from stockade.harness import harness_registry

    from ..support import stockade

    store = JsonlStore(tmp_path, registry=harness_registry(*ACP_EVENTS))
    async with open_session_log(store) as log:
        session = await Session.open(log, session_id="acp", cwd="/work/demo", defaults=DEFAULTS)
        await session.append(PromptReceived(text="list the files"), ReplyGiven(text="done"))
        await session.close()
    done = stockade("session", "show", "acp", "--state-dir", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    shown = msgspec.json.decode(done.stdout)
    assert "acp/prompt" in done.stdout and "acp/reply" in done.stdout, shown


async def test_a_result_shows_as_the_model_saw_it_with_its_facts_folded(tmp_path: Path) -> None:
    """Its text as lines, first thing under its row; its facts one short group (the
    ones a person looks for first, then how many more `--json` has)."""
    from stockade.harness import harness_registry
    from stockade.tools.events import ToolResulted

    registry = harness_registry()
    facts = {"exit_code": 1, "denied": True, "backend": "bwrap", "tier": None}
    facts |= {f"extra_{i}": "x" * 40 for i in range(40)}
    async with open_session_log(JsonlStore(tmp_path, registry=registry)) as log:
        session = await Session.open(log, session_id="s", cwd="/work/demo", defaults=DEFAULTS)
        await session.append(
            ToolResulted(call_id="c1", name="bash", text="hello\n[exit code: 1]", facts=facts)
        )
        assert repr(session) == "Session(id='s', cwd='/work/demo', open)"
        await session.close()
    out_io, err_io = io.StringIO(), io.StringIO()
    args = parse("s", "--state-dir", str(tmp_path))
    status = run_show(args, stdout=out_io, stderr=err_io, defaults=DEFAULTS, registry=registry)
    out = out_io.getvalue()
    assert status == 0, err_io.getvalue()
    row = next(line for line in out.splitlines() if "tool/result" in line)
    assert "facts{exit_code=1 denied=True backend=bwrap +41 more (--json)}" in row
    assert len(row) < 200 and "extra_" not in out
    lines = out.splitlines()
    at = lines.index(row)
    assert lines[at + 1 : at + 4] == ["       text:", "       | hello", "       | [exit code: 1]"]
    whole = io.StringIO()
    run_show(parse("s", "--state-dir", str(tmp_path), "--json"), stdout=whole, registry=registry)
    assert "extra_39" in whole.getvalue()  # --json keeps every fact

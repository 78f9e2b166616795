"""Issue 41's wiring on the real kernel, both backends: the CA bundle every command
trusts is readable and in sight under network allowlist, yet no confined command can
change, remove or replace it (also where it could write /tmp); a command's environment
holds the placeholder and never the credential; and a request the proxy judges is in
the call's result and the session's log before it goes anywhere, by name only.

The proxy's own termination is another module's: here its reporter is called as the
proxy calls it (`open_proxy(on_request=...)`), for a call whose command is waiting.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
import trio

import stockade.network
from stockade import open_harness
from stockade.network import PLACEHOLDER_PREFIX, RequestRecord

from .test_allowlist import backend  # noqa: F401

SECRET = "ghp_wiring-test-secret-0123456789abcdefXYZ"
HOST = "api.ruled.test"


def _composition(name: str, state_dir: Path, *, host_temp: bool = False) -> list[dict]:
    sandbox = {"backend": name, "allow_host_temp": True} if host_temp else {"backend": name}
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": sandbox},
        {
            "id": "bash",
            "name": "stockade.bash.sandbox",
            "config": {
                "network": "allowlist",
                "network_credentials": [
                    {"host": HOST, "placeholder_env": "RULED_TOKEN", "value_from": "RULED_SECRET"}
                ],
                "network_requests": [{"host": HOST, "methods": ["GET"], "name": "read-only"}],
                # The loosest environment policy: only the broker keeps the value out.
                "env": {"keep_default_excludes": False},
                # The attempts are judged by the kernel here, not by the command rules.
                "rules": {"defaults": False},
            },
        },
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state_dir)}},
    ]


@pytest.fixture
def secret(monkeypatch):
    monkeypatch.setenv("RULED_SECRET", SECRET)


TAMPER = (
    'b="$SSL_CERT_FILE"; d="$(dirname "$b")"; '
    'for try in "echo x >> $b" "rm -f $b" "mv $b $b.gone" "touch $d/planted" '
    '"chmod 0666 $b" "rm -rf $d" "mv $d $d.gone"; do '
    '  if sh -c "$try" 2>/dev/null; then echo "WROTE: $try"; fi; '
    "done; "
    'grep -c "BEGIN CERTIFICATE" "$b"; echo "token=$RULED_TOKEN"; '
    # The control: where the host's /tmp is granted, the command does write beside it.
    'touch "/tmp/control-$$" 2>/dev/null && rm "/tmp/control-$$" && echo CONTROL-WROTE'
)


@pytest.mark.parametrize("host_temp", [False, True], ids=["private-tmp", "host-tmp-writable"])
async def test_no_confined_command_can_change_the_bundle_it_reads(
    backend,  # noqa: F811
    scratch,
    secret,
    host_temp,
):
    name, _ = backend
    root = Path(scratch) / "project"
    root.mkdir()
    async with open_harness(
        _composition(name, Path(scratch) / "state", host_temp=host_temp)
    ) as harness:
        session = await harness.open_session(cwd=root)
        result = await session.run_tool("bash", {"command": TAMPER}, call_id="tamper")
        bundle = Path(harness.executor.config.network_trust_directory or "") / "ca-bundle.pem"
        before = bundle.read_bytes()
        assert before.count(b"BEGIN CERTIFICATE") > 1
        after = bundle.read_bytes()
        directory = sorted(os.listdir(bundle.parent))
    text = result.text
    assert "WROTE: " not in text, text
    assert ("CONTROL-WROTE" in text) is host_temp, text
    assert f"token={PLACEHOLDER_PREFIX}" in text
    assert SECRET not in text
    assert str(before.count(b"BEGIN CERTIFICATE")) in text
    assert after == before and directory == ["ca-bundle.pem"]
    assert not bundle.parent.exists(), "the bundle's directory goes with the harness"


async def test_a_judged_request_is_in_the_result_and_the_log_by_name_only(
    backend,  # noqa: F811
    scratch,
    secret,
    monkeypatch,
):
    name, _ = backend
    root = Path(scratch) / "project"
    root.mkdir()
    state_dir = Path(scratch) / "state"
    go = root / "go"
    os.mkfifo(go)
    reporters: list = []
    real_open_proxy = stockade.network.open_proxy

    @contextlib.asynccontextmanager
    async def spying(**kwargs):
        assert kwargs["broker"] is not None and kwargs["broker"].terminates(HOST)
        reporters.append(kwargs["on_request"])
        async with real_open_proxy(**kwargs) as proxy:
            yield proxy

    monkeypatch.setattr(stockade.network, "open_proxy", spying)
    refused = RequestRecord(
        call_id="call-1",
        method="POST",
        host=HOST,
        port=443,
        path="/repos/org/x/issues",
        allowed=False,
        reason=f"POST '/repos/org/x/issues' to {HOST} is refused: {HOST} allows GET",
        rule="read-only",
        credentials=("RULED_SECRET",),
    )
    allowed = RequestRecord(
        call_id="call-1",
        method="GET",
        host=HOST,
        port=443,
        path="/repos/org/x",
        allowed=True,
        reason="allowed by read-only",
        rule="read-only",
        credentials=("RULED_SECRET",),
    )
    async with open_harness(_composition(name, state_dir)) as harness:
        session = await harness.open_session(cwd=root)
        outcome: dict = {}

        async def call() -> None:
            outcome["result"] = await session.run_tool(
                "bash", {"command": "cat go"}, call_id="tool-1"
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            # As the proxy would, while the call runs: until its endpoint is open.
            with trio.fail_after(30):
                while True:
                    if reporters:
                        try:
                            await reporters[0](allowed)
                            break
                        except Exception:
                            pass
                    await trio.sleep(0.05)
            await reporters[0](refused)
            await trio.to_thread.run_sync(go.write_text, "done\n")
        session_id = session.id
    result = outcome["result"]
    assert result.facts["requests"][0]["path"] == "/repos/org/x"
    assert [r["allowed"] for r in result.facts["requests"]] == [True, False]
    # Short for the model: the refused request and its one-line reason only.
    assert f"[sandbox: network request refused: {refused.reason}]" in result.text
    assert "/repos/org/x'" not in result.text.replace(refused.reason, "")
    lines = (state_dir / f"{session_id}.jsonl").read_text().splitlines()
    logged = [json.loads(line) for line in lines if '"network/request"' in line]
    assert [(e["method"], e["allowed"], e["call_id"]) for e in logged] == [
        ("GET", True, "tool-1"),
        ("POST", False, "tool-1"),
    ]
    assert logged[1]["credentials"] == ["RULED_SECRET"] and logged[1]["rule"] == "read-only"
    whole = "\n".join(lines)
    assert SECRET not in whole

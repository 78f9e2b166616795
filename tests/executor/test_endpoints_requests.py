"""A request to a ruled host (issue 41), as the proxy reports it: kept with its call and
logged in its session before it goes anywhere, refused once its call's end began; the
result names only the refused ones, each by its one-line reason."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from stockade.executor._endpoints import CallEnded, ProxyEndpoints
from stockade.executor._facts import WrapFacts
from stockade.executor.config import ExecutorConfig
from stockade.executor.render import MAX_REQUEST_MARKERS, render_result
from stockade.messages import NetworkRequest, ShellResult, ShellSpec
from stockade.network import RequestRecord, open_proxy
from stockade.vocab import ExecutionPolicy, Network, SandboxMode


def _spec(owner: str | None = "session-1") -> ShellSpec:
    policy = ExecutionPolicy(
        mode=SandboxMode.WORKSPACE_WRITE, workspace_root="/", network=Network.ALLOWLIST
    )
    return ShellSpec(command="true", policy=policy, owner=owner, call_id="tool-call-1")


def _record(key: str, *, allowed: bool = True, path: str = "/repos/org/x") -> RequestRecord:
    return RequestRecord(
        call_id=key,
        method="GET" if allowed else "POST",
        host="api.github.com",
        port=443,
        path=path,
        allowed=allowed,
        reason="allowed" if allowed else f"POST {path!r} to api.github.com is refused",
        rule="read-only",
        credentials=("GITHUB_TOKEN",),
    )


async def test_a_request_is_logged_then_kept_and_refused_after_its_call_ended(nursery):
    logged: list[tuple[str, str, object]] = []

    async def audit(session: str, call: str, decided: object) -> None:
        logged.append((session, call, decided))

    endpoints = ProxyEndpoints(ExecutorConfig(), itertools.count(1), audit=audit)
    async with open_proxy(on_decision=endpoints.decided, on_request=endpoints.requested) as proxy:
        endpoints.proxy = proxy
        key, _ = await endpoints.open(_spec(), nursery)
        assert key is not None
        await endpoints.requested(_record(key))
        await endpoints.requested(_record(key, allowed=False))
        assert [r.allowed for r in endpoints.requests(key)] == [True, False]
        await endpoints.finish(key)
        with pytest.raises(CallEnded):
            await endpoints.requested(_record(key))
        facts = msgspec.structs.replace(WrapFacts.unconfined(), proxy_call=key)
        requests = endpoints.take_requests(facts)
        endpoints.take(facts)
    assert [(s, c) for s, c, _ in logged] == [("session-1", "tool-call-1")] * 2
    first = logged[0][2]
    assert isinstance(first, NetworkRequest)
    assert (first.method, first.path, first.credentials) == (
        "GET",
        "/repos/org/x",
        ("GITHUB_TOKEN",),
    )
    assert requests == tuple(decided for _, _, decided in logged)
    assert endpoints.take_requests(facts) == ()


async def test_a_call_outside_a_session_keeps_its_requests_unlogged(nursery):
    logged: list[object] = []

    async def audit(*args: object) -> None:
        logged.append(args)

    endpoints = ProxyEndpoints(ExecutorConfig(), itertools.count(1), audit=audit)
    async with open_proxy() as proxy:
        endpoints.proxy = proxy
        key, _ = await endpoints.open(_spec(owner=None), nursery)
        assert key is not None
        await endpoints.requested(_record(key))
        assert len(endpoints.requests(key)) == 1
        endpoints.close(key)
    assert logged == []


def _result(*requests: NetworkRequest) -> ShellResult:
    return ShellResult(
        exit_code=0,
        stdout="",
        stderr="",
        denied=False,
        runner_failed=False,
        timed_out=False,
        cancelled=False,
        mode=SandboxMode.WORKSPACE_WRITE,
        backend="bwrap",
        enforcement=None,
        duration=0.1,
        network=Network.ALLOWLIST,
        requests=requests,
    )


def _request(allowed: bool, reason: str) -> NetworkRequest:
    return NetworkRequest(
        method="GET", host="h.test", port=443, path="/", allowed=allowed, reason=reason
    )


def test_the_model_sees_each_refused_request_once_and_no_allowed_one():
    text = render_result(
        _result(
            _request(True, "allowed by read-only"),
            _request(False, "POST '/x' to h.test is refused: h.test allows GET"),
            _request(False, "POST '/x' to h.test is refused: h.test allows GET"),
        )
    )
    assert text.count("[sandbox: network request refused: POST '/x' to h.test is refused") == 1
    assert "allowed by read-only" not in text


def test_many_refused_requests_are_counted_past_a_few():
    many = [_request(False, f"reason {n}") for n in range(MAX_REQUEST_MARKERS + 3)]
    text = render_result(_result(*many))
    assert text.count("network request refused:") == MAX_REQUEST_MARKERS
    assert "[sandbox: 3 more network request(s) refused for other reasons]" in text

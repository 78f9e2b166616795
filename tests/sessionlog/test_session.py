"""Session: knobs through the log, restart, isolation, pre_step, presets and delegation."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from stockade.events import SessionHeader
from stockade.harness.session import Session, SessionMismatch
from stockade.policy import (
    ApprovalPolicySet,
    PolicyContext,
    PolicyDefaults,
    PresetSelected,
    SandboxModeSet,
    UnknownPreset,
    render_policy_context,
)
from stockade.policy.knobs import knob_state
from stockade.policy.presets import DEFAULT_PRESETS, current_preset
from stockade.sessionlog import JsonlStore, MemoryStore, SessionLogClient, open_session_log
from stockade.vocab import ApprovalPolicy, ExecutionPolicy, SandboxMode

from ._helpers import DEFAULTS, TEST_EVENTS, Note

RO, WW, DFA = SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE, SandboxMode.DANGER_FULL_ACCESS
ASK, NEVER = ApprovalPolicy.ASK, ApprovalPolicy.NEVER


async def open_session(log: SessionLogClient, **kwargs: object) -> Session:
    kwargs.setdefault("defaults", DEFAULTS)
    return await Session.open(log, **kwargs)  # type: ignore[arg-type]


async def test_a_new_session_starts_with_its_header() -> None:
    async with open_session_log(MemoryStore()) as log:
        session = await open_session(log, cwd="/work/a")
        (header,) = await session.events()
        assert header == SessionHeader(cwd="/work/a", seq=1, ts=header.ts)
        assert session.cwd == "/work/a" and session.parent is None
        assert session.location == f"memory:{session.id}"
        with pytest.raises(SessionMismatch, match="absolute"):
            await open_session(log, cwd="relative")


async def test_restart_keeps_overrides_and_shows_a_changed_default(tmp_path: Path) -> None:
    async with open_session_log(JsonlStore(tmp_path)) as log:
        session = await open_session(log, session_id="s1", cwd="/work/a")
        await session.set_sandbox_mode("read-only")
        told = await session.pre_step()
        assert told is not None and told.text == render_policy_context(RO, "/work/a", ASK)
        await session.close()

    # Same state dir, a new process's worth of objects, and the operator changed
    # the approval default while we were down.
    changed = PolicyDefaults(approval_policy="never", fallback_root="/srv/fallback")
    async with open_session_log(JsonlStore(tmp_path)) as log:
        async with await open_session(log, session_id="s1", defaults=changed) as session:
            assert session.cwd == "/work/a"
            assert await session.execution_policy() == ExecutionPolicy(
                mode=RO, workspace_root="/work/a"
            )
            assert await session.approval_policy() is NEVER
            update = await session.pre_step()
            assert update is not None
            assert update.text == render_policy_context(RO, "/work/a", NEVER)
            assert await session.pre_step() is None

        # Resumed again with the same defaults: nothing new to tell.
        async with await open_session(log, session_id="s1", defaults=changed) as session:
            assert await session.pre_step() is None
            with pytest.raises(SessionMismatch, match="has workspace root '/work/a'"):
                await open_session(log, session_id="s1", cwd="/elsewhere")


async def test_two_sessions_switch_concurrently_without_seeing_each_other(tmp_path: Path) -> None:
    async with open_session_log(JsonlStore(tmp_path)) as log:
        a = await open_session(log, cwd="/work/a")
        b = await open_session(log, cwd="/work/b")

        async def churn(session: Session, modes: list[SandboxMode]) -> None:
            for round_ in range(30):
                await session.set_sandbox_mode(modes[round_ % len(modes)])
                await session.pre_step()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(churn, a, [RO, WW])
            nursery.start_soon(churn, b, [DFA, WW, DFA])
        await a.set_approval_policy("never")

        a_events, b_events = await a.events(), await b.events()
        assert {e.mode for e in a_events if isinstance(e, SandboxModeSet)} == {RO, WW}
        assert {e.mode for e in b_events if isinstance(e, SandboxModeSet)} == {DFA, WW}
        assert not any(isinstance(e, ApprovalPolicySet) for e in b_events)
        assert all(e.workspace_root == "/work/a" for e in a_events if isinstance(e, PolicyContext))
        assert all(e.workspace_root == "/work/b" for e in b_events if isinstance(e, PolicyContext))
        assert (await a.execution_policy()).mode is WW  # 30 rounds: last is index 29 -> WW
        assert (await b.execution_policy()).mode is DFA  # index 29 % 3 == 2 -> DFA
        a_told, b_told = await a.pre_step(), await b.pre_step()
        assert a_told is not None and a_told.text == render_policy_context(WW, "/work/a", NEVER)
        assert b_told is None


async def test_pre_step_tells_once_with_the_final_state() -> None:
    async with open_session_log(MemoryStore()) as log:
        session = await open_session(log, cwd="/w")
        first = await session.pre_step()
        assert first is not None and first.source == "sandbox:policy"
        # Both values stated explicitly even though they are defaults.
        assert "Sandbox mode: workspace-write" in first.text
        assert "Approval policy: ask" in first.text
        assert await session.pre_step() is None

        await session.set_sandbox_mode("read-only")
        await session.set_approval_policy("never")
        await session.set_sandbox_mode("danger-full-access")
        update = await session.pre_step()
        assert update is not None and update.text == render_policy_context(DFA, "/w", NEVER)
        told = [e for e in await session.events() if isinstance(e, PolicyContext)]
        assert [(e.sandbox_mode, e.approval_policy) for e in told] == [(WW, ASK), (DFA, NEVER)]


async def test_concurrent_pre_steps_append_one_message() -> None:
    async with open_session_log(MemoryStore()) as log:
        session = await open_session(log, cwd="/w")
        results: list[PolicyContext | None] = []

        async def step() -> None:
            results.append(await session.pre_step())

        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(step)
        assert sum(r is not None for r in results) == 1
        assert sum(isinstance(e, PolicyContext) for e in await session.events()) == 1


async def test_a_knob_setter_skips_a_repeat_but_pins_a_default() -> None:
    async with open_session_log(MemoryStore()) as log:
        session = await open_session(log, cwd="/w")
        pinned = await session.set_sandbox_mode(WW)  # equals the default: still recorded
        assert pinned is not None and pinned.mode is WW and pinned.seq == 2
        assert await session.set_sandbox_mode("workspace-write") is None
        assert len(await session.events()) == 2


async def test_presets_write_only_changes() -> None:
    async with open_session_log(MemoryStore()) as log:
        session = await open_session(log, cwd="/w")
        assert await session.current_preset() == "workspace-write"
        assert await session.select_preset("workspace-write") == ()
        assert len(await session.events()) == 1

        written = await session.select_preset("danger-full-access")
        assert [type(e) for e in written] == [PresetSelected, SandboxModeSet, ApprovalPolicySet]
        assert [e.seq for e in written] == [2, 3, 4]
        assert await session.select_preset("danger-full-access") == ()
        assert await session.current_preset() == "danger-full-access"

        await session.set_approval_policy("ask")
        assert await session.current_preset() == "custom"
        written = await session.select_preset("workspace-write")
        assert [type(e) for e in written] == [PresetSelected, SandboxModeSet]

        before = await session.events()
        with pytest.raises(UnknownPreset, match="known: workspace-write, danger-full-access"):
            await session.select_preset("read-only")
        assert await session.events() == before

        update = await session.pre_step()
        assert update is not None and update.text == render_policy_context(WW, "/w", ASK)


async def test_delegation_cannot_widen() -> None:
    async with open_session_log(MemoryStore()) as log:
        parent = await open_session(log, cwd="/w")
        await parent.set_sandbox_mode("read-only")
        child = await parent.fork_child()
        assert child.parent == parent.id and child.cwd == "/w"
        header, inherited = await child.events()
        assert isinstance(header, SessionHeader) and header.parent == parent.id
        assert inherited == SandboxModeSet(
            mode=RO, source=f"inherited:{parent.id}", seq=2, ts=inherited.ts
        )
        # The default is wider, but the child resolves to its parent's override.
        assert DEFAULTS.sandbox_mode is WW
        assert (await child.execution_policy()).mode is RO
        assert await child.approval_policy() is ASK

        await child.set_sandbox_mode("danger-full-access")
        assert (await parent.execution_policy()).mode is RO
        assert len(await parent.events()) == 2

        grandchild = await child.fork_child(cwd="/w/sub")
        assert grandchild.cwd == "/w/sub"
        assert (await grandchild.execution_policy()).mode is DFA


async def test_a_parent_without_overrides_seeds_nothing() -> None:
    async with open_session_log(MemoryStore()) as log:
        parent = await open_session(log, cwd="/w")
        child = await parent.fork_child()
        assert [type(e) for e in await child.events()] == [SessionHeader]


async def test_execution_policy_precedence_and_fallback_root() -> None:
    async with open_session_log(MemoryStore()) as log:
        rootless = await open_session(log)
        assert rootless.cwd is None
        assert await rootless.execution_policy() == ExecutionPolicy(
            mode=WW, workspace_root="/srv/fallback"
        )
        await rootless.set_sandbox_mode(RO)
        assert (await rootless.execution_policy()).mode is RO
        assert (await rootless.execution_policy(explicit_mode=DFA)).mode is DFA


async def test_resuming_an_existing_id_with_a_seed_is_refused() -> None:
    async with open_session_log(MemoryStore()) as log:
        await open_session(log, session_id="s", cwd="/w")
        with pytest.raises(SessionMismatch, match="already exists"):
            await open_session(log, session_id="s", seed=[SandboxModeSet(mode=RO)])


async def test_a_session_reports_a_torn_tail_cut_on_open() -> None:
    store = MemoryStore(registry=TEST_EVENTS)
    async with open_session_log(store) as log:
        session = await open_session(log, session_id="s", cwd="/w")
        await session.set_sandbox_mode(RO)
    store.files["s"] += b'{"type":"sandbox/mode","seq":3,"ts":1.0,"mo'
    async with open_session_log(store) as log:
        session = await open_session(log, session_id="s")
        assert session.torn_lines_cut == 1
        assert len(await session.events()) == 2
        assert (await session.execution_policy()).mode is RO


async def test_a_long_session_resolves_from_the_shared_view(tmp_path: Path) -> None:
    # Overrides early, then a long tail of other events: each resolution reads the
    # log's view (no copy) and finds the knobs by index, not by walking back.
    async with open_session_log(JsonlStore(tmp_path, registry=TEST_EVENTS)) as log:
        async with await open_session(log, session_id="long", cwd="/w") as session:
            await session.set_sandbox_mode("read-only")
            await session.select_preset("danger-full-access")
            await session.set_approval_policy("ask")
            await session.append(*(Note(n=n) for n in range(3000)))
            assert await session.events() is await session.events()
            events = tuple(await session.events())
        async with await open_session(log, session_id="long") as resumed:
            view = await resumed.events()
            assert view == events and view is not events
            assert await resumed.knobs() == knob_state(events, DEFAULTS)
            assert await resumed.current_preset() == current_preset(
                events, DEFAULT_PRESETS, DEFAULTS
            )
            assert await resumed.execution_policy() == ExecutionPolicy(DFA, "/w")
            assert await resumed.pre_step() is not None
            assert await resumed.pre_step() is None

"""THE confine sequence (sandbox/_confine.py): the one placeholder retry, the runner's
checks, and the same argv whether the ProviderActor or `stockade exec` runs it."""

from __future__ import annotations

import os

import pytest
import trio

from stockade.errors import InvalidPolicy, SandboxUnavailable
from stockade.sandbox import _confine, placeholders
from stockade.sandbox._chain import Selection
from stockade.sandbox._confine import (
    ATTEMPTS,
    Call,
    GuardRules,
    Runner,
    confine,
    guard_rules,
    placeholder_attempts,
    runner_identity,
)
from stockade.sandbox._profiles import Backend
from stockade.sandbox.actor import ProviderActor
from stockade.sandbox.config import ProviderConfig
from stockade.trust import installation_paths, startup_files
from stockade.vocab import Network, SandboxMode, SandboxPolicy

CMD = ("bash", "-c", "true")
STALE = "the workspace kept changing while the sandbox was set up ({} is gone); retry"


def stale(path: str = "/w/.git") -> placeholders.StaleView:
    return placeholders.StaleView(2, "its directory is gone", path)


def test_a_stale_view_is_tried_again_and_the_first_good_pass_ends_the_loop():
    passes = []
    for attempt in placeholder_attempts():
        with attempt:
            passes.append(1)
            if len(passes) < ATTEMPTS:
                raise stale()
    assert len(passes) == ATTEMPTS == 3


def test_a_disk_that_keeps_changing_is_unavailable_after_the_last_attempt():
    passes = []
    with pytest.raises(SandboxUnavailable) as caught:
        for attempt in placeholder_attempts():
            with attempt:
                passes.append(1)
                raise stale("/w/.git/hooks")
    assert len(passes) == ATTEMPTS
    assert caught.value.detail == STALE.format("/w/.git/hooks")
    assert caught.value.__suppress_context__


def test_any_other_error_ends_the_attempts_at_once():
    passes = []
    with pytest.raises(PermissionError):
        for attempt in placeholder_attempts():
            with attempt:
                passes.append(1)
                raise PermissionError("no")
    assert passes == [1]


async def test_the_retry_holds_across_awaits():
    passes = []
    for attempt in placeholder_attempts():
        with attempt:
            await trio.lowlevel.checkpoint()
            passes.append(1)
            if len(passes) == 1:
                raise stale()
    assert len(passes) == 2


def test_nothing_selected_is_unavailable_with_its_reason(tmp_path):
    call = Call(CMD, SandboxMode.READ_ONLY, str(tmp_path), (), Network.OFF)
    with pytest.raises(SandboxUnavailable, match="no usable sandbox backend here"):
        confine(call, None, GuardRules(), unavailable="no usable sandbox backend here")


def test_a_bad_root_is_the_callers_error_even_with_nothing_selected(tmp_path):
    call = Call(CMD, SandboxMode.READ_ONLY, str(tmp_path / "gone"), (), Network.OFF)
    with pytest.raises(InvalidPolicy, match="does not exist"):
        confine(call, None, GuardRules(), unavailable="nothing")


def test_a_runner_changed_since_its_probe_is_refused(tmp_path):
    runner_file = tmp_path / "landlock-run"
    runner_file.write_text("#!/bin/sh\n")
    runner = Runner("landlock", str(runner_file), identity=runner_identity(str(runner_file)))
    root = tmp_path / "ws"
    root.mkdir()
    call = Call(CMD, SandboxMode.READ_ONLY, str(root), (), Network.ON)
    assert _confine.checked_runner(runner, "") is runner
    runner_file.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(SandboxUnavailable) as caught:
        confine(call, runner, GuardRules())
    assert caught.value.detail == (
        f"the sandbox runner {runner_file} is gone or changed on disk since it was probed; "
        "restore it, or restart the harness to probe again"
    )


def test_a_refusing_guard_is_unavailable_with_its_refusal(tmp_path):
    root = tmp_path / "ws"
    (root / "bin").mkdir(parents=True)
    # A runner inside the writable root: a command could replace it.
    runner = Runner("bwrap", str(root / "bin" / "bwrap"))
    call = Call(CMD, SandboxMode.WORKSPACE_WRITE, str(root), (), Network.ON)
    with pytest.raises(SandboxUnavailable, match="lies inside the writable root"):
        confine(call, runner, GuardRules())


def test_exec_holds_the_placeholders_and_guards_again_on_a_stale_view(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    guards, holds = [], []
    guard_call = _confine.guard_call
    hold_all = placeholders.hold_all

    def counted_guard(*args, **kwargs):
        guards.append(1)
        return guard_call(*args, **kwargs)

    def hold_once_stale(wanted):
        holds.append(list(wanted))
        if len(holds) == 1:
            raise stale(wanted[0][0])
        return hold_all(wanted)

    monkeypatch.setattr(_confine, "guard_call", counted_guard)
    monkeypatch.setattr(placeholders, "hold_all", hold_once_stale)
    call = Call(CMD, SandboxMode.WORKSPACE_WRITE, str(root), (), Network.ON)
    confined = confine(call, Runner("bwrap", "/usr/bin/bwrap"), GuardRules(), hold=True)
    try:
        wanted = [(p.path, p.directory) for p in confined.guard.protections if p.kind == "block"]
        assert wanted and holds == [wanted, wanted] and len(guards) == 2
        assert len(confined.held) == len(wanted)
        assert all(os.path.lexists(path) for path, _ in wanted)
    finally:
        for fd in confined.held:
            os.close(fd)
        for path, _ in sorted(wanted, reverse=True):
            placeholders.sweep(path)


def test_without_hold_nothing_is_made_or_held(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    call = Call(CMD, SandboxMode.WORKSPACE_WRITE, str(root), (), Network.ON)
    confined = confine(call, Runner("bwrap", "/usr/bin/bwrap"), GuardRules())
    assert confined.held == [] and confined.guard.creates
    assert os.listdir(root) == []


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
@pytest.mark.parametrize(
    ("mode", "network"),
    [
        (SandboxMode.WORKSPACE_WRITE, Network.ON),
        (SandboxMode.READ_ONLY, Network.OFF),
        (SandboxMode.READ_ONLY, Network.ON),
    ],
)
async def test_the_provider_and_exec_build_the_same_argv(tmp_path, backend, mode, network):
    root, temp = tmp_path / "ws", tmp_path / "tmp"
    root.mkdir()
    temp.mkdir()
    selected = Backend(name=backend, runner=f"/usr/bin/{backend}-stub", abi=7)
    config = ProviderConfig(protected_paths=("notes.txt",))

    def selector(_config):
        return Selection("linux", (backend,), (), selected, f"selected {backend}")

    actor = ProviderActor(config=config, selector=selector)
    policy = SandboxPolicy(mode, str(root), network=network, temp_dir=str(temp))
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        wrapped = await actor.client.confine(CMD, policy)
        nursery.cancel_scope.cancel()
    exec_runner = Runner(
        backend,
        selected.runner,
        launcher=selected.launcher,
        private_ipc=selected.private_ipc,
    )
    alone = confine(
        Call(CMD, mode, str(root), (str(temp),), network),
        exec_runner,
        guard_rules(config, installation_paths(), startup_files()),
    )
    assert wrapped.argv == alone.argv
    # bwrap and the Landlock launcher's namespaced tier mount over placeholders.
    assert wrapped.blockers == alone.guard.creates


def test_the_tool_caches_are_not_searched_for_env_files(tmp_path):
    """A root the call names `unsearched` (the tool caches: stockade's own, written by
    confined commands) is granted but not searched for `.env`; the others are."""
    from stockade.trust.secrets import DenyRead

    root, cache = tmp_path / "ws", tmp_path / "cache"
    for directory in (root, cache):
        directory.mkdir()
        (directory / ".env").write_text("X=1\n")
    rules = GuardRules(deny_read=DenyRead((".env",)))
    roots = (str(cache),)
    searched = confine(
        Call(CMD, SandboxMode.WORKSPACE_WRITE, str(root), roots, Network.ON),
        Runner("bwrap", "/usr/bin/bwrap"),
        rules,
    )
    assert searched.unreadable is not None
    assert set(searched.unreadable.paths) == {str(root / ".env"), str(cache / ".env")}
    skipped = confine(
        Call(CMD, SandboxMode.WORKSPACE_WRITE, str(root), roots, Network.ON, unsearched=roots),
        Runner("bwrap", "/usr/bin/bwrap"),
        rules,
    )
    assert skipped.unreadable is not None
    assert skipped.unreadable.paths == (str(root / ".env"),)

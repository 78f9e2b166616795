"""Chain selection with stubbed probes: order, caching, fail-closed platforms, runner_command."""

from functools import partial

import pytest
import trio

from stockade.errors import ConfigError, SandboxUnavailable
from stockade.sandbox._chain import candidate_report
from stockade.sandbox._probe import Verdict
from stockade.sandbox._select import select_backend
from stockade.sandbox.actor import open_provider
from stockade.sandbox.backends import chain_for
from stockade.sandbox.backends.bwrap import judge_bwrap_probe
from stockade.sandbox.backends.landlock import judge_landlock_probe
from stockade.sandbox.config import ProviderConfig
from stockade.vocab import Enforcement, SandboxMode, SandboxPolicy

CMD = ("bash", "-c", "true")


def stub_probes(calls, **usable):
    def probe(name):
        def run(_timeout):
            calls.append(name)
            if usable.get(name):
                abi = 7 if name == "landlock" else None
                return Verdict(name, True, f"/stub/{name}", abi=abi)
            return Verdict(name, False, why_not=f"{name} stubbed off")

        return run

    return {name: probe(name) for name in ("bwrap", "landlock", "seatbelt")}


def test_platform_chains():
    assert chain_for("linux") == ("bwrap", "landlock")
    assert chain_for("darwin") == ("seatbelt",)
    assert chain_for("win32") == ()
    assert chain_for("plan9") == ()
    assert chain_for("linux", "landlock") == ("landlock",)
    assert chain_for("darwin", "bwrap") == ()


def test_first_usable_candidate_wins_and_later_ones_are_not_probed():
    calls = []
    selection = select_backend(
        ProviderConfig(platform="linux"), probes=stub_probes(calls, bwrap=True, landlock=True)
    )
    assert selection.backend.name == "bwrap"
    assert calls == ["bwrap"]


def test_unusable_bwrap_falls_to_landlock():
    calls = []
    selection = select_backend(
        ProviderConfig(platform="linux"), probes=stub_probes(calls, landlock=True)
    )
    assert selection.backend.name == "landlock"
    assert calls == ["bwrap", "landlock"]
    assert selection.candidates[0].why_not == "bwrap stubbed off"


def test_forced_backend_is_still_probed_and_never_replaced():
    calls = []
    selection = select_backend(
        ProviderConfig(platform="linux", backend="bwrap"), probes=stub_probes(calls, landlock=True)
    )
    assert selection.backend is None
    assert calls == ["bwrap"]
    assert "bwrap stubbed off" in selection.detail


def test_darwin_selects_seatbelt_without_a_probe():
    selection = select_backend(ProviderConfig(platform="darwin"))
    assert selection.backend.name == "seatbelt"
    assert selection.backend.runner == "/usr/bin/sandbox-exec"
    assert selection.candidates[0].probed is False


def test_runner_command_skips_chain_and_probes():
    calls = []
    config = ProviderConfig(runner_command="/opt/fake-runner", runner_failure_signatures=["FAKE:"])
    selection = select_backend(config, probes=stub_probes(calls))
    assert calls == []
    assert selection.backend.runner == "/opt/fake-runner"
    (rule,) = selection.backend.extra_rules
    assert rule.fatal_signatures == ("FAKE:",) and rule.exit_codes is None


@pytest.mark.parametrize("bad", ["", "   ", "two\nlines", 7])
def test_malformed_runner_failure_signatures_are_a_config_error(bad):
    with pytest.raises(ConfigError, match="single-line"):
        ProviderConfig(runner_command="/opt/r", runner_failure_signatures=[bad])


def test_unknown_backend_choice_is_a_config_error():
    with pytest.raises(ConfigError, match="allowed: auto, bwrap, landlock, seatbelt"):
        ProviderConfig(backend="docker")


def test_probe_judges():
    ok = judge_bwrap_probe(
        "/b",
        1,
        "stockade-probe-ran\nCapEff: 0000000000000000\nNoNewPrivs: 1\n",
        "sh: 1: cannot create /s/x: Read-only file system\n",
        target_exists=False,
    )
    assert ok.usable
    assert candidate_report(ok).enforcement["read-only"] is Enforcement.FULL
    no_start = judge_bwrap_probe(
        "/b", 1, "", "bwrap: No permissions to create new namespace\n", target_exists=False
    )
    assert not no_start.usable and "No permissions to create new namespace" in no_start.why_not
    wrote = judge_bwrap_probe("/b", 0, "stockade-probe-ran\n", "", target_exists=True)
    assert not wrote.usable and "did not refuse" in wrote.why_not
    privileged = judge_bwrap_probe(
        "/b",
        1,
        "stockade-probe-ran\nCapEff: 000001ffffffffff\nNoNewPrivs: 0\n",
        "Read-only file system",
        target_exists=False,
    )
    assert not privileged.usable and "privileges" in privileged.why_not

    line = (
        "landlock-run: probe ok: abi=7 enforcement=full tier=namespaced ipc=private started=yes\n"
    )
    landlock = judge_landlock_probe("/l", 0, line, "")
    assert landlock.usable and landlock.abi == 7 and landlock.ipc == "private"
    assert landlock.tier == "namespaced" and landlock.tier_why is None
    assert candidate_report(landlock).enforcement == {
        "read-only": Enforcement.FULL,
        "workspace-write": Enforcement.FULL,
    }
    # Where no namespace can be made: the plain tier, why, and what it leaves open.
    plain_line = (
        "landlock-run: probe ok: abi=7 enforcement=full tier=plain ipc=filtered "
        "started=yes why=No space left on device\n"
    )
    plain = judge_landlock_probe("/l", 0, plain_line, "")
    assert plain.usable and plain.tier == "plain" and plain.ipc == "filtered"
    assert "No space left on device" in plain.tier_why
    report = candidate_report(plain)
    assert report.enforcement["workspace-write"] is Enforcement.PARTIAL
    tiers = {tier.tier: tier for tier in report.tiers}
    assert not tiers["namespaced"].usable and tiers["namespaced"].why_not == plain.tier_why
    assert tiers["plain"].usable and tiers["plain"].selected
    # No private IPC namespace possible (or not reported): existing host IPC objects
    # stay usable, and the claim says so in both modes.
    for line in (
        "landlock-run: probe ok: abi=7 enforcement=full ipc=filtered started=yes\n",
        "landlock-run: probe ok: abi=7 enforcement=full started=yes\n",
    ):
        report = candidate_report(judge_landlock_probe("/l", 0, line, ""))
        assert report.enforcement["read-only"] is Enforcement.PARTIAL
        assert any("IPC" in gap for gap in report.ungoverned["read-only"])
    # Before ABI 6 signals and abstract sockets reach host processes.
    old = candidate_report(
        judge_landlock_probe(
            "/l",
            0,
            "landlock-run: probe ok: abi=5 enforcement=partial ipc=private started=yes\n",
            "",
        )
    )
    # Its PID namespace holds the host's processes; network on, abstract sockets stay.
    assert old.ungoverned["read-only"] == ("abstract unix sockets",)
    failed = judge_landlock_probe("/l", 125, "", "landlock-run: probe failed: ABI 0\n")
    assert not failed.usable and "ABI 0" in failed.why_not
    # A launcher built before --started-fd: every call would be refused, so it is not
    # usable, and the fix is named.
    stale = judge_landlock_probe("/l", 0, "landlock-run: probe ok: abi=7 enforcement=full\n", "")
    assert not stale.usable and "reinstall stockade" in stale.why_not


async def test_fifty_concurrent_first_callers_share_one_probe(tmp_path):
    calls = []

    def slow_selector(config):
        calls.append(1)
        import time

        time.sleep(0.05)  # runs in a worker thread, like the real probes
        return select_backend(config, probes=stub_probes([], landlock=True))

    policy = SandboxPolicy(SandboxMode.READ_ONLY, str(tmp_path))
    results = []

    async def first_call(provider):
        results.append(await provider.confine(CMD, policy))

    async with (
        open_provider(ProviderConfig(platform="linux"), selector=slow_selector) as provider,
        trio.open_nursery() as nursery,
    ):
        for _ in range(50):
            nursery.start_soon(first_call, provider)
    assert len(calls) == 1
    assert len(results) == 50
    assert {wrapped.backend for wrapped in results} == {"landlock"}


@pytest.mark.parametrize("platform", ["win32", "plan9", "freebsd14"])
async def test_platforms_without_a_chain_fail_closed(tmp_path, platform):
    calls = []
    selector = partial(select_backend, probes=stub_probes(calls, bwrap=True, landlock=True))
    policy = SandboxPolicy(SandboxMode.WORKSPACE_WRITE, str(tmp_path))
    async with open_provider(ProviderConfig(platform=platform), selector=selector) as provider:
        with pytest.raises(SandboxUnavailable) as caught:
            await provider.confine(CMD, policy)
        # The failure verdict is cached too.
        with pytest.raises(SandboxUnavailable):
            await provider.confine(CMD, policy)
    assert caught.value.code == "SANDBOX_UNAVAILABLE"
    assert platform in caught.value.detail
    assert calls == []


async def test_failure_verdict_is_cached_not_reprobed(tmp_path):
    calls = []
    selector = partial(select_backend, probes=stub_probes(calls))
    policy = SandboxPolicy(SandboxMode.READ_ONLY, str(tmp_path))
    async with open_provider(ProviderConfig(platform="linux"), selector=selector) as provider:
        for _ in range(3):
            with pytest.raises(SandboxUnavailable, match="bwrap stubbed off"):
                await provider.confine(CMD, policy)
    assert calls == ["bwrap", "landlock"]


async def test_missing_workspace_root_is_a_clear_error_before_any_probe(tmp_path):
    from stockade.errors import InvalidPolicy

    calls = []
    selector = partial(select_backend, probes=stub_probes(calls, bwrap=True))
    policy = SandboxPolicy(SandboxMode.WORKSPACE_WRITE, str(tmp_path / "missing"))
    async with open_provider(ProviderConfig(platform="linux"), selector=selector) as provider:
        with pytest.raises(InvalidPolicy, match="does not exist"):
            await provider.confine(CMD, policy)
    assert calls == []


async def test_confine_refuses_a_root_reached_through_a_symlink(tmp_path):
    """Roots are pinned to their real path when a session opens; a root that now
    resolves elsewhere had a component swapped for a link and is never granted."""
    from stockade.errors import InvalidPolicy

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    selector = partial(select_backend, probes=stub_probes([], landlock=True))
    async with open_provider(ProviderConfig(platform="linux"), selector=selector) as provider:
        with pytest.raises(InvalidPolicy, match="reached through a symlink"):
            await provider.confine(
                CMD, SandboxPolicy(SandboxMode.WORKSPACE_WRITE, str(tmp_path / "link"))
            )
        wrapped = await provider.confine(CMD, SandboxPolicy(SandboxMode.WORKSPACE_WRITE, str(real)))
    assert str(real) in wrapped.argv
    assert wrapped.argv[-3:] == CMD


def test_the_report_claims_each_mode_with_network_off_too():
    """`stockade probe`: the claims with network on (file effects only), and per mode
    with network off, with how each network effect is governed."""
    from stockade.sandbox import _profiles as p
    from stockade.sandbox._chain import Selection
    from stockade.sandbox._probe import Verdict
    from stockade.sandbox._report import render_selection
    from stockade.sandbox.backends import Chosen
    from stockade.sandbox.backends import landlock as ll

    bwrap = candidate_report(Verdict("bwrap", True, "/b"))
    # Every file effect held; a repository a command makes is a standing limit, said
    # once by the report (trust.NEW_REPOSITORY_GAP), not a claim of each mode.
    assert bwrap.enforcement["read-only"] is Enforcement.FULL
    assert bwrap.enforcement["workspace-write"] is Enforcement.FULL
    assert "workspace-write" not in bwrap.ungoverned
    off = bwrap.network_off
    assert off["read-only"].enforcement is Enforcement.FULL and off["read-only"].ungoverned == ()
    assert off["workspace-write"].enforcement is Enforcement.PARTIAL
    # The network claim alone: the file claim's gaps stay in `ungoverned` above.
    assert off["workspace-write"].ungoverned == (p.UNFOUND_SOCKETS_GAP,)
    assert tuple(off["read-only"].effects) == p.NETWORK_EFFECTS

    line = "landlock-run: probe ok: abi=7 enforcement=full ipc=filtered started=yes\n"
    landlock = candidate_report(judge_landlock_probe("/l", 0, line, ""))
    gaps = landlock.network_off["workspace-write"].ungoverned
    assert ll.LANDLOCK_PATHNAME_GAP in gaps
    assert ll.LANDLOCK_SHARED_IPC_GAP in landlock.ungoverned["workspace-write"]
    assert (
        landlock.network_off["workspace-write"].effects[p.NET_PATHNAME].startswith(p.NOT_GOVERNED)
    )

    verdict = Verdict("bwrap", True, "/b")
    chosen = Chosen("linux", ("bwrap",), (verdict,), verdict)
    text = render_selection(Selection.of(chosen, None))
    assert "    workspace-write, network off: partial network enforcement (ungoverned: " in text
    assert "      other socket families (vsock, ...): refused by the filter stage" in text
    assert "      pathname unix sockets: read-only: refused: " in text

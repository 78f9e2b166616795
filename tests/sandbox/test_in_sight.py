"""A path a call keeps in sight (the harness's CA bundle directory, issue 41): bound at
itself inside the fresh runtime directories, read-only; left out while it does not exist.
The provider's calls and `stockade exec`'s build it the same way (`ProviderConfig.in_sight`)."""

from __future__ import annotations

import os
import tempfile

import trio

from stockade.sandbox._chain import Selection
from stockade.sandbox._confine import Call, GuardRules, Runner, confine
from stockade.sandbox._profiles import Backend
from stockade.sandbox.actor import ProviderActor
from stockade.sandbox.config import ProviderConfig
from stockade.vocab import Network, SandboxMode, SandboxPolicy

CMD = ("bash", "-c", "true")


def _call(root, seen, network=Network.ALLOWLIST) -> Call:
    return Call(
        CMD,
        SandboxMode.WORKSPACE_WRITE,
        str(root),
        (),
        network,
        proxy="/tmp/h/proxy.sock",
        in_sight=(str(seen),),
    )


def test_bwrap_binds_it_back_read_only_in_the_fresh_view(tmp_path):
    root, seen = tmp_path / "ws", tmp_path / "trust"
    root.mkdir()
    seen.mkdir()
    runner = Runner("bwrap", "/usr/bin/bwrap", launcher="/opt/llr")
    args = list(
        confine(_call(root, seen), runner, GuardRules(), runtime=lambda: (str(tmp_path),)).argv
    )
    at = args.index(str(seen))
    assert args[at - 1 : at + 2] == ["--ro-bind", str(seen), str(seen)]


def test_the_landlock_launcher_keeps_it(tmp_path):
    root, seen = tmp_path / "ws", tmp_path / "trust"
    root.mkdir()
    seen.mkdir()
    runner = Runner("landlock", "/opt/llr", private_ipc=True, tier="namespaced")
    args = list(
        confine(_call(root, seen), runner, GuardRules(), runtime=lambda: (str(tmp_path),)).argv
    )
    assert args[args.index(str(seen)) - 1] == "--keep"


def test_a_missing_one_is_left_out(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    runner = Runner("bwrap", "/usr/bin/bwrap", launcher="/opt/llr")
    gone = tmp_path / "not-made"
    argv = confine(_call(root, gone), runner, GuardRules(), runtime=lambda: (str(tmp_path),)).argv
    assert str(gone) not in argv


async def test_the_provider_keeps_its_configs_paths_in_sight(tmp_path, request):
    root = tmp_path / "ws"
    root.mkdir()
    # In /tmp, which a call with its network off sees fresh (a runtime directory).
    seen = tempfile.mkdtemp(prefix="stockade-test-trust-", dir="/tmp")
    request.addfinalizer(lambda: os.rmdir(seen))
    selected = Backend(name="bwrap", runner="/usr/bin/bwrap-stub", abi=7)
    config = ProviderConfig().seeing(seen)

    def selector(_config):
        return Selection("linux", ("bwrap",), (), selected, "selected bwrap")

    actor = ProviderActor(config=config, selector=selector)
    policy = SandboxPolicy(SandboxMode.READ_ONLY, str(root), network=Network.OFF)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run)
        wrapped = await actor.client.confine(CMD, policy)
        nursery.cancel_scope.cancel()
    assert "/tmp" in wrapped.argv[wrapped.argv.index("--tmpfs") + 1 :]
    at = wrapped.argv.index(seen)
    assert wrapped.argv[at - 1] == "--ro-bind"

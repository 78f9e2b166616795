"""The backends, one module each (sandbox/backends/): the chain's list names them, each
says its own name, and each answers with its spawn traits, which the reply carries as
data (`Wrapped.traits`, `Confined.traits`) for the executor and `stockade exec`."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from stockade.cli import fastpath
from stockade.modes import Network, SandboxMode, SpawnTrait
from stockade.sandbox import _profiles as p
from stockade.sandbox import backends
from stockade.sandbox._confine import Call, GuardRules, Runner, confine
from stockade.sandbox.config import BACKEND_CHOICES
from stockade.vocab import SandboxPolicy

FOLDER = pathlib.Path(backends.__file__).parent


def test_every_backend_module_is_named_by_the_chain_and_says_its_name():
    modules = {path.stem for path in FOLDER.glob("*.py") if not path.stem.startswith("_")}
    reached = {name: backends.named(name) for name in (*backends.NAMES, backends.RUNNER_COMMAND)}
    assert {module.__name__.rpartition(".")[2] for module in reached.values()} == modules
    for name, module in reached.items():
        assert name == module.NAME
    assert backends.known("mystery") is None
    with pytest.raises(ValueError, match="unknown sandbox backend 'mystery'"):
        backends.named("mystery")


def test_one_list_of_backend_names():
    assert backends.NAMES == ("bwrap", "landlock", "seatbelt")
    assert BACKEND_CHOICES == fastpath.BACKENDS == ("auto", *backends.NAMES)
    assert set(backends.PROBES) == set(backends.NAMES)
    assert tuple(backends.RUNNER_LOCATORS) == backends.chain_for(sys.platform)


TRAITS = {
    "bwrap": {SpawnTrait.INFO_FD, SpawnTrait.LIMITS_STAGE, SpawnTrait.STAGE_STARTED_FD},
    "landlock": {
        SpawnTrait.LIMITS_IN_RUNNER,
        SpawnTrait.REAPS_ALL,
        SpawnTrait.CALLER_WAITS,
        SpawnTrait.STARTED_FD,
    },
    "seatbelt": set(),
    "runner-command": set(),
}


@pytest.mark.parametrize("name", sorted(TRAITS))
def test_each_backend_states_its_spawn_traits(name):
    assert TRAITS[name] == backends.named(name).TRAITS


def test_the_started_option_goes_to_the_launcher_that_execs_the_command():
    stage = ["/usr/bin/bwrap", "--info-fd", "9", "--ro-bind", "/", "/", "--", "/l"]
    bwrap = backends.named("bwrap").TRAITS
    landlock = backends.named("landlock").TRAITS
    # bwrap: right after its filter stage's mode word; none without a stage.
    assert backends.started_option_at([*stage, "--filters-only", "--", "bash"], bwrap) == 9
    assert backends.started_option_at([*stage[:-1], "bash", "-c", "x"], bwrap) is None
    # The Landlock launcher: right after argv[0], whatever follows.
    assert backends.started_option_at(["/l", "--ro", "/", "--", "bash"], landlock) == 1
    # An operator's runner takes none.
    none = backends.named("runner-command").TRAITS
    assert backends.started_option_at(["/r", "--", "/l", "--filters-only"], none) is None


def test_the_reply_carries_the_traits_worked_out_once(tmp_path):
    policy = SandboxPolicy(
        mode=SandboxMode.WORKSPACE_WRITE, workspace_root=str(tmp_path), network=Network.ON
    )
    host = p.HostPaths(temp_roots=())
    for name, runner in (("bwrap", "/usr/bin/bwrap"), ("landlock", "/l")):
        selected = p.Backend(name, runner, abi=7)
        first = p.wrap(selected, policy, host, ("true",))
        second = p.wrap(selected, policy, host, ("true",))
        assert first.traits == TRAITS[name]
        # The same values every call: nothing is worked out per call.
        assert first.traits is second.traits is backends.named(name).TRAITS
        assert first.runner_failure_rules is second.runner_failure_rules
        assert first.backend == name  # the name stays, for display, events and results


def test_the_fast_path_gets_the_traits_from_confine(tmp_path):
    call = Call(("true",), SandboxMode.READ_ONLY, str(tmp_path), (), Network.ON)
    for name in ("bwrap", "landlock"):
        confined = confine(call, Runner(name, f"/usr/bin/{name}-stub"), GuardRules())
        assert confined.traits == TRAITS[name]


def test_a_backend_module_is_imported_only_when_used():
    probe = (
        "import sys\n"
        "from stockade.sandbox import backends\n"
        "from stockade.sandbox._confine import Runner\n"
        "Runner('bwrap', '/usr/bin/bwrap')\n"
        "print(sorted(m.rpartition('.')[2] for m in sys.modules "
        "if m.startswith('stockade.sandbox.backends.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "['_choose', 'bwrap']\n"), done.stderr

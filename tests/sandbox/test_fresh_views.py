"""The fresh runtime directories and agent sockets, as argv (pure): which backends make
them, what a call keeps in sight, the order bwrap needs, the launcher's options."""

from __future__ import annotations

import os

import pytest

from stockade.modes import Network, SandboxMode
from stockade.sandbox import _profiles
from stockade.sandbox._argv import fresh_plan, pairs_only
from stockade.sandbox._dispatch import confined_argv, freshens
from stockade.sandbox._sockets import runtime_dirs
from stockade.sandbox.backends import landlock, seatbelt
from stockade.sandbox.backends.bwrap import NAME as BWRAP
from stockade.sandbox.backends.fake import NAME as RUNNER_COMMAND
from stockade.sandbox.backends.landlock import NAME as LANDLOCK
from stockade.sandbox.backends.landlock import PLAIN

RO, WW = SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE
OFF, ALLOW, ON = Network.OFF, Network.ALLOWLIST, Network.ON
DIRS = ("/run", "/tmp", "/var/xdg")
ROOT, TMP = "/work/proj", "/tmp/stockade-abc"
AGENT = ("/tmp/ssh-x/agent.1", "/run/stockade-agent/ssh.sock")


def argv(backend, mode=WW, network=OFF, **kwargs):
    kwargs.setdefault("fresh_dirs", DIRS)
    return confined_argv(backend, "RUNNER", mode, ROOT, (TMP,), ("cmd",), network=network, **kwargs)


def test_which_calls_freshen():
    assert freshens(BWRAP, OFF) and freshens(BWRAP, ALLOW)
    assert freshens(LANDLOCK, OFF) and freshens(LANDLOCK, ALLOW)
    assert not freshens(BWRAP, ON) and not freshens(LANDLOCK, ON)
    assert not freshens(LANDLOCK, OFF, tier=PLAIN)
    assert not freshens(LANDLOCK, OFF, private_ipc=False)
    assert not freshens(RUNNER_COMMAND, OFF)
    for backend in (RUNNER_COMMAND, seatbelt.NAME):
        assert "--tmpfs" not in argv(backend) and "--fresh-dir" not in argv(backend)
    assert "--tmpfs" not in argv(BWRAP, network=ON)
    assert "--fresh-dir" not in argv(LANDLOCK, tier=PLAIN)


def test_a_runtime_directory_in_a_kept_path_stays_the_hosts():
    plan = fresh_plan(("/run", "/tmp"), ("/", "/tmp/x"))
    assert plan.dirs == ()
    plan = fresh_plan(("/run", "/tmp"), ("/tmp", "/work"))
    assert plan.dirs == ("/run",) and plan.keeps == ()
    plan = fresh_plan(("/run", "/tmp"), ("/tmp/a", "/tmp/a/b", "/work", "/run/p.sock"))
    assert plan.dirs == ("/run", "/tmp") and plan.keeps == ("/tmp/a", "/run/p.sock")
    assert plan.hides("/tmp/other.sock") and not plan.hides("/tmp/a/b/c.sock")
    assert not plan.hides("/var/tmp/x.sock") and not plan.hides("/tmp")


def test_an_agent_view_outside_a_fresh_directory_is_not_bound():
    plan = fresh_plan(("/run",), ("/work",), (AGENT, ("/s", "/home/u/agent.sock")))
    assert plan.agents == (AGENT,)
    assert fresh_plan(("/run",), ("/run/stockade-agent",), (AGENT,)).agents == ()


def test_bwrap_makes_the_view_first_binds_back_then_seals_it():
    args = list(argv(BWRAP, launcher="/opt/llr", keep=("/tmp/wd",), agent_sockets=(AGENT,)))
    tmpfs = [i for i, a in enumerate(args) if a == "--tmpfs"]
    assert [args[i + 1] for i in tmpfs] == list(DIRS)
    workdir = args.index("/tmp/wd")
    assert args[workdir - 1] == "--ro-bind" and args[workdir + 1] == "/tmp/wd"
    writable = args.index(TMP)
    assert args[writable - 1] == "--bind"
    agent = args.index(AGENT[0])
    assert args[agent - 1 : agent + 2] == ["--ro-bind", *AGENT]
    remounts = [args[i + 1] for i, a in enumerate(args) if a == "--remount-ro"]
    assert remounts[-3:] == list(DIRS)
    first_seal = len(args) - 1 - args[::-1].index("--remount-ro") - 4
    assert args[first_seal : first_seal + 2] == ["--remount-ro", DIRS[0]]
    assert max(tmpfs) < workdir < writable < first_seal
    assert agent < first_seal


def test_bwrap_drops_what_the_view_hides_already():
    args = argv(
        BWRAP,
        launcher="/opt/llr",
        hidden_sockets=("/run/docker.sock", "/tmp/stockade-abc/own.sock", "/var/tmp/x.sock"),
    )
    hidden = [args[i + 1] for i, a in enumerate(args) if a == "--hide-socket"]
    assert hidden == ["/tmp/stockade-abc/own.sock", "/var/tmp/x.sock"]


def test_allowlist_keeps_the_proxy_socket():
    args = argv(LANDLOCK, network=ALLOW, proxy="/tmp/h/proxy.sock")
    assert list(args[args.index("/tmp/h/proxy.sock") - 1 :][:2]) == ["--keep", "/tmp/h/proxy.sock"]
    args = argv(BWRAP, network=ALLOW, proxy="/tmp/h/proxy.sock", launcher="/opt/llr")
    at = args.index("/tmp/h/proxy.sock")
    assert args[at - 1] == "--ro-bind"


def test_the_launcher_gets_its_options():
    args = list(argv(LANDLOCK, keep=("/tmp/wd",), agent_sockets=(AGENT,)))
    options = args[: args.index("--")]
    fresh = [options[i + 1] for i, a in enumerate(options) if a == "--fresh-dir"]
    kept = [options[i + 1] for i, a in enumerate(options) if a == "--keep"]
    assert fresh == list(DIRS)
    assert kept == [TMP, "/tmp/wd"]
    at = options.index("--bind-socket")
    assert options[at : at + 3] == ["--bind-socket", *AGENT]


@pytest.mark.parametrize("backend", [BWRAP, LANDLOCK])
def test_agent_sockets_lift_pairs_only_in_read_only(backend):
    assert pairs_only(RO, OFF) and not pairs_only(RO, OFF, agents=True)
    assert "--unix-pairs-only" in argv(backend, RO, launcher="/opt/llr")
    assert "--unix-pairs-only" not in argv(backend, RO, launcher="/opt/llr", agent_sockets=(AGENT,))
    # In the plain tier too, though nothing is bound: the agent stays at its host path.
    if backend == LANDLOCK:
        assert "--unix-pairs-only" not in argv(backend, RO, tier=PLAIN, agent_sockets=(AGENT,))


def test_the_claim_names_what_agents_open_in_read_only():
    effects, gaps = _profiles.network_claim(BWRAP, RO, OFF, launcher="/opt/llr")
    assert gaps == () and effects[_profiles.NET_PATHNAME].startswith("refused")
    effects, gaps = _profiles.network_claim(BWRAP, RO, OFF, launcher="/opt/llr", agents=True)
    assert gaps == (_profiles.UNFOUND_SOCKETS_GAP,)
    assert "fresh, empty and read-only" in effects[_profiles.NET_PATHNAME]
    _, gaps = _profiles.network_claim(
        LANDLOCK, RO, OFF, abi=7, tier=PLAIN, private_ipc=False, agents=True
    )
    assert landlock.LANDLOCK_PATHNAME_GAP in gaps
    assert "runtime directories too" in landlock.LANDLOCK_PATHNAME_GAP


def test_runtime_dirs_are_real_existing_and_not_nested(tmp_path):
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    found = runtime_dirs(str(xdg))
    assert os.path.realpath("/tmp") in found
    # The test's XDG dir lies in /tmp: covered by it, not listed apart.
    assert str(xdg) not in found or not str(xdg).startswith("/tmp/")
    elsewhere = runtime_dirs("/var")
    assert "/var" in elsewhere or not os.path.isdir("/var")
    assert runtime_dirs("relative/path") == runtime_dirs("")
    assert runtime_dirs(str(tmp_path / "missing")) == runtime_dirs("")
    assert len(set(runtime_dirs("/run"))) == len(runtime_dirs("/run"))

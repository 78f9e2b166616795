"""The agents' sockets (sandbox/agents.py), pure where it can be: which socket each
grant names, which key files stay readable, what the claim says, the argv that binds
a restricted socket over the full one. The real-kernel workflows (a signed commit, a
push over SSH) are tests/workflows/test_agents.py."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from stockade.modes import Network, SandboxMode
from stockade.sandbox import agents
from stockade.sandbox._argv import agent_swaps, fresh_plan
from stockade.sandbox._dispatch import confined_argv
from stockade.sandbox.backends.bwrap import NAME as BWRAP
from stockade.sandbox.backends.landlock import NAME as LANDLOCK
from stockade.sandbox.backends.landlock import PLAIN
from stockade.trust.secrets import DenyRead

WW = SandboxMode.WORKSPACE_WRITE


def bound(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return server


def test_the_grant_list_is_checked():
    assert agents.check_agents(["gpg", "ssh", "gpg"]) == ("ssh", "gpg")
    with pytest.raises(ValueError, match="unknown agent 'x11'"):
        agents.check_agents(["x11"])


def test_ssh_is_granted_the_socket_ssh_auth_sock_names(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    path = tmp_path / "agent.sock"
    with bound(path):
        grant = agents.grant(["ssh"], {"SSH_AUTH_SOCK": str(path), "HOME": str(home)})
    assert grant.sockets == (("ssh", str(path), str(path)),)
    assert grant.readable == ((str(home / ".ssh"), agents.SSH_READABLE),)
    assert grant.gaps == ()


@pytest.mark.parametrize(
    "environ, why",
    [
        ({}, "SSH_AUTH_SOCK is not set"),
        ({"SSH_AUTH_SOCK": "relative.sock"}, "names no socket"),
        ({"SSH_AUTH_SOCK": "/dev/null"}, "names no socket"),
    ],
)
def test_no_ssh_agent_is_said_and_nothing_opened(environ, why):
    grant = agents.grant(["ssh"], {"HOME": "/nonexistent", **environ})
    assert grant.sockets == () and grant.readable == ()
    assert len(grant.gaps) == 1 and why in grant.gaps[0]


def test_a_key_directory_is_hidden_entry_by_entry_all_but_its_public_files(tmp_path):
    dotssh = tmp_path / ".ssh"
    dotssh.mkdir()
    for name in ("id_ed25519", "id_ed25519.pub", "github", "config", "known_hosts"):
        (dotssh / name).write_text(name)
    deny = DenyRead(("~/.ssh",))
    environ = {"HOME": str(tmp_path)}
    whole = deny.expand((), environ=environ)
    assert whole.paths == (str(dotssh),)  # without the grant: the directory, whole
    narrowed = deny.expand((), environ=environ, readable=((str(dotssh), agents.SSH_READABLE),))
    assert sorted(narrowed.paths) == [str(dotssh / "github"), str(dotssh / "id_ed25519")]


def test_a_key_directory_that_is_a_link_stays_hidden_whole(tmp_path):
    real = tmp_path / "keys"
    real.mkdir()
    (real / "id_rsa").write_text("secret")
    (tmp_path / ".ssh").symlink_to(real)
    deny = DenyRead(("~/.ssh",))
    hidden = deny.expand(
        (), environ={"HOME": str(tmp_path)}, readable=((str(tmp_path / ".ssh"), ("*",)),)
    )
    assert hidden.paths == (str(real),)


def test_the_claim_names_each_agent_reached_and_what_it_can_do():
    grant = agents.AgentGrant(
        (("ssh", "/tmp/a.sock", "/tmp/a.sock"), ("gpg", "/h/S.gpg-agent.extra", "/h/S.gpg-agent")),
    )
    lines = agents.claim(grant, (("ssh", "/tmp/a.sock"), ("gpg", "/h/S.gpg-agent")))
    assert len(lines) == 2
    assert "ssh agent at /tmp/a.sock" in lines[0] and "key files stay hidden" in lines[0]
    assert "gpg-agent at /h/S.gpg-agent" in lines[1]
    # Not bound over the full socket (the plain tier): the full one is what gpg finds.
    plain = agents.claim(grant, (("gpg", "/h/S.gpg-agent.extra"),))
    assert agents.GPG_FULL_SOCKET_GAP in plain


def test_the_restricted_socket_is_bound_over_the_full_one_where_mounts_are_made():
    swap = ("/h/.gnupg/S.gpg-agent.extra", "/h/.gnupg/S.gpg-agent")
    assert agent_swaps((swap, ("/tmp/s", "/tmp/s")), fresh_plan((), ())) == (swap,)
    # A view in a fresh directory is bound there by the plan instead.
    inside = ("/run/user/0/gnupg/S.gpg-agent.extra", "/run/user/0/gnupg/S.gpg-agent")
    assert agent_swaps((inside,), fresh_plan(("/run",), ())) == ()

    def args(backend, **kwargs):
        return list(
            confined_argv(
                backend, "RUNNER", WW, "/w", (), ("cmd",), network=Network.ON,
                agent_sockets=(swap,), **kwargs,
            )
        )  # fmt: skip

    bwrap = args(BWRAP, launcher="/opt/llr")
    at = bwrap.index(swap[0])
    assert bwrap[at - 1 : at + 2] == ["--ro-bind", *swap]
    landlock = args(LANDLOCK)
    at = landlock.index("--bind-socket")
    assert landlock[at : at + 3] == ["--bind-socket", *swap]
    assert "--bind-socket" not in args(LANDLOCK, tier=PLAIN)


def test_gpg_finds_its_sockets_with_gpgconf_from_the_system_alone(tmp_path, monkeypatch):
    """gpgconf runs unconfined: never one a workspace on PATH could hold."""
    planted = tmp_path / "gpgconf"
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    planted.chmod(0o755)
    monkeypatch.setattr(agents, "_GPG_DIRS", {})
    agents.gpg_dirs({"HOME": str(tmp_path), "PATH": str(tmp_path)})
    assert not (tmp_path / "ran").exists()
    assert os.path.isabs(agents.SYSTEM_BIN[0])

"""The agents' sockets, opted into (issue 37): a signed commit through the person's
gpg-agent with `allow_gpg_agent: true`, a push over SSH to a local sshd through the
person's ssh-agent with `allow_ssh_agent: true`, each set in the sandbox provider's
config of the default composition. The key files stay unreadable to the command.
Both backends, root and nobody; an unconfined control for each shows the fixtures
(agents, key, server) work, so a failure is the sandbox's.

The fixtures: a throwaway ed25519 key in `~/.gnupg` of the fresh home, its gpg-agent
started by gpg itself; an ssh key in `~/.ssh`, loaded into an ssh-agent listening
under /tmp as OpenSSH's default does; sshd run by root on 127.0.0.1 with a host key
and authorized_keys of its own in temp files, logging in as root to a bare
repository. A host's sshd is outside a command's own loopback, so the push's session
has the network on (`network: on` in bash's config: no escalation).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .support import IS_ROOT, NOBODY, Place, Workflows, snapshot

pytestmark = pytest.mark.nobody  # runs the harness and the agents as uid 65534


def as_user(place: Place, argv: list[str], env: dict[str, str] | None = None, **options):
    """`argv` as the workflow's user with its HOME, checked."""
    user = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if place.who == "nobody" else {}
    environment = {"HOME": str(place.home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    return subprocess.run(
        argv,
        env={**environment, **(env or {})},
        cwd=str(place.home),
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
        **user,
        **options,
    )


def unconfined(place: Place, script: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The control: `script` run as the user in the root, no sandbox."""
    user = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if place.who == "nobody" else {}
    return subprocess.run(
        ["bash", "-c", script],
        env={"HOME": str(place.home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", **env},
        cwd=str(place.root),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        **user,
    )


# ---- gpg ------------------------------------------------------------------------------


@pytest.fixture
def gpg_key(wf: Workflows, place: Place) -> Iterator[str]:
    """A throwaway signing key in ~/.gnupg (no passphrase), named in ~/.gitconfig; its
    gpg-agent killed at the end. The key's fingerprint."""
    wf.need("gpg", "gpg-agent", "gpgconf")
    gnupg = place.home / ".gnupg"
    gnupg.mkdir(mode=0o700)
    place.hand_over()  # the home is the user's before gpg writes in it
    try:
        as_user(
            place,
            [
                "gpg",
                "--batch",
                "--pinentry-mode",
                "loopback",
                "--passphrase",
                "",
                "--quick-gen-key",
                "Work Flow <workflow@example.invalid>",
                "ed25519",
                "sign",
                "never",
            ],
        )
        listed = as_user(place, ["gpg", "--batch", "--with-colons", "--list-secret-keys"]).stdout
        fingerprint = next(
            line.split(":")[9] for line in listed.splitlines() if line.startswith("fpr:")
        )
        with (place.home / ".gitconfig").open("a") as config:
            config.write(f"\tsigningkey = {fingerprint}\n")
        yield fingerprint
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            as_user(place, ["gpgconf", "--kill", "gpg-agent"])


SIGN = """
set -euo pipefail
git init -q app && cd app
echo one > a.txt && git add a.txt
git commit -q -S -m signed
git verify-commit HEAD 2>&1 | grep -q 'Good signature'
echo SIGNED-OK
if cat ~/.gnupg/private-keys-v1.d/* >/dev/null 2>&1; then echo KEY-READ; fi
# The key has no passphrase: through the agent's full socket it is exported unasked.
gpg --batch --pinentry-mode loopback --passphrase '' --export-secret-keys \
    > "${TMPDIR:-/tmp}/exported" 2>/dev/null || true
if [ -s "${TMPDIR:-/tmp}/exported" ]; then echo KEY-EXPORTED; fi
rm -f "${TMPDIR:-/tmp}/exported"
"""


def test_the_control_signs_a_commit_unconfined(wf: Workflows, place, gpg_key):
    wf.need("git")
    done = unconfined(place, SIGN, {})
    assert "SIGNED-OK" in done.stdout, done.stdout + done.stderr
    # Unconfined, the key files are the person's to read, and the agent exports the
    # key: the sandbox must allow neither.
    assert "KEY-READ" in done.stdout
    assert "KEY-EXPORTED" in done.stdout


def test_a_signed_commit_with_allow_gpg_agent(wf: Workflows, place, gpg_key):
    wf.need("git")
    place.before = snapshot(place.home, place.root)  # with the key the fixture made
    outcome = wf.run(place, [SIGN], sandbox={"allow_gpg_agent": True})
    outcome.assert_clean()
    assert "SIGNED-OK" in outcome.text(), outcome.text()
    assert "KEY-READ" not in outcome.text()
    # The agent's restricted socket, bound where gpg looks for the full one.
    assert "KEY-EXPORTED" not in outcome.text(), outcome.text()
    assert outcome.policy is not None and "gpg" in outcome.policy.lower(), outcome.policy
    place.assert_home_untouched()


# ---- ssh ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ssh:
    agent: str  # SSH_AUTH_SOCK
    port: int
    remote: str  # the bare repository's path on the server


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        assert time.monotonic() < deadline, f"sshd never listened on {port}"
        time.sleep(0.05)


@pytest.fixture
def ssh(wf: Workflows, place: Place) -> Iterator[Ssh]:
    """sshd (root, 127.0.0.1, its own host key and authorized_keys), a bare repository
    it serves, and the user's ssh-agent holding the user's key from ~/.ssh."""
    wf.need("ssh", "ssh-agent", "ssh-add", "ssh-keygen", "sshd")
    if not IS_ROOT:
        pytest.skip("sshd runs as root")
    server = place.fixtures / "sshd"
    server.mkdir()
    remote = server / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    hostkey = server / "host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey)], check=True)
    dotssh = place.home / ".ssh"
    dotssh.mkdir(mode=0o700)
    agent_dir = Path(tempfile.mkdtemp(prefix="ssh-", dir="/tmp"))
    place.hand_over()  # the home and the agent's directory are the user's
    os.chown(agent_dir, place.uid, place.uid)
    for path in server.rglob("*"):  # the server's files stay root's
        os.lchown(path, 0, 0)
    os.lchown(server, 0, 0)
    as_user(
        place, ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(dotssh / "id_ed25519")]
    )
    port = _free_port()
    authorized = server / "authorized_keys"
    authorized.write_text((dotssh / "id_ed25519.pub").read_text())
    host_public = (server / "host_key.pub").read_text().split()[:2]
    (dotssh / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_public)}\n")
    os.lchown(dotssh / "known_hosts", place.uid, place.uid)
    config = server / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {hostkey}\n"
        f"AuthorizedKeysFile {authorized}\nPidFile {server / 'sshd.pid'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n"
        "AllowUsers root\nLogLevel VERBOSE\n"
    )
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation
    sshd = subprocess.Popen(
        [shutil.which("sshd", path="/usr/sbin:/usr/bin"), "-D", "-e", "-f", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=open(server / "sshd.log", "w"),  # noqa: SIM115
    )
    agent_sock = str(agent_dir / "agent.sock")
    user = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if place.who == "nobody" else {}
    agent = subprocess.Popen(
        ["ssh-agent", "-D", "-a", agent_sock],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin"},
        **user,
    )
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(agent_sock):
            assert time.monotonic() < deadline, "ssh-agent never made its socket"
            time.sleep(0.05)
        as_user(place, ["ssh-add", "-q", str(dotssh / "id_ed25519")], {"SSH_AUTH_SOCK": agent_sock})
        _listening(port)
        yield Ssh(agent_sock, port, str(remote))
    finally:
        for process in (agent, sshd):
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            if process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(agent_dir, ignore_errors=True)


PUSH = """
set -euo pipefail
export GIT_SSH_COMMAND="ssh -o BatchMode=yes -o UserKnownHostsFile=$HOME/.ssh/known_hosts \
-o IdentityFile=none"
ssh-add -l | grep -q ED25519
git init -q -b main app && cd app
echo one > a.txt && git add a.txt && git commit -qm one
git push -q "ssh://root@127.0.0.1:$PORT$REMOTE" main
echo PUSHED-OK
if cat ~/.ssh/id_ed25519 >/dev/null 2>&1; then echo KEY-READ; fi
"""


def push_env(ssh: Ssh) -> dict[str, str]:
    return {"SSH_AUTH_SOCK": ssh.agent, "PORT": str(ssh.port), "REMOTE": ssh.remote}


def pushed(ssh: Ssh) -> str:
    done = subprocess.run(
        ["git", "--git-dir", ssh.remote, "log", "--format=%s", "main"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def test_the_control_pushes_over_ssh_unconfined(wf: Workflows, place, ssh):
    wf.need("git")
    done = unconfined(place, PUSH, push_env(ssh))
    assert "PUSHED-OK" in done.stdout, done.stdout + done.stderr
    assert "KEY-READ" in done.stdout
    assert pushed(ssh) == "one"


def test_a_push_over_ssh_with_allow_ssh_agent(wf: Workflows, place, ssh):
    wf.need("git")
    place.before = snapshot(place.home, place.root)  # with the keys the fixture made
    outcome = wf.run(
        place,
        [f"export PORT={ssh.port} REMOTE={ssh.remote}\n{PUSH}"],
        sandbox={"allow_ssh_agent": True},
        bash={"network": "on"},
        env={"SSH_AUTH_SOCK": ssh.agent},
    )
    outcome.assert_clean()
    assert "PUSHED-OK" in outcome.text(), outcome.text()
    assert "KEY-READ" not in outcome.text()
    assert outcome.policy is not None and "ssh" in outcome.policy.lower(), outcome.policy
    assert pushed(ssh) == "one"
    place.assert_home_untouched()

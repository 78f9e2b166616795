"""The hosts the fallback exists for (issue 36): no namespace can be made.

Each host is simulated for one process tree, never by changing a host-wide setting:

- (a) a non-root user where no user namespace can be made (Ubuntu 24.04's AppArmor
  restriction, `user.max_user_namespaces=0`): `bwrap --unshare-user --uid 1000
  --disable-userns`, the tree running as uid 1000 without capabilities;
- (b) root without CAP_SYS_ADMIN whose seccomp refuses namespaces (a container under
  Docker's default profile): `hosts/nons.c`, compiled here.

In both, `stockade probe` selects Landlock's plain tier and says why; `stockade run`,
`exec` and the demo work; and a battery of escape attempts, judged from outside the
simulated host, is held, but for what the results' gaps name. The same battery runs
unconfined as the control.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..support import IN_CI

pytestmark = pytest.mark.kernel

HOSTS = ("no-userns-user", "docker-like-root")
NONS = Path(__file__).with_name("hosts") / "nons.c"
VICTIM = "original\n"


@dataclass
class Host:
    """A simulated host: `prefix` runs a command inside it; `base` (bound writable in
    it) holds the workspace root `ws`, a victim tree `outside` and the state directory."""

    name: str
    prefix: list[str]
    base: Path

    @property
    def root(self) -> Path:
        return self.base / "ws"

    @property
    def outside(self) -> Path:
        return self.base / "outside"

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "STOCKADE_STATE_DIR": str(self.base / "state"),
            "HOME": str(self.base / "home"),
            "STOCKADE_NO_PROBE_CACHE": "1",
        }
        return subprocess.run(
            [*self.prefix, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.root,
            env=env,
            stdin=subprocess.DEVNULL,
        )

    def stockade(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "stockade", *argv, timeout=timeout)


def _need(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        if IN_CI:
            pytest.fail(f"CI=true and {tool} is missing: the simulated hosts need it")
        pytest.skip(f"{tool} is not installed")
    return found


@pytest.fixture(scope="module")
def nons(tmp_path_factory) -> str:
    compiler = _need("cc")
    binary = tmp_path_factory.mktemp("nons") / "nons"
    subprocess.run([compiler, "-O2", "-o", str(binary), str(NONS)], check=True)
    return str(binary)


@pytest.fixture(params=HOSTS)
def host(request, nons) -> Iterator[Host]:
    if os.geteuid() != 0:
        pytest.skip("simulating these hosts needs a root caller")
    base = Path(tempfile.mkdtemp(prefix="stockade-plain-host-", dir="/var/tmp"))
    for name in ("ws", "outside", "state", "home"):
        (base / name).mkdir()
    (base / "outside" / "victim.txt").write_text(VICTIM)
    os.chmod(base, 0o755)
    if request.param == "no-userns-user":
        bwrap = _need("bwrap")
        prefix = [
            bwrap,
            "--unshare-user",
            "--uid",
            "1000",
            "--gid",
            "1000",
            "--disable-userns",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--bind",
            str(base),
            str(base),
            "--tmpfs",
            "/tmp",
            "--",
        ]
    else:
        prefix = [nons]
    try:
        yield Host(request.param, prefix, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_probe_selects_the_plain_tier_and_says_why(host):
    done = host.stockade("probe", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    landlock = next(c for c in report["candidates"] if c["backend"] == "landlock")
    tiers = {t["tier"]: t for t in landlock["tiers"]}
    assert not tiers["namespaced"]["usable"]
    assert "no namespace can be made" in tiers["namespaced"]["why_not"]
    assert tiers["plain"]["usable"] and tiers["plain"]["selected"]
    assert report["selected"] == "landlock"
    text = host.stockade("probe").stdout
    assert "tier plain: usable (selected" in text
    assert "selected: landlock, tier plain (not namespaced: no namespace can be made" in text


def test_run_exec_and_the_demo_work(host):
    done = host.stockade("run", "--json", "--", "sh", "-c", "echo made > made.txt; cat made.txt")
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["backend"] == "landlock" and facts["tier"] == "plain", facts
    assert (host.root / "made.txt").read_text() == "made\n"
    ran = host.stockade("exec", "--", "sh", "-c", "echo exec-ran")
    assert ran.returncode == 0 and ran.stdout == "exec-ran\n", ran.stderr
    # One line says which tier, and why not the stronger.
    (line,) = ran.stderr.splitlines()
    assert line.startswith("stockade: Landlock's plain tier (not namespaced: no namespace"), line
    demo = host.stockade("demo", timeout=240)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]


class Listener:
    """A TCP (IPv4 and IPv6) and UDP server on the host's loopback, and a named Unix
    socket, each counting what reaches it."""

    def __init__(self, directory: Path) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        self.tcp6 = socket.create_server(("::1", 0), family=socket.AF_INET6)
        self.port6 = self.tcp6.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.udp_port = self.udp.getsockname()[1]
        self.unix_path = str(directory / "host.sock")
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(self.unix_path)
        os.chmod(self.unix_path, 0o777)
        self.unix.listen()
        self.reached: list[str] = []
        for name, sock in (("tcp", self.tcp), ("tcp6", self.tcp6), ("unix", self.unix)):
            sock.settimeout(0.2)
            threading.Thread(target=self._accept, args=(name, sock), daemon=True).start()
        self.udp.settimeout(0.2)
        threading.Thread(target=self._receive, daemon=True).start()
        self.stop = False

    def _accept(self, name: str, sock: socket.socket) -> None:
        while not getattr(self, "stop", False):
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            self.reached.append(name)
            conn.close()

    def _receive(self) -> None:
        while not getattr(self, "stop", False):
            try:
                self.udp.recv(100)
            except OSError:
                continue
            self.reached.append("udp")

    def close(self) -> None:
        self.stop = True
        time.sleep(0.3)
        for sock in (self.tcp, self.tcp6, self.udp, self.unix):
            sock.close()


def attacks(host: Host, listener: Listener, victim_pid: int) -> str:
    """Every escape the battery tries, one shell script; each leaves a trace on the host
    only if it worked."""
    outside, root = host.outside, host.root
    python = f"{sys.executable} -I -S -c"
    return "\n".join(
        [
            f"echo pwned > {outside}/victim.txt",
            f"echo new > {outside}/new.txt",
            f"ln -s {outside}/victim.txt link && echo pwned > link",
            f"ln {outside}/victim.txt hard && echo pwned >> hard",
            "echo pwned > ../outside/victim.txt",
            f"mv {outside}/victim.txt stolen.txt",
            "cp /bin/sh ./suid && chmod u+s ./suid",
            "echo stockade-test > /proc/sys/kernel/hostname",
            f"kill -9 {victim_pid}",
            # A survivor: out of the command's session and process group, past its end.
            f"(setsid sh -c 'sleep 1.5; echo survived > {root}/late.txt' &)",
            f'{python} "import os\nif os.fork() == 0:\n os.setsid()\n'
            f" if os.fork() == 0:\n  import time; time.sleep(1.5); "
            f"open('{root}/late2.txt', 'w').write('x')\"",
            f"{python} \"import socket; socket.create_connection(('127.0.0.1', {listener.port}), 2)\"",
            f"{python} \"import socket; socket.create_connection(('::1', {listener.port6}), 2)\"",
            f'{python} "import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
            f"s.sendto(b'x', ('127.0.0.1', {listener.udp_port}))\"",
            f"{python} \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{listener.unix_path}')\"",
            "true",
        ]
    )


def _judge(host: Host, listener: Listener, victim: subprocess.Popen[bytes]) -> list[str]:
    """What the attacks changed on the host."""
    time.sleep(2.5)  # past the survivors' sleep
    found = []
    victim_file = host.outside / "victim.txt"
    if not victim_file.exists() or victim_file.read_text() != VICTIM:
        found.append("victim changed or moved")
    if (host.outside / "new.txt").exists():
        found.append("a file made outside")
    suid = host.root / "suid"
    if suid.exists() and suid.stat().st_mode & 0o4000:
        found.append("a setuid bit set")
    if socket.gethostname() == "stockade-test":
        found.append("the hostname changed")
    if victim.poll() is not None:
        found.append("a host process killed")
    for late in ("late.txt", "late2.txt"):
        if (host.root / late).exists():
            found.append(f"a process survived its call ({late})")
    found += [f"reached the host's {name}" for name in listener.reached]
    return found


def test_the_battery_is_held_but_for_the_named_gaps(host):
    listener = Listener(host.base)
    victim = subprocess.Popen(["sleep", "60"])
    try:
        script = attacks(host, listener, victim.pid)
        done = host.stockade("run", "--json", "--network", "off", script, timeout=120)
        assert done.returncode == 0, done.stderr
        facts = json.loads(done.stdout)
        assert facts["tier"] == "plain", facts
        found = _judge(host, listener, victim)
    finally:
        listener.close()
        victim.kill()
    # What the plain tier names as open in workspace-write with network off: the
    # host's named Unix sockets (no mount namespace to cover them).
    named = " ".join(facts["gaps"] + facts["network_gaps"])
    assert "pathname unix sockets of host processes" in named
    assert [f for f in found if f != "reached the host's unix"] == [], (found, facts)


def test_the_control_shows_each_attack_is_real(host):
    """The same script, unconfined in the same simulated host (danger-full-access):
    each attack that must be held leaves its trace."""
    listener = Listener(host.base)
    victim = subprocess.Popen(["sleep", "60"])
    try:
        script = attacks(host, listener, victim.pid).replace(
            "echo stockade-test > /proc/sys/kernel/hostname", "true"
        )
        done = host.stockade("run", "--json", "--mode", "danger-full-access", script, timeout=120)
        assert done.returncode == 0, done.stderr
        found = _judge(host, listener, victim)
    finally:
        listener.close()
        victim.kill()
    for trace in (
        "victim changed or moved",
        "a file made outside",
        "a host process killed",
        "reached the host's tcp",
        "reached the host's udp",
        "reached the host's unix",
    ):
        assert trace in found, (trace, found)

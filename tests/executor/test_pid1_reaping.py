"""A harness run as its PID namespace's init (an agent as a container's pid 1, `docker
run` without `--init`) is left no zombie by its bwrap calls. bwrap exits before the
init of the PID namespace it made, which the nearest reaper inherits: that harness,
which nobody else reaps for. Judged from inside a new PID namespace whose pid 1 is the
harness: no zombie child of it is left once its calls (and its backend's probe) are
done. The control: the same pid 1 running bwrap directly is left one per run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from stockade.executor import _orphans
from stockade.sandbox import _probe, namespace_init, reap_orphaned_init
from stockade.sandbox._probe import launcher_path
from stockade.sandbox.backends import bwrap
from stockade.sandbox.backends.bwrap import is_namespace_init

from ..support import IN_CI, need, require_backend

pytestmark = pytest.mark.kernel

# The zombies whose parent is this process (pid 1), by name.
ZOMBIES = r"""
def zombies():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        state, parent = text[text.rindex(")") + 2 :].split()[:2]
        if state == "Z" and int(parent) == os.getpid():
            found.append(name)
    return found
"""

AS_PID_1 = (
    r"""
import json, os, subprocess, sys
"""
    + ZOMBIES
    + r"""
async def through_the_executor(root):
    from stockade.executor.actor import open_executor
    from stockade.executor.config import ExecutorConfig
    from stockade.sandbox.actor import open_provider
    from stockade.sandbox.config import ProviderConfig
    from stockade.vocab import ExecutionPolicy, SandboxMode

    statuses = []
    async with (
        open_provider(ProviderConfig(backend="bwrap")) as provider,
        open_executor(ExecutorConfig(kill_grace=0.5), provider) as executor,
    ):
        for mode in (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE):
            for command in ("true", "(sleep 0.2 &) ; setsid sleep 0.1 & true"):
                policy = ExecutionPolicy(mode=mode, workspace_root=root)
                result = await executor.run(executor.resolve(command, policy=policy))
                statuses.append((result.exit_code, result.backend))
    return statuses

async def unconfined(root):
    # What the embedder itself runs and waits for (its own child, in a session of its
    # own, ended before any call): its status stays its own.
    own = subprocess.Popen(["sh", "-c", "exit 7"], start_new_session=True)
    os.waitid(os.P_PID, own.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped
    from stockade.executor.actor import open_executor
    from stockade.executor.config import ExecutorConfig
    from stockade.limits import Limits, SessionLimits
    from stockade.vocab import ExecutionPolicy, SandboxMode

    off = ExecutorConfig(
        kill_grace=0.5,
        limits=Limits(processes=None, memory=None, file_size=None, open_files=None),
        session_limits=SessionLimits(processes=None, memory=None),
    )
    statuses = []
    policy = ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=root)
    # Limits on: the call's cgroup ends what left its group (setsid, given the time to
    # leave it before the call ends); off: the group's own.
    # And the harness's cpu_seconds watch, which kills the call's cgroup mid-call: what
    # left its group (setsid) is killed then, long before the call's end looks.
    cpu = ExecutorConfig(kill_grace=0.5, limits=Limits(cpu_seconds=0.3))
    for config, command in (
        (ExecutorConfig(kill_grace=0.5), "(sleep 0.2 &) ; setsid sleep 30 & sleep 30 & sleep 0.3"),
        (off, "(sleep 0.2 &) ; sleep 30 & (sleep 30 &) ; true"),
        (cpu, "setsid sleep 30 & sleep 0.2; while :; do :; done"),
    ):
        async with open_executor(config) as executor:
            result = await executor.run(executor.resolve(command, policy=policy))
            statuses.append((result.exit_code, result.backend))
    statuses.append(own.wait())
    return statuses

how, root = sys.argv[1:]
assert os.getpid() == 1
if how == "executor":
    import trio
    statuses = trio.run(through_the_executor, root)
elif how == "unconfined":
    import trio
    statuses = trio.run(unconfined, root)
else:
    import shutil

    bwrap = shutil.which("bwrap")
    statuses = [
        subprocess.run([bwrap, "--unshare-pid", "--dev-bind", "/", "/", "true"]).returncode
        for _ in range(3)
    ]
print(json.dumps({"statuses": statuses, "zombies": zombies()}))
"""
)


def as_pid_1(how: str, root: Path, tmp_path: Path) -> dict:
    """Run AS_PID_1 as the init of a new PID namespace; its JSON report."""
    return run_as_pid_1(AS_PID_1, [how, str(root)], tmp_path)


def run_as_pid_1(text: str, args: list[str], tmp_path: Path) -> dict:
    """Run the script `text` with `args` as the init of a new PID namespace; the JSON
    report it prints last."""
    need("unshare")
    script = tmp_path / "as_pid_1.py"
    script.write_text(text)
    namespaces = ["--pid", "--fork", "--mount-proc"]
    if os.geteuid() != 0:
        namespaces = ["--user", "--map-root-user", *namespaces]
    done = subprocess.run(
        ["unshare", *namespaces, sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        # A fresh probe, whose own init is reaped as a call's is.
        env={**os.environ, "STOCKADE_NO_PROBE_CACHE": "1"},
    )
    if done.returncode != 0 and "unshare failed" in done.stderr:
        message = f"cannot make a PID namespace here: {done.stderr.strip()}"
        if IN_CI:
            pytest.fail(f"CI=true and {message}")
        pytest.skip(message)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    require_backend("bwrap")
    base = tmp_path / "root"
    base.mkdir()
    return base


def test_control_pid_1_running_bwrap_directly_is_left_zombies(root, tmp_path):
    report = as_pid_1("direct", root, tmp_path)
    assert report["statuses"] == [0, 0, 0]
    assert report["zombies"].count("bwrap") >= 1, report


def test_a_harness_as_pid_1_is_left_no_zombie_by_its_bwrap_calls(root, tmp_path):
    report = as_pid_1("executor", root, tmp_path)
    assert report["statuses"] == [[0, "bwrap"]] * 4, report
    assert report["zombies"] == [], report


def test_a_harness_as_pid_1_is_left_no_zombie_by_what_unconfined_calls_left(tmp_path):
    """danger-full-access: no launcher's or namespace's init reaps inside; what the
    command left behind (killed with its group, or by its cgroup) comes to the harness.
    Every such zombie is reaped, and the embedder's own ended child is not: its status
    (7) is still its waiter's. The control: the same commands run by pid 1 directly."""
    base = tmp_path / "root"
    base.mkdir()
    report = as_pid_1("unconfined", base, tmp_path)
    assert report["statuses"] == [[0, "none"], [0, "none"], [137, "none"], 7], report
    assert report["zombies"] == [], report


UNDER_PID_1 = (
    r"""
import json, os, subprocess, sys, time
"""
    + ZOMBIES
    + r"""
root, verb, backend = sys.argv[1:]
assert os.getpid() == 1
# What it leaves runs on past the call's end (unconfined: its cgroup's end kills it),
# so none ends on its own before that (which no pid-1 harness reaps either).
leaving = "(sleep 30 &) ; setsid sleep 30 & sleep 30 & true"
modes = ["read-only", "workspace-write"]
if verb == "run":
    modes.append("danger-full-access")
statuses = []
for mode in modes:
    words = ["sh", "-c", leaving] if verb == "exec" else [leaving]
    # As an agent's runtime does: pid 1 waits for its own child (stockade) and for
    # nothing else.
    statuses.append(subprocess.run(
        [sys.executable, "-m", "stockade", verb, "--backend", backend, "--mode", mode,
         "--", *words],
        cwd=root, capture_output=True,
    ).returncode)
if verb == "exec":
    # exec's network proxy, its own child, ended and reaped with the call.
    statuses.append(subprocess.run(
        [sys.executable, "-m", "stockade", "exec", "--backend", backend,
         "--allow", "example.com", "--", "true"],
        cwd=root, capture_output=True,
    ).returncode)
# An unconfined exec becomes the command, which is not made anyone's reaper.
ASKS = "import ctypes; r = ctypes.c_int(); ctypes.CDLL(None).prctl(37, ctypes.byref(r)); print(r.value)"
unconfined = subprocess.run(
    [sys.executable, "-m", "stockade", verb, "--mode", "danger-full-access", "--",
     *([sys.executable, "-c", ASKS] if verb == "exec" else [f"{sys.executable} -c '{ASKS}'"])],
    cwd=root, capture_output=True, text=True,
)
time.sleep(0.5)
print(json.dumps({
    "statuses": statuses, "zombies": zombies(), "reaper": unconfined.stdout.strip()[-1:]
}))
"""
)


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
@pytest.mark.parametrize("verb", ["exec", "run"])
def test_stockade_leaves_a_non_reaping_pid_1_parent_no_zombie(verb, backend, tmp_path):
    """An agent run as a container's pid 1 that reaps only its own children, running
    `stockade exec` (or `run`) per command: bwrap's namespace inits (the fresh probe's,
    each call's), exec's network proxy and what an unconfined command left come to
    stockade, made their reaper, not to that pid 1. The controls:
    `test_control_pid_1_running_bwrap_directly_is_left_zombies` and
    `test_control_pid_1_running_the_same_commands_directly_is_left_zombies`."""
    require_backend(backend)
    base = tmp_path / "root"
    base.mkdir()
    report = run_as_pid_1(UNDER_PID_1, [str(base), verb, backend], tmp_path)
    modes = 3  # read-only, workspace-write, and exec's allowlist or run's unconfined
    assert report == {"statuses": [0] * modes, "zombies": [], "reaper": "0"}, report


INIT_REAPS = (
    r"""
import json, os, subprocess, sys, threading, time
"""
    + ZOMBIES
    + r"""
assert os.getpid() == 1
if sys.argv[1] == "reaps":  # as tini does: every child, as it ends
    def reap():
        while True:
            try:
                os.wait()
            except ChildProcessError:
                time.sleep(0.01)
    threading.Thread(target=reap, daemon=True).start()
asked = subprocess.Popen(
    [sys.executable, "-c", "from stockade.executor import init_reaps; print(init_reaps())"],
    stdout=subprocess.PIPE, text=True,
)
said = asked.stdout.read().strip()
print(json.dumps({"said": said}))
"""
)


@pytest.mark.parametrize("init", ["reaps", "never"])
def test_whether_the_init_reaps_is_told(init, tmp_path):
    """What the servers adopt by (`executor.init_reaps`): a test orphan, reaped at once
    by an init that reaps (as tini), left by one that does not (an agent's runtime)."""
    report = run_as_pid_1(INIT_REAPS, [init], tmp_path)
    assert report == {"said": "True" if init == "reaps" else "False"}, report


MCP_UNDER_PID_1 = (
    r"""
import json, os, sys, time
"""
    + ZOMBIES
    + r"""
import trio
repo, root, state = sys.argv[1:]
sys.path.insert(0, repo)
from tests.mcp.support import connect, text

async def calls():
    said = []
    async with connect(Path(root), Path(state), "--mode", "read-only") as client:
        for _ in range(3):
            said.append(text(await client.call_tool("bash", {"command": "true"})))
    return said

from pathlib import Path
assert os.getpid() == 1
said = trio.run(calls)
time.sleep(0.5)
print(json.dumps({"said": len(said), "zombies": zombies()}))
"""
)


def test_an_mcp_server_under_a_non_reaping_pid_1_leaves_it_one_zombie_not_one_a_call(
    tmp_path,
):
    """`stockade mcp` started by an agent as a container's pid 1 that never reaps: its
    test orphan (`init_reaps`) is that init's, and nothing of its calls is (three bwrap
    calls left three zombies before). The controls above show bwrap's init is real."""
    require_backend("bwrap")
    base = tmp_path / "root"
    base.mkdir()
    # Session logs outside every temp root (the harness refuses one a command could write).
    state = Path(tempfile.mkdtemp(prefix="stockade-pid1-state-", dir="/var/tmp"))
    try:
        repo = Path(__file__).resolve().parents[2]
        report = run_as_pid_1(MCP_UNDER_PID_1, [str(repo), str(base), str(state)], tmp_path)
    finally:
        shutil.rmtree(state, ignore_errors=True)
    assert report["said"] == 3, report
    assert len(report["zombies"]) == 1 and "bwrap" not in report["zombies"], report


ACP_UNDER_PID_1 = (
    r"""
import asyncio, json, os, sys, time
from pathlib import Path
"""
    + ZOMBIES
    + r"""
repo, script, workspace, state = sys.argv[1:]
sys.path.insert(0, repo)
import acp
from tests.acp.support import ScriptedClient, agent_env

async def prompts():
    client = ScriptedClient()
    async with acp.spawn_agent_process(
        client, script, "--model", "shell", "--mode", "read-only",
        env=agent_env(state), cwd=workspace,
        transport_kwargs={"shutdown_timeout": 10.0},
    ) as (conn, _):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd=workspace)
        for _ in range(3):
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("true")])
        return len(client.tool_results(session.session_id)), len(client.asked)

assert os.getpid() == 1
results, asked = asyncio.run(asyncio.wait_for(prompts(), 90))
time.sleep(0.5)
print(json.dumps({"results": results, "asked": asked, "zombies": zombies()}))
"""
)


def _acp_agent_script() -> str:
    """The installed `stockade-acp-agent` script beside this interpreter (the venv's)."""
    script = Path(sys.executable).parent / "stockade-acp-agent"
    need(script.name, path=str(script.parent))
    return str(script)


def test_the_acp_agent_script_under_a_non_reaping_pid_1_leaves_it_one_zombie(tmp_path):
    """`stockade-acp-agent` (its own script, not `stockade acp`) started by an editor or
    agent as a container's pid 1 that never reaps, driven by the ACP SDK's client: its
    test orphan is that init's, and nothing of its three bwrap calls is. Before, it did
    not adopt at all (one bwrap init a call; the controls above show they are real)."""
    require_backend("bwrap")
    script = _acp_agent_script()
    workspace = tmp_path / "project"
    workspace.mkdir()
    state = Path(tempfile.mkdtemp(prefix="stockade-pid1-state-", dir="/var/tmp"))
    try:
        repo = Path(__file__).resolve().parents[2]
        report = run_as_pid_1(
            ACP_UNDER_PID_1, [str(repo), script, str(workspace), str(state)], tmp_path
        )
    finally:
        shutil.rmtree(state, ignore_errors=True)
    assert report["results"] >= 3 and report["asked"] == 0, report
    assert len(report["zombies"]) == 1 and "bwrap" not in report["zombies"], report


HELP_UNDER_PID_1 = (
    r"""
import json, os, subprocess, sys, time
"""
    + ZOMBIES
    + r"""
assert os.getpid() == 1
statuses = [
    subprocess.run(json.loads(words), capture_output=True).returncode
    for words in sys.argv[1:]
]
time.sleep(0.5)
print(json.dumps({"statuses": statuses, "zombies": zombies()}))
"""
)


def test_the_acp_agents_help_under_a_non_reaping_pid_1_leaves_it_nothing(tmp_path):
    """`--help` serves nothing, so it hands the init no test orphan (which would stay its
    zombie): the servers adopt once their words are read. The same words serving do
    leave one (the test above), so the orphan is real."""
    stockade = str(Path(sys.executable).parent / "stockade")
    need("stockade", path=str(Path(stockade).parent))
    commands = [[stockade, "acp", "--help"], [_acp_agent_script(), "--help"]]
    report = run_as_pid_1(HELP_UNDER_PID_1, [json.dumps(c) for c in commands], tmp_path)
    assert report == {"statuses": [0, 0], "zombies": []}, report


def test_pid_1_under_another_namespaces_proc_reaps_nothing(monkeypatch):
    """/proc mounted for the namespace above (`unshare --pid --fork` without
    `--mount-proc`) names other processes by the numbers a harness would read: such a
    pid 1 reaps nothing. (A container mounts its own.)"""
    monkeypatch.setattr(os, "getpid", lambda: 1)
    monkeypatch.setattr(os, "readlink", lambda path: "4242")
    assert _orphans.reaps_orphans() is False
    monkeypatch.setattr(os, "readlink", lambda path: "1")
    assert _orphans.reaps_orphans() is True


def test_control_pid_1_running_the_same_commands_directly_is_left_zombies(tmp_path):
    script = (
        "import json, os, signal, subprocess, time\n"
        + ZOMBIES
        + "leader = subprocess.Popen(['bash', '-c', '(sleep 0.2 &) ; sleep 30 & true'],"
        " start_new_session=True)\n"
        "leader.wait()\n"
        "os.killpg(leader.pid, signal.SIGKILL)\n"
        "time.sleep(0.5)\n"
        "print(json.dumps({'zombies': zombies()}))\n"
    )
    assert len(run_as_pid_1(script, [], tmp_path)["zombies"]) >= 2


def test_an_info_fd_report_names_an_init_or_nothing():
    # This process is no namespace's init: a number that names it now is not taken.
    me = os.getpid()
    for report in (
        f'{{\n    "child-pid": {me},\n    "cgroup-namespace": 1\n}}',
        f'{{"child-pid":{me}}}',
        b"",
        b"{}",
        b'{"child-pid": "1"}',
        b'{"child-pid": -1}',
        b"garbage",
    ):
        assert namespace_init(report.encode() if isinstance(report, str) else report) is None


def test_a_number_given_to_a_child_of_ours_since_is_never_reaped():
    """The report is read late: its number may name a child of this process by then
    (a call's exited leader its caller has yet to reap). Only a namespace's init is
    reaped; the child's status stays its waiter's."""
    child = subprocess.Popen(["sh", "-c", "exit 7"])
    pidfd = os.pidfd_open(child.pid)
    try:
        os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOWAIT)  # exited, not reaped
        reap_orphaned_init(pidfd)
    finally:
        os.close(pidfd)
    assert child.wait(timeout=5) == 7


def test_a_namespace_init_is_told_from_other_processes():
    need("unshare")
    namespaces = ["--pid", "--fork"]
    if os.geteuid() != 0:
        namespaces = ["--user", "--map-root-user", *namespaces]
    holder = subprocess.Popen(["unshare", *namespaces, "sleep", "30"], stderr=subprocess.PIPE)
    try:
        children = Path(f"/proc/{holder.pid}/task/{holder.pid}/children")
        found: list[str] = []
        for _ in range(200):
            found = children.read_text().split()
            if found or holder.poll() is not None:
                break
            time.sleep(0.01)
        if not found:
            message = f"cannot make a PID namespace here: {holder.stderr.read()!r}"
            if IN_CI:
                pytest.fail(f"CI=true and {message}")
            pytest.skip(message)
        init = os.pidfd_open(int(found[0]))
        mine = os.pidfd_open(holder.pid)
        try:
            assert (is_namespace_init(init), is_namespace_init(mine)) == (True, False)
            named = namespace_init(f'{{"child-pid": {found[0]}}}'.encode())
            assert named is not None
            os.close(named)
            # Reaped (by unshare, its parent): no longer an init anyone may reap.
            signal.pidfd_send_signal(init, signal.SIGKILL)
            holder.wait(timeout=10)
            assert is_namespace_init(init) is False
            assert namespace_init(f'{{"child-pid": {found[0]}}}'.encode()) is None
        finally:
            os.close(init)
            os.close(mine)
    finally:
        holder.kill()
        holder.wait()


def test_the_bwrap_probe_tells_its_filter_stage_to_say_the_command_started(runner_dir, monkeypatch):
    """As every call does: a filter stage that refuses --started-fd (a launcher built
    before it) fails the probe, which would otherwise call it usable while every call
    failed. The control: the same stage without the option passes it."""
    require_backend("bwrap")
    real = launcher_path()
    stage = runner_dir / "landlock-run"
    stage.write_text(
        "#!/bin/sh\n"
        'if [ "$2" = --started-fd ]; then\n'
        "  echo 'landlock-run: unknown option: --started-fd' >&2; exit 125\n"
        "fi\n"
        f'exec {real} "$@"\n'
    )
    stage.chmod(0o755)
    monkeypatch.setattr(_probe, "launcher_path", lambda: str(stage))
    refused = bwrap.probe_bwrap(10.0)
    assert not refused.usable and "--started-fd" in refused.why_not, refused
    # The control: never told, the stage runs the probe as the real launcher would.
    monkeypatch.setattr(bwrap, "filter_stage_at", lambda argv: None)
    assert bwrap.probe_bwrap(10.0).usable


def _ended(pid: int) -> None:
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped


def test_a_groups_zombies_are_reaped_but_never_the_process_its_number_names():
    """A call's leader is reaped by its own waiter first; a process with the group's
    number then leads a new group (another call's, the embedder's child), whose status
    stays its waiter's. A member of the group is reaped."""
    leader = subprocess.Popen(["sh", "-c", "sleep 0.3; exit 7"], process_group=0)
    member = subprocess.Popen(["sh", "-c", "exit 3"], process_group=leader.pid)
    _ended(member.pid)
    assert _orphans.reap_group_zombies(leader.pid) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(member.pid, os.WNOHANG)  # reaped (its Popen is the test's, not a caller's)
    member.returncode = 3
    _ended(leader.pid)
    assert _orphans.reap_group_zombies(leader.pid) == 0
    assert leader.wait(timeout=5) == 7


def test_pinned_processes_are_given_time_to_end_and_only_ended_ones_are_reaped(monkeypatch):
    monkeypatch.setattr(_orphans, "PINNED_WAIT", 0.3)
    killed = subprocess.Popen(["sleep", "30"])
    running = subprocess.Popen(["sleep", "30"])
    try:
        pinned = [os.pidfd_open(killed.pid), os.pidfd_open(running.pid)]
        signal.pidfd_send_signal(pinned[0], signal.SIGKILL)
        assert _orphans.reap_pinned(pinned) == 1  # the killed one, once it had ended
        with pytest.raises(ChildProcessError):
            os.waitpid(killed.pid, os.WNOHANG)
        killed.returncode = -9
        assert running.poll() is None  # still its waiter's
    finally:
        running.kill()
        assert running.wait(timeout=5) == -9

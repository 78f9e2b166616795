"""With the cgroup file system out of reach (a mount namespace where /sys/fs/cgroup is
an empty read-only tmpfs), limits fall back to rlimits and the facts say exactly what
that holds (issue 26): processes unenforced for root, memory partial; the command
still runs, on both backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ..support import IN_CI

SNIPPET = textwrap.dedent(
    """
    import json, sys, tempfile, trio
    from stockade.executor.actor import open_executor
    from stockade.executor.config import ExecutorConfig
    from stockade.limits import Limits
    from stockade.sandbox.actor import open_provider
    from stockade.sandbox.config import ProviderConfig
    from stockade.vocab import ExecutionPolicy, SandboxMode

    async def main(backend):
        root = tempfile.mkdtemp()
        policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root)
        config = ExecutorConfig(limits=Limits(memory=256 << 20, open_files=100))
        async with (
            open_provider(ProviderConfig(backend=backend)) as provider,
            open_executor(config, provider) as executor,
        ):
            command = "ulimit -n; ulimit -d; grep -c stockade /proc/self/cgroup || true"
            result = await executor.run(executor.resolve(command, policy=policy))
        claims = {c.name: [c.mechanism, c.claim, c.detail] for c in result.limits}
        print(json.dumps({"exit": result.exit_code, "stdout": result.stdout,
                          "backend": result.backend, "claims": claims}))

    trio.run(main, sys.argv[1])
    """
)


@pytest.mark.parametrize("backend", ["landlock", "bwrap"])
def test_without_cgroups_rlimits_hold_and_the_claims_say_so(tmp_path, backend):
    if os.geteuid() != 0:
        if IN_CI:
            pytest.fail("CI=true: this test needs root (a mount namespace)")
        pytest.skip("needs root for a mount namespace")
    script = tmp_path / "snippet.py"
    script.write_text(SNIPPET)
    covered = (
        "mount --make-rprivate / && mount -t tmpfs -o ro,size=1k none /sys/fs/cgroup && "
        f'exec "{sys.executable}" "{script}" {backend}'
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", covered],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    assert reply["exit"] == 0 and reply["backend"] == backend, reply
    nofile, data, in_stockade_cgroup = reply["stdout"].split()
    assert nofile == "100" and data == str(256 << 10)  # ulimit -d is in KiB
    assert in_stockade_cgroup == "0"
    claims = reply["claims"]
    assert claims["processes"][:2] == ["none", "none"]
    assert "never enforced for root" in claims["processes"][2]
    assert claims["memory"][:2] == ["rlimit", "partial"]
    assert claims["open_files"][:2] == ["rlimit", "enforced"]
    assert claims["output_bytes"][:2] == ["harness", "enforced"]

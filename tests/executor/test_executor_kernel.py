"""Real processes on the real clock: confinement through the executor, fake runners,
overlapping jobs, timeouts and kills that leave no process behind."""

from __future__ import annotations

import os
import resource
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing

from stockade.errors import CommandStartError, SandboxUnavailable, UnknownJob
from stockade.executor.actor import ExecutorClient, open_executor
from stockade.executor.config import ExecutorConfig
from stockade.executor.render import render_job, render_result
from stockade.sandbox.actor import open_provider
from stockade.sandbox.config import ProviderConfig
from stockade.testing import PASS_THROUGH
from stockade.vocab import ExecutionPolicy, SandboxMode

from ..support import pids_with_marker, zombie_children

RO, WW, DFA = SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE, SandboxMode.DANGER_FULL_ACCESS


@asynccontextmanager
async def executor_for(
    config: ProviderConfig, executor_config: ExecutorConfig | None = None
) -> AsyncIterator[ExecutorClient]:
    async with (
        open_provider(config) as provider,
        open_executor(executor_config or ExecutorConfig(kill_grace=0.5), provider) as executor,
    ):
        yield executor


def spec(executor: ExecutorClient, command: str, mode: SandboxMode, root, **kwargs):
    policy = ExecutionPolicy(mode=mode, workspace_root=str(root))
    return executor.resolve(command, policy=policy, **kwargs)


def sleeper(marker: str, seconds: int = 1000) -> str:
    # exec -a renames argv[0], so the process is findable from the host by name.
    return f"(exec -a {marker} sleep {seconds})"


# --- confinement through the executor --------------------------------------------


async def test_bash_env_runs_inside_the_sandbox(backend_config, scratch):
    root = Path(scratch) / "project"
    root.mkdir()
    outside = Path(scratch) / "bash-env-escaped"
    script = Path(scratch) / "bash_env.sh"
    script.write_text(f"echo escaped > {outside}\n")
    async with executor_for(backend_config) as executor:
        result = await executor.run(
            spec(executor, "echo ran", WW, root, env={"BASH_ENV": str(script)})
        )
    assert not outside.exists()
    assert result.stdout == "ran\n"
    assert result.denied is True
    assert render_result(result).endswith(
        "[sandbox: file access denied under workspace-write mode]\n"
        "The sandbox refused a file effect. Do not try to work around the denial "
        "(other paths, copies, symlinks, other tools)."
    )


async def test_read_only_denial_and_workspace_write_success(backend_config, scratch):
    root = Path(scratch)
    async with executor_for(backend_config) as executor:
        denied = await executor.run(spec(executor, "echo hi > f", RO, root))
        written = await executor.run(spec(executor, "echo hi > f", WW, root))
    assert denied.denied and denied.exit_code == 1 and denied.mode is RO
    assert not written.denied and written.exit_code == 0
    assert (root / "f").read_text() == "hi\n"


async def test_danger_full_access_skips_the_provider(scratch):
    # A runner that cannot exist: danger-full-access must never reach it.
    config = ProviderConfig(runner_command="/nonexistent/runner")
    outside = Path(scratch) / "free"
    async with executor_for(config) as executor:
        result = await executor.run(spec(executor, f"echo free > {outside}", DFA, "/"))
    assert result.backend == "none" and result.enforcement is None
    assert outside.read_text() == "free\n"


async def test_local_executor_does_not_confine(scratch):
    outside = Path(scratch) / "local"
    async with open_executor(ExecutorConfig()) as executor:
        assert executor.confines is False
        result = await executor.run(spec(executor, f"echo x > {outside}", RO, scratch))
    assert outside.exists()
    assert result.backend == "none" and result.mode is DFA


# --- fake runners through runner_command -----------------------------------------


def write_runner(path: Path, body: str, *, executable: bool = True) -> Path:
    path.write_text(body)
    path.chmod(0o755 if executable else 0o644)
    return path


async def test_fake_runner_printing_a_fatal_line(scratch, runner_dir):
    runner = write_runner(
        runner_dir / "runner", '#!/bin/sh\necho "FAKE: cannot set up the sandbox" >&2\nexit 1\n'
    )
    config = ProviderConfig(runner_command=str(runner), runner_failure_signatures=["FAKE:"])
    async with executor_for(config) as executor:
        with pytest.raises(SandboxUnavailable) as caught:
            await executor.run(spec(executor, "true", WW, scratch))
        handle = await executor.start(spec(executor, "true", WW, scratch))
        with trio.fail_after(10):
            report = await executor.wait(handle.id)
    assert caught.value.detail == "FAKE: cannot set up the sandbox"
    assert report.state == "runner-failed"
    assert report.runner_failed is True and report.denied is False
    assert "sandbox unavailable: FAKE: cannot set up the sandbox" in render_job(report)


async def test_fake_runner_that_passes_through_is_an_ordinary_result(scratch, runner_dir):
    runner = write_runner(runner_dir / "runner", PASS_THROUGH)
    config = ProviderConfig(runner_command=str(runner), runner_failure_signatures=["FAKE:"])
    async with executor_for(config) as executor:
        for command, status in (("false", 1), ("exit 126", 126), ("exit 127", 127)):
            result = await executor.run(spec(executor, command, WW, scratch))
            assert (result.exit_code, result.runner_failed, result.denied) == (status, False, False)


@pytest.mark.parametrize("kind", ["missing", "not-executable", "missing-interpreter"])
async def test_runner_that_cannot_start_is_sandbox_unavailable(scratch, runner_dir, kind):
    path = runner_dir / "runner"
    if kind == "not-executable":
        write_runner(path, PASS_THROUGH, executable=False)
    elif kind == "missing-interpreter":
        write_runner(path, "#!/nonexistent/interpreter\n")
    config = ProviderConfig(runner_command=str(path))
    marker = Path(scratch) / "ran"
    async with executor_for(config) as executor:
        with pytest.raises(SandboxUnavailable, match="cannot start the sandbox runner"):
            await executor.run(spec(executor, f"touch {marker}", WW, scratch))
        with pytest.raises(SandboxUnavailable, match="cannot start the sandbox runner"):
            await executor.start(spec(executor, f"touch {marker}", WW, scratch))
        assert await executor.list() == []
    assert not marker.exists()


async def test_invalid_workdir_is_an_ordinary_start_error_even_with_a_missing_runner(
    scratch, runner_dir
):
    config = ProviderConfig(runner_command=str(runner_dir / "missing-runner"))
    async with executor_for(config) as executor:
        bad = spec(executor, "true", WW, scratch, workdir=str(Path(scratch) / "no-such-dir"))
        with pytest.raises(CommandStartError, match="no-such-dir"):
            await executor.run(bad)
        with pytest.raises(CommandStartError):
            await executor.start(bad)


async def test_foreground_and_background_classify_alike(backend_config, scratch):
    root = Path(scratch)
    cases = [
        ("echo hi > /etc/stockade-parity", RO),
        ("echo ok", RO),
        ("exit 3", WW),
        ("echo hi > f", WW),
    ]
    async with executor_for(backend_config) as executor:
        for command, mode in cases:
            foreground = await executor.run(spec(executor, command, mode, root))
            handle = await executor.start(spec(executor, command, mode, root))
            with trio.fail_after(10):
                report = await executor.wait(handle.id)
            assert (report.exit_code, report.denied, report.runner_failed) == (
                foreground.exit_code,
                foreground.denied,
                foreground.runner_failed,
            ), command
    assert not Path("/etc/stockade-parity").exists()


# --- overlapping jobs ----------------------------------------------------------------


async def test_two_hundred_overlapping_jobs_keep_their_own_facts(backend_config, scratch):
    root = Path(scratch)
    modes = [RO, WW, DFA]
    # Every job blocks on the gate (a FIFO held open here), so all 200 are alive
    # together; each has its waiter before any finishes (a pending wait holds its job:
    # more finished, unread jobs than the retention bound would otherwise see the first
    # forgotten, docs/executor.md).
    gate = root / "gate"
    os.mkfifo(gate)
    gate_fd = os.open(gate, os.O_RDWR | os.O_NONBLOCK)
    reports = {}
    try:
        async with executor_for(backend_config) as executor:
            handles = []
            for index in range(200):
                mode = modes[index % 3]
                command = f"read -r _ < {gate}; echo {index} > job-{index}"
                job = await executor.start(spec(executor, command, mode, root))
                handles.append((index, mode, job))
            assert len(await executor.list()) == 200
            early = [await executor.job_output(handle.id) for *_, handle in handles]
            assert {report.state for report in early} <= {"running", "queued"}, [
                (report.state, report.runner_failure, report.stderr) for report in early
            ]

            async def wait(index: int, job_id: str) -> None:
                reports[index] = await executor.wait(job_id)

            with trio.fail_after(60):
                async with trio.open_nursery() as nursery:
                    for index, _mode, handle in handles:
                        nursery.start_soon(wait, index, handle.id)
                    await trio.testing.wait_all_tasks_blocked()
                    os.write(gate_fd, b"go\n" * 200)
            assert await executor.list() == []  # each was read to its end
    finally:
        os.close(gate_fd)
    for index, mode, _handle in handles:
        report = reports[index]
        assert report.mode is mode
        assert report.denied is (mode is RO), index
        assert (root / f"job-{index}").exists() is (mode is not RO), index
        assert report.backend == ("none" if mode is DFA else backend_config.backend)


# --- timeouts, kills, cancellation -----------------------------------------------------


async def test_timeout_kills_the_whole_tree(backend_config, scratch):
    marker = f"stockade-{uuid.uuid4().hex[:12]}"
    command = f"{sleeper(marker)} & {sleeper(marker)}; wait"
    async with executor_for(backend_config) as executor:
        with trio.fail_after(20):
            result = await executor.run(spec(executor, command, WW, scratch, timeout=1.0))
    assert result.timed_out is True
    assert pids_with_marker(marker) == []
    assert zombie_children() == []
    assert "timed out" in render_result(result)


async def test_leftover_background_processes_die_with_their_command(backend_config, scratch):
    marker = f"stockade-{uuid.uuid4().hex[:12]}"
    async with executor_for(backend_config) as executor:
        result = await executor.run(
            spec(executor, f"{sleeper(marker)} & echo started", WW, scratch)
        )
    assert result.stdout == "started\n"
    assert pids_with_marker(marker) == []


async def test_kill_and_leaving_the_executor_kill_every_job(backend_config, scratch):
    killed_marker = f"stockade-{uuid.uuid4().hex[:12]}"
    left_marker = f"stockade-{uuid.uuid4().hex[:12]}"
    async with executor_for(backend_config) as executor:
        killed = await executor.start(
            spec(executor, f"{sleeper(killed_marker)}; wait", WW, scratch)
        )
        await executor.start(spec(executor, f"{sleeper(left_marker)} & wait", WW, scratch))
        with trio.fail_after(10):
            while not (pids_with_marker(killed_marker) and pids_with_marker(left_marker)):
                await trio.sleep(0.02)
            report = await executor.kill(killed.id)
        assert report.state == "killed"
        assert pids_with_marker(killed_marker) == []
        assert pids_with_marker(left_marker) != []
    assert pids_with_marker(left_marker) == []
    assert zombie_children() == []


async def test_cancelling_the_caller_kills_its_foreground_command(backend_config, scratch):
    marker = f"stockade-{uuid.uuid4().hex[:12]}"
    async with executor_for(backend_config) as executor:
        with trio.move_on_after(1.0) as scope:
            await executor.run(spec(executor, f"{sleeper(marker)}; wait", WW, scratch))
        assert scope.cancelled_caught
        with trio.fail_after(10):
            while pids_with_marker(marker):
                await trio.sleep(0.02)
    assert zombie_children() == []


async def test_job_output_returns_only_what_is_new(backend_config, scratch):
    async with executor_for(backend_config) as executor:
        handle = await executor.start(spec(executor, "echo one; sleep 0.5; echo two", WW, scratch))
        with trio.fail_after(10):
            while "one" not in (first := await executor.job_output(handle.id)).stdout:
                await trio.sleep(0.02)
            second = await executor.wait(handle.id)
        # That read was the job's last (it had ended): the job is forgotten.
        with pytest.raises(UnknownJob, match="finished and forgotten"):
            await executor.job_output(handle.id)
    assert first.stdout == "one\n"
    assert (second.stdout, second.state, second.exit_code) == ("two\n", "exited", 0)


async def test_two_hundred_megabytes_of_output_stay_within_the_cap(backend_config, scratch):
    cap = 1024 * 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    async with executor_for(backend_config, ExecutorConfig(output_cap=cap)) as executor:
        result = await executor.run(
            spec(executor, "head -c 200000000 /dev/zero | tr '\\0' 'x'", WW, scratch)
        )
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert result.exit_code == 0
    assert result.stdout_dropped == 200_000_000 - cap
    assert len(result.stdout) < cap + 100
    assert grown_kib < 64 * 1024, f"harness grew by {grown_kib} KiB"


async def test_non_utf8_output_is_decoded_with_replacement(backend_config, scratch):
    async with executor_for(backend_config) as executor:
        result = await executor.run(spec(executor, "printf '\\377\\376ok'", WW, scratch))
    assert result.stdout.endswith("ok") and "\ufffd" in result.stdout


async def test_stdin_is_closed_unless_given(backend_config, scratch):
    async with executor_for(backend_config) as executor:
        closed = await executor.run(spec(executor, "cat; echo done", WW, scratch, timeout=5))
        given = await executor.run(spec(executor, "cat", WW, scratch, stdin=b"fed\n"))
    assert closed.stdout == "done\n" and not closed.timed_out
    assert given.stdout == "fed\n"


# --- the bound on running processes ----------------------------------------------------


async def test_jobs_beyond_the_bound_queue_and_run_in_turn(backend_config, scratch):
    root = Path(scratch)
    config = ExecutorConfig(kill_grace=0.5, max_running=2)
    async with executor_for(backend_config, config) as executor:
        handles = [
            await executor.start(spec(executor, f"sleep 0.3; echo {i} > q{i}", WW, root))
            for i in range(6)
        ]
        states = [(await executor.job_output(h.id)).state for h in handles]
        assert states.count("running") == 2 and states.count("queued") == 4
        killed = await executor.kill(handles[-1].id)
        assert killed.state == "killed" and killed.exit_code is None
        with trio.fail_after(30):
            reports = [await executor.wait(h.id) for h in handles[:-1]]
    assert [r.state for r in reports] == ["exited"] * 5
    assert sorted(p.name for p in root.iterdir()) == [f"q{i}" for i in range(5)]


async def test_a_queued_job_whose_runner_cannot_start_is_stamped_runner_failed(scratch, runner_dir):
    config = ProviderConfig(runner_command=str(runner_dir / "vanishing-runner"))
    runner = runner_dir / "vanishing-runner"
    runner.write_text(PASS_THROUGH)
    runner.chmod(0o755)
    async with executor_for(config, ExecutorConfig(max_running=1)) as executor:
        first = await executor.start(spec(executor, "sleep 0.3", WW, scratch))
        queued = await executor.start(spec(executor, "touch ran", WW, scratch))
        runner.unlink()  # deleted between probe (none: runner_command) and the queued spawn
        await executor.wait(first.id)
        with trio.fail_after(10):
            report = await executor.wait(queued.id)
    assert report.state == "runner-failed" and report.runner_failed and not report.denied
    assert "cannot start the sandbox runner" in (report.runner_failure or "")
    assert not (Path(scratch) / "ran").exists()


async def test_ten_thousand_queued_jobs_do_not_exhaust_descriptors(scratch):
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    baseline = open_fds()
    config = ExecutorConfig(max_running=8, kill_grace=0.2)
    async with open_executor(config) as executor:
        for _ in range(10_000):
            await executor.start(spec(executor, "sleep 5", DFA, scratch))
        during = open_fds()
        assert len(await executor.list()) == 10_000
    assert during - baseline < 8 * 4 + 16
    assert open_fds() <= baseline + 2

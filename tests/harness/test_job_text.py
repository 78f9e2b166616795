"""What a background job's text says when the sandbox runner failed in-band: the
runner ran, so the command may have started, and its output is shown."""

from __future__ import annotations

from pathlib import Path

from stockade import open_harness

IN_BAND_RUNNER = """#!/bin/sh
while [ "$1" != "--" ]; do shift; done; shift
"$@"
echo "FAKE: the sandbox fell over" >&2
exit 1
"""


async def test_an_in_band_runner_failure_does_not_claim_the_command_did_not_run(
    state_dir_outside, scratch, runner_dir
):
    runner = runner_dir / "runner"
    runner.write_text(IN_BAND_RUNNER)
    runner.chmod(0o755)
    marker = Path(scratch) / "ran"
    entries = [
        {
            "id": "sandbox",
            "name": "stockade.sandbox.local",
            "config": {"runner_command": str(runner), "runner_failure_signatures": ["FAKE:"]},
        },
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": state_dir_outside}},
    ]
    async with open_harness(entries) as harness:
        session = await harness.open_session(cwd=scratch)
        command = f"echo partial-output; touch {marker}"
        started = await session.run_tool("bash", {"command": command, "background": True})
        await session.shell.wait(started.facts["job_id"], read=False)
        result = await session.run_tool("job_output", {"job_id": started.facts["job_id"]})
    assert marker.exists()  # it did run
    assert result.facts["state"] == "runner-failed" and result.facts["runner_failed"]
    assert "did not run" not in result.text
    notice = (
        "[sandbox unavailable: FAKE: the sandbox fell over; the sandbox runner reported a "
        "failure after the command may have started; its output is below]"
    )
    lines = result.text.splitlines()
    assert lines[1] == notice, result.text
    assert "partial-output" in lines[2:]

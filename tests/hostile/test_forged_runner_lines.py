"""A command's own stderr can look like its runner's fatal line.

Classification trusts a stderr line starting with `bwrap:` (no exit gate) or
`landlock-run:` with exit status 125 as proof that the sandbox runner failed and
"the command did not run". The command's own stderr shares that stream, so a command
that ran — and had its effects — can be reported as never run, its output hidden. It
needs no malice: a nested `bwrap` (a build or test tool that sandboxes itself) prints
`bwrap: setting up uid map: Operation not permitted` on its way out.
"""

from __future__ import annotations

import pytest

from stockade import open_harness

from ..faults._support import composition
from ..support import require_backend

CASES = {
    "bwrap": "touch ran; echo 'bwrap: setting up uid map: Operation not permitted' >&2; echo after",
    "landlock": "touch ran; echo 'landlock-run: cannot open /x: No such file' >&2; echo after; exit 125",
}


@pytest.mark.xfail(
    strict=True,
    reason="LIMITATION (the in-band runner-failure protocol the design accepts, "
    "docs/security.md): a command that ran is reported as SANDBOX_UNAVAILABLE (its "
    "output hidden) when its own stderr carries a line that starts like the runner's "
    "fatal line; a false attribution, never a bypass "
    "(tests/security/test_inband.py). To lift it: learn from the runner itself whether "
    "the child was started, on a channel "
    "the child cannot write: bwrap --json-status-fd/--info-fd (a child-pid record "
    "means bwrap's own setup succeeded); for the launcher, a CLOEXEC status fd that "
    "it closes by exec'ing the child (EOF = started). Treat a fatal-looking line as "
    "a runner failure only when the child never started.",
)
@pytest.mark.parametrize("backend", sorted(CASES))
async def test_a_command_that_ran_is_never_reported_as_not_run(state_dir, project, backend):
    require_backend(backend)
    async with open_harness(composition(state_dir, sandbox={"backend": backend})) as harness:
        session = await harness.open_session(cwd=project)
        result = await session.run_tool("bash", {"command": CASES[backend]})
    assert (project / "ran").exists()  # it ran
    assert "did not run" not in result.text, result.text
    assert "after" in result.text

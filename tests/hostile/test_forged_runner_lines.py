"""A command's own stderr can look like its runner's fatal line.

Classification takes a stderr line starting with `bwrap:` (no exit gate) or
`landlock-run:` with exit status 125 for proof that the sandbox runner failed and
"the command did not run". The command's own stderr shares that stream; it needs no
malice to print such a line: a nested `bwrap` (a build or test tool that sandboxes
itself) prints `bwrap: setting up uid map: Operation not permitted` on its way out.
The launcher that execs the command (Landlock's, bwrap's filter stage) says out of
band that it started it, and a command that ran is then reported as one that ran.
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


@pytest.mark.parametrize("backend", sorted(CASES))
async def test_a_command_that_ran_is_never_reported_as_not_run(state_dir, project, backend):
    require_backend(backend)
    async with open_harness(composition(state_dir, sandbox={"backend": backend})) as harness:
        session = await harness.open_session(cwd=project)
        result = await session.run_tool("bash", {"command": CASES[backend]})
    assert (project / "ran").exists()  # it ran
    assert "did not run" not in result.text, result.text
    assert "after" in result.text

"""The face's credential is out of every confined command's reach (issue 35, hole 2).

`stockade mcp --http` writes its bearer token in the state directory. A `tools/call`
of bash whose `workdir` is that directory (any spelling) would start the command
beneath the directory's cover and read the token, and with it open an MCP session of
its own and approve its own escalation. Judged on the host: the token is never in a
result, and the server saw no session but the client's. The SDK's client, in a
process of its own.
"""

from __future__ import annotations

import os

import pytest

from ..support import require_backend, stockade
from .support import http_server, session_logs, text


@pytest.mark.parametrize("mode", ("read-only", "workspace-write"))
@pytest.mark.parametrize("backend", ("bwrap", "landlock"))
async def test_no_workdir_reads_the_token_whatever_the_network(root, state_dir, backend, mode):
    require_backend(backend)
    config = root.parent / f"stockade-{backend}.yml"
    config.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n"
        f"  config: {{backend: {backend}}}\n"
        "- id: bash\n  name: stockade.bash.sandbox\n"
        "- id: approval\n  name: stockade.approval.user\n"
        f"- id: log\n  name: stockade.session.log\n  config: {{state_dir: {state_dir}}}\n"
    )
    async with http_server(
        root, state_dir, "--config", str(config), "--network", "on", "--mode", mode
    ) as server:
        token = server.token
        assert server.token_file.parent == state_dir
        # The control: the token is there for whoever reads the file.
        assert token in server.token_file.read_text()
        async with server.client() as client:
            for workdir in (
                str(state_dir),
                os.path.relpath(state_dir, root),
                f"/proc/self/root{state_dir}",
            ):
                result = await client.call_tool(
                    "bash", {"command": "cat *.token; cat ./*; ls -la", "workdir": workdir}
                )
                shown = text(result)
                assert token not in shown, (workdir, shown)
                assert result.is_error and "hidden from every sandboxed command" in shown
            # From the root, by its absolute path: covered.
            result = await client.call_tool("bash", {"command": f"cat {server.token_file}"})
            assert token not in text(result)
        assert len(session_logs(state_dir)) == 1


def test_a_server_whose_token_commands_could_read_does_not_start(root, state_dir):
    """With deny_read's `state` item removed, the state directory (where the token
    would be written) is readable by confined commands: the server refuses to start,
    in one line, and writes no token."""
    config = root.parent / "stockade-no-state.yml"
    config.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n  config: {deny_read: ['!state']}\n"
        "- id: bash\n  name: stockade.bash.sandbox\n"
        "- id: approval\n  name: stockade.approval.user\n"
    )
    env = {"STOCKADE_STATE_DIR": str(state_dir)}
    done = stockade(
        "mcp", "--config", str(config), "--root", str(root), "--http", "127.0.0.1:0", env=env
    )
    assert done.returncode == 2, done.stderr
    assert "which confined commands may read" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not list(state_dir.glob("*.token"))

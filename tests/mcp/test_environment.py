"""An MCP call's command gets no secret of the host's (issue 24): `stockade mcp --http`
as a client drives it, with secret-looking variables in the server's environment and
its bearer token under a name no exclude matches. Judged by what `env` printed."""

from __future__ import annotations

from pathlib import Path

from .support import http_server, text

SECRETS = {
    "OPENAI_API_KEY": "sk-mcp-openai",
    "PGPASSWORD": "mcp-pg-password",
    "AWS_SECRET_ACCESS_KEY": "mcp-aws-secret",
    "STORE_DSN": "postgresql://u:mcp-dsn-pw@h/db",
}
TOKEN = "T" * 20 + "mcp-bearer-0123456789"
# The token under a name no default exclude matches: only its value gives it away.
INNOCUOUS = "CLIENT_AUTH"


async def test_an_mcp_call_gets_neither_the_secrets_nor_the_servers_token(
    root, state_dir, scratch, monkeypatch
):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(INNOCUOUS, TOKEN)
    monkeypatch.setenv("ENVTEST_ORDINARY", "kept")
    tokens = Path(scratch) / "tokens"
    tokens.write_text(f"{TOKEN}\n")
    tokens.chmod(0o600)
    async with (
        http_server(root, state_dir, "--token-file", str(tokens)) as server,
        server.client() as client,
    ):
        ran = await client.call_tool("bash", {"command": "env; echo done"})
    seen = text(ran)
    assert not ran.is_error and "\ndone\n" in seen, seen
    assert "ENVTEST_ORDINARY=kept" in seen
    for name, value in {**SECRETS, INNOCUOUS: TOKEN}.items():
        assert f"{name}=" not in seen and value not in seen, name
    dropped = ran.structured_content["env_dropped"]
    assert {*SECRETS, INNOCUOUS} <= set(dropped)
    assert TOKEN not in repr(ran.structured_content)


async def test_an_mcp_call_cannot_read_the_token_file(root, state_dir, scratch):
    """deny_read's `mcp-token`: a `--token-file` outside every root is hidden from every
    confined command; the generated ones lie in the state directory (`state`)."""
    tokens = Path(scratch) / "tokens"
    tokens.write_text(f"{TOKEN}\n")
    tokens.chmod(0o600)
    async with (
        http_server(root, state_dir, "--token-file", str(tokens)) as server,
        server.client() as client,
    ):
        ran = await client.call_tool("bash", {"command": f"cat {tokens}; ls {state_dir}"})
    seen = text(ran)
    assert TOKEN not in seen and "Permission denied" in seen, seen
    assert ran.structured_content["read_denied"] is True

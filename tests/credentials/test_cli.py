"""Issue 41 through the `stockade` command: `stockade run` (the executor in its own
process) and `stockade exec` (no event loop: its proxy in a process of its own, the
broker there) take the same composition, and a confined curl uses the credential it
never holds; a refused request says why, on the result and on stderr.
"""

from __future__ import annotations

import json

from .support import API, API_SECRET_VAR, Rig, leaks, stockade_cli


def _command(rig: Rig) -> str:
    url = rig.url(API, "/repos/org/x")
    return (
        f'curl -sS --max-time 20 -H "Authorization: Bearer $API_TOKEN" {url}; '
        f"curl -sS --max-time 20 -X POST -o /dev/null -w 'code=%{{http_code}}\\n' "
        f'-H "Authorization: Bearer $API_TOKEN" {url}; true'
    )


def test_stockade_run_uses_the_credential(backend: str, origins: Rig):
    done = stockade_cli(origins, backend, ["run", "--json", _command(origins)])
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert '"authorised": true' in facts["stdout"] and "code=403" in facts["stdout"], facts
    judged = [(r["method"], r["allowed"]) for r in facts["requests"]]
    assert judged == [("GET", True), ("POST", False)], facts["requests"]
    secret = origins.secrets[API_SECRET_VAR]
    assert [s.header("authorization") for s in origins.origins[API].seen] == [f"Bearer {secret}"]
    assert not leaks(origins, done.stdout + done.stderr)

    origins.reset()
    text = stockade_cli(origins, backend, ["run", _command(origins)])
    assert '"authorised": true' in text.stdout, text.stderr
    assert "POST '/repos/org/x' to api.creds.test is refused" in text.stderr, text.stderr


def test_stockade_exec_uses_the_credential(backend: str, origins: Rig):
    done = stockade_cli(origins, backend, ["exec", "--", "bash", "-c", _command(origins)])
    assert done.returncode == 0, done.stderr
    assert '"authorised": true' in done.stdout and "code=403" in done.stdout, done
    secret = origins.secrets[API_SECRET_VAR]
    assert [s.header("authorization") for s in origins.origins[API].seen] == [f"Bearer {secret}"]
    assert not leaks(origins, done.stdout + done.stderr)

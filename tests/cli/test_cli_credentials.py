"""`stockade exec` and `stockade run` with a composition's credential and request rules
(issue 41), both backends: under network allowlist the command holds the placeholder
and the bundle trusting the harness CA, never the credential; a missing credential is
one line before anything runs; the bundle's directory goes when the verb ends."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from ..support import require_backend, stockade
from .test_cli_config import private_dir, write_config

SECRET = "ghp_cli-test-secret-0123456789abcdefXYZ"
BODY = """\
- {{id: sandbox, name: stockade.sandbox.local, config: {{backend: {backend}}}}}
- id: bash
  name: stockade.bash.sandbox
  config:
    network: allowlist
    env: {{keep_default_excludes: false}}
    network_credentials:
      - {{host: api.ruled.test, placeholder_env: RULED_TOKEN, value: !env RULED_SECRET}}
    network_requests:
      - {{host: api.ruled.test, methods: [GET]}}
"""
SHOW = (
    'echo "token=$RULED_TOKEN secret=${RULED_SECRET:-none}"; '
    'echo "bundle=$SSL_CERT_FILE"; grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE"'
)


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request):
    require_backend(request.param)
    return request.param


def _setup(scratch, backend):
    config = write_config(private_dir(scratch, "conf"), BODY.format(backend=backend))
    return config, private_dir(scratch, "work")


def _checked(output: str) -> str:
    assert SECRET not in output
    assert re.search(r"token=stockade-placeholder-[0-9a-f]{40} secret=none", output), output
    bundle = re.search(r"bundle=(\S+)", output)
    assert bundle is not None and bundle.group(1).endswith("/ca-bundle.pem")
    count = re.search(r"^(\d+)$", output, re.MULTILINE)
    assert count is not None and int(count.group(1)) > 1, output
    return bundle.group(1)


def _gone(path: str) -> bool:
    # The proxy process of exec ends as its stdin closes, just after exec does.
    for _ in range(50):
        if not os.path.exists(path):
            return True
        time.sleep(0.1)
    return False


def test_exec_gives_the_placeholder_and_the_bundle(backend, scratch):
    config, work = _setup(scratch, backend)
    done = stockade(
        "exec", "--config", str(config), "--", "sh", "-c", SHOW,
        cwd=work, env={"RULED_SECRET": SECRET},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    bundle = _checked(done.stdout)
    assert _gone(os.path.dirname(bundle))


def test_run_gives_the_placeholder_and_the_bundle(backend, scratch):
    config, work = _setup(scratch, backend)
    done = stockade(
        "run", "--json", "--config", str(config), SHOW, cwd=work, env={"RULED_SECRET": SECRET}
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["requests"] == [] and facts["network"] == "allowlist"
    bundle = _checked(facts["stdout"])
    assert not os.path.exists(os.path.dirname(bundle))


@pytest.mark.parametrize("verb", [("exec", "--", "true"), ("run", "true")])
def test_a_missing_credential_is_one_line_and_nothing_runs(backend, scratch, verb):
    config, work = _setup(scratch, backend)
    environ = {key: value for key, value in os.environ.items() if key != "RULED_SECRET"}
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "stockade", verb[0], "--config", str(config), *verb[1:]],
        capture_output=True,
        text=True,
        cwd=work,
        env=environ,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode != 0
    assert "RULED_SECRET is not set" in done.stderr
    assert "Traceback" not in done.stderr


PROBED = """\
- id: sandbox
  name: stockade.sandbox.local
- id: bash
  name: stockade.bash.sandbox
  config:
    network_allow: ["api.github.com:443"]
    network_credentials:
      - {host: api.github.com, header: Authorization, scheme: Bearer, value: !env GH_REAL}
      - {host: pypi.ruled.test, placeholder_env: PIP_TOKEN, value_from: PIP_REAL}
    network_requests:
      - {host: api.github.com, methods: [GET, HEAD], paths: ["/repos/org/**"], name: ro-github}
"""


def test_probe_lists_the_rules_by_name_never_a_value(scratch):
    config = write_config(private_dir(scratch, "conf"), PROBED)
    work = private_dir(scratch, "work")
    values = {"GH_REAL": SECRET, "PIP_REAL": SECRET + "-pip"}
    text = stockade("probe", "--config", str(config), cwd=work, env=values)
    assert SECRET not in text.stdout + text.stderr
    assert (
        "credential for api.github.com: Authorization: Bearer <credential> set on every "
        "request; the value from the harness's GH_REAL, which no command gets"
    ) in text.stdout
    assert "credential for pypi.ruled.test: PIP_TOKEN holds a placeholder" in text.stdout
    assert "requests to api.github.com: ro-github" in text.stdout
    assert "under network allowlist only" in text.stdout
    done = stockade("probe", "--json", "--config", str(config), cwd=work, env=values)
    assert SECRET not in done.stdout
    network = json.loads(done.stdout)["network"]
    assert network["allow"] == ["api.github.com:443"] and network["default"] == "off"
    assert [(c["host"], c["value_from"], c["form"]) for c in network["credentials"]] == [
        ("api.github.com", "GH_REAL", "header"),
        ("pypi.ruled.test", "PIP_REAL", "placeholder"),
    ]
    assert network["requests"] == [
        {
            "name": "ro-github",
            "host": "api.github.com",
            "methods": ["GET", "HEAD"],
            "paths": ["/repos/org/**"],
        }
    ]


def test_probe_without_rules_says_none(scratch):
    done = stockade("probe", cwd=private_dir(scratch, "work"))
    assert "ruled hosts: none (network_credentials, network_requests)" in done.stdout

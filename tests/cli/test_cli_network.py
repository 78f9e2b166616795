"""`--network off|on` on `stockade run` and `stockade exec`, as a person types it.

Whether `off` is enforced is the backends' business; these check that the flag is
parsed, resolved against the composition and reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stockade import Network
from stockade.cli import fastpath
from stockade.cli.parser import build_parser
from stockade.sandbox.private_tmp import remove_private_tmp

from ..support import require_backend, stockade
from .test_cli_config import private_dir, write_config


@pytest.fixture(params=["bwrap", "landlock"])
def backend(request):
    require_backend(request.param)
    return request.param


def run_json(*args: str, cwd: str) -> dict:
    done = stockade("run", "--json", *args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_run_network_on_json_shows_network_on(backend, scratch):
    facts = run_json("--backend", backend, "--network", "on", "true", cwd=scratch)
    assert (facts["network"], facts["mode"], facts["backend"]) == ("on", "workspace-write", backend)


def test_run_defaults_to_off_and_full_access_is_always_on(backend, scratch):
    assert run_json("--backend", backend, "true", cwd=scratch)["network"] == "off"
    full = run_json("--mode", "danger-full-access", "--network", "off", "true", cwd=scratch)
    assert (full["network"], full["backend"]) == ("on", "none")


def test_run_network_default_comes_from_the_composition(backend, scratch):
    body = (
        "- {id: sandbox, name: stockade.sandbox.local}\n"
        "- {id: bash, name: stockade.bash.sandbox, config: {network: on}}\n"
    )
    config = write_config(private_dir(scratch, "conf"), body)
    workspace = private_dir(scratch, "work")
    args = ("--config", str(config), "--backend", backend)
    assert run_json(*args, "true", cwd=workspace)["network"] == "on"
    assert run_json(*args, "--network", "off", "true", cwd=workspace)["network"] == "off"


@pytest.mark.parametrize("verb", [("run", "true"), ("exec", "--", "true")])
def test_an_unknown_network_value_lists_the_allowed_ones(verb):
    done = stockade(verb[0], "--network", "maybe", *verb[1:])
    assert done.returncode == 2
    assert "unknown network setting 'maybe' (allowed: off, allowlist, on)" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("verb", [("run", "echo hi > f"), ("exec", "--", "touch", "f")])
def test_network_off_is_refused_where_nothing_confines(scratch, verb):
    config = write_config(private_dir(scratch, "conf"), "- {id: bash, name: stockade.bash.local}\n")
    workspace = private_dir(scratch, "work")
    done = stockade(verb[0], "--config", str(config), "--network", "off", *verb[1:], cwd=workspace)
    assert done.returncode == 125, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("stockade: SANDBOX_UNAVAILABLE: network 'off' cannot be honoured")
    assert not (workspace / "f").exists()
    # Without the flag the one true value applies and the command runs.
    ran = stockade("run", "--config", str(config), "--json", "true", cwd=workspace)
    assert json.loads(ran.stdout)["network"] == "on"


class Executed(Exception):
    def __init__(self, argv: list[str]) -> None:
        self.argv = argv


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ((), Network.OFF),
        (("--network", "on"), Network.ON),
        (("--network", "off"), Network.OFF),
        (("--mode", "danger-full-access", "--network", "off"), Network.ON),
    ],
)
def test_exec_parses_network_onto_the_namespace(monkeypatch, tmp_path, flags, expected):
    def execute(argv: list[str], *, tmp: object = None, **_: object) -> None:
        if tmp is not None:  # the private temp directory the real one removes after
            remove_private_tmp(tmp)
        raise Executed(argv)

    monkeypatch.setattr(fastpath, "_execute", execute)
    monkeypatch.delenv("STOCKADE_CONFIG", raising=False)
    args = build_parser().parse_args(["exec", *flags, "--root", str(tmp_path), "--", "true"])
    with pytest.raises(Executed):
        fastpath.run_exec(args)
    assert fastpath.exec_network(args) is expected


def _probe_prints(probe: str, cwd: Path) -> str:
    """What `probe` (Python run in a fresh interpreter, no STOCKADE_CONFIG) printed;
    it must exit 0."""
    env = {key: value for key, value in os.environ.items() if key != "STOCKADE_CONFIG"}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_exec_with_network_stays_on_the_standard_library(tmp_path):
    probe = (
        "import os, sys\n"
        "def execvp(file, argv):\n"
        "    heavy = {m.split('.')[0] for m in sys.modules} & {'trio', 'msgspec', 'attrs'}\n"
        "    print(sorted(heavy)); sys.exit(0)\n"
        "os.execvp = execvp\n"
        "from stockade.entry import main\n"
        "main(['exec', '--mode', 'danger-full-access', '--network', 'on', '--', 'true'])\n"
    )
    assert _probe_prints(probe, tmp_path) == "[]\n"


def test_run_without_credentials_or_request_rules_loads_no_rule_module_of_theirs(tmp_path):
    """`stockade run` with no `network_credentials`/`network_requests` configured runs
    without importing the modules that parse them (their attrs classes cost every run)."""
    probe = (
        "import atexit, sys\n"
        "names = ('stockade.network._credentials', 'stockade.network._request_rules')\n"
        "atexit.register(lambda: print([n for n in names if n in sys.modules]))\n"
        "from stockade.entry import main\n"
        "sys.exit(main(['run', '--mode', 'danger-full-access', 'true']))\n"
    )
    assert _probe_prints(probe, tmp_path) == "[]\n"

"""`stockade session list` and `prune` on the database, through `--config`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from stockade.entry import main as cli_main
from stockade.sessionlog.stores.postgres import PostgresStore

from .fixtures import fresh_database


def composition(tmp_path: Path, dsn: str) -> str:
    path = tmp_path / "stockade.yml"
    entry = {"id": "log", "name": "stockade.session.log"}
    entry["config"] = {"store": "postgres", "dsn": dsn, "pool_size": 1}  # type: ignore[assignment]
    path.write_text(json.dumps([entry]))
    return str(path)


def test_list_and_prune_sessions(
    pg_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from stockade.events import SessionHeader
    from stockade.harness import harness_registry
    from stockade.policy.knobs import SandboxModeSet
    from stockade.tools.events import ToolCalled
    from stockade.vocab import SandboxMode

    dsn = fresh_database(pg_dsn)
    config = composition(tmp_path, dsn)
    registry = harness_registry()
    with PostgresStore(dsn, registry=registry, pool_size=1, owner="the writer") as store:
        for name, mode in (("idle", SandboxMode.READ_ONLY), ("busy", SandboxMode.WORKSPACE_WRITE)):
            opened = store.open(name)
            opened.handle.append(
                [
                    SessionHeader(seq=1, ts=time.time() - 3600, cwd="/work/x"),
                    SandboxModeSet(seq=2, ts=time.time() - 3600, mode=mode),
                    ToolCalled(
                        seq=3, ts=time.time() - 3600, call_id="c", name="bash", arguments={}
                    ),
                ]
            )
            if name == "idle":
                opened.handle.close()
        held = opened  # "busy" stays open: a writer holds it
        capsys.readouterr()
        assert cli_main(["session", "list", "--config", config, "--json"]) == 0
        listed = {
            entry["session"]: entry for entry in json.loads(capsys.readouterr().out)["sessions"]
        }
        assert listed["idle"]["sandbox_mode"] == "read-only" and not listed["idle"]["open"]
        assert listed["busy"]["open"] and listed["busy"]["events"] == 3
        assert listed["idle"]["cwd"] == "/work/x"

        assert cli_main(["session", "prune", "--older-than", "10m", "--config", config]) == 0
        out = capsys.readouterr().out
        assert "removed idle" in out and "removed busy" not in out
        assert cli_main(["session", "list", "--config", config, "--json"]) == 0
        left = [e["session"] for e in json.loads(capsys.readouterr().out)["sessions"]]
        assert left == ["busy"]
        held.handle.close()

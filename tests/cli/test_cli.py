"""The `stockade probe` and `stockade exec` verbs, as a person runs them."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from stockade import entry as cli
from stockade.sandbox import _probe, backends
from stockade.sandbox.backends import bwrap

from ..support import require_backend, stockade


def test_probe_names_a_usable_backend():
    require_backend("bwrap")
    require_backend("landlock")
    done = stockade("probe")
    assert done.returncode == 0, done.stderr
    assert "selected: bwrap" in done.stdout
    assert "landlock: usable" in done.stdout
    assert "Landlock ABI" in done.stdout


def test_probe_json_reports_every_candidate():
    require_backend("landlock")
    done = stockade("probe", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["platform"] == "linux"
    assert report["chain"] == ["bwrap", "landlock"]
    by_name = {c["backend"]: c for c in report["candidates"]}
    landlock = by_name["landlock"]
    assert landlock["usable"] is True and landlock["abi"] >= 1
    assert landlock["enforcement"]["read-only"] == "full"
    # The namespaced tier (namespaces here) holds workspace-write as bwrap does; the
    # plain tier's claim is reported beside it.
    assert landlock["enforcement"]["workspace-write"] == "full"
    tiers = {tier["tier"]: tier for tier in landlock["tiers"]}
    assert tiers["namespaced"]["usable"] and tiers["namespaced"]["selected"]
    assert tiers["plain"]["usable"] and not tiers["plain"]["selected"]
    assert tiers["plain"]["enforcement"]["workspace-write"] == "partial"
    assert report["selected"] in ("bwrap", "landlock")


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_exec_read_only_refuses_with_the_backends_denial_text(backend, tmp_path):
    require_backend(backend)
    target = Path("/tmp") / f"stockade-{uuid.uuid4().hex}"
    done = stockade(
        "exec",
        "--mode",
        "read-only",
        "--backend",
        backend,
        "--",
        "touch",
        str(target),
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert not target.exists()
    # The Landlock launcher's namespaced tier refuses on its read-only host first.
    expected = {"bwrap": "Read-only file system", "landlock": "Read-only file system"}[backend]
    assert expected in done.stderr


@pytest.mark.parametrize("backend", ["auto", "bwrap", "landlock"])
def test_exec_workspace_write_writes_under_the_root(backend, scratch):
    if backend != "auto":
        require_backend(backend)
    done = stockade(
        "exec",
        "--mode",
        "workspace-write",
        "--root",
        scratch,
        "--backend",
        backend,
        "--",
        "touch",
        "./x",
        cwd=scratch,
    )
    assert done.returncode == 0, done.stderr
    assert (Path(scratch) / "x").exists()


def test_exec_passes_output_and_status_through(tmp_path):
    require_backend("bwrap")
    done = stockade("exec", "--", "sh", "-c", "echo out; echo err >&2; exit 7", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (7, "out\n", "err\n")


def test_exec_adds_no_shell(tmp_path):
    require_backend("bwrap")
    done = stockade("exec", "--", "echo", "$HOME", "*", cwd=tmp_path)
    assert done.stdout == "$HOME *\n"


def test_exec_danger_full_access_runs_unconfined_without_the_provider(scratch, monkeypatch):
    target = Path(scratch) / "outside" / "f"
    target.parent.mkdir()
    done = stockade(
        "exec", "--mode", "danger-full-access", "--root", "/", "--", "touch", str(target), cwd="/"
    )
    assert done.returncode == 0, done.stderr
    assert target.exists()


def test_exec_unknown_mode_lists_allowed_values():
    done = stockade("exec", "--mode", "yolo", "--", "true")
    assert done.returncode == 2
    assert "allowed: read-only, workspace-write, danger-full-access" in done.stderr
    assert "Traceback" not in done.stderr


def test_exec_missing_root_is_a_clear_error(tmp_path):
    done = stockade("exec", "--root", str(tmp_path / "nope"), "--", "true")
    assert done.returncode == 2
    assert "does not exist" in done.stderr and "Traceback" not in done.stderr


def test_exec_with_no_usable_backend_is_sandbox_unavailable(monkeypatch, capsys, tmp_path):
    """A forced backend that fails its probe never falls back to another one, and a
    `bwrap` on PATH is never a candidate (only the fixed locations, the wheel, or an
    explicit bwrap_path)."""
    monkeypatch.setattr(bwrap, "BWRAP_LOCATIONS", (str(tmp_path / "no-such-bwrap"),))
    monkeypatch.setattr(bwrap, "_wheel_bwrap", lambda: None)
    marker = tmp_path / "ran"
    planted = tmp_path / "planted-ran"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "bwrap"  # any run of it, probe or command, leaves `planted` behind
    fake.write_text(f"#!/bin/sh\ntouch {planted}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    status = cli.main(
        ["exec", "--backend", "bwrap", "--root", str(tmp_path), "--", "touch", str(marker)]
    )
    assert status == 125
    err = capsys.readouterr().err
    assert err.startswith("stockade: SANDBOX_UNAVAILABLE: ")
    assert "bwrap not found" in err and "PATH is not searched" in err
    assert not marker.exists()
    assert not planted.exists()


def test_exec_runner_that_cannot_start_is_sandbox_unavailable(
    monkeypatch, capsys, tmp_path, runner_dir
):
    missing = runner_dir / "no-such-bwrap"  # outside the root: a runner inside is refused
    stub = _probe.Verdict("bwrap", True, str(missing))
    monkeypatch.setitem(backends.PROBES, "bwrap", lambda _t: stub)
    assert cli.main(["exec", "--backend", "bwrap", "--root", str(tmp_path), "--", "true"]) == 125
    assert "SANDBOX_UNAVAILABLE: cannot start the sandbox runner" in capsys.readouterr().err


def test_probe_exits_125_when_nothing_is_usable(monkeypatch, capsys):
    for name, why in (("bwrap", "stubbed off"), ("landlock", "stubbed off too")):
        off = _probe.Verdict(name, False, why_not=why)
        monkeypatch.setitem(backends.PROBES, name, lambda _t, off=off: off)
    assert cli.main(["probe"]) == 125
    out = capsys.readouterr().out
    assert "why not: stubbed off" in out and "selected: none" in out

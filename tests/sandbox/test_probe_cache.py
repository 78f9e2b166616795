"""The probe-verdict cache of `stockade exec`: remembered per runner identity, private."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stockade.sandbox import _probe, backends
from stockade.sandbox.backends import _choose, bwrap

from ..support import require_backend, stockade


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv(backends.CACHE_ENV_OFF, raising=False)  # the suite turns it off
    path = tmp_path / "fake-bwrap"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    monkeypatch.setitem(backends.RUNNER_LOCATORS, "bwrap", lambda: str(path))
    return path


def counting_probe(runner, calls, usable=True):
    def probe(_timeout):
        calls.append(1)
        return _probe.Verdict("bwrap", usable, str(runner), None if usable else "off")

    return probe


def test_a_usable_verdict_is_remembered_until_the_runner_changes(runner):
    calls = []

    def cached(timeout):
        return backends.remembered("bwrap", counting_probe(runner, calls), timeout)

    assert cached(1.0).usable and cached(1.0).usable
    assert len(calls) == 1
    cache = runner.parent / "run" / "stockade" / f"probe-verdicts-{os.getuid()}"
    assert cache.stat().st_mode & 0o777 == 0o600
    os.utime(runner, ns=(1, 1))  # a different runner file: probe again
    assert cached(1.0).usable
    assert len(calls) == 2


def test_failures_are_not_remembered(runner):
    calls = []

    def cached(timeout):
        return backends.remembered("bwrap", counting_probe(runner, calls, usable=False), timeout)

    assert not cached(1.0).usable and not cached(1.0).usable
    assert len(calls) == 2


def test_a_cache_file_others_could_write_is_ignored(runner):
    calls = []

    def cached(timeout):
        return backends.remembered("bwrap", counting_probe(runner, calls), timeout)

    cached(1.0)
    cache = runner.parent / "run" / "stockade" / f"probe-verdicts-{os.getuid()}"
    cache.chmod(0o666)
    cached(1.0)
    assert len(calls) == 2


def test_the_cache_can_be_turned_off(runner, monkeypatch):
    monkeypatch.setenv(backends.CACHE_ENV_OFF, "1")
    calls = []

    def cached(timeout):
        return backends.remembered("bwrap", counting_probe(runner, calls), timeout)

    cached(1.0)
    cached(1.0)
    assert len(calls) == 2
    assert not (runner.parent / "run" / "stockade").exists()


def cache_path(runner) -> str:
    return str(runner.parent / "run" / "stockade" / f"probe-verdicts-{os.getuid()}")


def plant_cache(runner, *lines: str) -> None:
    """A cache file as a writer could leave it: private, in a private directory."""
    path = cache_path(runner)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "w", encoding="utf-8") as cache:
        cache.writelines(f"{line}\n" for line in lines)
    os.chmod(path, 0o600)


def test_a_cache_line_naming_a_runner_never_chooses_what_runs(runner, tmp_path):
    """The cache maps identity -> verdict; the runner always comes from the locator."""
    elsewhere = tmp_path / "planted-bwrap"
    elsewhere.write_text("#!/bin/sh\n")
    elsewhere.chmod(0o755)
    key = _choose._identity("bwrap", str(runner))
    assert key is not None
    old_key = key.replace("bwrap|", f"bwrap|{runner}|", 1)  # the old key had the path
    calls = []
    probe = counting_probe(runner, calls)
    for line in (
        f"{old_key}\tbwrap\t{elsewhere}\t",  # the old format, under the old key
        f"{key}\tbwrap\t{elsewhere}\t",  # the old format, under the current key
        f"{key}\tbwrap\t{elsewhere}",  # a path where the ABI belongs
    ):
        plant_cache(runner, line)
        verdict = backends.remembered("bwrap", probe, 1.0)
        assert verdict.runner == str(runner), line
    assert len(calls) == 3  # none of those lines was taken for a verdict
    # Rewritten in the current format, without any path:
    with open(cache_path(runner), encoding="utf-8") as cache:
        text = cache.read()
    assert text == f"{key}\tbwrap\t\t\t\t\n"
    assert str(elsewhere) not in text
    # A current line is a hit, and the runner is still the one located.
    verdict = backends.remembered("bwrap", probe, 1.0)
    assert (verdict.usable, verdict.runner, len(calls)) == (True, str(runner), 3)


def test_a_remembered_verdict_follows_the_located_runner(runner, tmp_path, monkeypatch):
    calls = []
    assert backends.remembered("bwrap", counting_probe(runner, calls), 1.0).usable
    other = tmp_path / "other-bwrap"
    other.write_text("#!/bin/sh\n# another file\n")
    other.chmod(0o755)
    monkeypatch.setitem(backends.RUNNER_LOCATORS, "bwrap", lambda: str(other))
    verdict = backends.remembered("bwrap", counting_probe(other, calls), 1.0)
    assert verdict.runner == str(other)
    assert len(calls) == 2  # a different runner file: its own probe, not the cached one


def test_a_cache_inside_a_writable_root_is_never_used(runner, tmp_path):
    """A command that may write the cache could forge a usable verdict: probe every time."""
    calls = []
    # A usable verdict remembered by a call that could not write the cache...
    assert backends.remembered("bwrap", counting_probe(runner, calls), 1.0).usable
    assert len(calls) == 1
    assert backends.cache_problem(cache_path(runner), (str(tmp_path),)) is not None
    with open(cache_path(runner), encoding="utf-8") as cache:
        before = cache.read()
    # ...is not trusted by a call that could have written it: its probe decides.
    for _ in range(2):
        verdict = backends.remembered(
            "bwrap", counting_probe(runner, calls, usable=False), 1.0, (str(tmp_path),)
        )
        assert not verdict.usable
    assert len(calls) == 3
    for _ in range(2):
        verdict = backends.remembered("bwrap", counting_probe(runner, calls), 1.0, (str(tmp_path),))
        assert verdict.usable
    assert len(calls) == 5
    # ...and such a call writes nothing there either.
    with open(cache_path(runner), encoding="utf-8") as cache:
        assert cache.read() == before


def test_no_cache_is_made_inside_a_writable_root(runner, tmp_path):
    assert not (tmp_path / "run").exists()  # the cache directory is not there yet
    calls = []
    for _ in range(2):
        backends.remembered("bwrap", counting_probe(runner, calls), 1.0, (str(tmp_path),))
    assert len(calls) == 2
    assert not os.path.exists(cache_path(runner))


def test_stockade_exec_never_runs_a_runner_a_cache_line_names(scratch):
    """End to end: a planted line naming another runner, in either format, is never
    run; the located bwrap confines the command and the cache is rewritten without it."""
    require_backend("bwrap")
    located = bwrap.locate_bwrap()
    assert located is not None
    key = _choose._identity("bwrap", located)
    assert key is not None
    base = Path(scratch)
    work, run = base / "work", base / "run"
    for directory in (work, run):
        directory.mkdir(mode=0o700)
    planted_ran = base / "planted-ran"
    planted = base / "planted-bwrap"
    planted.write_text(f'#!/bin/sh\ntouch {planted_ran}\nexec "$@"\n')
    planted.chmod(0o755)
    cache = run / "stockade" / f"probe-verdicts-{os.getuid()}"
    cache.parent.mkdir(mode=0o700)
    old_key = key.replace("bwrap|", f"bwrap|{located}|", 1)
    cache.write_text(
        f"{old_key}\tbwrap\t{planted}\t\n{key}\tbwrap\t{planted}\t\n{key}\tbwrap\t{planted}\n"
    )
    cache.chmod(0o600)
    env = {backends.CACHE_ENV_OFF: "", "XDG_RUNTIME_DIR": str(run), "STOCKADE_CONFIG": ""}
    for _ in range(2):  # the second call reads what the first one wrote
        done = stockade("exec", "--backend", "bwrap", "--", "touch", "./x", cwd=work, env=env)
        assert done.returncode == 0, done.stderr
        assert (work / "x").exists()
        (work / "x").unlink()
    assert not planted_ran.exists()
    assert cache.read_text() == f"{key}\tbwrap\t\t\t\t\n"


def _one_shot_selection(scratch, monkeypatch, calls, roots=()):
    """`select_backend` of a one-shot provider (`remember_verdict`, as `stockade run`
    opens it) with the cache in `scratch` (outside the host's temp roots) and a
    counting bwrap probe."""
    from stockade.sandbox import ProviderConfig
    from stockade.sandbox._select import select_backend

    monkeypatch.setenv("XDG_RUNTIME_DIR", os.path.join(scratch, "run"))
    monkeypatch.delenv(backends.CACHE_ENV_OFF, raising=False)
    runner = Path(scratch) / "fake-bwrap"
    if not runner.exists():  # written once: a new file is a new runner, probed again
        runner.write_text("#!/bin/sh\n")
        runner.chmod(0o755)
    monkeypatch.setitem(backends.RUNNER_LOCATORS, "bwrap", lambda: str(runner))
    config = ProviderConfig(backend="bwrap", remember_verdict=True, probe_roots=roots)
    return select_backend(config, probes={"bwrap": counting_probe(runner, calls)})


def test_a_one_shot_provider_takes_the_remembered_verdict(scratch, monkeypatch):
    calls: list[int] = []
    for _ in range(2):
        selection = _one_shot_selection(scratch, monkeypatch, calls)
        assert selection.backend is not None and selection.backend.name == "bwrap"
    assert len(calls) == 1, "the second provider did not probe again"


def test_a_one_shot_provider_whose_call_may_write_the_cache_probes(scratch, monkeypatch):
    calls: list[int] = []
    for _ in range(2):
        _one_shot_selection(scratch, monkeypatch, calls, roots=(scratch,))
    assert len(calls) == 2
    assert not os.path.exists(os.path.join(scratch, "run", "stockade"))

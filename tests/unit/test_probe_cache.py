"""The probe-verdict cache of `stockade exec`: remembered per runner identity, private."""

from __future__ import annotations

import os

import pytest

from stockade.sandbox import _probe


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv(_probe.CACHE_ENV_OFF, raising=False)  # the suite turns it off
    path = tmp_path / "fake-bwrap"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    monkeypatch.setitem(_probe.RUNNER_LOCATORS, "bwrap", lambda: str(path))
    return path


def counting_probe(runner, calls, usable=True):
    def probe(_timeout):
        calls.append(1)
        return _probe.Verdict("bwrap", usable, str(runner), None if usable else "off")

    return probe


def test_a_usable_verdict_is_remembered_until_the_runner_changes(runner):
    calls = []

    def cached(timeout):
        return _probe.remembered("bwrap", counting_probe(runner, calls), timeout)

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
        return _probe.remembered("bwrap", counting_probe(runner, calls, usable=False), timeout)

    assert not cached(1.0).usable and not cached(1.0).usable
    assert len(calls) == 2


def test_a_cache_file_others_could_write_is_ignored(runner):
    calls = []

    def cached(timeout):
        return _probe.remembered("bwrap", counting_probe(runner, calls), timeout)

    cached(1.0)
    cache = runner.parent / "run" / "stockade" / f"probe-verdicts-{os.getuid()}"
    cache.chmod(0o666)
    cached(1.0)
    assert len(calls) == 2


def test_the_cache_can_be_turned_off(runner, monkeypatch):
    monkeypatch.setenv(_probe.CACHE_ENV_OFF, "1")
    calls = []

    def cached(timeout):
        return _probe.remembered("bwrap", counting_probe(runner, calls), timeout)

    cached(1.0)
    cached(1.0)
    assert len(calls) == 2
    assert not (runner.parent / "run" / "stockade").exists()

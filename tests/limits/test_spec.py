"""Limits and SessionLimits: their defaults, and overrides merged over them."""

from __future__ import annotations

import pytest

from stockade.errors import ConfigError
from stockade.limits import LIMIT_NAMES, SESSION_LIMIT_NAMES, Limits, SessionLimits, memtotal

M, G = 1024**2, 1024**3


def test_command_defaults():
    limits = Limits.defaults(memtotal=8 * G + 5 * M + 3)
    assert limits == Limits(
        processes=512,
        memory=4 * G + 2 * M,  # half, rounded down to a MiB
        cpu_seconds=None,
        wall_seconds=None,
        output_bytes=1048576,
        file_size=16 * G,
        open_files=65536,
    )
    assert LIMIT_NAMES == (
        "processes",
        "memory",
        "cpu_seconds",
        "wall_seconds",
        "output_bytes",
        "file_size",
        "open_files",
    )
    assert limits.items()[1] == ("memory", 4 * G + 2 * M)


def test_session_defaults():
    assert SessionLimits.defaults(memtotal=8 * G) == SessionLimits(
        processes=8192, memory=6 * G, running_jobs=None
    )
    assert SESSION_LIMIT_NAMES == ("processes", "memory", "running_jobs")


def test_defaults_read_this_hosts_memtotal():
    total = memtotal()
    expected = None if total is None else total // 2 // M * M
    assert Limits.defaults().memory == Limits().memory == expected
    session = None if total is None else int(total * 0.75) // M * M
    assert SessionLimits.defaults().memory == SessionLimits().memory == session


def test_overrides_merge_raw_or_parsed():
    base = Limits.defaults(memtotal=8 * G)
    merged = base.merged(
        {"memory": "2G", "cpu_seconds": "90s", "processes": None, "wall-seconds": 30}
    )
    assert merged.memory == 2 * G
    assert merged.cpu_seconds == 90.0
    assert merged.processes is None
    assert merged.wall_seconds == 30
    assert merged.open_files == base.open_files
    assert base.merged({}) == base
    assert base.merged({"memory": "25%"}, memtotal=8 * G).memory == 2 * G
    session = SessionLimits.defaults(memtotal=8 * G).merged({"running_jobs": "4"})
    assert session.running_jobs == 4


def test_unknown_or_bad_overrides_are_refused_clearly():
    base = Limits.defaults(memtotal=8 * G)
    with pytest.raises(ConfigError) as caught:
        base.merged({"running_jobs": 3})
    assert str(caught.value) == (
        "unknown limit 'running_jobs' (known: processes, memory, cpu_seconds, wall_seconds, "
        "output_bytes, file_size, open_files)"
    )
    with pytest.raises(ConfigError) as caught:
        SessionLimits.defaults(memtotal=8 * G).merged({"cpu_seconds": 3})
    assert str(caught.value) == (
        "unknown session limit 'cpu_seconds' (known: processes, memory, running_jobs)"
    )
    with pytest.raises(ConfigError, match="processes must be at least 1, or null for unlimited"):
        base.merged({"processes": 0})


def test_a_limit_built_directly_is_checked_too():
    with pytest.raises(ConfigError, match="processes must be at least 1"):
        Limits(processes=0, memory=None)
    with pytest.raises(ConfigError, match="memory: cannot read"):
        Limits(memory="2G")  # parse it first
    with pytest.raises(ConfigError, match="running_jobs must be at least 1"):
        SessionLimits(running_jobs=-1, memory=None)

"""The composition's limits (issue 26): `limits` and `session_limits` on the executor
entry, parsed at load (a bad entry is refused with its key), output_bytes and
wall_seconds being the capture cap and the default timeout."""

from __future__ import annotations

import pytest

from stockade.errors import ConfigError
from stockade.limits import Limits, SessionLimits

from .support import load

HEAD = "- id: s\n  name: stockade.sandbox.local\n- id: b\n  name: stockade.bash.sandbox\n"


def executor(tmp_path, config: str):
    composition = load(tmp_path, HEAD + "  config:\n" + config)
    return composition.executor.config.executor_config()


def test_defaults_are_on_when_nothing_is_said(tmp_path):
    config = load(tmp_path, HEAD).executor.config.executor_config()
    assert config.limits == Limits.defaults()
    assert config.session_limits == SessionLimits.defaults()
    assert config.command_limits.processes == 512
    assert config.command_limits.output_bytes == 1 << 20


def test_entries_are_parsed_with_units(tmp_path):
    config = executor(
        tmp_path,
        "    limits: {processes: 64, memory: 1G, cpu_seconds: 2m, output_bytes: 64K,"
        " wall_seconds: 90s, open_files: null}\n"
        "    session_limits: {running_jobs: 4, processes: 1000}\n",
    )
    limits = config.command_limits
    assert (limits.processes, limits.memory, limits.cpu_seconds) == (64, 1 << 30, 120)
    assert limits.open_files is None
    # The older names' values follow the limits'.
    assert config.output_cap == 64 << 10 and config.default_timeout == 90
    assert config.session_limits.running_jobs == 4
    assert config.session_limits.processes == 1000


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("limits: {processes: 0}", "processes must be at least 1"),
        ("limits: {colour: 3}", "colour"),
        ("limits: {memory: lots}", "memory"),
        ("limits: {output_bytes: null}", "output_bytes cannot be null"),
        ("session_limits: {running_jobs: -1}", "running_jobs"),
    ],
)
def test_a_bad_entry_is_refused_at_load_with_its_key(tmp_path, entry, words):
    with pytest.raises(ConfigError) as info:
        executor(tmp_path, f"    {entry}\n")
    text = str(info.value)
    assert words in text and ("limits" in text), text

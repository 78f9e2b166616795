"""Limits' values: parsing `NAME=VALUE` and YAML values, refusing bad ones clearly,
formatting them for people, and reading MemTotal."""

from __future__ import annotations

import pytest

from stockade.errors import ConfigError
from stockade.limits import format_value, memtotal, parse_assignment, parse_value

K, M, G, T = 1024, 1024**2, 1024**3, 1024**4


def refused(name, raw, **kwargs):
    with pytest.raises(ConfigError) as caught:
        parse_value(name, raw, **kwargs)
    return str(caught.value)


def test_sizes_take_bytes_and_binary_units_in_every_spelling():
    assert parse_value("memory", "2G") == 2 * G
    assert parse_value("memory", "2g") == parse_value("memory", "2GiB") == 2 * G
    assert parse_value("memory", "2GB") == 2 * G  # binary too: a limit is never decimal
    assert parse_value("output_bytes", "1K") == parse_value("output_bytes", "1kib") == K
    assert parse_value("file_size", "16T") == 16 * T
    assert parse_value("memory", "512M") == parse_value("memory", "512 MiB") == 512 * M
    assert parse_value("memory", "1.5K") == 1536
    assert parse_value("memory", "0.1K") == 102  # rounded down to a byte
    assert parse_value("memory", "4096") == parse_value("memory", "4096B") == 4096
    assert parse_value("memory", 4096) == 4096
    assert parse_value("memory", " 2G ") == 2 * G


def test_memory_takes_a_share_of_memtotal_rounded_down_to_a_mib():
    assert parse_value("memory", "50%", memtotal=8 * G) == 4 * G
    assert parse_value("memory", "100%", memtotal=8 * G + 123) == 8 * G
    assert parse_value("memory", "33%", memtotal=G) == 337 * M  # 337.9 MiB, down
    assert "at most 100%" in refused("memory", "150%", memtotal=G)
    assert "more than 0%" in refused("memory", "0%", memtotal=G)
    assert "under 1 MiB" in refused("memory", "0.01%", memtotal=G)
    assert refused("file_size", "50%", memtotal=G) == (
        "file_size: only memory takes a share of MemTotal (N%)"
    )


def test_seconds_take_numbers_and_s_m_h():
    assert parse_value("cpu_seconds", "90s") == 90.0
    assert parse_value("cpu_seconds", "2m") == 120.0
    assert parse_value("wall_seconds", "1.5h") == 5400.0
    assert parse_value("wall_seconds", "30") == 30.0
    assert parse_value("wall_seconds", "0.25") == 0.25
    assert parse_value("wall_seconds", "30 s") == 30.0
    assert parse_value("wall_seconds", 30) == 30
    assert parse_value("wall_seconds", 2.5) == 2.5


def test_counts_take_whole_numbers_only():
    assert parse_value("processes", "512") == 512
    assert parse_value("open_files", 1024) == 1024
    assert parse_value("running_jobs", "+3") == 3
    assert "whole number such as 512" in refused("processes", "1.5")
    assert "whole number" in refused("processes", "1K")
    assert "cannot read '1.5'" in refused("processes", 1.5)


def test_unlimited_is_said_with_null():
    for raw in (None, "null", "None", "unlimited", "UNLIMITED", "~", " none "):
        assert parse_value("memory", raw) is None
        assert parse_value("processes", raw) is None
        assert parse_value("cpu_seconds", raw) is None


def test_zero_and_negatives_are_refused_pointing_at_null():
    assert refused("processes", "0") == "processes must be at least 1, or null for unlimited"
    assert refused("processes", -1) == "processes must be at least 1, or null for unlimited"
    assert refused("memory", "0") == "memory must be at least 1 byte, or null for unlimited"
    assert refused("memory", "-2G") == "memory must be at least 1 byte, or null for unlimited"
    assert refused("cpu_seconds", "0s") == (
        "cpu_seconds must be more than 0 seconds, or null for unlimited"
    )
    assert refused("wall_seconds", -3.0).startswith("wall_seconds must be more than 0")
    assert "finite" in refused("wall_seconds", float("inf"))
    assert "finite" in refused("wall_seconds", float("nan"))


def test_bad_values_say_what_is_allowed():
    text = refused("memory", "lots")
    assert text.startswith("memory: cannot read 'lots'; give a number of bytes or a size")
    assert "50%" in text and "null for unlimited" in text
    assert "90s, 2m or 1.5h" in refused("cpu_seconds", "2d")
    assert "2G" not in refused("cpu_seconds", "2d")
    assert refused("memory", "1.5") == "memory: '1.5' is not a whole number of bytes"
    assert "cannot read" in refused("memory", "")
    assert "cannot read" in refused("memory", True)  # YAML `yes` is no size
    assert "cannot read" in refused("processes", [1])
    assert "cannot read" in refused("memory", "9" * 5000)  # too long to be an int
    assert "cannot read" in refused("memory", "9" * 400 + "T")  # too large for a float
    assert "characters" in refused("memory", "x" * 500)  # the echo is cut


def test_unknown_names_list_the_known_ones():
    text = refused("mem", "2G")
    assert text.startswith("unknown limit 'mem' (known: processes, memory, cpu_seconds")
    assert "running_jobs" in text


def test_an_assignment_is_name_equals_value():
    assert parse_assignment("memory=2G") == ("memory", 2 * G)
    assert parse_assignment(" cpu-seconds = 90s ") == ("cpu_seconds", 90.0)
    assert parse_assignment("processes=unlimited") == ("processes", None)
    assert parse_assignment("memory=50%", memtotal=2 * G) == ("memory", G)
    for bad in ("memory", "=2G", "  =2G"):
        with pytest.raises(ConfigError, match=r"--limit takes NAME=VALUE, e.g. memory=2G"):
            parse_assignment(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        parse_assignment("memory=")


def test_sizes_format_in_the_largest_unit_that_is_short_and_exact():
    assert format_value("memory", 2 * G) == "2 GiB"
    assert format_value("memory", 512 * M) == "512 MiB"
    assert format_value("output_bytes", M) == "1 MiB"
    assert format_value("file_size", 16 * G) == "16 GiB"
    assert format_value("memory", 1536) == "1.5 KiB"
    assert format_value("memory", 3 * T) == "3 TiB"
    assert format_value("memory", 2049 * M) == "2049 MiB"  # exact beats "2.0 GiB"
    assert format_value("memory", 1000) == "1000 B"
    assert format_value("memory", 1_000_000) == "976.6 KiB"  # no short exact form
    assert format_value("memory", G + 1) == "1.0 GiB"
    assert format_value("memory", 20000 * T) == "20000 TiB"


def test_other_values_format_plainly():
    assert format_value("cpu_seconds", 30.0) == "30 s"
    assert format_value("wall_seconds", 0.25) == "0.25 s"
    assert format_value("wall_seconds", 5400) == "5400 s"
    assert format_value("processes", 512) == "512"
    for name in ("memory", "processes", "cpu_seconds"):
        assert format_value(name, None) == "unlimited"


def test_formatted_values_read_back():
    for name, value in (("memory", 2 * G), ("memory", 1536), ("cpu_seconds", 30.0)):
        assert parse_value(name, format_value(name, value)) == value
    assert parse_value("memory", format_value("memory", None)) is None


def test_memtotal_reads_proc_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16318412 kB\nMemFree:         1000 kB\n")
    assert memtotal(str(meminfo)) == 16318412 * 1024
    meminfo.write_text("MemFree:         1000 kB\n")
    assert memtotal(str(meminfo)) is None
    meminfo.write_text("MemTotal: lots kB\n")
    assert memtotal(str(meminfo)) is None
    assert memtotal(str(tmp_path / "missing")) is None
    real = memtotal()
    assert real is None or real > 0

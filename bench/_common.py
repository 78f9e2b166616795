"""What every family shares: statistics, the progress line, results, scratch space.

Nothing here imports trio or stockade, so `python -m bench --help` stays instant.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# --- statistics --------------------------------------------------------------------------


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = math.ceil(rank)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def summarize(samples: Sequence[float], scale: float = 1.0) -> dict[str, float]:
    """Median and spread of `samples`, each multiplied by `scale` (e.g. 1e3 for s -> ms)."""
    values = [value * scale for value in samples]
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "median": percentile(values, 50),
        "p10": percentile(values, 10),
        "p90": percentile(values, 90),
        "q1": percentile(values, 25),
        "q3": percentile(values, 75),
        "p99": percentile(values, 99),
        "min": min(values),
        "max": max(values),
        "mean": sum(values) / len(values),
    }


class PerJob(Protocol):
    """A run with its wall and CPU seconds per job."""

    @property
    def wall_per_job(self) -> float: ...

    @property
    def cpu_per_job(self) -> float: ...


def on_off_medians(
    on: Sequence[PerJob], off: Sequence[PerJob]
) -> tuple[float, float, float, float]:
    """Median wall and CPU seconds per job of `on` runs and `off` runs: (on wall, off wall,
    on CPU, off CPU)."""
    return (
        summarize([r.wall_per_job for r in on])["median"],
        summarize([r.wall_per_job for r in off])["median"],
        summarize([r.cpu_per_job for r in on])["median"],
        summarize([r.cpu_per_job for r in off])["median"],
    )


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else math.nan


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table: significant figures without noise, '-' for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        magnitude = abs(value)
        if magnitude >= 10_000:
            return f"{value:,.0f}"
        if magnitude >= 100:
            return f"{value:.0f}"
        if magnitude >= 10:
            return f"{value:.1f}"
        if magnitude >= 1:
            return f"{value:.2f}"
        return f"{value:.{digits}f}"
    return str(value)


def spread(summary: dict[str, float]) -> str:
    """'p10-p90' of a summary, for a table cell."""
    if not summary.get("n"):
        return "-"
    return f"{fmt(summary['p10'])}-{fmt(summary['p90'])}"


# --- progress ----------------------------------------------------------------------------


class Progress:
    """A live line on stderr: rewritten in place on a terminal, a line every few seconds else."""

    def __init__(self, family: str, label: str, total: int | None = None) -> None:
        self.family = family
        self.label = label
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self._last = 0.0
        self._tty = sys.stderr.isatty()
        self._shown = False
        self._interval = 0.1 if self._tty else 5.0
        if not self._tty:
            self._emit(force=True)

    def advance(self, count: int = 1, label: str | None = None) -> None:
        self.done += count
        if label is not None:
            self.label = label
        self._emit()

    def set(self, done: int, label: str | None = None) -> None:
        self.done = done
        if label is not None:
            self.label = label
        self._emit()

    def _text(self) -> str:
        elapsed = time.monotonic() - self.started
        if self.total:
            width = 24
            filled = min(width, int(width * self.done / self.total))
            bar = "#" * filled + "." * (width - filled)
            count = f"[{bar}] {self.done}/{self.total}"
        else:
            count = f"{self.done}"
        return f"[{self.family}] {self.label} {count} {elapsed:5.1f}s"

    def _emit(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self._interval:
            return
        self._last = now
        if self._tty:
            sys.stderr.write("\r\x1b[2K" + self._text())
            self._shown = True
        else:
            sys.stderr.write(self._text() + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self._tty and self._shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def note(message: str) -> None:
    """A remark on stderr that stays (skipped peer, missing matplotlib, ...)."""
    sys.stderr.write(f"note: {message}\n")
    sys.stderr.flush()


# --- results -----------------------------------------------------------------------------


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[Any]]
    caption: str = ""

    def markdown(self) -> str:
        lines = [f"#### {self.title}", ""]
        if self.caption:
            lines += [self.caption, ""]
        lines.append("| " + " | ".join(self.headers) + " |")
        lines.append("|" + "|".join("---" for _ in self.headers) + "|")
        for row in self.rows:
            lines.append("| " + " | ".join(fmt(cell) for cell in row) + " |")
        return "\n".join(lines) + "\n"


@dataclass
class Target:
    """A stated target and where this run stands; `met` None when it could not be measured."""

    name: str
    goal: str
    value: str
    met: bool | None
    note: str = ""
    # A floor shown under the target it stops (a figure, not judged).
    floor: bool = False


@dataclass
class Check:
    """A correctness fact (isolation, fds back to baseline). A failed check fails the run."""

    name: str
    ok: bool
    detail: str = ""


@dataclass
class FamilyResult:
    name: str
    figures: dict[str, Any] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def skip(self, message: str) -> None:
        """A part that cannot run here: noted on stderr and in the report, never a failure."""
        note(f"{self.name}: {message}")
        self.notes.append(message)

    @property
    def failed_checks(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]


# --- scratch space -----------------------------------------------------------------------


def _under(path: str, roots: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)


def host_temp_roots() -> list[str]:
    """The directories workspace-write always allows (/tmp and $TMPDIR), real paths."""
    roots = ["/tmp"]
    tmpdir = os.environ.get("TMPDIR")
    if tmpdir and os.path.isabs(tmpdir):
        roots.append(tmpdir)
    return [os.path.realpath(root) for root in roots if os.path.isdir(root)]


class Scratch:
    """A private directory on a real disk, outside every temp root a sandbox may write.

    An outside write must be refused by the sandbox to count as isolation, so the
    workspace roots cannot live under /tmp (workspace-write always grants it).
    """

    def __init__(self, keep: bool = False) -> None:
        temp_roots = host_temp_roots()
        candidates = [
            os.environ.get("STOCKADE_BENCH_SCRATCH"),
            "/var/tmp",
            os.path.join(os.path.expanduser("~"), ".cache"),
            os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"),
        ]
        base = None
        for candidate in candidates:
            if not candidate:
                continue
            try:
                os.makedirs(candidate, exist_ok=True)
            except OSError:
                continue
            if os.access(candidate, os.W_OK) and not _under(candidate, temp_roots):
                base = candidate
                break
        if base is None:
            raise RuntimeError("no writable scratch directory outside the host temp roots")
        self.path = os.path.realpath(tempfile.mkdtemp(prefix="stockade-bench-", dir=base))
        self.keep = keep
        self._held: list[tuple[int, str]] = []

    def hold(self, blockers: list[tuple[str, bool]]) -> None:
        """Make and hold placeholders (stockade.sandbox.placeholders) for a runner the
        run invokes directly, as the executor would; let go of and removed at cleanup."""
        from stockade.sandbox import placeholders

        fds = placeholders.hold_all(blockers)
        self._held += [(fd, path) for fd, (path, _directory) in zip(fds, blockers, strict=True)]

    def dir(self, *parts: str) -> str:
        path = os.path.join(self.path, *parts)
        os.makedirs(path, exist_ok=True)
        return path

    def cleanup(self) -> None:
        from stockade.sandbox import placeholders

        for fd, _path in self._held:
            os.close(fd)
        for _fd, path in reversed(self._held):
            placeholders.sweep(path)
        self._held.clear()
        if not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)


def filesystem_of(path: str) -> str:
    """The filesystem type holding `path` (from /proc/self/mounts), for durability context."""
    real = os.path.realpath(path)
    best = ("", "?")
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mount_point = parts[1].replace("\\040", " ")
                if (real == mount_point or real.startswith(mount_point.rstrip("/") + "/")) and len(
                    mount_point
                ) >= len(best[0]):
                    best = (mount_point, parts[2])
    except OSError:
        pass
    return best[1]


# --- process facts -----------------------------------------------------------------------


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _status_kib(field_name: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    return 0


def rss_mib() -> float:
    return _status_kib("VmRSS") / 1024


def peak_rss_mib() -> float:
    return _status_kib("VmHWM") / 1024


def reset_peak_rss() -> bool:
    """Reset VmHWM so the next peak is this phase's own (Linux: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")
        return True
    except OSError:
        return False


# --- the run's context -------------------------------------------------------------------


@dataclass
class Context:
    """What every family receives: mode, scratch space, where peers live, backend facts."""

    quick: bool
    scratch: Scratch
    peers_dir: str | None
    backends: dict[str, Any]
    seed: int = 8

    def usable(self, backend: str) -> bool:
        report = self.backends["candidates"].get(backend)
        return bool(report and report["usable"])

    def runner(self, backend: str) -> str | None:
        report = self.backends["candidates"].get(backend)
        return report["runner"] if report else None

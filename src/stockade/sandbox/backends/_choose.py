"""Choosing among the chain's backends (backends/__init__.py, `PLATFORM_CHAINS`):
probe each in order, the first that enforces wins; and the verdict cache that lets a
one-shot caller (`stockade exec`) skip the probe. Standard library only.
"""

from __future__ import annotations

import os
import sys
from collections import namedtuple

from .._probe import TRANSIENT_ERRNOS, Verdict
from . import NAMES, RUNNER_COMMAND, chain_for, known, named

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from .._probe import Probe


class _ItsProbe:
    """A backend's own probe (`Backend.probe`), its module imported when it runs."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, timeout: float) -> Verdict:
        return named(self.name).probe(timeout)


# Each backend's probe, by name: a caller (a test) may stand another in.
PROBES: dict[str, Probe] = {name: _ItsProbe(name) for name in NAMES}


class Chosen(namedtuple("Chosen", "platform chain verdicts selected")):
    """The outcome of selection: platform (str), the chain tried (tuple[str, ...]),
    every verdict (tuple[Verdict, ...]), and the selected one (Verdict | None)."""

    __slots__ = ()

    @property
    def worth_retrying(self) -> bool:
        """No winner, but only because some probe could not run just now."""
        return self.selected is None and any(v.transient for v in self.verdicts)

    @property
    def detail(self) -> str:
        """Why nothing was selected, naming each candidate's reason."""
        if self.selected is not None:
            return f"selected {self.selected.backend}"
        if not self.chain:
            return (
                f"no sandbox backend exists for platform {self.platform!r}; "
                "stockade never runs a command unconfined"
            )
        reasons = "; ".join(f"{v.backend}: {v.why_not}" for v in self.verdicts if not v.usable)
        return f"no usable sandbox backend on {self.platform} ({reasons})"


def choose(
    platform: str,
    backend: str = "auto",
    *,
    runner_command: str | None = None,
    timeout: float = 10.0,
    probe_all: bool = False,
    probes: Mapping[str, Probe] = PROBES,
    remember: bool = False,
    writable_roots: Sequence[str] = (),
    bwrap_path: str | None = None,
) -> Chosen:
    """Probe the platform chain in order; the first candidate that enforces wins.

    `runner_command` is the operator's runner: chain and probes are skipped.
    `probe_all` keeps probing after a winner, for a full report (`stockade probe`).
    `remember` uses the cross-process verdict cache (`stockade exec` only), where the
    trust base allows it for a call that may write `writable_roots`.
    `bwrap_path` is the operator's explicit bwrap (else the fixed locations).
    """
    if runner_command is not None:
        verdict = Verdict(RUNNER_COMMAND, True, runner_command, probed=False)
        return Chosen(platform, (RUNNER_COMMAND,), (verdict,), verdict)
    chain = chain_for(platform, backend)
    verdicts: list[Verdict] = []
    selected: Verdict | None = None
    for name in chain:
        if selected is not None and not probe_all:
            break
        probe = probes[name]
        if isinstance(probe, _ItsProbe) and (bwrap_path or writable_roots):
            # The backend's own probe, told the operator's bwrap and the call's roots.
            probe = _told(name, bwrap_path, writable_roots)
        try:
            if remember and bwrap_path is None:
                verdict = remembered(name, probe, timeout, writable_roots)
            else:
                verdict = probe(timeout)
        except OSError as error:  # e.g. no descriptor left for the probe's scratch dir
            transient = error.errno in TRANSIENT_ERRNOS
            verdict = Verdict(
                name, False, why_not=f"probe could not run: {error}", transient=transient
            )
        verdicts.append(verdict)
        if verdict.usable and selected is None:
            selected = verdict
    if backend != "auto" and not chain:
        why = f"backend {backend!r} is not in the {platform} chain"
        verdicts.append(Verdict(backend, False, why_not=why))
        chain = (backend,)
    return Chosen(platform, chain, tuple(verdicts), selected)


def _told(name: str, explicit: str | None, roots: Sequence[str]) -> Probe:
    def probe(timeout: float) -> Verdict:
        return named(name).probe(timeout, explicit=explicit, roots=roots)

    return probe


# --- a verdict cache for `stockade exec` ------------------------------------------------
#
# Every `stockade exec` is a new process, and the functional probe (about 5 ms for bwrap,
# plus the imports it needs) was its largest cost. A usable verdict is remembered per
# user, keyed by the runner file's identity (device, inode, mtime, ctime, size), the kernel
# release and the boot id: a new runner, kernel or boot probes again. The cache holds
# identity -> verdict only, never a path to run: the runner is located afresh by its
# backend (`Backend.locate`) and must match the remembered identity. It is used only where the
# trust base's check 1 holds for the cache file (outside every writable root of the
# call, private to the caller): elsewhere a command could forge it. A host policy
# changed mid-boot shows up as the runner's own refusal at exec time: the command
# still never runs unconfined. STOCKADE_NO_PROBE_CACHE=1 turns the cache off. The
# ProviderActor does not use it (it probes once per life).

CACHE_ENV_OFF = "STOCKADE_NO_PROBE_CACHE"
# What the probes check; a verdict remembered from other probes is not reused (2: bwrap
# is probed with network off, a named socket hidden by its filter stage; 3: the
# launcher reports its tier; 4: the launcher takes --started-fd).
PROBE_VERSION = 4


def cache_file() -> str | None:
    """Where the verdict cache would live for this user (None: no cache possible)."""
    if os.environ.get(CACHE_ENV_OFF):
        return None
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home == "~":
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "stockade", f"probe-verdicts-{os.getuid()}")


def cache_problem(path: str, writable_roots: Sequence[str]) -> str | None:
    """Why the cache at `path` may not be used for a call with these roots, or None."""
    from ...trust import check_trusted

    problem = check_trusted(path, writable_roots, what="the probe-verdict cache", must_exist=False)
    return None if problem is None else problem.message("the cache is off for this call")


def _identity(name: str, runner: str) -> str | None:
    try:
        info = os.stat(runner)
        # Bytes, decoded as ASCII: the "ascii" text codec is a module exec would load.
        with open("/proc/sys/kernel/random/boot_id", "rb") as boot:
            boot_id = boot.read().decode("ascii").strip()
    except OSError:
        return None
    parts = (name, info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size)
    return "|".join(map(str, (*parts, os.uname().release, boot_id, PROBE_VERSION)))


def _read_cached(path: str, key: str, runner: str) -> Verdict | None:
    """The cached verdict for `key`; only from a private file of this user's."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as cache:
        info = os.fstat(cache.fileno())
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None
        for line in cache:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 6 and fields[0] == key:
                backend, abi, ipc, tier, why = fields[1:]
                if backend != key.split("|", 1)[0]:
                    return None
                if not abi.isdigit() and abi:
                    return None
                kind = known(backend)
                if kind is None:
                    return None
                return Verdict(
                    backend,
                    True,
                    runner,
                    abi=int(abi) if abi else None,
                    ipc=ipc if ipc in ("private", "filtered") else None,
                    tier=tier if tier in kind.TIERS else None,
                    tier_why=why or None,
                )
    return None


def _write_cached(path: str, key: str, verdict: Verdict) -> None:
    """Add `verdict` under `key`, atomically; a cache that cannot be written is no cache."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        kept: list[str] = []
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, encoding="utf-8", errors="replace") as old:
                kept = [line for line in old if not line.startswith(verdict.backend + "|")]
        abi = "" if verdict.abi is None else str(verdict.abi)
        why = (verdict.tier_why or "").replace("\t", " ").replace("\n", " ")
        kept.append(
            f"{key}\t{verdict.backend}\t{abi}\t{verdict.ipc or ''}\t{verdict.tier or ''}\t{why}\n"
        )
        partial = f"{path}.{os.getpid()}"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as new:
            new.writelines(kept)
        os.replace(partial, path)
    except OSError:
        return


# Looked up when called, so a test (or a caller) that replaces a locator is obeyed.
class _ItsRunner:
    """Where a backend finds its runner (`Backend.locate`), its module imported then."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self) -> str | None:
        return named(self.name).locate()


# The runners of this host's chain (the only one `stockade exec` probes), by backend.
RUNNER_LOCATORS: dict[str, Callable[[], str | None]] = {
    name: _ItsRunner(name) for name in chain_for(sys.platform)
}


def remembered(
    name: str, probe: Probe, timeout: float, writable_roots: Sequence[str] = ()
) -> Verdict:
    """`probe(timeout)`, with a usable verdict remembered across processes (see above)."""
    locate = RUNNER_LOCATORS.get(name)
    path, runner = cache_file(), locate() if locate is not None else None
    if path is not None and cache_problem(path, writable_roots) is not None:
        path = None
    key = _identity(name, runner) if path and runner else None
    if path and key and runner:
        hit = _read_cached(path, key, runner)
        if hit is not None:
            return hit
    verdict = probe(timeout)
    if path and key and verdict.usable and verdict.runner == runner:
        _write_cached(path, key, verdict)
    return verdict

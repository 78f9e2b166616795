"""Family `network`: what `network: allowlist` costs (issue 25).

Three questions, all on loopback, against an HTTP origin the family starts in its own
process (HTTP/1.0, one request per connection, a small fixed body and a large one):

1. The proxy's added latency per connection: one GET of the small body on a fresh
   connection, direct from this process and through the proxy's three faces (HTTP
   absolute-URI forwarding, CONNECT, SOCKS5) over a call's Unix-socket endpoint
   (`open_proxy` + `open_call`), interleaved per round and paired; then the same loop
   timed inside a confined command on each usable backend (through the launcher's
   bridge on the command's own loopback), against the loop run unconfined and direct.
2. Throughput of a large download (256 MiB, 64 MiB in --quick) through each face
   against direct, from this process and from curl inside a confined command.
3. The spawn cost of `allowlist` against `off` (`true` through the executor on each
   backend, interleaved rounds, paired differences, as in `spawn`).
4. Issue 41: what a terminated HTTPS request adds over a blind tunnel to the same
   origin (fresh connection, and per request on a kept one), and a terminated large
   download's throughput (`bench/_terminated.py`).

Checks (never speed): every proxied request got the right body (and the large ones
every byte); the proxy decided one allowed connection per proxied request; a request
to a port no entry lists is refused, in this process and from a confined command,
where the result's `connections` shows that one refused connection.
"""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ._common import Check, Context, FamilyResult, Progress, Table, fmt, percentile, summarize

LOOPBACK = "127.0.0.1"
SMALL = b"stockade bench: the small body of issue 25's latency rows\n"
BLOCK = 1 << 20  # the origin writes the large body in 1 MiB blocks
PROTOCOLS = ("http", "connect", "socks5")
FACES = {"http": "HTTP forward", "connect": "HTTP CONNECT", "socks5": "SOCKS5"}

# The origin: two servers in one process (the second is never listed, for the refusal
# check), HTTP/1.0 so every response ends its connection.
ORIGIN = r"""
import http.server, sys, threading
SMALL = @SMALL@
BLOCK = bytes(range(256)) * (@BLOCK@ // 256)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/small":
            size, body = len(SMALL), SMALL
        elif self.path.startswith("/big/"):
            size, body = int(self.path[5:]), None
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        if body is not None:
            self.wfile.write(body)
            return
        view = memoryview(BLOCK)
        while size > 0:
            chunk = min(size, len(BLOCK))
            self.wfile.write(view[:chunk])
            size -= chunk

    def log_message(self, *args):
        pass

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

servers = [Server(("127.0.0.1", 0), Handler) for _ in range(2)]
for server in servers[1:]:
    threading.Thread(target=server.serve_forever, daemon=True).start()
print(*(s.server_address[1] for s in servers), flush=True)
servers[0].serve_forever()
""".replace("@SMALL@", repr(SMALL)).replace("@BLOCK@", str(BLOCK))

# The loop a command runs: K GETs of the small body, each on a fresh connection, timed
# with perf_counter around each request; direct, or through the proxy the environment
# names (HTTP_PROXY for http/connect, ALL_PROXY for socks5). Prints one JSON line.
LOOP = r"""
import json, os, socket, struct, sys, time, urllib.parse
SMALL = @SMALL@
mode, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
origin = ("127.0.0.1", port)
if mode == "direct":
    target = origin
else:
    url = urllib.parse.urlsplit(os.environ["ALL_PROXY" if mode == "socks5" else "HTTP_PROXY"])
    target = (url.hostname, url.port)

def read_until(sock, data, marker):
    while marker not in data:
        more = sock.recv(65536)
        if not more:
            raise OSError("closed early")
        data += more
    return data

def once():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.connect(target)
        path = "/small"
        if mode == "http":
            path = "http://127.0.0.1:%d/small" % port
        elif mode == "connect":
            host = "127.0.0.1:%d" % port
            sock.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (host, host)).encode())
            head = read_until(sock, b"", b"\r\n\r\n")
            if head.split(b" ", 2)[1] != b"200":
                return False
        elif mode == "socks5":
            sock.sendall(b"\x05\x01\x00")
            reply = b""
            while len(reply) < 2:
                reply += sock.recv(2 - len(reply))
            address = socket.inet_aton(origin[0]) + struct.pack("!H", port)
            sock.sendall(b"\x05\x01\x00\x01" + address)
            reply = b""
            while len(reply) < 10:
                more = sock.recv(10 - len(reply))
                if not more:
                    return False
                reply += more
            if reply[1] != 0:
                return False
        sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
                      % (path, port)).encode())
        data = b""
        while True:
            more = sock.recv(65536)
            if not more:
                break
            data += more
    finally:
        sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head.split(b" ", 2)[1] == b"200" and body == SMALL

samples, ok = [], 0
for _ in range(count):
    start = time.perf_counter()
    good = once()
    samples.append(time.perf_counter() - start)
    ok += good
print(json.dumps({"samples": samples, "ok": ok}))
""".replace("@SMALL@", repr(SMALL))


# --- the harness-side clients (Trio, in the proxy's own event loop) ----------------------


async def _connect_tcp(port: int) -> Any:
    import trio

    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        await sock.connect((LOOPBACK, port))
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


async def _read_until(stream: Any, data: bytes, size: int | None, marker: bytes = b"") -> bytes:
    """Read on until `data` holds `size` bytes or `marker`; raises on an early end."""
    while (len(data) < size) if size is not None else (marker not in data):
        more = await stream.receive_some(65536)
        if not more:
            raise OSError("the connection closed early")
        data += more
    return data


async def _response(stream: Any, data: bytes, keep: bool) -> tuple[int, bytes, int]:
    """Read a response to its end of file: (status, body if `keep`, body length)."""
    data = await _read_until(stream, data, None, b"\r\n\r\n")
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = len(body)
    kept = [body] if keep else []
    while more := await stream.receive_some(1 << 18):
        length += len(more)
        if keep:
            kept.append(more)
    return status, b"".join(kept), length


def _get(path: str, port: int, *, absolute: bool = False) -> bytes:
    target = f"http://{LOOPBACK}:{port}{path}" if absolute else path
    return (
        f"GET {target} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\nConnection: close\r\n\r\n"
    ).encode()


async def fetch(mode: str, port: int, path: str, *, endpoint: str | None, keep: bool) -> tuple:
    """One GET of `path` from the origin at `port` on a fresh connection: direct, or
    through the proxy endpoint (a Unix socket) by `mode` (http, connect, socks5)."""
    import trio

    if mode == "direct":
        stream = await _connect_tcp(port)
    else:
        assert endpoint is not None
        stream = await trio.open_unix_socket(endpoint)
    async with stream:
        data = b""
        if mode == "http":
            await stream.send_all(_get(path, port, absolute=True))
        else:
            if mode == "connect":
                host = f"{LOOPBACK}:{port}"
                await stream.send_all(f"CONNECT {host} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
                data = await _read_until(stream, b"", None, b"\r\n\r\n")
                head, _, data = data.partition(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                if status != 200:
                    return status, head, 0
            elif mode == "socks5":
                await stream.send_all(b"\x05\x01\x00")
                data = await _read_until(stream, b"", 2)
                request = b"\x05\x01\x00\x01" + socket.inet_aton(LOOPBACK) + port.to_bytes(2)
                await stream.send_all(request)
                data = await _read_until(stream, data[2:], 10)
                if data[1] != 0:
                    return 403, b"socks5 reply %d" % data[1], 0
                data = data[10:]
            await stream.send_all(_get(path, port))
        return await _response(stream, data, keep)


# --- measurements ------------------------------------------------------------------------


@dataclass
class Series:
    name: str
    group: str  # harness | command | spawn
    call: Callable[[], Awaitable[Any]] | None = None
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def _paired(series: Series, base: Series) -> list[float]:
    by_round = dict(zip(base.rounds, base.wall, strict=True))
    return [
        w - by_round[r] for r, w in zip(series.rounds, series.wall, strict=True) if r in by_round
    ]


async def _interleave(
    ctx: Context, label: str, series: list[Series], rounds: int, on_result: Callable
) -> None:
    rng = random.Random(ctx.seed)
    with Progress("network", label, rounds * len(series)) as progress:
        for index in range(rounds):
            order = list(series)
            rng.shuffle(order)
            for item in order:
                assert item.call is not None
                cpu = time.process_time()
                start = time.perf_counter()
                outcome = await item.call()
                item.wall.append(time.perf_counter() - start)
                item.cpu.append(time.process_time() - cpu)
                item.rounds.append(index)
                on_result(item, outcome)
                progress.advance(label=f"{label}: {item.name}")


@dataclass
class Sizes:
    requests: int  # harness latency rounds (one request per face per round)
    loop_runs: int  # command loop rounds
    loop_count: int  # requests per command loop
    big: int  # bytes per large download
    big_rounds: int
    spawn_rounds: int


def sizes(quick: bool) -> Sizes:
    if quick:
        return Sizes(300, 3, 50, 64 << 20, 3, 30)
    return Sizes(3000, 5, 300, 256 << 20, 7, 300)


async def _measure(
    ctx: Context, result: FamilyResult, size: Sizes, port: int, other: int, root: str
) -> dict[str, Any]:
    import trio

    from stockade.executor.actor import open_executor
    from stockade.executor.config import ExecutorConfig
    from stockade.network import Decision, Rules, open_proxy
    from stockade.sandbox.actor import open_provider
    from stockade.sandbox.config import ProviderConfig
    from stockade.vocab import ExecutionPolicy, Network, SandboxMode

    out: dict[str, Any] = {"origin_ports": [port, other]}
    decisions: list[Decision] = []
    rules = Rules([f"{LOOPBACK}:{port}"])
    scratch = ctx.scratch.dir("network-proxy")

    # 1 + 2, from this process: the proxy in this event loop, one call's endpoint.
    async with (
        open_proxy(on_decision=decisions.append, directory=scratch) as proxy,
        proxy.open_call("bench", rules) as endpoint,
    ):
        path = endpoint.path
        bad: list[str] = []

        def small(mode: str) -> Callable[[], Awaitable[Any]]:
            return lambda: fetch(mode, port, "/small", endpoint=path, keep=True)

        def check_small(item: Series, outcome: tuple) -> None:
            status, body, _length = outcome
            if status != 200 or body != SMALL:
                bad.append(f"{item.name}: {status} {body[:80]!r}")

        latency = [Series("direct", "harness", small("direct"))] + [
            Series(f"proxy: {FACES[m]}", "harness", small(m)) for m in PROTOCOLS
        ]
        for item in latency:  # warm up
            for _ in range(20):
                await item.call()  # type: ignore[misc]
        decisions.clear()
        await _interleave(ctx, "latency", latency, size.requests, check_small)
        proxied = size.requests * len(PROTOCOLS)
        allowed = sum(1 for d in decisions if d.allowed and d.port == port)
        result.checks.append(
            Check(
                "network: every proxied small GET got the origin's body",
                not bad,
                f"{proxied} proxied + {size.requests} direct; wrong: {bad[:3]}",
            )
        )
        result.checks.append(
            Check(
                "network: the proxy decided one allowed connection per proxied GET",
                allowed == proxied and len(decisions) == proxied,
                f"{allowed} allowed of {len(decisions)} decisions for {proxied} requests",
            )
        )
        out["latency"] = latency

        big_bad: list[str] = []

        def big(mode: str) -> Callable[[], Awaitable[Any]]:
            return lambda: fetch(mode, port, f"/big/{size.big}", endpoint=path, keep=False)

        def check_big(item: Series, outcome: tuple) -> None:
            status, _body, length = outcome
            if status != 200 or length != size.big:
                big_bad.append(f"{item.name}: {status}, {length} bytes")

        download = [Series("direct", "harness", big("direct"))] + [
            Series(f"proxy: {FACES[m]}", "harness", big(m)) for m in PROTOCOLS
        ]
        await _interleave(ctx, "download", download, size.big_rounds, check_big)
        result.checks.append(
            Check(
                f"network: every large download ({size.big >> 20} MiB) arrived whole",
                not big_bad,
                f"{len(download) * size.big_rounds} downloads; wrong: {big_bad[:3]}",
            )
        )
        out["download"] = download

        # A port no entry lists: refused, once, by each face.
        decisions.clear()
        refusals = []
        for mode in PROTOCOLS:
            status, body, _ = await fetch(mode, other, "/small", endpoint=path, keep=True)
            refusals.append((mode, status, body))
        refused = [d for d in decisions if not d.allowed and d.port == other]
        result.checks.append(
            Check(
                "network: an unlisted port is refused by every face of the proxy",
                all(s != 200 and SMALL not in b for _m, s, b in refusals)
                and len(refused) == len(decisions) == len(PROTOCOLS),
                ", ".join(f"{m}: {s}" for m, s, _b in refusals)
                + f"; {len(refused)} refused decisions of {len(decisions)}",
            )
        )

    # 1d, 2 and 3 through the executor, on each usable backend.
    backends = [name for name in ("bwrap", "landlock") if ctx.usable(name)]
    for name in ("bwrap", "landlock"):
        if name not in backends:
            result.skip(f"{name} is not usable here; its rows are left out")
    loop_script = f"{root}/loop.py"
    config = ExecutorConfig(kill_grace=0.5, network_allow=[f"{LOOPBACK}:{port}"])
    allowlist = ExecutionPolicy(
        mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root, network=Network.ALLOWLIST
    )
    off = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root)
    python = sys.executable

    async def unconfined(argv: list[str]) -> str:
        done = await trio.run_process(
            argv, capture_stdout=True, capture_stderr=True, cwd=root, check=True
        )
        return bytes(done.stdout).decode()

    async with trio.open_nursery() as nursery:
        executors: dict[str, Any] = {}

        async def serve(backend: str, *, task_status: Any) -> None:
            async with (
                open_provider(ProviderConfig(backend=backend)) as provider,
                open_executor(config, provider) as client,
            ):
                executors[backend] = client
                task_status.started()
                await trio.sleep_forever()

        for backend in backends:
            await nursery.start(serve, backend)

        def confined(backend: str, command: str, policy: Any = allowlist) -> Callable:
            client = executors[backend]
            spec = client.resolve(command, policy=policy)

            async def call() -> Any:
                return await client.run(spec)

            return call

        # 1d: the loop inside a confined command against the same loop unconfined.
        loop_bad: list[str] = []

        def loop_argv(mode: str) -> str:
            return f"{python} -I -S {loop_script} {mode} {port} {size.loop_count}"

        loops = [
            Series(
                "unconfined, direct",
                "command",
                lambda: unconfined(
                    [python, "-I", "-S", loop_script, "direct", str(port), str(size.loop_count)]
                ),
            )
        ]
        for backend in backends:
            for mode in PROTOCOLS:
                loops.append(
                    Series(
                        f"{backend}, proxy: {FACES[mode]}",
                        "command",
                        confined(backend, loop_argv(mode)),
                        extra={"backend": backend, "mode": mode},
                    )
                )

        def check_loop(item: Series, outcome: Any) -> None:
            text = outcome if isinstance(outcome, str) else outcome.stdout
            try:
                report = json.loads(text)
            except ValueError:
                stderr = "" if isinstance(outcome, str) else outcome.stderr
                loop_bad.append(f"{item.name}: no report ({text[-200:]!r} {stderr[-200:]!r})")
                return
            item.extra.setdefault("samples", []).extend(report["samples"])
            if report["ok"] != size.loop_count:
                loop_bad.append(f"{item.name}: {report['ok']}/{size.loop_count} right")
            if not isinstance(outcome, str):
                connections = outcome.connections
                mode = item.extra["mode"]
                if len(connections) != size.loop_count or not all(
                    c.allowed and c.protocol == mode and c.port == port for c in connections
                ):
                    loop_bad.append(
                        f"{item.name}: {len(connections)} connections, "
                        f"{sum(not c.allowed for c in connections)} refused, protocols "
                        f"{sorted({c.protocol for c in connections})}"
                    )

        for item in loops:  # warm up (and the first spawn of each executor)
            assert item.call is not None
            await item.call()
        await _interleave(ctx, "command loop", loops, size.loop_runs, check_loop)
        result.checks.append(
            Check(
                "network: every GET of the confined loops got the body, one allowed "
                "connection each (by the face it asked for) in the result",
                not loop_bad,
                f"{len(loops) * size.loop_runs} loops of {size.loop_count}; wrong: {loop_bad[:3]}",
            )
        )
        out["loops"] = loops

        # 2, from a command: curl's own timing of one large download.
        curl_bad: list[str] = []
        url = f"http://{LOOPBACK}:{port}/big/{size.big}"
        curl = "curl -sS --max-time 120 -o /dev/null -w '%{size_download} %{time_total}'"
        flags = {
            "http": "",
            "connect": " --proxytunnel",
            "socks5": " --socks5-hostname 127.0.0.1:3128",
        }
        curls = [
            Series(
                "unconfined curl, direct",
                "command",
                lambda: unconfined(["bash", "-c", f"{curl} --noproxy '*' {url}"]),
            )
        ]
        for backend in backends:
            for mode in PROTOCOLS:
                curls.append(
                    Series(
                        f"{backend} curl, proxy: {FACES[mode]}",
                        "command",
                        confined(backend, f"{curl}{flags[mode]} {url}"),
                        extra={"backend": backend, "mode": mode},
                    )
                )

        def check_curl(item: Series, outcome: Any) -> None:
            text = outcome if isinstance(outcome, str) else outcome.stdout
            try:
                length, seconds = text.split()
                item.extra.setdefault("seconds", []).append(float(seconds))
            except ValueError:
                curl_bad.append(f"{item.name}: {text[-200:]!r}")
                return
            if int(length) != size.big:
                curl_bad.append(f"{item.name}: {length} bytes")
            if not isinstance(outcome, str):
                # The face asked is the face used: one allowed connection, by that protocol.
                seen = [(c.protocol, c.allowed) for c in outcome.connections]
                if seen != [(item.extra["mode"], True)]:
                    curl_bad.append(f"{item.name}: connections {seen}")

        await _interleave(ctx, "curl download", curls, size.big_rounds, check_curl)
        result.checks.append(
            Check(
                f"network: every confined curl download ({size.big >> 20} MiB) arrived whole, "
                "through one allowed connection by the face it asked for",
                not curl_bad,
                f"{len(curls) * size.big_rounds} downloads; wrong: {curl_bad[:3]}",
            )
        )
        out["curls"] = curls

        # The refused destination, from a confined command: one refused connection.
        for backend in backends:
            outcome = await confined(
                backend, f"curl -sS --max-time 5 http://{LOOPBACK}:{other}/small; true"
            )()
            refused = [c for c in outcome.connections if not c.allowed]
            result.checks.append(
                Check(
                    f"network: {backend}: a request to an unlisted port is refused, "
                    "one refused connection in the result",
                    SMALL.decode() not in outcome.stdout
                    and len(outcome.connections) == 1
                    and [c.destination for c in refused] == [f"{LOOPBACK}:{other}"],
                    f"connections {[(c.destination, c.allowed) for c in outcome.connections]}",
                )
            )

        # 3: the spawn cost of allowlist against off.
        spawns: list[Series] = []
        for backend in backends:
            spawns.append(Series(f"{backend}: off", "spawn", confined(backend, "true", off)))
            spawns.append(Series(f"{backend}: allowlist", "spawn", confined(backend, "true")))
        spawn_bad: list[str] = []

        def check_spawn(item: Series, outcome: Any) -> None:
            backend, network = item.name.split(": ")
            if (
                outcome.exit_code != 0
                or outcome.backend != backend
                or outcome.network.value != network
                or outcome.connections
            ):
                spawn_bad.append(
                    f"{item.name}: exit {outcome.exit_code}, {outcome.backend}, "
                    f"{outcome.network.value}"
                )

        for item in spawns:
            for _ in range(3):
                assert item.call is not None
                await item.call()
        await _interleave(ctx, "spawn", spawns, size.spawn_rounds, check_spawn)
        result.checks.append(
            Check(
                "network: every `true` ran under its backend with the network it was asked",
                not spawn_bad,
                f"{len(spawns) * size.spawn_rounds} spawns; wrong: {spawn_bad[:3]}",
            )
        )
        out["spawns"] = spawns
        nursery.cancel_scope.cancel()
    return out


def run(ctx: Context) -> FamilyResult:
    import trio

    result = FamilyResult("network")
    size = sizes(ctx.quick)
    root = ctx.scratch.dir("network-root")
    with open(f"{root}/loop.py", "w", encoding="utf-8") as script:
        script.write(LOOP)
    origin = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", ORIGIN], stdout=subprocess.PIPE, text=True
    )
    try:
        assert origin.stdout is not None
        port, other = (int(word) for word in origin.stdout.readline().split())
        out = trio.run(_measure, ctx, result, size, port, other, root)
    finally:
        origin.kill()
        origin.wait()
    figures: dict[str, Any] = {
        "small_body_bytes": len(SMALL),
        "big_bytes": size.big,
        "sizes": vars(size),
    }

    # 1: latency per connection, from this process.
    latency: list[Series] = out["latency"]
    direct = latency[0]
    rows = []
    figures["latency_us"] = {}
    for item in latency:
        wall = summarize(item.wall, 1e6)
        cpu = summarize(item.cpu, 1e6)
        added = summarize(_paired(item, direct), 1e6) if item is not direct else None
        figures["latency_us"][item.name] = {
            "wall": wall,
            "cpu": cpu,
            "added_paired": added,
            "samples": [round(v * 1e6, 1) for v in item.wall],
        }
        rows.append(
            [
                item.name,
                wall["n"],
                wall["median"],
                f"{fmt(wall['p10'])}-{fmt(wall['p90'])}",
                added["median"] if added else None,
                f"{fmt(added['q1'])}-{fmt(added['q3'])}" if added else "-",
                cpu["median"],
            ]
        )
    result.tables.append(
        Table(
            f"Latency per connection: one GET of {len(SMALL)} bytes on a fresh connection, "
            "from this process (µs)",
            ["path", "n", "median", "p10-p90", "added (paired median)", "added IQR", "CPU"],
            rows,
            "The proxy runs in this process's event loop, as in a harness; the client "
            "connects to a call's Unix-socket endpoint (no bridge). Interleaved rounds, one "
            "request per path per round; `added` is the per-round difference to direct. CPU "
            "is this process's (client + proxy) per request.",
        )
    )

    # 1d: the loop inside commands.
    loops: list[Series] = out["loops"]
    base = percentile(loops[0].extra.get("samples", []), 50) * 1e6
    rows = []
    figures["command_loop_us"] = {}
    for item in loops:
        wall = summarize(item.extra.get("samples", []), 1e6)
        figures["command_loop_us"][item.name] = {"wall": wall}
        rows.append(
            [
                item.name,
                wall["n"],
                wall["median"],
                f"{fmt(wall['p10'])}-{fmt(wall['p90'])}",
                wall["median"] - base if item is not loops[0] else None,
            ]
        )
    result.tables.append(
        Table(
            "Latency per connection inside a command: the same GET in a Python loop, "
            "timed by the command (µs)",
            ["command", "n", "median", "p10-p90", "added (diff of medians)"],
            rows,
            "A confined command reaches the proxy through the launcher's bridge on its own "
            "loopback (127.0.0.1:3128 -> the call's Unix socket -> the proxy -> the origin); "
            "the unconfined row connects to the origin directly. perf_counter around each "
            "request; the loops of all rows interleave.",
        )
    )

    # 2: throughput.
    mib = size.big / (1 << 20)
    download: list[Series] = out["download"]
    curls: list[Series] = out["curls"]
    rows = []
    figures["throughput_mib_s"] = {}
    # Each `x direct` compares medians of rates (MiB/s per download) of the same run.
    harness_direct = percentile([mib / s for s in download[0].wall], 50)
    curl_direct = percentile([mib / s for s in curls[0].extra.get("seconds", [])], 50)
    for item, seconds, base_rate in [(s, s.wall, harness_direct) for s in download] + [
        (s, s.extra.get("seconds", []), curl_direct) for s in curls
    ]:
        rates = [mib / s for s in seconds]
        rate = summarize(rates)
        cpu = percentile(item.cpu, 50) / (size.big / (1 << 30)) if item.group == "harness" else None
        label = ("this process: " if item.group == "harness" else "") + item.name
        figures["throughput_mib_s"][label] = {"rate": rate, "cpu_s_per_gib": cpu}
        rows.append(
            [
                label,
                rate.get("n", 0),
                rate.get("median"),
                f"{fmt(rate.get('p10'))}-{fmt(rate.get('p90'))}",
                (rate["median"] / base_rate) if rate.get("n") else None,
                cpu,
            ]
        )
    result.tables.append(
        Table(
            f"Throughput: one {mib:.0f} MiB download on loopback (MiB/s)",
            ["path", "n", "median", "p10-p90", "x direct", "CPU s/GiB (this process)"],
            rows,
            "`this process` rows: the client and the proxy share one event loop; their "
            "`x direct` is against the direct row from this process. curl rows: curl's own "
            "time_total, inside a confined command (through the bridge) or unconfined "
            "and direct; their `x direct` is against unconfined curl. HTTP forward re-frames "
            "the response through h11; CONNECT and SOCKS5 relay bytes.",
        )
    )

    # 3: spawn cost.
    spawns: list[Series] = out["spawns"]
    rows = []
    figures["spawn_ms"] = {}
    for index in range(0, len(spawns), 2):
        off, allow = spawns[index], spawns[index + 1]
        backend = off.name.split(":")[0]
        diff = summarize(_paired(allow, off), 1e3)
        off_ms = summarize(off.wall, 1e3)
        allow_ms = summarize(allow.wall, 1e3)
        cpu = (percentile(allow.cpu, 50) - percentile(off.cpu, 50)) * 1e3
        figures["spawn_ms"][backend] = {
            "off": off_ms,
            "allowlist": allow_ms,
            "added_paired": diff,
            "parent_cpu_added": cpu,
            "samples_off": [round(v * 1e3, 3) for v in off.wall],
            "samples_allowlist": [round(v * 1e3, 3) for v in allow.wall],
        }
        rows.append(
            [
                backend,
                off_ms["n"],
                off_ms["median"],
                allow_ms["median"],
                diff["median"],
                f"{fmt(diff['q1'])}-{fmt(diff['q3'])}",
                cpu,
            ]
        )
    result.tables.append(
        Table(
            "Spawn: `true` through the executor, network off vs allowlist (ms, wall)",
            [
                "backend",
                "rounds",
                "off median",
                "allowlist median",
                "added (paired median)",
                "added IQR",
                "parent CPU added",
            ],
            rows,
            "workspace-write; interleaved rounds. allowlist adds the call's proxy endpoint "
            "(a private directory and a listening Unix socket) and the launcher's bridge in "
            "the call's own network namespace.",
        )
    )
    result.figures.update(figures)
    # 4 (issue 41): a terminated request and download against the blind tunnel.
    from . import _terminated

    _terminated.run(ctx, result)
    return result


def plot(result: FamilyResult, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = result.figures
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4.6))

    latency = figures["latency_us"]
    names = list(latency)
    left.boxplot(
        [latency[n]["samples"] for n in names],
        vert=False,
        whis=(10, 90),
        showfliers=False,
        widths=0.6,
    )
    left.set_yticks(range(1, len(names) + 1), names, fontsize=8)
    left.set_xlabel("µs per GET on a fresh connection (box IQR, whiskers p10/p90)")
    left.set_title("Latency per connection (this process)", fontsize=10)
    left.grid(axis="x", alpha=0.3)

    rates = figures["throughput_mib_s"]
    names = [n for n in rates if rates[n]["rate"].get("n")]
    values = [rates[n]["rate"]["median"] for n in names]
    middle.barh(range(len(names)), values, color="#1f77b4", alpha=0.7)
    middle.set_yticks(range(len(names)), names, fontsize=7)
    middle.invert_yaxis()
    middle.set_xlabel("MiB/s (median)")
    middle.set_title(f"Throughput, {figures['big_bytes'] >> 20} MiB download", fontsize=10)
    middle.grid(axis="x", alpha=0.3)

    spawn = figures["spawn_ms"]
    labels, data = [], []
    for backend, numbers in spawn.items():
        labels += [f"{backend}: off", f"{backend}: allowlist"]
        data += [numbers["samples_off"], numbers["samples_allowlist"]]
    if data:
        right.boxplot(data, vert=False, whis=(10, 90), showfliers=False, widths=0.6)
        right.set_yticks(range(1, len(labels) + 1), labels, fontsize=8)
    right.set_xlabel("ms per `true` through the executor")
    right.set_title("Spawn cost: network off vs allowlist", fontsize=10)
    right.grid(axis="x", alpha=0.3)

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

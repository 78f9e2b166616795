"""The `network` family's issue 41 rows: what a terminated request costs against a blind
tunnel, and a terminated download's throughput, on loopback.

One HTTPS origin (HTTP/1.1, keep-alive) in a process of its own, its certificate for
`localhost` from a CA of the bench's; the proxy runs in this process's event loop with
a broker ruling `localhost` (a header credential, `Authorization: Bearer`, and a
request rule: GET on `/small` and `/big/*`). The same origin is reached two ways
through one call's endpoint: `CONNECT 127.0.0.1:PORT` with `bench-blind.test` in SNI,
names no rule names (the blind tunnel: the client's TLS goes to the origin; the ruled
name there would be cut), and `CONNECT localhost:PORT`, the ruled
host (the proxy terminates the client's TLS with a leaf from the broker's CA, judges
each request, sets the credential, and opens its own TLS to the origin, which it
checks against the bench's CA). Every request is timed from this process (client and
proxy share the loop, as in a harness): on a fresh connection (CONNECT, handshake, one
GET), per request on a kept connection, and a large download.

Checks (never speed): every body right; the origin read the credential on every
terminated request and on no blind one; one allowed `RequestRecord` naming the
credential per terminated request, none for a blind one; a POST is refused by the
rule with a 403 before the origin sees it.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ._common import Check, Context, FamilyResult, Progress, Table, fmt, percentile, summarize

LOOPBACK = "127.0.0.1"
RULED = "localhost"
# The name the blind rows give the same origin: a ruled host's name in the SNI of a
# tunnel to another destination is cut (the ruled host reached by its address), so the
# blind tunnel reaches the origin by a name no rule names, as a blind client would.
BLIND = "bench-blind.test"
TOKEN_VARIABLE = "BENCH_TERMINATED_TOKEN"
SMALL = b"stockade bench: the small body of issue 41's rows\n"
BLOCK = 1 << 20

# The broker's rules: the credential as a header the proxy sets on every request to
# the ruled host, and the methods and paths it lets through.
CREDENTIAL = {
    "host": RULED,
    "header": "Authorization",
    "scheme": "Bearer",
    "value_from": TOKEN_VARIABLE,
}
REQUEST_RULE = {"host": RULED, "name": "bench", "methods": ["GET"], "paths": ["/small", "/big/*"]}

# The origin: HTTPS, HTTP/1.1 with keep-alive; each answer says whether it carried the
# credential (the X-Authorised header), so the bench checks the proxy put it there.
ORIGIN = (
    r"""
import http.server, os, ssl, sys
SMALL = @SMALL@
BLOCK = bytes(range(256)) * (@BLOCK@ // 256)
TOKEN = os.environ["@VARIABLE@"]

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The head and the body are two writes: without it, Nagle holds the second until
    # the client's delayed ACK of the first (40 ms a request on a kept connection).
    disable_nagle_algorithm = True

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        authorised = self.headers.get("Authorization") == "Bearer " + TOKEN
        if self.path == "/small":
            size, body = len(SMALL), SMALL
        elif self.path.startswith("/big/"):
            size, body = int(self.path[5:]), None
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("X-Authorised", "yes" if authorised else "no")
        self.send_header("X-Method", self.command)
        self.end_headers()
        if body is not None:
            self.wfile.write(body)
            return
        view = memoryview(BLOCK)
        while size > 0:
            chunk = min(size, len(BLOCK))
            self.wfile.write(view[:chunk])
            size -= chunk

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass

context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1])
context.set_alpn_protocols(["http/1.1"])
blind_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
blind_context.load_cert_chain(sys.argv[2])
blind_context.set_alpn_protocols(["http/1.1"])

def pick(sock, name, _context):
    if name == "@BLIND_NAME@":
        sock.context = blind_context

context.sni_callback = pick

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def finish_request(self, request, address):
        try:
            request = context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        self.RequestHandlerClass(request, address, self)

server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
""".replace("@SMALL@", repr(SMALL))
    .replace("@BLOCK@", str(BLOCK))
    .replace("@VARIABLE@", TOKEN_VARIABLE)
    .replace("@BLIND_NAME@", BLIND)
)


@dataclass
class Sizes:
    fresh: int  # rounds of one fresh-connection GET per path
    kept_rounds: int
    kept_count: int  # requests per kept connection, each timed
    big: int
    big_rounds: int
    curl_rounds: int  # confined commands per path and backend
    curl_count: int  # curl runs per command, each one fresh connection


def sizes(quick: bool) -> Sizes:
    if quick:
        return Sizes(50, 2, 20, 16 << 20, 2, 1, 10)
    return Sizes(1500, 7, 300, 256 << 20, 7, 5, 60)


@dataclass
class Series:
    name: str
    call: Any
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    per_request: list[float] = field(default_factory=list)
    path: str = ""  # "terminated" or "blind tunnel"


@dataclass
class Reply:
    status: int
    headers: dict[bytes, bytes]
    length: int
    body: bytes


async def _read_reply(stream: Any, buffer: bytearray, keep: bool) -> Reply:
    """One response off `stream`, framed by Content-Length or chunked (a terminated
    answer is re-framed chunked: its body is scrubbed); what follows stays in
    `buffer`."""

    async def more_bytes() -> None:
        more = await stream.receive_some(1 << 18)
        if not more:
            raise OSError("the connection closed mid-answer")
        buffer.extend(more)

    while b"\r\n\r\n" not in buffer:
        await more_bytes()
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    buffer[:] = rest
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    kept = bytearray()
    got = 0

    async def take(size: int) -> None:
        nonlocal got
        while size:
            if not buffer:
                await more_bytes()
            piece = min(size, len(buffer))
            if keep:
                kept.extend(buffer[:piece])
            del buffer[:piece]
            got += piece
            size -= piece

    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        while True:
            while b"\r\n" not in buffer:
                await more_bytes()
            line, _, _ = bytes(buffer[:64]).partition(b"\r\n")
            del buffer[: len(line) + 2]
            size = int(line.split(b";")[0], 16)
            if size == 0:
                while not buffer.startswith(b"\r\n"):  # no trailers are sent
                    await more_bytes()
                del buffer[:2]
                break
            await take(size)
            while len(buffer) < 2:
                await more_bytes()
            del buffer[:2]
    else:
        await take(int(headers.get(b"content-length", b"0")))
    return Reply(status, headers, got, bytes(kept))


async def _tunnel(
    endpoint: str, host: str, port: int, context: ssl.SSLContext, name: str = RULED
) -> Any:
    """A TLS stream to `host:port` through the call's endpoint (CONNECT), checked as
    `name` against `context`'s trust."""
    import trio

    raw = await trio.open_unix_socket(endpoint)
    try:
        authority = f"{host}:{port}"
        await raw.send_all(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        buffer = bytearray()
        while b"\r\n\r\n" not in buffer:
            more = await raw.receive_some(4096)
            if not more:
                raise OSError("the proxy closed the CONNECT")
            buffer += more
        status = int(bytes(buffer).split(b" ", 2)[1])
        if status != 200:
            raise OSError(f"CONNECT {authority}: {status}")
        tls = trio.SSLStream(raw, context, server_hostname=name, https_compatible=True)
        await tls.do_handshake()
        return tls
    except BaseException:
        await trio.aclose_forcefully(raw)
        raise


def _request(method: str, path: str, port: int, body: bytes = b"", name: str = RULED) -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: {name}:{port}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _close(stream: Any) -> None:
    import trio

    await trio.aclose_forcefully(stream)


async def _measure(
    ctx: Context, result: FamilyResult, size: Sizes, scratch: str, origin: Origin
) -> dict:
    from stockade.network import (
        RequestRecord,
        Rules,
        make_broker,
        open_proxy,
        parse_credential_rules,
        parse_request_rules,
    )

    port, token, upstream = origin.port, origin.token, origin.ca_file
    broker = make_broker(
        parse_credential_rules([CREDENTIAL]),
        parse_request_rules([REQUEST_RULE]),
        {TOKEN_VARIABLE: token},
        upstream_ca=upstream,
    )
    assert broker is not None
    blind_trust = ssl.create_default_context(cafile=upstream)
    terminated_trust = ssl.create_default_context(cadata=broker.authority.certificate_pem.decode())
    paths = {
        "blind tunnel": (LOOPBACK, blind_trust, BLIND),
        "terminated": (RULED, terminated_trust, RULED),
    }
    records: list[RequestRecord] = []
    rules = Rules([f"{LOOPBACK}:{port}"])
    out: dict[str, Any] = {}
    bad: list[str] = []
    directory = os.path.join(scratch, "proxy")
    os.makedirs(directory, exist_ok=True)
    async with (
        open_proxy(directory=directory, broker=broker, on_request=records.append) as proxy,
        proxy.open_call("bench-terminated", rules) as endpoint,
    ):

        def check(name: str, reply: Reply, expected: int, body: bytes | None) -> None:
            authorised = reply.headers.get(b"x-authorised") == b"yes"
            wanted = name == "terminated"
            if reply.status != 200 or reply.length != expected or authorised != wanted:
                bad.append(f"{name}: {reply.status}, {reply.length} bytes, auth {authorised}")
            elif body is not None and reply.body != body:
                bad.append(f"{name}: wrong body {reply.body[:60]!r}")

        def fresh(name: str, path: str, expected: int, keep: bool) -> Any:
            host, trust, named = paths[name]

            async def call() -> None:
                tls = await _tunnel(endpoint.path, host, port, trust, named)
                try:
                    await tls.send_all(_request("GET", path, port, name=named))
                    reply = await _read_reply(tls, bytearray(), keep)
                finally:
                    await _close(tls)
                check(name, reply, expected, SMALL if keep else None)

            return call

        def kept(name: str) -> Any:
            host, trust, named = paths[name]

            async def call(series: Series) -> None:
                tls = await _tunnel(endpoint.path, host, port, trust, named)
                buffer = bytearray()
                try:
                    for index in range(size.kept_count + 1):
                        start = time.perf_counter()
                        await tls.send_all(_request("GET", "/small", port, name=named))
                        reply = await _read_reply(tls, buffer, True)
                        if index:  # the first pays for nothing but warms the path
                            series.per_request.append(time.perf_counter() - start)
                        check(name, reply, len(SMALL), SMALL)
                finally:
                    await _close(tls)

            return call

        async def interleave(label: str, series: list[Series], rounds: int) -> None:
            rng = random.Random(ctx.seed)
            with Progress("network", label, rounds * len(series)) as progress:
                for index in range(rounds):
                    order = list(series)
                    rng.shuffle(order)
                    for item in order:
                        cpu = time.process_time()
                        start = time.perf_counter()
                        await item.call()
                        item.wall.append(time.perf_counter() - start)
                        item.cpu.append(time.process_time() - cpu)
                        item.rounds.append(index)
                        progress.advance(label=f"{label}: {item.name}")

        latency = [Series(name, fresh(name, "/small", len(SMALL), True)) for name in paths]
        for item in latency:
            for _ in range(20):
                await item.call()
        records.clear()
        await interleave("terminated latency", latency, size.fresh)
        out["latency"] = latency
        terminated_records = len(records)

        kept_series = [Series(name, None) for name in paths]
        for item in kept_series:
            item.call = (lambda call, series: lambda: call(series))(kept(item.name), item)
        await interleave("terminated keep-alive", kept_series, size.kept_rounds)
        out["kept"] = kept_series

        download = [
            Series(name, fresh(name, f"/big/{size.big}", size.big, False)) for name in paths
        ]
        await interleave("terminated download", download, size.big_rounds)
        out["download"] = download

        # The rule refuses a POST with a 403 before the origin sees it.
        tls = await _tunnel(endpoint.path, RULED, port, terminated_trust)
        try:
            await tls.send_all(_request("POST", "/small", port, b"x"))
            refusal = await _read_reply(tls, bytearray(), True)
        except OSError as error:
            refusal = Reply(0, {}, 0, str(error).encode())
        finally:
            await _close(tls)

    expected_records = size.fresh + size.kept_rounds * (size.kept_count + 1) + size.big_rounds
    allowed = [
        r for r in records if r.allowed and r.credentials == (TOKEN_VARIABLE,) and r.host == RULED
    ]
    result.checks += [
        Check(
            "network: every terminated and blind-tunnel request got its body, and the "
            "origin read the credential on every terminated one and no blind one",
            not bad,
            f"wrong: {bad[:3]}",
        ),
        Check(
            "network: one allowed request record naming the credential per terminated "
            "request, none for a blind one",
            terminated_records == size.fresh
            and len(allowed) == len(records) - 1 == expected_records,
            f"{terminated_records} records for {size.fresh} fresh terminated GETs; "
            f"{len(allowed)} allowed of {len(records)} for {expected_records} + 1 POST",
        ),
        Check(
            "network: a POST the rule does not allow is refused with a 403",
            refusal.status == 403 and bool(records) and not records[-1].allowed,
            f"{refusal.status} {refusal.body[:120]!r}",
        ),
    ]
    return out


@dataclass
class Origin:
    port: int
    token: str
    ca_file: str  # the origin's CA alone
    # The system's bundle with the origin's CA after it, for a blind client: curl spends
    # most of a fresh connection loading a bundle that size, as the terminated path's
    # client does with the system's and the harness's.
    bundle_file: str


@contextlib.contextmanager
def _origin(scratch: str) -> Iterator[Origin]:
    """The HTTPS origin in a process of its own, its certificates for `localhost` and
    (by SNI) the blind rows' name from a CA of the bench's (the "public" CA the proxy
    checks it against); the keys go to 0600 files the origin reads."""
    from stockade.network import CertificateAuthority, combined_bundle, system_bundle_path

    token = "bench-" + os.urandom(16).hex()
    origin_ca = CertificateAuthority([RULED, BLIND])
    chains = []
    for name in (RULED, BLIND):
        leaf = origin_ca.leaf_for(name)
        chain = os.path.join(scratch, f"origin-{name}.pem")
        with open(os.open(chain, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
            handle.write(leaf.certificate_pem + leaf.key_pem)
        chains.append(chain)
    ca_file = os.path.join(scratch, "origin-ca.pem")
    with open(ca_file, "wb") as handle:
        handle.write(origin_ca.certificate_pem)
    system = system_bundle_path()
    bundle_file = os.path.join(scratch, "origin-bundle.pem")
    with open(bundle_file, "wb") as handle:
        system_pem = system.read_bytes() if system is not None else b""
        handle.write(combined_bundle(origin_ca.certificate_pem, system_pem))
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", ORIGIN, *chains],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, TOKEN_VARIABLE: token},
    )
    try:
        assert process.stdout is not None
        yield Origin(int(process.stdout.readline()), token, ca_file, bundle_file)
    finally:
        process.kill()
        process.wait()


async def _confined(
    ctx: Context, result: FamilyResult, size: Sizes, scratch: str, origin: Origin
) -> dict:
    """curl inside a confined command on each usable backend, through the launcher's
    bridge: fresh-connection GETs (curl's own time_total) and a large download, to the
    ruled host (terminated, trusting the command's bundle) and to the same origin by
    address under a name no rule names (blind, `--connect-to`, trusting the origin's
    CA: a ruled name in the SNI of a tunnel to the address would be cut)."""
    from stockade.executor.actor import open_executor
    from stockade.executor.config import ExecutorConfig
    from stockade.sandbox.actor import open_provider
    from stockade.sandbox.config import ProviderConfig
    from stockade.vocab import ExecutionPolicy, Network, SandboxMode

    port = origin.port
    root = ctx.scratch.dir("network-terminated-root")
    # The harness's environment holds the credential (the executor reads it when it
    # starts); no command's does.
    os.environ[TOKEN_VARIABLE] = origin.token
    config = ExecutorConfig(
        kill_grace=0.5,
        network_allow=[f"{LOOPBACK}:{port}"],
        network_credentials=[CREDENTIAL],
        network_requests=[REQUEST_RULE],
        network_upstream_ca=origin.ca_file,
        network_trust_directory=os.path.join(scratch, "trust"),
    )
    policy = ExecutionPolicy(
        mode=SandboxMode.WORKSPACE_WRITE, workspace_root=root, network=Network.ALLOWLIST
    )
    how = {
        "terminated": ("", f"https://{RULED}:{port}"),
        "blind tunnel": (
            f" --cacert {origin.bundle_file} --connect-to {BLIND}:{port}:{LOOPBACK}:{port}",
            f"https://{BLIND}:{port}",
        ),
    }
    backends = [name for name in ("bwrap", "landlock") if ctx.usable(name)]
    out: dict[str, Any] = {"latency": [], "download": []}
    bad: list[str] = []
    try:
        for backend in backends:
            async with (
                open_provider(ProviderConfig(backend=backend)) as provider,
                open_executor(config, provider) as executor,
            ):

                def confined(command: str) -> Any:
                    spec = executor.resolve(command, policy=policy)
                    return lambda: executor.run(spec)

                loop = (
                    f"for i in $(seq {size.curl_count}); do curl -sS --max-time 30 -o /dev/null "
                    "-w '%{{http_code}} %{{time_total}}\\n'{flags} {url}/small; done"
                )
                big = (
                    "curl -sS --max-time 300 -o /dev/null "
                    "-w '%{{http_code}} %{{size_download}} %{{time_total}}\\n'{flags} "
                    "{url}/big/" + str(size.big)
                )
                latency = [
                    Series(f"{backend} curl, {name}", confined(loop.format(flags=flags, url=url)))
                    for name, (flags, url) in how.items()
                ]
                download = [
                    Series(f"{backend} curl, {name}", confined(big.format(flags=flags, url=url)))
                    for name, (flags, url) in how.items()
                ]
                for item in latency + download:
                    item.path = item.name.split(", ", 1)[1]
                for label, series, rounds in (
                    ("confined curl latency", latency, size.curl_rounds),
                    ("confined curl download", download, size.big_rounds),
                ):
                    rng = random.Random(ctx.seed)
                    with Progress("network", label, rounds * len(series)) as progress:
                        for _ in range(rounds):
                            order = list(series)
                            rng.shuffle(order)
                            for item in order:
                                outcome = await item.call()
                                _read_curl(item, outcome, size, bad)
                                progress.advance(label=f"{label}: {item.name}")
                out["latency"] += latency
                out["download"] += download
    finally:
        os.environ.pop(TOKEN_VARIABLE, None)
    if not backends:
        result.skip("no backend is usable here: issue 41's confined curl rows are left out")
        return out
    result.checks.append(
        Check(
            "network: every confined curl through the terminated path and the blind tunnel "
            "got 200 and every byte; the terminated ones were judged requests with the "
            "credential, the blind ones none",
            not bad,
            f"backends {backends}; wrong: {bad[:3]}",
        )
    )
    return out


def _read_curl(item: Series, outcome: Any, size: Sizes, bad: list[str]) -> None:
    """Keep curl's timings from one confined command; note what was wrong."""
    terminated = item.path == "terminated"
    lines = [line.split() for line in outcome.stdout.splitlines() if line.strip()]
    for fields in lines:
        if fields[0] != "200" or (len(fields) == 3 and int(fields[1]) != size.big):
            bad.append(f"{item.name}: {' '.join(fields)} {outcome.stderr[-200:]!r}")
            continue
        item.per_request.append(float(fields[-1]))
    judged = [r for r in outcome.requests if r.allowed and r.credentials == (TOKEN_VARIABLE,)]
    if len(judged) != (len(lines) if terminated else 0) or len(judged) != len(outcome.requests):
        bad.append(f"{item.name}: {len(outcome.requests)} judged requests for {len(lines)} runs")


def _paired(series: Series, base: Series) -> list[float]:
    by_round = dict(zip(base.rounds, base.wall, strict=True))
    return [w - by_round[r] for r, w in zip(series.rounds, series.wall, strict=True)]


def run(ctx: Context, result: FamilyResult) -> None:
    """Measure and add the tables and figures to `result` (the `network` family's)."""
    import trio

    size = sizes(ctx.quick)
    scratch = ctx.scratch.dir("network-terminated")
    with _origin(scratch) as origin:
        out = trio.run(_measure, ctx, result, size, scratch, origin)
        confined = trio.run(_confined, ctx, result, size, scratch, origin)
    figures: dict[str, Any] = {"sizes": vars(size)}

    latency: list[Series] = out["latency"]
    kept: list[Series] = out["kept"]
    blind, terminated = latency
    rows = []
    figures["latency_us"] = {}
    for item in latency:
        wall = summarize(item.wall, 1e6)
        cpu = summarize(item.cpu, 1e6)
        added = summarize(_paired(item, blind), 1e6) if item is terminated else None
        figures["latency_us"][f"{item.name}, fresh connection"] = {
            "wall": wall,
            "cpu": cpu,
            "added_paired": added,
        }
        rows.append(
            [
                f"{item.name}, fresh connection",
                wall["n"],
                wall["median"],
                f"{fmt(wall['p10'])}-{fmt(wall['p90'])}",
                added["median"] if added else None,
                f"{fmt(added['q1'])}-{fmt(added['q3'])}" if added else "-",
                cpu["median"],
            ]
        )
    kept_blind = percentile(kept[0].per_request, 50) * 1e6
    for item in kept:
        wall = summarize(item.per_request, 1e6)
        cpu_per = summarize([c / (size.kept_count + 1) for c in item.cpu], 1e6)
        figures["latency_us"][f"{item.name}, kept connection"] = {"wall": wall, "cpu": cpu_per}
        rows.append(
            [
                f"{item.name}, kept connection (per request)",
                wall["n"],
                wall["median"],
                f"{fmt(wall['p10'])}-{fmt(wall['p90'])}",
                wall["median"] - kept_blind if item is kept[1] else None,
                "(diff of medians)" if item is kept[1] else "-",
                cpu_per["median"],
            ]
        )
    result.tables.append(
        Table(
            f"Issue 41: a terminated HTTPS request against a blind tunnel: one GET of "
            f"{len(SMALL)} bytes, from this process (µs)",
            ["path", "n", "median", "p10-p90", "added vs blind", "added IQR", "CPU"],
            rows,
            "The same HTTPS origin on loopback, through one call's endpoint: CONNECT to a "
            "host no rule names (blind: the client's TLS reaches the origin) or to the "
            "ruled host (terminated: the proxy's leaf, the rule judged, the credential set, "
            "the proxy's own TLS to the origin, checked). Fresh connection: CONNECT, "
            "handshake and one GET, interleaved rounds, `added` paired per round. Kept "
            "connection: each GET after the first on one connection. CPU is this "
            "process's (client + proxy) per request.",
        )
    )

    mib = size.big / (1 << 20)
    download: list[Series] = out["download"]
    base_rate = percentile([mib / s for s in download[0].wall], 50)
    rows = []
    figures["throughput_mib_s"] = {}
    for item in download:
        rate = summarize([mib / s for s in item.wall])
        cpu = percentile(item.cpu, 50) / (size.big / (1 << 30))
        figures["throughput_mib_s"][item.name] = {"rate": rate, "cpu_s_per_gib": cpu}
        rows.append(
            [
                item.name,
                rate["n"],
                rate["median"],
                f"{fmt(rate['p10'])}-{fmt(rate['p90'])}",
                rate["median"] / base_rate,
                cpu,
            ]
        )
    result.tables.append(
        Table(
            f"Issue 41: throughput of one {mib:.0f} MiB HTTPS download, terminated against "
            "the blind tunnel (MiB/s)",
            ["path", "n", "median", "p10-p90", "x blind", "CPU s/GiB (this process)"],
            rows,
            "Client and proxy share this process's event loop; the blind tunnel relays the "
            "origin's TLS records, the terminated path decrypts them, frames the response "
            "through h11 and encrypts it again for the client.",
        )
    )
    _confined_tables(result, figures, confined, mib)
    result.figures["terminated"] = figures


def _confined_tables(
    result: FamilyResult, figures: dict[str, Any], confined: dict[str, Any], mib: float
) -> None:
    rows = []
    figures["confined_curl_ms"] = {}
    blind_median: dict[str, float] = {}
    for item in confined["latency"]:
        wall = summarize(item.per_request, 1e3)
        backend = item.name.split()[0]
        figures["confined_curl_ms"][item.name] = wall
        if item.path == "blind tunnel":
            blind_median[backend] = wall.get("median", math.nan)
    for item in confined["latency"]:
        wall = figures["confined_curl_ms"][item.name]
        backend = item.name.split()[0]
        rows.append(
            [
                item.name,
                wall.get("n", 0),
                wall.get("median"),
                f"{fmt(wall.get('p10'))}-{fmt(wall.get('p90'))}",
                wall.get("median", math.nan) - blind_median.get(backend, math.nan)
                if item.path == "terminated"
                else None,
            ]
        )
    result.tables.append(
        Table(
            "Issue 41 inside a confined command: curl, one GET on a fresh connection (ms, "
            "curl's time_total)",
            ["command", "n", "median", "p10-p90", "added vs blind (diff of medians)"],
            rows,
            "curl in a workspace-write command with network allowlist, through the "
            "launcher's bridge: to the ruled host (terminated: the proxy's leaf, trusted "
            "through the command's bundle; the credential set by the proxy) or to the same "
            "origin by address (`--connect-to`: a blind tunnel; curl given the system's "
            "bundle with the origin's CA, the size of the command's own, whose loading is "
            "most of a fresh curl's time on both paths). Each curl is a fresh connection: "
            "CONNECT, TLS handshake, one GET.",
        )
    )
    rows = []
    figures["confined_curl_mib_s"] = {}
    blind_rate: dict[str, float] = {}
    for item in confined["download"]:
        rate = summarize([mib / s for s in item.per_request])
        figures["confined_curl_mib_s"][item.name] = rate
        if item.path == "blind tunnel":
            blind_rate[item.name.split()[0]] = rate.get("median", math.nan)
    for item in confined["download"]:
        rate = figures["confined_curl_mib_s"][item.name]
        rows.append(
            [
                item.name,
                rate.get("n", 0),
                rate.get("median"),
                f"{fmt(rate.get('p10'))}-{fmt(rate.get('p90'))}",
                rate.get("median", math.nan) / blind_rate.get(item.name.split()[0], math.nan),
            ]
        )
    result.tables.append(
        Table(
            f"Issue 41 inside a confined command: curl, one {mib:.0f} MiB download (MiB/s)",
            ["command", "n", "median", "p10-p90", "x blind"],
            rows,
            "curl's own size_download / time_total; the blind tunnel relays TLS records, "
            "the terminated path decrypts, re-frames and encrypts again in the harness.",
        )
    )

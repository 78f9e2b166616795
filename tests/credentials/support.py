"""Issue 41's end-to-end rig: loopback origins behind certificates from a `trustme` CA,
the names that reach them (mapped in a private mount namespace), the composition that
rules them, and the harness run in a process of its own (`_harness.py`).

Names and addresses (each origin on a port of its own):

| name                  | address   | what                                                |
|-----------------------|-----------|-----------------------------------------------------|
| `api.creds.test`      | 127.0.0.1 | an API wanting `Authorization: Bearer <real>`; placeholder form, request rules (GET/HEAD on `/repos/org/*`, `/public/**`) |
| `head.creds.test`     | 127.0.0.1 | an API wanting `X-Api-Key: <real>`; header form (the command sends nothing) |
| `git.creds.test`      | 127.0.0.1 | `git http-backend` wanting the token as the Basic password |
| `pypi.creds.test`     | 127.0.0.1 | a PEP 503 index wanting the token as the Basic password |
| `other.creds.test`    | 127.0.0.2 | an allowed, terminated host with no credential (a request rule: anything) |
| `blind.creds.test`    | 127.0.0.2 | an allowed host no rule names (blind tunnel); TLS, and a plain HTTP port |
| `unlisted.creds.test` | 127.0.0.3 | never allowed                                       |

Every real value is `stockade-realsecret-` and 32 hex digits, fresh per test, and
lives in the harness process's environment only (and in the origins', in this
process): a confined command that looks for the pattern finds what leaked, without
the test ever handing it the value.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import http.server
import json
import os
import re
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trustme

from ..support import IN_CI, IS_ROOT, PLAIN, require_backend, variant_backend

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "_harness.py"
GIT_HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"

SECRET_PREFIX = "stockade-realsecret-"
# What a confined command greps for: any real value of any test, never one value.
SECRET_PATTERN = "stockade-realsecret-[0-9a-f]{32}"
SECRET_RE = re.compile(SECRET_PATTERN.encode())
PLACEHOLDER_RE = re.compile(rb"stockade-placeholder-[0-9a-f]{40}")

API = "api.creds.test"
HEAD = "head.creds.test"
GIT = "git.creds.test"
PYPI = "pypi.creds.test"
OTHER = "other.creds.test"
BLIND = "blind.creds.test"
UNLISTED = "unlisted.creds.test"
ADDRESSES = {
    API: "127.0.0.1",
    HEAD: "127.0.0.1",
    GIT: "127.0.0.1",
    PYPI: "127.0.0.1",
    OTHER: "127.0.0.2",
    BLIND: "127.0.0.2",
    UNLISTED: "127.0.0.3",
}
RULED = (API, HEAD, GIT, PYPI, OTHER)

# The harness's variables holding the real values, and the command's placeholders.
# API_TOKEN is both (the issue's GITHUB_TOKEN case): the command's API_TOKEN is the
# placeholder, the harness's the real value.
API_SECRET_VAR = "API_TOKEN"
HEAD_SECRET_VAR = "CREDS_HEAD_SECRET"
GIT_SECRET_VAR = "CREDS_GIT_SECRET"
PIP_SECRET_VAR = "CREDS_PIP_SECRET"
SECRET_VARS = (API_SECRET_VAR, HEAD_SECRET_VAR, GIT_SECRET_VAR, PIP_SECRET_VAR)
API_RULE = "api-read"
OTHER_RULE = "other-any"


def need_tools() -> None:
    """The tools the rig runs (unshare and mount for the names, git's CGI), as root:
    skip locally and FAIL in CI when one is missing."""
    missing = [tool for tool in ("unshare", "mount", "curl", "git") if shutil.which(tool) is None]
    if not os.access(GIT_HTTP_BACKEND, os.X_OK):
        missing.append(GIT_HTTP_BACKEND)
    problem = f"not installed: {', '.join(missing)}" if missing else None
    if problem is None and not IS_ROOT:
        problem = "the names are mapped in a private mount namespace, which needs root"
    if problem is not None:
        if IN_CI:
            pytest.fail(f"CI=true and issue 41's end-to-end rig cannot run: {problem}")
        pytest.skip(problem)


def backend_param(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    need_tools()
    return str(request.param)


# --- the origins --------------------------------------------------------------------


@dataclass
class Seen:
    """One request an origin read: its headers as (lower-case name, value) pairs."""

    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        values = [value for key, value in self.headers if key == name.lower()]
        return values[0] if values else None

    @property
    def raw(self) -> bytes:
        """Everything the origin read of it, as one byte string to search."""
        head = "".join(f"{key}: {value}\n" for key, value in self.headers)
        return f"{self.method} {self.path}\n{head}\n".encode() + self.body


def basic_password(seen: Seen) -> str | None:
    value = seen.header("authorization") or ""
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        return base64.b64decode(token, validate=True).decode().partition(":")[2]
    except (ValueError, UnicodeDecodeError):
        return None


class Origin(http.server.ThreadingHTTPServer):
    """A loopback origin that keeps every request it read (`seen`), every connection
    it accepted (`connections`), and every TLS handshake that failed (`refused`).
    `context` None: plain HTTP."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: str,
        handler: type[http.server.BaseHTTPRequestHandler],
        context: ssl.SSLContext | None,
        *,
        secret: str | None = None,
        root: Path | None = None,
    ) -> None:
        super().__init__((address, 0), handler)
        self.context = context
        self.secret = secret
        self.root = root
        self.seen: list[Seen] = []
        self.connections = 0
        self.refused: list[str] = []
        self.lock = threading.Lock()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def verify_request(self, request: Any, client_address: Any) -> bool:
        with self.lock:
            self.connections += 1
        return True

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.context is not None:
            try:
                request = self.context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as error:
                with self.lock:
                    self.refused.append(str(error))
                return
        self.RequestHandlerClass(request, client_address, self)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client cut mid-request (a refused body) is what some tests do.
        pass

    def keep(self, seen: Seen) -> None:
        with self.lock:
            self.seen.append(seen)

    def reset(self) -> None:
        with self.lock:
            self.seen.clear()
            self.connections = 0
            self.refused.clear()


class _Recording(http.server.BaseHTTPRequestHandler):
    """Reads each request whole (a chunked body too), keeps it, and lets `respond` answer."""

    protocol_version = "HTTP/1.1"
    server: Origin

    def log_message(self, *_args: object) -> None:
        pass

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        if (self.headers.get("Expect") or "").lower() == "100-continue":
            self.send_response_only(100)
            self.end_headers()
        seen = Seen(
            self.command,
            self.path,
            [(key.lower(), value) for key, value in self.headers.items()],
            self._body(),
        )
        self.server.keep(seen)
        self.respond(seen)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _handle

    def respond(self, seen: Seen) -> None:
        raise NotImplementedError

    def send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def reflected_forms(value: str) -> list[str]:
    """`value` as an origin that reflects it might send it back: as itself, JSON-escaped
    (`\\/`, `\\uXXXX`), percent-encoded (upper and lower hex, `+` for a space), as HTML
    entities (named, decimal, hex), base64 and base64url at each alignment, UTF-16 (as
    latin-1 text), and the Basic blob of `x:value`."""
    token = value.partition(" ")[2] or value
    forms = [
        value,
        json.dumps(value).replace("/", "\\/"),
        "".join(f"\\u{ord(char):04x}" for char in token),
        urllib.parse.quote_plus(token),
        urllib.parse.quote(token, safe="").lower(),
        "".join(f"%{ord(char):02X}" for char in token),
        "".join(f"&#{ord(char)};" for char in token),
        "".join(f"&#x{ord(char):X};" for char in token),
        token.replace("-", "&hyphen;"),
        base64.b64encode(f"x:{token}".encode()).decode(),
    ]
    for shift in range(3):
        lead = b"ab"[:shift]
        forms.append(base64.b64encode(lead + token.encode()).decode())
        forms.append(base64.urlsafe_b64encode(lead + token.encode()).decode())
    forms.append(token.encode("utf-16-le").decode("latin-1"))
    forms.append(token.encode("utf-16-be").decode("latin-1"))
    return forms


def reflect(handler: _Recording, seen: Seen, value: str) -> None:
    """Answer with `value` (a request header's) in every reflected form: in the body
    (gzip-compressed when the path says so, whatever was asked), a Set-Cookie, a
    Location, and a header of its own."""
    body = ("\n".join(reflected_forms(value)) + "\n").encode("latin-1")
    token = value.partition(" ")[2] or value
    headers = {
        "Content-Type": "text/plain; charset=latin-1",
        "Set-Cookie": f"seen={urllib.parse.quote(token)}; Path=/",
        "Location": f"/next?token={token}",
        "X-Echo": value,
    }
    if seen.path.endswith("-gz"):
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    handler.send(200, body, headers)


class ApiHandler(_Recording):
    """`Authorization: Bearer <secret>` (or, with no secret, anything) gets 200; the
    answer says what was asked and whether it was authorised, never a header's value,
    but under `/repos/org/echo` (and `echo-gz`), which reflects the Authorization header
    in every form (`reflect`)."""

    def respond(self, seen: Seen) -> None:
        if seen.path.startswith("/repos/org/echo"):
            reflect(self, seen, seen.header("authorization") or "")
            return
        secret = self.server.secret
        authorised = secret is None or seen.header("authorization") == f"Bearer {secret}"
        body = (
            json.dumps(
                {
                    "origin": self.server.port,
                    "method": seen.method,
                    "path": seen.path,
                    "authorised": authorised,
                    "body_bytes": len(seen.body),
                }
            ).encode()
            + b"\n"
        )
        self.send(200 if authorised else 401, body, {"Content-Type": "application/json"})


class KeyHandler(_Recording):
    """`X-Api-Key: <secret>` gets 200 ("key ok"), anything else 401; `/echo` reflects
    the key in every form (`reflect`)."""

    def respond(self, seen: Seen) -> None:
        if seen.path.startswith("/echo"):
            reflect(self, seen, seen.header("x-api-key") or "")
            return
        if seen.header("x-api-key") == self.server.secret:
            self.send(200, b"key ok\n")
        else:
            self.send(401, b"key missing\n")


def _basic_refusal(handler: _Recording, realm: str) -> None:
    handler.send(401, b"authenticate\n", {"WWW-Authenticate": f'Basic realm="{realm}"'})


class GitHandler(_Recording):
    """`git http-backend` (CGI) over the bare repositories under `root`, for a request
    whose Basic password is the secret; 401 asking for Basic otherwise (git then runs
    its credential helper)."""

    def respond(self, seen: Seen) -> None:
        if basic_password(seen) != self.server.secret:
            _basic_refusal(self, "git")
            return
        path, _, query = seen.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.server.root),
            "REQUEST_METHOD": seen.method,
            "PATH_INFO": urllib.parse.unquote(path),
            "QUERY_STRING": query,
            "CONTENT_TYPE": seen.header("content-type") or "",
            "CONTENT_LENGTH": str(len(seen.body)),
            "REMOTE_USER": "x",
            "REMOTE_ADDR": "127.0.0.1",
        }
        for header, variable in (
            ("content-encoding", "HTTP_CONTENT_ENCODING"),
            ("git-protocol", "GIT_PROTOCOL"),
        ):
            if seen.header(header):
                env[variable] = seen.header(header) or ""
        done = subprocess.run(
            [GIT_HTTP_BACKEND], input=seen.body, env=env, capture_output=True, check=False
        )
        head, _, body = done.stdout.replace(b"\r\n", b"\n").partition(b"\n\n")
        status, headers = 200, {}
        for line in head.decode().splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers[key] = value.strip()
        self.send(status, body, headers)


class IndexHandler(_Recording):
    """The files under `root` (a directory's `index.html`), for a request whose Basic
    password is the secret; 401 asking for Basic otherwise."""

    def respond(self, seen: Seen) -> None:
        if basic_password(seen) != self.server.secret:
            _basic_refusal(self, "index")
            return
        root = self.server.root
        assert root is not None
        relative = urllib.parse.unquote(seen.path.partition("?")[0]).lstrip("/")
        target = (root / relative).resolve()
        if target.is_dir():
            target = target / "index.html"
        if not target.is_relative_to(root) or not target.is_file():
            self.send(404, b"not found\n")
            return
        kind = "text/html" if target.suffix == ".html" else "application/octet-stream"
        self.send(200, target.read_bytes(), {"Content-Type": kind})


def build_wheel(directory: Path) -> str:
    """A pure wheel `demo 1.0` (`import demo; demo.VALUE == 41`), built with zipfile."""
    name = "demo-1.0-py3-none-any.whl"
    info = "demo-1.0.dist-info"
    with zipfile.ZipFile(directory / name, "w") as wheel:
        wheel.writestr("demo.py", "VALUE = 41\n")
        wheel.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
        wheel.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{info}/RECORD", "")
    return name


def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.email=o@creds.test",
            "-c",
            "user.name=origin",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_hex(16)


@dataclass
class Rig:
    """The origins of one test, their CA, the real values, and the places on disk:
    `base/conf` (the composition, the hosts file, the upstream CA: outside every root),
    `base/ws` (the session's root), `base/state` (the session log), `base/served`
    (what the origins serve)."""

    base: Path
    secrets: dict[str, str]
    origins: dict[str, Origin]
    plain_blind: Origin
    ca: trustme.CA
    started: float = field(default_factory=time.time)

    @property
    def conf(self) -> Path:
        return self.base / "conf"

    @property
    def ws(self) -> Path:
        return self.base / "ws"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def upstream_ca(self) -> Path:
        return self.conf / "upstream-ca.pem"

    @property
    def bare(self) -> Path:
        return self.base / "served" / "git" / "repo.git"

    def port(self, name: str) -> int:
        return self.origins[name].port

    def url(self, name: str, path: str = "/") -> str:
        return f"https://{name}:{self.port(name)}{path}"

    def reset(self) -> None:
        for origin in (*self.origins.values(), self.plain_blind):
            origin.reset()

    def all_seen(self) -> list[tuple[str, Seen]]:
        return [
            (name, seen)
            for name, origin in (*self.origins.items(), ("blind-plain", self.plain_blind))
            for seen in list(origin.seen)
        ]

    def allow(self) -> list[str]:
        """Each allowed origin by its address and port (a loopback address is refused
        unless an entry names it); the unlisted one is not."""
        return [
            f"{ADDRESSES[name]}:{origin.port}"
            for name, origin in self.origins.items()
            if name != UNLISTED
        ] + [f"{ADDRESSES[BLIND]}:{self.plain_blind.port}"]

    def hosts_text(self) -> str:
        lines = ["127.0.0.1 localhost"]
        lines += [f"{address} {name}" for name, address in ADDRESSES.items()]
        return "\n".join(lines) + "\n"

    def composition(self, backend: str, *, extra_bash: str = "") -> str:
        """The composition (YAML, as an operator writes it): the credentials by `!env`
        and `value_from`, the request rules, the origins' CA for upstream checks."""
        allow = "".join(f'\n        - "{entry}"' for entry in self.allow())
        tier = "\n    landlock_tier: plain" if backend == PLAIN else ""
        return f"""\
- id: sandbox
  name: stockade.sandbox.local
  config:
    backend: {variant_backend(backend)}{tier}
- id: bash
  name: stockade.bash.sandbox
  config:
    network: allowlist
    workspace_root: {self.ws}
    network_allow:{allow}
    network_credentials:
      - {{host: {API}, header: Authorization, placeholder_env: API_TOKEN, value: !env {API_SECRET_VAR}}}
      - {{host: {HEAD}, header: X-Api-Key, value: !env {HEAD_SECRET_VAR}}}
      - {{host: {GIT}, placeholder_env: GIT_TOKEN, value_from: {GIT_SECRET_VAR}}}
      - {{host: {PYPI}, header: Authorization, placeholder_env: PIP_TOKEN, value: !env {PIP_SECRET_VAR}}}
    network_requests:
      - {{host: {API}, name: {API_RULE}, methods: [GET, HEAD], paths: ["/repos/org/*", "/public/**"]}}
      - {{host: {OTHER}, name: {OTHER_RULE}, paths: ["/**"]}}
    network_upstream_ca: {self.upstream_ca}{extra_bash}
- id: log
  name: stockade.session.log
  config:
    state_dir: {self.state}
"""

    def direct(
        self,
        name: str,
        path: str = "/",
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> int:
        """An unconfined request from this process straight to an origin (the control):
        its status."""
        origin = self.origins[name]
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: {name}:{origin.port}",
            "Connection: close",
            f"Content-Length: {len(body or b'')}",
        ]
        lines += [f"{key}: {value}" for key, value in (headers or {}).items()]
        reply = b""
        with (
            socket.create_connection((ADDRESSES[name], origin.port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname=name) as tls,
        ):
            tls.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b""))
            while chunk := tls.recv(65536):
                reply += chunk
        return int(reply.split(b" ", 2)[1])


@contextlib.contextmanager
def rig(base: Path) -> Iterator[Rig]:
    """Start every origin on its loopback address with a leaf from a fresh trustme CA
    (naming every host), write the upstream CA, a bare repository and an index."""
    ca = trustme.CA()
    leaf = ca.issue_cert(*ADDRESSES)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    leaf.configure_cert(context)
    context.set_alpn_protocols(["http/1.1"])
    for name in ("conf", "ws", "state", "served/git", "served/simple/demo"):
        (base / name).mkdir(parents=True)
    os.chmod(base, 0o755)
    ca.cert_pem.write_to_path(str(base / "conf" / "upstream-ca.pem"))
    wheel = build_wheel(base / "served" / "simple" / "demo")
    (base / "served" / "simple" / "demo" / "index.html").write_text(
        f'<a href="{wheel}">{wheel}</a>\n'
    )
    (base / "served" / "simple" / "index.html").write_text('<a href="demo/">demo</a>\n')
    work = base / "served" / "seed"
    _git("init", "-q", str(work))
    (work / "README").write_text("seeded\n")
    _git("add", "README", cwd=work)
    _git("commit", "-qm", "seed", cwd=work)
    _git("clone", "-q", "--bare", str(work), str(base / "served" / "git" / "repo.git"))
    made_secrets = {name: new_secret() for name in SECRET_VARS}
    handlers: dict[str, tuple[type[_Recording], str | None, Path | None]] = {
        API: (ApiHandler, made_secrets[API_SECRET_VAR], None),
        HEAD: (KeyHandler, made_secrets[HEAD_SECRET_VAR], None),
        GIT: (GitHandler, made_secrets[GIT_SECRET_VAR], base / "served" / "git"),
        PYPI: (IndexHandler, made_secrets[PIP_SECRET_VAR], base / "served"),
        OTHER: (ApiHandler, None, None),
        BLIND: (ApiHandler, None, None),
        UNLISTED: (ApiHandler, None, None),
    }
    origins = {
        name: Origin(ADDRESSES[name], handler, context, secret=secret, root=root)
        for name, (handler, secret, root) in handlers.items()
    }
    plain_blind = Origin(ADDRESSES[BLIND], ApiHandler, None)
    started = [*origins.values(), plain_blind]
    for origin in started:
        threading.Thread(target=origin.serve_forever, daemon=True).start()
    try:
        yield Rig(base, made_secrets, origins, plain_blind, ca)
    finally:
        for origin in started:
            origin.shutdown()
            origin.server_close()


# --- the harness in its own mount namespace ------------------------------------------


# What a logged event leaves out when a field holds its default.
REQUEST_DEFAULTS: dict[str, Any] = {
    "rule": None,
    "credentials": [],
    "misplaced": [],
    "status": None,
    "protocol": "https",
    "scrubbed": 0,
}
CONNECT_DEFAULTS: dict[str, Any] = {"rule": None, "address": None}


@dataclass
class Outcome:
    """What one harness run returned: each command's text and facts, the session's
    events (as JSON values), the unconfined controls' outputs, and the log on disk."""

    results: list[dict[str, Any]]
    events: list[dict[str, Any]]
    controls: list[str]
    asked: list[str]
    log_text: str
    stderr: str

    def text(self, index: int) -> str:
        return str(self.results[index]["text"])

    def requests(self) -> list[dict[str, Any]]:
        """The `network/request` events, each with its defaults (the log omits them)."""
        return [
            {**REQUEST_DEFAULTS, **event}
            for event in self.events
            if event.get("type") == "network/request"
        ]

    def connects(self) -> list[dict[str, Any]]:
        return [
            {**CONNECT_DEFAULTS, **event}
            for event in self.events
            if event.get("type") == "network/connect"
        ]

    def call_id(self, index: int) -> str:
        calls = [event["call_id"] for event in self.events if event.get("type") == "tool/call"]
        return str(calls[index])

    def of(self, index: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The events among `events` that command `index`'s call made."""
        call = self.call_id(index)
        return [event for event in events if event.get("call_id") == call]


def run_harness(
    rig: Rig,
    backend: str,
    commands: list[str],
    *,
    unconfined: tuple[str, ...] = (),
    extra_bash: str = "",
    secrets_env: dict[str, str] | None = None,
    timeout: float = 300,
) -> Outcome:
    """Open the harness on the rig's composition in a fresh process, in a private mount
    namespace where the hosts file maps the rig's names, with the real values in its
    environment only; run each command through the bash tool in one session (`@HARNESS_PID@`
    in a command is the harness's pid), then each `unconfined` command as the harness's
    own unconfined child. Raises when the harness fails to start or a call errs."""
    composition = rig.conf / "stockade.yml"
    composition.write_text(rig.composition(backend, extra_bash=extra_bash))
    hosts = rig.conf / "hosts"
    hosts.write_text(rig.hosts_text())
    output = rig.conf / "outcome.json"
    spec = {
        "config": str(composition),
        "cwd": str(rig.ws),
        "hosts": str(hosts),
        "names": ADDRESSES,
        "commands": commands,
        "unconfined": list(unconfined),
        "output": str(output),
    }
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "STOCKADE_TEST"))
    }
    env.update(rig.secrets if secrets_env is None else secrets_env)
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", sys.executable, str(HARNESS)],
        input=json.dumps(spec),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=str(rig.base),
    )
    if done.returncode != 0 or not output.exists():
        raise AssertionError(
            f"the harness run failed (exit {done.returncode}):\n{done.stderr[-6000:]}"
        )
    payload = json.loads(output.read_text())
    output.unlink()
    log_text = "".join(
        path.read_text(errors="replace") for path in sorted(rig.state.rglob("*")) if path.is_file()
    )
    return Outcome(
        payload["results"],
        payload["events"],
        payload["controls"],
        payload["asked"],
        log_text,
        done.stderr,
    )


def leaks(rig: Rig, text: str | bytes) -> list[str]:
    """Which real values (as themselves, or inside a Basic credential) `text` holds."""
    data = text.encode() if isinstance(text, str) else text
    found = []
    for name, value in rig.secrets.items():
        forms = [value.encode()] + [
            base64.b64encode(f"{user}:{value}".encode()) for user in ("x", "")
        ]
        if any(form in data for form in forms):
            found.append(name)
    return found


def leaked_forms(rig: Rig, text: str | bytes) -> list[str]:
    """Which real values `text` holds in any reflected form (`reflected_forms`; a form
    of a base64 or UTF-16 encoding checked by its stable middle), each as `NAME: form`."""
    data = text.encode("latin-1", "replace") if isinstance(text, str) else text
    found = []
    for name, value in rig.secrets.items():
        for index, form in enumerate(reflected_forms(value)):
            encoded = form.encode("latin-1")
            middle = encoded[4:-4] if len(encoded) > 16 else encoded
            if middle in data:
                found.append(f"{name}: form {index}")
    return found


def host_files_since(since: float) -> Iterator[tuple[str, bytes]]:
    """Each regular file on the host changed since `since` (/proc, /sys, /dev aside),
    with its content."""
    done = subprocess.run(
        ["bash", "-c", FIND_NEW.replace("@SINCE@", str(int(since) - 1))],
        capture_output=True,
        timeout=300,
        check=False,
    )
    for path in done.stdout.split(b"\0"):
        if path:
            with contextlib.suppress(OSError):
                yield os.fsdecode(path), Path(os.fsdecode(path)).read_bytes()


def host_files_with_secrets(rig: Rig, since: float) -> list[str]:
    """Files on the host changed since `since` that hold a real value of this rig (the
    session log's directory included): nothing may."""
    return [path for path, content in host_files_since(since) if leaks(rig, content)]


# Regular files under / changed since @SINCE@ (ctime: a command cannot set it back),
# /proc, /sys and /dev aside, up to 64 MiB each, NUL-separated.
FIND_NEW = (
    "find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f "
    "-newerct @@SINCE@ -size -64M -print0 2>/dev/null"
)


def unconfined(rig: Rig, command: str, env: dict[str, str], *, timeout: float = 120) -> str:
    """`bash -c command` unconfined, with the rig's names mapped (a private mount
    namespace again) and `env` over this process's environment: the controls."""
    hosts = rig.conf / "hosts"
    hosts.write_text(rig.hosts_text())
    done = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "bash",
            "-c",
            'mount --bind "$0" /etc/hosts && exec bash -c "$1"',
            str(hosts),
            command,
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=str(rig.ws),
    )
    return done.stdout + done.stderr


def stockade_cli(
    rig: Rig, backend: str, args: list[str], *, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m stockade ARGS` as a person runs it, on the rig's composition (with
    `--config`), its names mapped in a private mount namespace and the real values in
    its environment only."""
    composition = rig.conf / "stockade.yml"
    composition.write_text(rig.composition(backend))
    hosts = rig.conf / "hosts"
    hosts.write_text(rig.hosts_text())
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "STOCKADE_TEST"))
    }
    env.update(rig.secrets)
    verb, *rest = args
    return subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "bash",
            "-c",
            'mount --bind "$0" /etc/hosts && exec "$@"',
            str(hosts),
            sys.executable,
            "-m",
            "stockade",
            verb,
            "--config",
            str(composition),
            "--root",
            str(rig.ws),
            *rest,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=str(rig.ws),
        stdin=subprocess.DEVNULL,
    )

"""Family `workflows`: ordinary developer workflows x {stockade bwrap, stockade Landlock,
Codex `codex sandbox`, srt}: which pass untouched, which need what (issue 37).

Not a speed measurement: a table of facts for docs/workflows.md. Each workflow is one
bash script run in a fresh workspace with a fresh, throwaway HOME (so the host's own
caches are never read or written), offline, against servers this family starts on
127.0.0.1. Each sandbox runs it in its workspace-write-like mode with no network:

- stockade: `python -m stockade exec --backend B --mode workspace-write --root WS`
  (the default composition: network off, tool caches on), and Landlock's plain tier
  (no namespace, as on a host without them) through a composition asking for it;
- Codex CLI: `codex sandbox -c sandbox_mode="workspace-write"` in WS;
- srt: `srt --settings S` with `allowWrite: [WS, /tmp]` and no allowed domain.

A workflow that fails untouched is retried, each time in a fresh workspace and HOME,
with the narrowest grant each sandbox documents for what it might lack (a writable
directory, a host port, local binding, a line of shell such as a flag), one at a
time, then two together, and so on; then escalated
(stockade's danger-full-access, Codex's danger-full-access, srt: run outside srt).
The cell names the fewest grants that made it pass. Every workflow also runs once
unconfined (same fresh HOME) as the control: a row whose control fails is broken on
this machine, not refused by a sandbox. One row is not a workflow but a containment
fact: sockets the host binds after the command started, reached or refused.

A missing tool (go, cargo, npm, gcc) leaves its row out; a missing peer leaves its
column out; both are notes, never failures. No check can fail the family: whether the
host's own caches under the real home changed during it is a note (on a shared
machine another process may write them too).
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import textwrap
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ._common import Context, FamilyResult, Progress, Table
from ._env import Peer, find_codex, find_srt

TIMEOUT = 180.0  # seconds per run; a hung run is a failure with its cause, never a hang
OK = "WORKFLOW-OK"  # the last line a workflow prints when every step held

# --- what a workflow may lack, and each sandbox's narrowest way to grant it -------------


@dataclass(frozen=True)
class Need:
    """Something a workflow may lack in a sandbox: a directory under HOME to write
    (`write`, path relative to HOME), a port on the host's 127.0.0.1 to reach
    (`reach`), binding and connecting to its own server on 127.0.0.1 (`bind`), or a
    line of shell before it, a flag or a workaround the same in every sandbox
    (`step`, `line`, shown as `label`)."""

    kind: str
    path: str = ""
    line: str = ""
    label: str = ""


@dataclass
class Grants:
    writable: tuple[str, ...] = ()  # HOME-relative directories
    allow_ports: tuple[int, ...] = ()  # host 127.0.0.1 ports, the narrow way
    network: bool = False  # the sandbox's network switch
    local_binding: bool = False  # srt's allowLocalBinding
    steps: tuple[str, ...] = ()  # shell lines before the workflow (flags, workarounds)
    escalate: bool = False  # out of the sandbox (or its full-access mode)


@dataclass
class Run:
    """One attempt: a fresh workspace and HOME under `base`."""

    base: str
    workspace: str
    home: str
    script: str
    env: dict[str, str]
    port: int  # the pip index's port (the host server)


# --- the sandboxes (columns) ------------------------------------------------------------


class Sandbox:
    name = ""
    version: str | None = None

    def argv(self, run: Run, grants: Grants) -> list[str]:
        raise NotImplementedError

    def options(self, need: Need, port: int) -> list[tuple[str, Grants]]:
        """The ways this sandbox grants `need`, narrowest first, each with its label."""
        if need.kind == "step":
            return [(f"`{need.label}`", Grants(steps=(need.line,)))]
        return self.grant(need, port)

    def grant(self, need: Need, port: int) -> list[tuple[str, Grants]]:
        raise NotImplementedError

    def escalation(self) -> str:
        raise NotImplementedError


class Stockade(Sandbox):
    def __init__(self, backend: str, config: str | None = None) -> None:
        self.backend = backend
        self.config = config  # a composition outside every root (the plain tier's)
        self.name = f"stockade {'Landlock' if backend == 'landlock' else backend}"
        if config is not None:
            self.name += " (plain tier)"
        from importlib import metadata

        try:
            self.version = metadata.version("stockade")
        except metadata.PackageNotFoundError:
            self.version = None

    def argv(self, run: Run, grants: Grants) -> list[str]:
        argv = [sys.executable, "-m", "stockade", "exec", "--backend", self.backend]
        if self.config is not None:
            argv += ["--config", self.config]
        argv += ["--root", run.workspace]
        if grants.escalate:
            argv += ["--mode", "danger-full-access"]
        else:
            argv += ["--mode", "workspace-write"]
            for path in grants.writable:
                argv += ["--writable", os.path.join(run.home, path)]
            if grants.network:
                argv += ["--network", "on"]
            else:
                for port in grants.allow_ports:
                    argv += ["--allow", f"127.0.0.1:{port}"]
        return [*argv, "--", "bash", run.script]

    def grant(self, need: Need, port: int) -> list[tuple[str, Grants]]:
        if need.kind == "write":
            return [(f"`--writable ~/{need.path}`", Grants(writable=(need.path,)))]
        if need.kind == "reach":
            return [
                ("`--allow 127.0.0.1:PORT`", Grants(allow_ports=(port,))),
                ("`--network on`", Grants(network=True)),
            ]
        return [("`--network on`", Grants(network=True))]

    def escalation(self) -> str:
        return "escalation (`--mode danger-full-access`)"


class Codex(Sandbox):
    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.name = "Codex `codex sandbox`"
        self.version = peer.version

    def argv(self, run: Run, grants: Grants) -> list[str]:
        mode = "danger-full-access" if grants.escalate else "workspace-write"
        # The workspace is the working directory (`-C` wants a --permission-profile too).
        argv = [*self.peer.argv_prefix, "sandbox", "-c", f'sandbox_mode="{mode}"']
        if grants.writable:
            roots = ", ".join(json.dumps(os.path.join(run.home, p)) for p in grants.writable)
            argv += ["-c", f"sandbox_workspace_write.writable_roots=[{roots}]"]
        if grants.network or grants.allow_ports or grants.local_binding:
            argv += ["-c", "sandbox_workspace_write.network_access=true"]
        return [*argv, "--", "bash", run.script]

    def grant(self, need: Need, port: int) -> list[tuple[str, Grants]]:
        if need.kind == "write":
            return [(f"`writable_roots = [~/{need.path}]`", Grants(writable=(need.path,)))]
        return [("`network_access = true`", Grants(network=True))]

    def escalation(self) -> str:
        return 'escalation (`sandbox_mode="danger-full-access"`)'


class Srt(Sandbox):
    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.name = "srt"
        self.version = peer.version

    def argv(self, run: Run, grants: Grants) -> list[str]:
        if grants.escalate:
            return ["bash", run.script]
        network: dict[str, Any] = {
            "allowedDomains": [f"127.0.0.1:{port}" for port in grants.allow_ports],
            "deniedDomains": [],
        }
        if grants.local_binding:
            network["allowLocalBinding"] = True
        settings = {
            "filesystem": {
                "denyRead": [],
                "allowWrite": [run.workspace, "/tmp"]
                + [os.path.join(run.home, p) for p in grants.writable],
                "denyWrite": [],
            },
            "network": network,
        }
        path = os.path.join(run.base, "srt-settings.json")
        with open(path, "w", encoding="utf-8") as out:
            json.dump(settings, out)
        return [*self.peer.argv_prefix, "--settings", path, "--", "bash", run.script]

    def grant(self, need: Need, port: int) -> list[tuple[str, Grants]]:
        if need.kind == "write":
            return [(f"`allowWrite: ~/{need.path}`", Grants(writable=(need.path,)))]
        if need.kind == "reach":
            return [('`allowedDomains: ["127.0.0.1:PORT"]`', Grants(allow_ports=(port,)))]
        return [("`allowLocalBinding: true`", Grants(local_binding=True))]

    def escalation(self) -> str:
        return "escalation (run outside srt)"


class Unconfined(Sandbox):
    name = "unconfined (control)"

    def argv(self, run: Run, grants: Grants) -> list[str]:
        return ["bash", run.script]


def _merge(parts: list[Grants]) -> Grants:
    merged = Grants()
    for part in parts:
        merged = replace(
            merged,
            writable=merged.writable + part.writable,
            allow_ports=merged.allow_ports + part.allow_ports,
            network=merged.network or part.network,
            local_binding=merged.local_binding or part.local_binding,
            steps=merged.steps + part.steps,
        )
    return merged


# --- the local servers -------------------------------------------------------------------


class _Index(http.server.SimpleHTTPRequestHandler):
    """A PEP 503 index from a directory; counts the wheels it serves (pip's cache)."""

    wheel_gets = 0
    lock = threading.Lock()

    def end_headers(self) -> None:
        if self.path.endswith(".whl"):
            # As PyPI serves files: immutable, cacheable, so a working cache is used.
            self.send_header("Cache-Control", "max-age=365000000, immutable, public")
        super().end_headers()

    def do_GET(self) -> None:
        if self.path.endswith(".whl"):
            with _Index.lock:
                _Index.wheel_gets += 1
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve(directory: str) -> tuple[http.server.ThreadingHTTPServer, threading.Thread]:
    def handler(*args: Any, **kwargs: Any) -> _Index:
        return _Index(*args, directory=directory, **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- assets built once, on the host -----------------------------------------------------


def _wheel(directory: str) -> None:
    """benchpkg 1.0, a pure wheel made by hand, in a PEP 503 layout under `directory`."""
    name = "benchpkg-1.0-py3-none-any.whl"
    files = {
        "benchpkg/__init__.py": b"VALUE = 42\n",
        "benchpkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: benchpkg\nVersion: 1.0\n",
        "benchpkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: bench\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append("benchpkg-1.0.dist-info/RECORD,,")
    files["benchpkg-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    package = os.path.join(directory, "simple", "benchpkg")
    os.makedirs(package, exist_ok=True)
    with zipfile.ZipFile(os.path.join(package, name), "w") as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
    with open(os.path.join(package, "index.html"), "w", encoding="utf-8") as page:
        page.write(f'<!DOCTYPE html><html><body><a href="{name}">{name}</a></body></html>\n')
    with open(os.path.join(directory, "simple", "index.html"), "w", encoding="utf-8") as page:
        page.write('<!DOCTYPE html><html><body><a href="benchpkg/">benchpkg</a></body></html>\n')


def _npm_tarball(directory: str) -> str:
    path = os.path.join(directory, "benchnpm-1.0.0.tgz")
    members = {
        "package/package.json": json.dumps(
            {"name": "benchnpm", "version": "1.0.0", "main": "index.js"}
        ).encode(),
        "package/index.js": b"module.exports = 42;\n",
    }
    with tarfile.open(path, "w:gz") as tar:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return path


def _git_env(home: str) -> dict[str, str]:
    return {"HOME": home, "GIT_CONFIG_NOSYSTEM": "1", "PATH": os.environ.get("PATH", "")}


def _bare_remote(directory: str) -> str:
    """A local bare repository with one commit: the submodule's remote."""
    work = os.path.join(directory, "lib-src")
    bare = os.path.join(directory, "lib.git")
    os.makedirs(work, exist_ok=True)
    home = os.path.join(directory, "git-home")
    os.makedirs(home, exist_ok=True)
    _write_gitconfig(home)
    env = _git_env(home)
    for argv in (
        ["git", "init", "-q"],
        ["sh", "-c", "echo lib > lib.txt"],
        ["git", "add", "lib.txt"],
        ["git", "commit", "-qm", "lib"],
        ["git", "clone", "-q", "--bare", work, bare],
    ):
        subprocess.run(argv, cwd=work, env=env, check=True, capture_output=True)
    return bare


def _write_gitconfig(home: str) -> None:
    with open(os.path.join(home, ".gitconfig"), "w", encoding="utf-8") as config:
        config.write(
            "[user]\n\tname = Bench\n\temail = bench@example.invalid\n"
            "[init]\n\tdefaultBranch = main\n"
        )


# The probe the containment row runs: connect to each socket the host bound after the
# command started; prints one word per socket.
SOCKET_PROBE = textwrap.dedent(
    """
    import errno, socket, sys
    port, paths = int(sys.argv[1]), sys.argv[2:]
    def attempt(family, address):
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
        except OSError as error:
            return "refused: socket() " + errno.errorcode.get(error.errno, str(error))
        s.settimeout(3)
        try:
            s.connect(address)
            return "reached"
        except OSError as error:
            return "refused: " + errno.errorcode.get(error.errno, str(error))
        finally:
            s.close()
    words = ["tcp 127.0.0.1 " + attempt(socket.AF_INET, ("127.0.0.1", port))]
    for path in paths:
        words.append("unix /" + path.split("/")[1] + " " + attempt(socket.AF_UNIX, path))
    print("SOCKETS " + "; ".join(words))
    """
)


# --- the workflows (rows) ---------------------------------------------------------------


@dataclass
class Outcome:
    ok: bool
    caveat: str | None  # passed, but not cleanly (pip without its cache)
    detail: str  # the last lines of output, or the timeout
    seconds: float
    stdout: str = ""


@dataclass
class Workflow:
    key: str
    title: str
    script: str  # bash; {assets}, {port}, {free}, {late_port}, {late_paths} filled in
    needs: tuple[Need, ...] = ()
    tools: tuple[str, ...] = ()  # executables that must be on PATH
    setup: Callable[[Run, dict[str, str]], None] | None = None
    judge: Callable[[Outcome, int], Outcome] | None = None  # (outcome, wheel GETs)
    quick: bool = False
    containment: bool = False


def _pip_judge(outcome: Outcome, wheel_gets: int) -> Outcome:
    if outcome.ok and wheel_gets > 1:
        return replace(outcome, caveat="passes without its cache (the wheel downloaded twice)")
    return outcome


def _git_repo(run: Run, assets: dict[str, str]) -> None:
    env = _git_env(run.home)
    for argv in (
        ["git", "init", "-q"],
        ["sh", "-c", "echo hello > README"],
        ["git", "add", "README"],
        ["git", "commit", "-qm", "init"],
    ):
        subprocess.run(argv, cwd=run.workspace, env=env, check=True, capture_output=True)


def _write(run: Run, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = os.path.join(run.workspace, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)


def _cargo_project(run: Run, assets: dict[str, str]) -> None:
    _write(
        run,
        {
            "Cargo.toml": '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n'
            '[dependencies]\ndep = { path = "dep" }\n',
            "src/main.rs": 'fn main() { println!("{}", dep::value()); }\n',
            "dep/Cargo.toml": '[package]\nname = "dep"\nversion = "0.1.0"\nedition = "2021"\n',
            "dep/src/lib.rs": "pub fn value() -> u32 { 42 }\n",
        },
    )


def _go_project(run: Run, assets: dict[str, str]) -> None:
    _write(
        run,
        {
            "go.mod": "module example.com/app\n\ngo 1.19\n",
            "main.go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(42) }\n',
            "main_test.go": 'package main\n\nimport "testing"\n\n'
            "func TestAnswer(t *testing.T) { if 6*7 != 42 { t.Fatal() } }\n",
        },
    )


def _make_project(run: Run, assets: dict[str, str]) -> None:
    _write(
        run,
        {
            "hello.c": '#include <stdio.h>\nint main(void) { puts("42"); return 0; }\n',
            "Makefile": "hello: hello.c\n\tgcc -O1 -o hello hello.c\n",
        },
    )


def _pytest_project(run: Run, assets: dict[str, str]) -> None:
    _write(
        run,
        {
            "test_server.py": textwrap.dedent(
                """
                import http.server, threading, urllib.request
                import pytest

                @pytest.fixture
                def server():
                    srv = http.server.ThreadingHTTPServer(
                        ("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
                    threading.Thread(target=srv.serve_forever, daemon=True).start()
                    yield srv.server_address[1]
                    srv.shutdown()

                def test_fixture_serves(server):
                    with urllib.request.urlopen(f"http://127.0.0.1:{server}/") as reply:
                        assert reply.status == 200
                """
            )
        },
    )


def _npm_project(run: Run, assets: dict[str, str]) -> None:
    _write(run, {"package.json": json.dumps({"name": "app", "version": "1.0.0"})})


# --trusted-host: pip caches nothing fetched over plain http from an untrusted host, and
# a local index is one a person trusts; with it the second install is the cache's.
PIP_INSTALL = (
    "python -m pip install -q --index-url http://127.0.0.1:{port}/simple/ "
    "--trusted-host 127.0.0.1 --target ./{target} benchpkg"
)

WORKFLOWS: tuple[Workflow, ...] = (
    Workflow(
        "cache-write",
        "`mkdir -p ~/.cache/pip && echo x > ~/.cache/pip/t`",
        "mkdir -p ~/.cache/pip && echo x > ~/.cache/pip/t",
        needs=(Need("write", ".cache/pip"),),
        quick=True,
    ),
    Workflow(
        "pip",
        "`pip install` from a local index on the host's 127.0.0.1, twice (the second from "
        "pip's cache)",
        PIP_INSTALL.replace("{target}", "a")
        + " && "
        + PIP_INSTALL.replace("{target}", "b")
        + ' && PYTHONPATH=b python -c "import benchpkg"',
        needs=(
            Need("reach"),
            Need("write", ".cache/pip"),
            # a NO_PROXY naming 127.0.0.1 sends pip past the proxy that would allow it
            Need("step", line="unset NO_PROXY no_proxy", label="unset NO_PROXY"),
        ),
        judge=_pip_judge,
    ),
    Workflow(
        "npm",
        "`npm install` a local tarball",
        "npm install --no-audit --no-fund {assets}/benchnpm-1.0.0.tgz >/dev/null && "
        "node -e \"process.exit(require('benchnpm') === 42 ? 0 : 1)\"",
        needs=(Need("write", ".npm"),),
        tools=("npm", "node"),
        setup=_npm_project,
    ),
    Workflow(
        "cargo",
        "`cargo build --offline` with a path dependency",
        "cargo build --offline -q && ./target/debug/app",
        needs=(Need("write", ".cargo"),),
        tools=("cargo",),
        setup=_cargo_project,
    ),
    Workflow(
        "go",
        "`go build` and `go test`",
        "go build -o app . && ./app && go test ./... >/dev/null",
        needs=(
            Need("write", ".cache/go-build"),
            # go stamps the VCS state: a .git it cannot read fails the build.
            Need("step", line="export GOFLAGS=-buildvcs=false", label="GOFLAGS=-buildvcs=false"),
            # a TMPDIR set but never made fails go's work directory.
            Need("step", line='mkdir -p "${TMPDIR:-/tmp}"', label='mkdir -p "$TMPDIR"'),
        ),
        tools=("go",),
        setup=_go_project,
    ),
    Workflow(
        "make",
        "`make` with gcc",
        "make -s && ./hello",
        tools=("make", "gcc"),
        setup=_make_project,
        quick=True,
    ),
    Workflow(
        "git-init",
        "git: `init`, `add`, `commit` in a new repository",
        "git init -q && echo hi > a.txt && git add a.txt && git commit -qm first && "
        "git log --oneline >/dev/null",
        tools=("git",),
        quick=True,
    ),
    Workflow(
        "git-commit",
        "git: `checkout -b`, `commit`, `stash`, `rebase` in an existing repository",
        "git checkout -qb feature && echo more >> README && git commit -qam more && "
        "echo wip >> README && git stash -q && git stash pop -q && git checkout -q README && "
        "git checkout -q main && echo other > other.txt && git add other.txt && "
        "git commit -qm other && git checkout -q feature && git rebase -q main",
        tools=("git",),
        setup=_git_repo,
    ),
    Workflow(
        "git-worktree",
        "git: `worktree add` (inside the workspace)",
        "git worktree add -q wt/feature -b feature && test -f wt/feature/README",
        tools=("git",),
        setup=_git_repo,
    ),
    Workflow(
        "git-submodule",
        "git: `submodule add` from a local bare remote, and commit",
        "git -c protocol.file.allow=always submodule add -q {assets}/lib.git lib && "
        "git commit -qm 'add lib' && test -f lib/lib.txt && "
        # registered as git on the host registers it (a refused .git/config is silent)
        "git config --get submodule.lib.url >/dev/null",
        tools=("git",),
        setup=_git_repo,
    ),
    Workflow(
        "dev-server",
        "a dev server and `curl` in one command",
        "python -m http.server {free} --bind 127.0.0.1 >/dev/null 2>&1 & server=$!; ok=; "
        "for i in $(seq 100); do "
        "curl -sf -o /dev/null http://127.0.0.1:{free}/ && { ok=1; break; }; sleep 0.1; done; "
        'kill $server; test -n "$ok"',
        needs=(Need("bind"),),
        tools=("curl",),
        quick=True,
    ),
    Workflow(
        "pytest",
        "`pytest` with a fixture serving HTTP on 127.0.0.1",
        "python -m pytest -q -p no:cacheprovider test_server.py",
        needs=(Need("bind"),),
        setup=_pytest_project,
    ),
    Workflow(
        "late-sockets",
        "containment: sockets the host binds 1.5 s after the command started "
        "(tcp on 127.0.0.1, Unix under /tmp and /run)",
        "for i in $(seq 200); do [ -e {assets}/late-bound ] && break; sleep 0.05; done; "
        "python {assets}/socket_probe.py {late_port} {late_paths}",
        containment=True,
    ),
)


# --- running one attempt -----------------------------------------------------------------


def _toolchain_path() -> list[str]:
    """Directories for PATH that need no HOME: this interpreter's, the rust toolchain's
    own (not rustup's proxies, which read ~/.rustup), then the system's."""
    dirs = [os.path.dirname(sys.executable)]
    rustup = shutil.which("rustup")
    if rustup:
        done = subprocess.run(
            [rustup, "which", "cargo"], capture_output=True, text=True, check=False
        )
        if done.returncode == 0 and done.stdout.strip():
            dirs.append(os.path.dirname(done.stdout.strip()))
    elif shutil.which("cargo"):
        dirs.append(os.path.dirname(os.path.realpath(shutil.which("cargo") or "")))
    dirs += ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
    return list(dict.fromkeys(dirs))


def _base_env(path: list[str]) -> dict[str, str]:
    env = {
        "PATH": ":".join(path),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "USER": os.environ.get("USER", "root"),
        "LOGNAME": os.environ.get("LOGNAME", os.environ.get("USER", "root")),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    if os.environ.get("PYTHONPATH"):  # the stockade being measured (bench/README.md)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _tail(text: str, lines: int = 3) -> str:
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(kept[-lines:])[-400:]


class Runner:
    def __init__(self, ctx: Context, assets: dict[str, str], port: int) -> None:
        self.ctx = ctx
        self.assets = assets
        self.port = port
        self.env = _base_env(_toolchain_path())
        self.count = 0
        # srt points TMPDIR at /tmp/claude without making it; a workflow that makes it
        # (the go row's `mkdir -p "$TMPDIR"`) makes it on the host's /tmp. Absent when
        # the family starts, it is removed after each run, so every run finds the host
        # as this one did, and the host is left as found.
        self.leftovers = [p for p in ("/tmp/claude",) if not os.path.lexists(p)]

    def fresh(self, workflow: Workflow, label: str, grants: Grants) -> Run:
        self.count += 1
        base = self.ctx.scratch.dir("workflows", f"{self.count:04d}-{workflow.key}")
        workspace = os.path.join(base, "ws")
        home = os.path.join(base, "home")
        os.makedirs(workspace)
        os.makedirs(home)
        _write_gitconfig(home)
        for path in grants.writable:  # a granted directory exists, as an operator makes it
            os.makedirs(os.path.join(home, path), exist_ok=True)
        text = workflow.script
        for name, value in (
            ("assets", self.assets["dir"]),
            ("port", self.port),
            ("free", _free_port()),
            ("late_port", self.assets.get("late_port", 0)),
            ("late_paths", " ".join(self.assets.get("late_paths", []))),
        ):
            text = text.replace("{" + name + "}", str(value))
        script = os.path.join(base, "workflow.sh")
        with open(script, "w", encoding="utf-8") as out:
            # One && chain (or a list ending in its test): its status is the workflow's.
            steps = "".join(f"{line}\n" for line in grants.steps)
            out.write(
                f"# {workflow.key} under {label}\n{steps}{text}\nstatus=$?\n"
                f'[ "$status" -eq 0 ] && echo {OK}\nexit "$status"\n'
            )
        env = {**self.env, "HOME": home}
        run = Run(base, workspace, home, script, env, self.port)
        if workflow.setup is not None:
            workflow.setup(run, self.assets)
        return run

    def attempt(self, workflow: Workflow, sandbox: Sandbox, grants: Grants) -> Outcome:
        run = self.fresh(workflow, sandbox.name, grants)
        argv = sandbox.argv(run, grants)
        with _Index.lock:
            _Index.wheel_gets = 0
        started = time.monotonic()
        late: list[socket.socket] = []
        try:
            child = subprocess.Popen(
                argv,
                cwd=run.workspace,
                env=run.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                start_new_session=True,
            )
        except OSError as error:
            return Outcome(False, None, f"could not start: {error}", 0.0)
        try:
            if workflow.containment:
                time.sleep(1.5)
                late = self._bind_late()
            out, err = child.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, 9)
            out, err = child.communicate()
            return Outcome(False, None, f"timed out after {TIMEOUT:.0f} s", TIMEOUT, out)
        finally:
            for sock in late:
                sock.close()
            for path in self.assets.get("late_paths", []):
                if os.path.exists(path):
                    os.unlink(path)
            marker = os.path.join(self.assets["dir"], "late-bound")
            if os.path.exists(marker):
                os.unlink(marker)
            for path in self.leftovers:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
        seconds = time.monotonic() - started
        ok = child.returncode == 0 and out.strip().endswith(OK)
        detail = "" if ok else f"exit {child.returncode}: {_tail(err or out)}"
        outcome = Outcome(ok, None, detail, seconds, out)
        if workflow.judge is not None:
            outcome = workflow.judge(outcome, _Index.wheel_gets)
        return outcome

    def _bind_late(self) -> list[socket.socket]:
        bound = []
        tcp = socket.socket()
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", int(self.assets["late_port"])))
        tcp.listen(8)
        bound.append(tcp)
        for path in self.assets["late_paths"]:
            unix = socket.socket(socket.AF_UNIX)
            unix.bind(path)
            unix.listen(8)
            bound.append(unix)
        with open(os.path.join(self.assets["dir"], "late-bound"), "w", encoding="utf-8"):
            pass
        return bound


# --- the ladder: untouched, each grant, the grants together, escalation -----------------


@dataclass
class Cell:
    verdict: str  # the table cell
    untouched: str  # what happened untouched ("" when it passed)
    attempts: list[dict[str, Any]] = field(default_factory=list)


def _ladder(runner: Runner, workflow: Workflow, sandbox: Sandbox) -> Cell:
    attempts: list[dict[str, Any]] = []

    def attempt(label: str, grants: Grants) -> Outcome:
        outcome = runner.attempt(workflow, sandbox, grants)
        attempts.append(
            {
                "grant": label,
                "ok": outcome.ok,
                "caveat": outcome.caveat,
                "detail": outcome.detail,
                "seconds": round(outcome.seconds, 2),
            }
        )
        return outcome

    first = attempt("untouched", Grants())
    if workflow.containment:
        line = next((ln for ln in first.stdout.splitlines() if ln.startswith("SOCKETS ")), None)
        verdict = line[len("SOCKETS ") :] if line else f"did not run ({first.detail})"
        return Cell(verdict, "", attempts)
    if first.ok and not first.caveat:
        return Cell("passes", "", attempts)
    untouched = first.caveat or first.detail
    options = [sandbox.options(need, runner.port) for need in workflow.needs]
    rungs: list[tuple[str, Grants]] = []
    # Each grant alone, then every pair, and so on: the fewest grants that suffice.
    for size in range(1, len(options) + 1):
        for subset in itertools.combinations(options, size):
            for combo in itertools.product(*subset):
                rungs.append(
                    (" + ".join(label for label, _ in combo), _merge([g for _, g in combo]))
                )
    for label, grants in rungs:
        outcome = attempt(label, grants)
        if outcome.ok and not outcome.caveat:
            return Cell(f"needs {label}", untouched, attempts)
    outcome = attempt("escalation", Grants(escalate=True))
    if outcome.ok:
        return Cell(f"needs {sandbox.escalation()}", untouched, attempts)
    return Cell("fails even escalated", untouched, attempts)


# --- the host's own caches stay untouched ----------------------------------------------


def _host_caches() -> dict[str, float | None]:
    import pwd

    home = pwd.getpwuid(os.getuid()).pw_dir
    state = {}
    for rel in (".cache/pip", ".npm", ".cargo/registry", ".cache/go-build", "go", ".gitconfig"):
        path = os.path.join(home, rel)
        state[path] = os.stat(path).st_mtime if os.path.exists(path) else None
    return state


# --- the family --------------------------------------------------------------------------


def _sandboxes(ctx: Context, result: FamilyResult) -> list[Sandbox]:
    found: list[Sandbox] = []
    for backend in ("bwrap", "landlock"):
        if ctx.usable(backend):
            found.append(Stockade(backend))
        else:
            result.skip(f"stockade's {backend} backend is not usable here; its column is left out")
    if ctx.usable("landlock"):
        # The Landlock launcher's plain tier (no namespace), as on a host without user
        # namespaces: forced by a trusted composition outside every root.
        config = os.path.join(ctx.scratch.dir("workflows-config"), "stockade.yml")
        with open(config, "w", encoding="utf-8") as out:
            # The executor entry too: without one a composition runs commands unconfined.
            out.write(
                "- id: sandbox\n  name: stockade.sandbox.local\n"
                "  config: {backend: landlock, landlock_tier: plain}\n"
                "- id: bash\n  name: stockade.bash.sandbox\n"
            )
        os.chmod(config, 0o600)
        found.append(Stockade("landlock", config))
    codex = find_codex(ctx.peers_dir)
    if codex:
        found.append(Codex(codex[0]))
    else:
        result.skip(
            "codex not found (npm install @openai/codex in a scratch dir, then --peers DIR); "
            "its column is left out"
        )
    srt = find_srt(ctx.peers_dir)
    if srt is not None and shutil.which("socat") and shutil.which("rg"):
        found.append(Srt(srt))
    elif srt is not None:
        result.skip("srt found but socat or ripgrep is missing (apt-get install socat ripgrep)")
    else:
        result.skip(
            "srt not found (npm install @anthropic-ai/sandbox-runtime + Debian socat ripgrep, "
            "then --peers DIR); its column is left out"
        )
    return found


def _assets(ctx: Context) -> dict[str, Any]:
    directory = ctx.scratch.dir("workflows-assets")
    _wheel(os.path.join(directory, "index"))
    _npm_tarball(directory)
    if shutil.which("git"):
        _bare_remote(directory)
    with open(os.path.join(directory, "socket_probe.py"), "w", encoding="utf-8") as out:
        out.write(SOCKET_PROBE)
    tag = os.path.basename(ctx.scratch.path)
    late_paths = [f"/tmp/{tag}-late.sock"]
    if os.access("/run", os.W_OK):
        late_paths.append(f"/run/{tag}-late.sock")
    return {
        "dir": directory,
        "late_port": _free_port(),
        "late_paths": late_paths,
    }


def run(ctx: Context) -> FamilyResult:
    result = FamilyResult("workflows")
    before = _host_caches()
    sandboxes = _sandboxes(ctx, result)
    assets = _assets(ctx)
    server, _thread = _serve(os.path.join(assets["dir"], "index"))
    port = int(server.server_address[1])
    runner = Runner(ctx, assets, port)
    path = runner.env["PATH"].split(":")

    workflows = [w for w in WORKFLOWS if w.quick or not ctx.quick]
    only = [k for k in os.environ.get("STOCKADE_BENCH_WORKFLOWS", "").split(",") if k]
    if only:  # a comma list of keys: only those rows (to re-measure one)
        workflows = [w for w in WORKFLOWS if w.key in only]
    usable: list[Workflow] = []
    for workflow in workflows:
        missing = [t for t in workflow.tools if not shutil.which(t, path=":".join(path))]
        if missing:
            result.skip(f"{workflow.key}: {', '.join(missing)} not installed; its row is left out")
            continue
        usable.append(workflow)

    if any(isinstance(s, Srt) for s in sandboxes):
        state = "present" if os.path.lexists("/tmp/claude") else "absent (kept so)"
        result.notes.append(f"srt's TMPDIR /tmp/claude when the family started: {state}")
    # A sandbox that cannot run `true` here (no namespaces, a broken install) would
    # make every cell "needs escalation": its column is left out, with a note.
    trivial = Workflow("true", "true", "true")
    for sandbox in list(sandboxes):
        outcome = runner.attempt(trivial, sandbox, Grants())
        if not outcome.ok:
            result.skip(f"{sandbox.name} does not run `true` here ({outcome.detail}); left out")
            sandboxes.remove(sandbox)
    cells: dict[str, dict[str, Cell]] = {}
    controls: dict[str, Outcome] = {}
    control = Unconfined()
    try:
        with Progress("workflows", "control", len(usable) * (len(sandboxes) + 1)) as progress:
            for workflow in usable:
                progress.advance(label=f"{workflow.key}: unconfined")
                controls[workflow.key] = outcome = runner.attempt(workflow, control, Grants())
                if not outcome.ok and not workflow.containment:
                    result.skip(
                        f"{workflow.key}: fails unconfined here ({outcome.detail}); its row says so"
                    )
                    progress.advance(len(sandboxes))
                    continue
                cells[workflow.key] = {}
                for sandbox in sandboxes:
                    progress.advance(label=f"{workflow.key}: {sandbox.name}")
                    cells[workflow.key][sandbox.name] = _ladder(runner, workflow, sandbox)
    finally:
        server.shutdown()
        server.server_close()

    headers = ["workflow", *[s.name for s in sandboxes]]
    rows: list[list[Any]] = []
    why: list[list[Any]] = []
    for workflow in usable:
        if workflow.key not in cells:
            rows.append([workflow.title, *["broken here (fails unconfined)"] * len(sandboxes)])
            continue
        row_cells = cells[workflow.key]
        if workflow.containment:
            control_line = next(
                (
                    ln[len("SOCKETS ") :]
                    for ln in controls[workflow.key].stdout.splitlines()
                    if ln.startswith("SOCKETS ")
                ),
                controls[workflow.key].detail,
            )
            rows.append(
                [f"{workflow.title} (unconfined: {control_line})"]
                + [row_cells[s.name].verdict for s in sandboxes]
            )
            continue
        rows.append([workflow.title, *[row_cells[s.name].verdict for s in sandboxes]])
        for sandbox in sandboxes:
            cell = row_cells[sandbox.name]
            if cell.untouched:
                why.append([workflow.key, sandbox.name, cell.untouched])
    versions = ", ".join(f"{s.name} {s.version or '?'}" for s in sandboxes)
    result.tables.append(
        Table(
            "Ordinary workflows in workspace-write, network off, fresh HOME",
            headers,
            rows,
            caption=f"{versions}. Each cell: passes untouched, or the fewest grants that "
            "made it pass (each alone, then two together, ...), or the escalation.",
        )
    )
    if why:
        result.tables.append(
            Table(
                "What the untouched run said",
                ["workflow", "sandbox", "untouched: exit and last lines"],
                [[k, s, text.replace("|", "\\|")] for k, s, text in why],
            )
        )
    result.figures["versions"] = {s.name: s.version for s in sandboxes}
    result.figures["cells"] = {
        key: {name: vars(cell) for name, cell in row.items()} for key, row in cells.items()
    }
    result.figures["controls"] = {key: vars(outcome) for key, outcome in controls.items()}
    after = _host_caches()
    changed = [p for p in before if before[p] != after[p]]
    result.figures["host_caches_changed"] = changed
    # A note, not a check: every run has a HOME of its own, and on a shared machine
    # another process may write these too, which no check here could tell apart.
    if changed:
        result.skip(
            f"the host's own {', '.join(changed)} changed during the family (every run "
            "here had a HOME of its own: another process, or a tool that ignores HOME)"
        )
    else:
        result.notes.append(f"the host's own caches and git config untouched ({len(before)} paths)")
    return result

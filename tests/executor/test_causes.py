"""Pure: the one line that names the sandbox's setting as what a failure was (issue 37,
"errors that say what happened"): network off or allowlist behind a DNS or connection
error, a toolchain's own directory behind a refused write; and Node's wording of a
refusal read as the backends' signatures."""

from __future__ import annotations

import pytest

from stockade.executor._classify import (
    network_cause,
    network_failures,
    tool_directory_causes,
)
from stockade.executor._denials import (
    TOOL_DIRECTORIES,
    Effect,
    mentions,
    refusals,
    tool_directory,
)
from stockade.executor.render import render_result
from stockade.messages import NetworkConnection, ShellResult
from stockade.modes import (
    network_allowlist_cause,
    network_off_cause,
    tool_directory_cause,
)
from stockade.sandbox.tool_caches import TOOL_VARIABLES
from stockade.vocab import (
    DENIAL_INSTRUCTION,
    Enforcement,
    Network,
    SandboxMode,
    denial_marker,
)

OFF_LOOKUP = network_off_cause("a name lookup")
OFF_CONNECT = network_off_cause("a connection")
WW = SandboxMode.WORKSPACE_WRITE

LOOKUPS = [
    "curl: (6) Could not resolve host: example.invalid",
    "socket.gaierror: [Errno -3] Temporary failure in name resolution",
    "socket.gaierror: [Errno -2] Name or service not known",
    "getaddrinfo EAI_AGAIN example.com",
    "Error: getaddrinfo ENOTFOUND registry.npmjs.org",
    "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com",
    "ssh: Could not resolve hostname github.com: Temporary failure in name resolution",
    "wget: unable to resolve host address 'example.com'",
]
GO = (
    "dial tcp: lookup proxy.golang.org on 10.0.0.53:53: dial udp 10.0.0.53:53: "
    "connect: network is unreachable"
)
CONNECTS = [
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "OSError: [Errno 101] Network is unreachable",
    "OSError: [Errno 97] Address family not supported by protocol",
    "curl: (7) Failed to connect to 1.1.1.1 port 80 after 0 ms: Couldn't connect to server",
    "connect ENETUNREACH 1.1.1.1:80 - Local (0.0.0.0:0)",
]
PIP = (
    "WARNING: Retrying (Retry(total=0)) after connection broken by 'NewConnectionError("
    "'<HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno -3] "
    "Temporary failure in name resolution')': /simple/requests/"
)


@pytest.mark.parametrize("line", LOOKUPS)
def test_a_failed_lookup_with_network_off_is_named(line: str) -> None:
    assert network_cause(Network.OFF, f"{line}\n") == OFF_LOOKUP


@pytest.mark.parametrize("line", CONNECTS)
def test_a_refused_connection_with_network_off_is_named(line: str) -> None:
    assert network_cause(Network.OFF, f"{line}\n") == OFF_CONNECT


def test_pip_and_go_say_both() -> None:
    both = network_off_cause("a name lookup and a connection")
    assert network_cause(Network.OFF, PIP) == both
    assert network_cause(Network.OFF, GO) == both
    assert network_failures(GO).hosts == ("proxy.golang.org",)


@pytest.mark.parametrize("line", [*LOOKUPS, *CONNECTS, PIP])
def test_never_with_network_on(line: str) -> None:
    assert network_cause(Network.ON, line) is None


@pytest.mark.parametrize(
    "stderr",
    [
        "",
        "ERROR: No matching distribution found for nonexistentpkgxyz\n",
        "grep: resolv.conf: No such file or directory\n",
        "error: the name lookup table is empty\n",
    ],
)
def test_nothing_said_of_other_errors(stderr: str) -> None:
    assert network_cause(Network.OFF, stderr) is None


def test_network_off_text_points_at_the_escalation() -> None:
    assert OFF_LOOKUP.startswith("[sandbox: network is off for this command, so a name lookup")
    assert 'sandbox_permissions "with_network"' in OFF_LOOKUP
    assert "\n" not in OFF_LOOKUP and OFF_LOOKUP.endswith("]")


def _connection(host: str, allowed: bool) -> NetworkConnection:
    return NetworkConnection(
        host=host,
        port=443,
        address=None,
        allowed=allowed,
        rule=None,
        reason="not in the allowlist" if not allowed else "allowed",
        protocol="http",
    )


def test_allowlist_names_a_lookup_the_proxy_never_saw() -> None:
    stderr = "getaddrinfo EAI_AGAIN registry.npmjs.org\n"
    assert network_cause(Network.ALLOWLIST, stderr) == network_allowlist_cause("a name lookup")
    # Another destination's decision does not explain this one's lookup.
    others = (_connection("pypi.org", True),)
    assert network_cause(Network.ALLOWLIST, stderr, others) == network_allowlist_cause(
        "a name lookup"
    )


def test_allowlist_leaves_a_destination_the_proxy_decided_to_its_own_words() -> None:
    stderr = "curl: (6) Could not resolve host: Example.COM\n"
    # Refused by the proxy: its marker says so. Allowed: it failed on its own.
    for allowed in (False, True):
        assert (
            network_cause(Network.ALLOWLIST, stderr, (_connection("example.com", allowed),)) is None
        )


def test_allowlist_without_a_name_only_when_the_proxy_decided_nothing() -> None:
    stderr = "OSError: [Errno 101] Network is unreachable\n"
    assert network_cause(Network.ALLOWLIST, stderr) == network_allowlist_cause("a connection")
    assert network_cause(Network.ALLOWLIST, stderr, (_connection("pypi.org", True),)) is None


def test_the_names_a_lookup_says() -> None:
    failed = network_failures(
        "curl: (6) Could not resolve host: example.invalid\n"
        "Error: getaddrinfo ENOTFOUND registry.npmjs.org\n"
        "urllib3.exceptions.NameResolutionError: Failed to resolve 'pypi.org' ([Errno -3])\n"
    )
    assert failed.hosts == ("example.invalid", "registry.npmjs.org", "pypi.org")
    assert failed.lookups and not failed.connections


# --- toolchain directories ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "directory", "tool", "variable"),
    [
        ("/root/.npm/_cacache/tmp/x", "/root/.npm", "npm", "npm_config_cache"),
        ("/home/a/.cache/pip/http/t", "/home/a/.cache/pip", "pip", "PIP_CACHE_DIR"),
        ("/home/a/.cache/pip", "/home/a/.cache/pip", "pip", "PIP_CACHE_DIR"),
        ("/home/a/.cargo/registry/index", "/home/a/.cargo", "cargo", "CARGO_HOME"),
        ("/home/a/go/pkg/mod/cache/download", "/home/a/go/pkg/mod", "go", "GOMODCACHE"),
        ("/home/a/.cache/go-build/00", "/home/a/.cache/go-build", "go", "GOCACHE"),
        ("/home/a/.m2/repository/x.jar", "/home/a/.m2", "maven", "MAVEN_OPTS"),
        ("/home/a/.gradle/caches", "/home/a/.gradle", "gradle", "GRADLE_USER_HOME"),
        ("/home/a/.cache/other/f", "/home/a/.cache", "the XDG cache", "XDG_CACHE_HOME"),
    ],
)
def test_tool_directory(path: str, directory: str, tool: str, variable: str) -> None:
    found = tool_directory(path)
    assert found is not None
    assert (found.directory, found.tool, found.variable) == (directory, tool, variable)


@pytest.mark.parametrize("path", ["/work/src/main.c", ".npm/x", "/home/a/go/src/x", "/npm/x"])
def test_not_a_tool_directory(path: str) -> None:
    assert tool_directory(path) is None


def test_every_variable_is_one_the_tool_caches_set() -> None:
    cached = {name for pairs in TOOL_VARIABLES.values() for name, _ in pairs} | {"MAVEN_OPTS"}
    assert {variable for _, _, variable in TOOL_DIRECTORIES} <= cached


def test_node_wording_reads_as_the_signature() -> None:
    rofs = "npm error rofs EROFS: read-only file system, mkdtemp '/root/.npm/_cacache/tmp/a'"
    acces = "npm error code EACCES: permission denied, rename '/h/.npm/a' -> '/h/.npm/b'"
    assert mentions(("Read-only file system",), rofs)
    assert not mentions(("Permission denied",), rofs)  # Landlock never prints EROFS
    (found,) = refusals(("Read-only file system",), rofs + "\n")
    assert found.paths == ("/root/.npm/_cacache/tmp/a",) and found.effect is Effect.WRITE
    (found,) = refusals(("Permission denied",), acces + "\n")
    assert found.paths == ("/h/.npm/a", "/h/.npm/b") and found.effect is Effect.ENTRY
    assert refusals(("Read-only file system",), "npm error path /root/.npm/x\n") == ()


NPM = "npm error rofs EROFS: read-only file system, mkdtemp '/root/.npm/_cacache/tmp/a'\n"
NPM_LINE = tool_directory_cause("/root/.npm", "npm", "npm_config_cache", read_only=False)


def test_tool_directory_causes() -> None:
    writable = ("/work", "/root/.cache/stockade/tools")
    assert tool_directory_causes(WW, NPM, "", writable) == (NPM_LINE,)
    touch = "touch: cannot touch '/root/.cache/pip/t': Permission denied\n"
    assert tool_directory_causes(WW, touch, "", writable) == (
        tool_directory_cause("/root/.cache/pip", "pip", "PIP_CACHE_DIR", read_only=False),
    )
    # Inside a writable directory (the tool caches' own): nothing to explain.
    inside = "touch: cannot touch '/root/.cache/stockade/tools/pip/t': Permission denied\n"
    assert tool_directory_causes(WW, inside, "", writable) == ()
    assert (
        tool_directory_causes(WW, "touch: cannot touch '/etc/x': Permission denied\n", "", writable)
        == ()
    )
    read_only = tool_directory_causes(SandboxMode.READ_ONLY, NPM, "", ())
    assert read_only == (
        tool_directory_cause("/root/.npm", "npm", "npm_config_cache", read_only=True),
    )


def test_tool_directory_text() -> None:
    assert NPM_LINE.startswith(
        "[sandbox: a write under /root/.npm (npm's directory) was refused: it is outside "
        "this command's writable directories."
    )
    assert "$npm_config_cache" in NPM_LINE and "writable root" in NPM_LINE
    assert "\n" not in NPM_LINE and NPM_LINE.endswith("]")


def _result(**fields: object) -> ShellResult:
    base: dict[str, object] = dict(
        exit_code=1,
        stdout="",
        stderr="",
        denied=False,
        runner_failed=False,
        timed_out=False,
        cancelled=False,
        mode=WW,
        backend="bwrap",
        enforcement=Enforcement.FULL,
        duration=0.1,
        network=Network.OFF,
        writable=("/work",),
    )
    base.update(fields)
    return ShellResult(**base)  # type: ignore[arg-type]


def test_render_keeps_the_marker_and_adds_the_line() -> None:
    text = render_result(_result(stderr=NPM, denied=True))
    assert text.endswith(f"{denial_marker(WW)}\n{DENIAL_INSTRUCTION}\n{NPM_LINE}")
    # Not judged denied (the host refused it, say): no line about the sandbox.
    assert NPM_LINE not in render_result(_result(stderr=NPM))


def test_render_names_network_off_only_when_it_was_off() -> None:
    stderr = "curl: (6) Could not resolve host: example.invalid\n"
    assert render_result(_result(stderr=stderr)).endswith(f"[exit code: 1]\n{OFF_LOOKUP}")
    assert OFF_LOOKUP not in render_result(_result(stderr=stderr, network=Network.ON))
    unconfined = _result(
        stderr=stderr, mode=SandboxMode.DANGER_FULL_ACCESS, backend="none", enforcement=None
    )
    assert "[sandbox:" not in render_result(unconfined)


def test_stdout_is_data() -> None:
    # A log the command printed that quotes a DNS error says nothing about this call.
    quoted = "curl: (6) Could not resolve host: example.invalid\n"
    assert "[sandbox:" not in render_result(_result(stdout=quoted, exit_code=0))


def test_npm_block_reads_as_the_signature() -> None:
    block = (
        "npm error code EACCES\nnpm error syscall open\n"
        "npm error path /h/.npm/_cacache/tmp/abc\nnpm error errno -13\n"
    )
    assert mentions(("Permission denied",), block)
    (found,) = refusals(("Permission denied",), block)
    assert found.paths == ("/h/.npm/_cacache/tmp/abc",) and found.effect is Effect.WRITE
    assert refusals(("Read-only file system",), block) == ()

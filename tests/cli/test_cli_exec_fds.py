"""`stockade exec` hands the command no descriptor of the caller's above 2 (issue 21,
door 4): neither bwrap nor the Landlock launcher closes what it inherits, so a file
opened outside the root, or a connected socket, would reach the command past every
rule. Only a descriptor named with `--pass-fd N` goes with it, and stderr says so.

Judged by the host's state: the file outside stays empty, the loopback server this
test runs receives nothing. The controls (danger-full-access, a plain exec; and
`--pass-fd`) show each attack is real.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.cli import fastpath
from stockade.cli.parser import build_parser

from ..support import REAL_BACKENDS, require_backend
from ..trust._support import STOCKADE

pytestmark = pytest.mark.kernel
MODES = ("read-only", "workspace-write")


@pytest.fixture(params=REAL_BACKENDS)
def backend(request) -> str:
    require_backend(request.param)
    return request.param


@pytest.fixture
def tree() -> Iterator[tuple[Path, Path]]:
    """(root, outside): both under /var/tmp, outside every host temp root."""
    base = Path(tempfile.mkdtemp(prefix="stockade-exec-fds-", dir="/var/tmp"))
    (base / "root").mkdir()
    (base / "outside").mkdir()
    yield base / "root", base / "outside"
    shutil.rmtree(base)


def stockade_exec(*words: str, fds: tuple[int, ...], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*STOCKADE, "exec", *words],
        capture_output=True,
        text=True,
        timeout=30,
        close_fds=True,
        pass_fds=fds,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )


def confined(backend: str, mode: str, root: Path, *extra: str) -> list[str]:
    return ["--backend", backend, "--mode", mode, "--network", "off", "--root", str(root), *extra]


@pytest.fixture
def log(tree) -> Iterator[tuple[Path, int]]:
    """A file outside the root, opened for appending: (its path, the descriptor)."""
    _, outside = tree
    path = outside / "log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    yield path, fd
    os.close(fd)


@pytest.mark.parametrize("mode", MODES)
def test_an_inherited_file_does_not_reach_the_command(backend, mode, tree, log):
    root, _ = tree
    path, fd = log
    done = stockade_exec(
        *confined(backend, mode, root), "--", "bash", "-c", f"echo leaked >&{fd}", fds=(fd,)
    )
    assert done.returncode != 0, done
    assert "Bad file descriptor" in done.stderr, done.stderr
    assert path.read_text() == ""


def test_control_unconfined_the_file_is_written(tree, log):
    root, _ = tree
    path, fd = log
    done = stockade_exec(
        "--mode", "danger-full-access", "--root", str(root), "--", "bash", "-c",
        f"echo leaked >&{fd}", fds=(fd,),
    )  # fmt: skip
    assert done.returncode == 0, done
    assert path.read_text() == "leaked\n"


@pytest.mark.parametrize("mode", MODES)
def test_pass_fd_passes_it_and_says_so(backend, mode, tree, log):
    root, _ = tree
    path, fd = log
    done = stockade_exec(
        *confined(backend, mode, root, "--pass-fd", str(fd)),
        "--", "bash", "-c", f"echo passed >&{fd}", fds=(fd,),
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, ""), done
    assert done.stderr == (
        f"stockade: --pass-fd {fd}: the command may use this descriptor whatever the "
        "sandbox allows\n"
    )
    assert path.read_text() == "passed\n"


@pytest.fixture
def connected() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(the server's end, the client's end) of a loopback TCP connection."""
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    accepted, _ = server.accept()
    server.close()
    yield accepted, client
    accepted.close()
    client.close()


def received(accepted: socket.socket, client: socket.socket) -> bytes:
    """All the server got once the client end is closed here too."""
    client.close()
    accepted.settimeout(10)
    data = b""
    while chunk := accepted.recv(4096):
        data += chunk
    return data


@pytest.mark.parametrize("mode", MODES)
def test_an_inherited_socket_does_not_reach_the_host_with_network_off(
    backend, mode, tree, connected
):
    root, _ = tree
    accepted, client = connected
    fd = client.fileno()
    done = stockade_exec(
        *confined(backend, mode, root), "--", "bash", "-c", f"echo leaked >&{fd}", fds=(fd,)
    )
    assert done.returncode != 0, done
    assert received(accepted, client) == b""


def test_control_a_passed_socket_reaches_the_host(backend, tree, connected):
    root, _ = tree
    accepted, client = connected
    fd = client.fileno()
    done = stockade_exec(
        *confined(backend, "read-only", root, "--pass-fd", str(fd)),
        "--", "bash", "-c", f"echo passed >&{fd}", fds=(fd,),
    )  # fmt: skip
    assert done.returncode == 0, done
    assert received(accepted, client) == b"passed\n"


def test_the_command_holds_only_the_standard_three(backend, tree, log):
    """Whatever the caller (or stockade, or the runner) held: 0, 1, 2 and nothing else
    (3 is `ls`'s own directory)."""
    root, _ = tree
    _, fd = log
    for mode in MODES:
        done = stockade_exec(*confined(backend, mode, root), "--", "ls", "/proc/self/fd", fds=(fd,))
        assert done.stdout.split() == ["0", "1", "2", "3"], done


def test_several_descriptors_are_named_on_one_line(backend, tree, log, connected):
    root, _ = tree
    path, fd = log
    accepted, client = connected
    sock = client.fileno()
    done = stockade_exec(
        *confined(backend, "read-only", root, "--pass-fd", str(fd), "--pass-fd", str(sock)),
        "--", "bash", "-c", f"echo a >&{fd}; echo b >&{sock}", fds=(fd, sock),
    )  # fmt: skip
    assert done.returncode == 0, done
    assert done.stderr.splitlines() == [
        f"stockade: --pass-fd {fd} {sock}: the command may use these descriptors whatever "
        "the sandbox allows"
    ]
    assert path.read_text() == "a\n" and received(accepted, client) == b"b\n"


def test_a_descriptor_that_is_not_open_is_a_usage_error(tree):
    root, _ = tree
    done = stockade_exec("--root", str(root), "--pass-fd", "987", "--", "true", fds=())
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "stockade: --pass-fd 987: no such open descriptor\n"


@pytest.mark.parametrize("word", ["0", "2", "x", "-1", "\uff13"])
def test_a_bad_number_is_refused_by_the_parser(tree, word):
    root, _ = tree
    done = stockade_exec("--root", str(root), f"--pass-fd={word}", "--", "true", fds=())
    assert done.returncode == 2
    assert "argument --pass-fd" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "words",
    [
        ["exec", "--pass-fd", "7", "--", "true"],
        ["exec", "--pass-fd=7", "--pass-fd", "12", "--mode", "read-only", "cmd"],
    ],
    ids=" ".join,
)
def test_the_fast_path_reads_pass_fd_as_the_parser_does(words):
    fast = fastpath.fast_args(words)
    assert fast is not None
    assert vars(fast) == vars(build_parser().parse_args(words))


@pytest.mark.parametrize("word", ["2", "x", "-1", "\u0663"])
def test_the_fast_path_leaves_a_bad_number_to_the_parser(word):
    assert fastpath.fast_args(["exec", "--pass-fd", word, "true"]) is None

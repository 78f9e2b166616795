"""read_file: caps and truncation notes, binary detection, line ranges, special files."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from stockade.tools.fs import DEFAULT_READ_CAP, FsResult, read_file
from stockade.vocab import ExecutionPolicy, SandboxMode


@pytest.fixture
def ro(ws: str) -> ExecutionPolicy:
    return ExecutionPolicy(mode=SandboxMode.READ_ONLY, workspace_root=ws)


def put(ws: str, name: str, data: bytes) -> str:
    path = os.path.join(ws, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def test_whole_file(ro: ExecutionPolicy, ws: str) -> None:
    put(ws, "a.txt", "héllo\nworld\n".encode())
    result = read_file(ro, ws, "a.txt")
    assert result.text == "héllo\nworld\n"
    assert (result.first_line, result.last_line, result.size) == (1, 2, 13)
    assert not result.truncated and not result.binary and not result.is_error


def test_default_cap_is_256_kib(ro: ExecutionPolicy, ws: str) -> None:
    assert DEFAULT_READ_CAP == 262144
    put(ws, "big.txt", b"x" * 99 + b"\n" * 1 + (b"y" * 99 + b"\n") * 5000)
    result = read_file(ro, ws, "big.txt")
    assert result.truncated
    shown = result.text.split("\n[truncated")[0] + "\n"
    assert len(shown.encode()) <= DEFAULT_READ_CAP
    assert "of a 500100-byte file" in result.text


def test_cap_cuts_at_a_line_end_and_says_where_to_continue(ro: ExecutionPolicy, ws: str) -> None:
    put(ws, "a.txt", b"".join(b"line %02d\n" % n for n in range(1, 21)))  # 8 bytes a line
    result = read_file(ro, ws, "a.txt", read_cap=30)
    assert result.truncated and result.last_line == 3
    assert result.text == (
        "line 01\nline 02\nline 03\n"
        "[truncated: showed lines 1-3 (24 bytes) of a 160-byte file; read on with start_line=4]"
    )
    more = read_file(ro, ws, "a.txt", start_line=4, read_cap=30)
    assert more.text.startswith("line 04\n") and more.first_line == 4


def test_one_line_longer_than_the_cap(ro: ExecutionPolicy, ws: str) -> None:
    put(ws, "long.txt", ("é" * 100).encode())  # 200 bytes, cut mid-character at 51
    result = read_file(ro, ws, "long.txt", read_cap=51)
    assert result.truncated and not result.binary
    assert result.text.startswith("é" * 25 + "\n[truncated: line 1 is longer than 51 bytes")
    assert "200-byte file" in result.text


def test_a_file_exactly_at_the_cap_is_whole(ro: ExecutionPolicy, ws: str) -> None:
    put(ws, "a.txt", b"12345\n")
    result = read_file(ro, ws, "a.txt", read_cap=6)
    assert result.text == "12345\n" and not result.truncated


@pytest.mark.parametrize(
    "data", [b"abc\0def", b"\x89PNG\r\n\x1a\n\0\0\0", b"ok\n" * 100 + b"\xff\xfe broken"]
)
def test_binary_is_reported_with_its_size_not_dumped(
    ro: ExecutionPolicy, ws: str, data: bytes
) -> None:
    put(ws, "bin", data)
    result = read_file(ro, ws, "bin")
    assert result.binary and not result.is_error
    assert result.size == len(data)
    assert f"binary file ({len(data)} bytes)" in result.text
    assert "ok\nok" not in result.text and "abc" not in result.text


def test_nul_after_the_first_8_kib_is_judged_by_decoding(ro: ExecutionPolicy, ws: str) -> None:
    put(ws, "late", b"a" * 9000 + b"\0tail\n")
    result = read_file(ro, ws, "late")
    assert not result.binary  # NUL is valid UTF-8; only the first 8 KiB are probed for it


def test_empty_file(ro: ExecutionPolicy, ws: str) -> None:
    put(ws, "empty", b"")
    result = read_file(ro, ws, "empty", start_line=3)
    assert result.text == "[empty file: 0 bytes]" and not result.is_error


@pytest.mark.parametrize(
    ("start", "end", "text"),
    [
        (2, 3, "two\nthree\n"),
        (4, 4, "four"),
        (None, 1, "one\n"),
        (3, None, "three\nfour"),
        (3, 99, "three\nfour\n[end_line 99 is past the end: the file ends at line 4]"),
    ],
)
def test_line_ranges_are_one_based_inclusive(
    ro: ExecutionPolicy, ws: str, start: int | None, end: int | None, text: str
) -> None:
    put(ws, "a.txt", b"one\ntwo\nthree\nfour")
    result = read_file(ro, ws, "a.txt", start, end)
    assert result.text == text and not result.is_error


@pytest.mark.parametrize(("content", "lines"), [(b"a\nb\n", 2), (b"a\nb", 2), (b"a\n", 1)])
def test_start_past_the_end(ro: ExecutionPolicy, ws: str, content: bytes, lines: int) -> None:
    put(ws, "a.txt", content)
    result = read_file(ro, ws, "a.txt", start_line=5)
    assert result.is_error and not result.denied
    noun = "line" if lines == 1 else "lines"
    assert result.text.endswith(f"start_line 5 is past the end: {ws}/a.txt has {lines} {noun}.")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"start_line": 0}, "start_line must be a positive integer"),
        ({"end_line": -1}, "end_line must be a positive integer"),
        ({"start_line": "2"}, "start_line must be a positive integer"),
        ({"start_line": True}, "start_line must be a positive integer"),
        ({"start_line": 5, "end_line": 2}, "end_line 2 is before start_line 5"),
        ({"read_cap": 0}, "read_cap must be a positive integer"),
    ],
)
def test_bad_arguments_are_clear_errors(
    ro: ExecutionPolicy, ws: str, args: dict, message: str
) -> None:
    put(ws, "a.txt", b"x\n")
    result = read_file(ro, ws, "a.txt", **args)
    assert result.is_error and message in result.text


@pytest.mark.parametrize("path", ["", "a\0b", 42])
def test_bad_paths(ro: ExecutionPolicy, ws: str, path: object) -> None:
    result = read_file(ro, ws, path)  # type: ignore[arg-type]
    assert result.is_error and not result.denied


def test_missing_file(ro: ExecutionPolicy, ws: str) -> None:
    result = read_file(ro, ws, "nope.txt")
    assert result.os_error == "ENOENT" and not result.denied
    assert f"{ws}/nope.txt does not exist" in result.text


def test_a_directory_lists_nothing(ro: ExecutionPolicy, ws: str) -> None:
    os.mkdir(os.path.join(ws, "d"))
    put(ws, "d/secret-name", b"")
    result = read_file(ro, ws, "d")
    assert result.is_error and "is a directory" in result.text
    assert "secret-name" not in result.text


def _finishes(call) -> FsResult:
    box: list[FsResult] = []
    worker = threading.Thread(target=lambda: box.append(call()), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "read_file blocked"
    return box[0]


def test_a_fifo_is_refused_without_blocking(ro: ExecutionPolicy, ws: str) -> None:
    os.mkfifo(os.path.join(ws, "pipe"))
    result = _finishes(lambda: read_file(ro, ws, "pipe"))
    assert result.is_error and not result.denied and "fifo" in result.text


def test_a_socket_is_refused(ro: ExecutionPolicy, ws: str) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(os.path.join(ws, "sock"))
        result = _finishes(lambda: read_file(ro, ws, "sock"))
    assert result.is_error and not result.denied and "not a regular file" in result.text


def test_a_device_is_refused(ro: ExecutionPolicy, ws: str) -> None:
    result = _finishes(lambda: read_file(ro, ws, "/dev/zero"))
    assert result.is_error and "character device" in result.text


def test_reads_follow_symlinks_anywhere(ro: ExecutionPolicy, ws: str, outside: str) -> None:
    put(outside, "o.txt", b"outside\n")
    os.symlink(os.path.join(outside, "o.txt"), os.path.join(ws, "link"))
    assert read_file(ro, ws, "link").text == "outside\n"


def test_a_proc_file_with_size_zero_is_read(ro: ExecutionPolicy, ws: str) -> None:
    result = read_file(ro, ws, "/proc/self/status")
    assert not result.is_error and "Name:" in result.text


def test_a_proc_file_past_the_cap_says_its_size_is_unreported(ro: ExecutionPolicy, ws: str) -> None:
    result = read_file(ro, ws, "/proc/self/status", read_cap=40)
    assert result.truncated and "a file of unreported size" in result.text

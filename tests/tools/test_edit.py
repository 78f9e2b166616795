"""edit_file: exactly-once matching, replace_all, and its input errors; nothing written on error."""

from __future__ import annotations

import os

import pytest

from stockade.tools.fs import edit_file
from stockade.vocab import ExecutionPolicy, SandboxMode


@pytest.fixture
def target(ws: str) -> str:
    path = os.path.join(ws, "f.py")
    with open(path, "w") as handle:
        handle.write("x = 1\ny = 1\nz = 2\n")
    return path


def _content(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def test_one_match_is_replaced(ww: ExecutionPolicy, ws: str, target: str) -> None:
    result = edit_file(ww, ws, "f.py", "z = 2", "z = 3", temp_roots=())
    assert not result.is_error and result.replacements == 1
    assert result.text == f"Replaced 1 occurrence in {target} (now 18 bytes)."
    assert _content(target) == "x = 1\ny = 1\nz = 3\n"


def test_zero_matches(ww: ExecutionPolicy, ws: str, target: str) -> None:
    result = edit_file(ww, ws, "f.py", "w = 9", "w = 0", temp_roots=())
    assert result.is_error and not result.denied and result.replacements == 0
    assert "0 matches" in result.text and "exact text" in result.text
    assert _content(target) == "x = 1\ny = 1\nz = 2\n"


def test_several_matches_need_context_or_replace_all(
    ww: ExecutionPolicy, ws: str, target: str
) -> None:
    result = edit_file(ww, ws, "f.py", "= 1", "= 5", temp_roots=())
    assert result.is_error and "occurs 2 times" in result.text and "replace_all" in result.text
    assert _content(target) == "x = 1\ny = 1\nz = 2\n"
    result = edit_file(ww, ws, "f.py", "= 1", "= 5", replace_all=True, temp_roots=())
    assert result.replacements == 2 and "Replaced 2 occurrences" in result.text
    assert _content(target) == "x = 5\ny = 5\nz = 2\n"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("", "x", "old is empty"),
        ("x", "x", "identical"),
        (None, "x", "must be strings"),
        ("x", b"y", "must be strings"),
        ("x", "\ud800", "not encodable"),
    ],
)
def test_input_errors(
    ww: ExecutionPolicy, ws: str, target: str, old: object, new: object, message: str
) -> None:
    result = edit_file(ww, ws, "f.py", old, new, temp_roots=())  # type: ignore[arg-type]
    assert result.is_error and not result.denied and message in result.text
    assert _content(target) == "x = 1\ny = 1\nz = 2\n"


def test_replace_all_must_be_a_bool(ww: ExecutionPolicy, ws: str, target: str) -> None:
    result = edit_file(ww, ws, "f.py", "= 1", "= 5", "yes", temp_roots=())  # type: ignore[arg-type]
    assert result.is_error and "replace_all must be true or false" in result.text
    assert _content(target) == "x = 1\ny = 1\nz = 2\n"


def test_missing_file(ww: ExecutionPolicy, ws: str) -> None:
    result = edit_file(ww, ws, "nope.py", "a", "b", temp_roots=())
    assert result.is_error and not result.denied and "write_file" in result.text
    assert os.listdir(ws) == []


def test_binary_file(ww: ExecutionPolicy, ws: str) -> None:
    path = os.path.join(ws, "b.bin")
    with open(path, "wb") as handle:
        handle.write(b"\xff\xfe a")
    result = edit_file(ww, ws, "b.bin", "a", "b", temp_roots=())
    assert result.is_error and result.binary and "not UTF-8" in result.text


def test_trailing_slash_names_no_file(ww: ExecutionPolicy, ws: str, target: str) -> None:
    result = edit_file(ww, ws, "f.py/", "x", "y", temp_roots=())
    assert result.is_error and "ends with '/'" in result.text


def test_crlf_and_unicode_survive(ww: ExecutionPolicy, ws: str) -> None:
    path = os.path.join(ws, "w.txt")
    with open(path, "wb") as handle:
        handle.write("é\r\nü\r\n".encode())
    assert not edit_file(ww, ws, "w.txt", "ü", "ñ", temp_roots=()).is_error
    with open(path, "rb") as handle:
        assert handle.read() == "é\r\nñ\r\n".encode()


def test_danger_full_access_edits_hard_linked_files(ws: str, outside: str) -> None:
    """Unfenced, a hard-linked file is replaced (its other names keep the old text)."""
    other = os.path.join(outside, "o.txt")
    with open(other, "w") as handle:
        handle.write("old\n")
    os.link(other, os.path.join(ws, "h.txt"))
    policy = ExecutionPolicy(mode=SandboxMode.DANGER_FULL_ACCESS, workspace_root=ws)
    assert not edit_file(policy, ws, "h.txt", "old", "new", temp_roots=()).is_error
    assert _content(os.path.join(ws, "h.txt")) == "new\n"
    assert _content(other) == "old\n"

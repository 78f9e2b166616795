"""The mode matrix: each tool x each mode x workspace / temp root / outside, judged on disk."""

from __future__ import annotations

import os

import pytest

from stockade.tools.fs import FsResult, edit_file, read_file, write_file
from stockade.vocab import DENIAL_INSTRUCTION, ExecutionPolicy, SandboxMode, denial_marker

from .conftest import TEMP_ROOTS

MODES = list(SandboxMode)
PLACES = ("workspace", "temp-root", "outside")
WRITABLE = {
    SandboxMode.READ_ONLY: set(),
    SandboxMode.WORKSPACE_WRITE: {"workspace", "temp-root"},
    SandboxMode.DANGER_FULL_ACCESS: set(PLACES),
}


@pytest.fixture
def place_dir(request: pytest.FixtureRequest, ws: str, temp_root: str, outside: str) -> str:
    return {"workspace": ws, "temp-root": temp_root, "outside": outside}[request.param]


def _file(directory: str) -> str:
    path = os.path.join(directory, "file.txt")
    with open(path, "w") as handle:
        handle.write("one\nold\nthree\n")
    return path


def _content(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _check_refusal(result: FsResult, mode: SandboxMode) -> None:
    assert result.denied and result.is_error
    assert result.text.endswith(f"{denial_marker(mode)}\n{DENIAL_INSTRUCTION}")


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
@pytest.mark.parametrize("place_dir", PLACES, indirect=True)
def test_read_is_allowed_everywhere(mode: SandboxMode, place_dir: str, ws: str) -> None:
    path = _file(place_dir)
    result = read_file(ExecutionPolicy(mode=mode, workspace_root=ws), ws, path)
    assert not result.is_error and not result.denied
    assert result.text == "one\nold\nthree\n"
    assert result.mode is mode


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
@pytest.mark.parametrize("place_dir", PLACES, indirect=True)
@pytest.mark.parametrize("existing", [True, False], ids=["replace", "create"])
def test_write(mode: SandboxMode, place_dir: str, existing: bool, ws: str, request) -> None:
    place = request.node.callspec.params["place_dir"]
    path = _file(place_dir) if existing else os.path.join(place_dir, "file.txt")
    result = write_file(
        ExecutionPolicy(mode=mode, workspace_root=ws), ws, path, "new\n", temp_roots=TEMP_ROOTS
    )
    if place in WRITABLE[mode]:
        assert not result.is_error, result.text
        assert _content(path) == "new\n"
        assert result.bytes_written == 4 and result.created is (not existing)
    else:
        _check_refusal(result, mode)
        if existing:
            assert _content(path) == "one\nold\nthree\n"
        else:
            assert not os.path.exists(path)
    assert os.listdir(place_dir) in ([], ["file.txt"])


@pytest.mark.parametrize("mode", MODES, ids=lambda mode: mode.value)
@pytest.mark.parametrize("place_dir", PLACES, indirect=True)
def test_edit(mode: SandboxMode, place_dir: str, ws: str, request) -> None:
    place = request.node.callspec.params["place_dir"]
    path = _file(place_dir)
    result = edit_file(
        ExecutionPolicy(mode=mode, workspace_root=ws), ws, path, "old", "two", temp_roots=TEMP_ROOTS
    )
    if place in WRITABLE[mode]:
        assert not result.is_error, result.text
        assert _content(path) == "one\ntwo\nthree\n"
        assert result.replacements == 1
    else:
        _check_refusal(result, mode)
        assert _content(path) == "one\nold\nthree\n"
    assert os.listdir(place_dir) == ["file.txt"]


def test_read_only_refuses_before_looking(ws: str) -> None:
    """read-only refuses even a path that does not exist: the effect is refused, not looked up."""
    policy = ExecutionPolicy(mode=SandboxMode.READ_ONLY, workspace_root=ws)
    result = write_file(policy, ws, "missing/dir/file.txt", "x", temp_roots=TEMP_ROOTS)
    _check_refusal(result, SandboxMode.READ_ONLY)
    assert "read-only mode allows no file writes" in result.text


def test_default_temp_roots_are_the_policys(ws: str, temp_root: str, outside: str) -> None:
    """The fence writes where the policy's temp roots are (a session's private temp
    directory), never the host's /tmp on its own."""
    policy = ExecutionPolicy(
        mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws, temp_dir=temp_root
    )
    assert not write_file(policy, ws, f"{temp_root}/a.txt", "a").is_error
    _check_refusal(write_file(policy, ws, f"{outside}/a.txt", "a"), SandboxMode.WORKSPACE_WRITE)
    assert os.listdir(outside) == []
    bare = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    _check_refusal(write_file(bare, ws, f"{temp_root}/b.txt", "b"), SandboxMode.WORKSPACE_WRITE)
    assert not os.path.exists(f"{temp_root}/b.txt")


def test_relative_paths_resolve_against_the_session_cwd(ws: str, outside: str) -> None:
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    os.mkdir(os.path.join(ws, "sub"))
    result = write_file(policy, f"{ws}/sub", "a.txt", "a", temp_roots=TEMP_ROOTS)
    assert result.path == f"{ws}/sub/a.txt"
    assert _content(f"{ws}/sub/a.txt") == "a"
    # the same relative path from a cwd outside the root is outside
    _check_refusal(
        write_file(policy, outside, "a.txt", "a", temp_roots=TEMP_ROOTS),
        SandboxMode.WORKSPACE_WRITE,
    )
    assert os.listdir(outside) == []


def test_a_workspace_root_spelled_through_a_symlink(ws: str, outside: str) -> None:
    """The root as configured may be a symlink; paths spelled either way are inside."""
    alias = os.path.join(outside, "alias")
    os.symlink(ws, alias)
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=alias)
    assert not write_file(policy, alias, "a.txt", "a", temp_roots=()).is_error
    assert not write_file(policy, alias, f"{ws}/b.txt", "b", temp_roots=()).is_error
    assert sorted(os.listdir(ws)) == ["a.txt", "b.txt"]
    assert os.listdir(outside) == ["alias"]


def test_dotdot_from_a_nested_root_into_the_enclosing_root(temp_root: str) -> None:
    """A workspace beneath /tmp: `..` out of the workspace but still inside /tmp is fine."""
    ws = os.path.join(temp_root, "ws")
    os.mkdir(ws)
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    result = write_file(policy, ws, "../beside.txt", "x", temp_roots=TEMP_ROOTS)
    assert not result.is_error, result.text
    assert _content(os.path.join(temp_root, "beside.txt")) == "x"


def test_facts_for_the_session_log(ws: str) -> None:
    policy = ExecutionPolicy(mode=SandboxMode.WORKSPACE_WRITE, workspace_root=ws)
    facts = write_file(policy, ws, "a.txt", "abc", temp_roots=()).facts()
    assert facts == {
        "mode": "workspace-write",
        "path": f"{ws}/a.txt",
        "is_error": False,
        "denied": False,
        "read_denied": False,
        "size": 3,
        "bytes_written": 3,
        "created": True,
        "truncated": False,
        "binary": False,
    }

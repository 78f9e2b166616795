"""The HTTP bearer tokens' own rules (`stockade.faces.credentials`): what a token file may
hold, the constant-time match, and how the generated token is written and removed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from stockade.faces import credentials as _token
from stockade.faces.credentials import TokenProblem, Tokens, parse_tokens

A, B = "a" * 32, "B-_.~!" * 6


def test_a_file_holds_one_token_a_line_comments_and_blanks_skipped():
    text = f"# for the editor\n{A}\n\n   {B}  \n{A}\n"
    assert parse_tokens(text, "f") == (A, B)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "holds no token"),
        ("# only a comment\n\n", "holds no token"),
        ("a" * 31, "f:1: a token is at least 32"),
        (f"{A}\nshort\n", "f:2: a token is at least 32"),
        ("a" * 20 + " " + "a" * 20, "no spaces"),
        ("a" * 40 + "\u00e9", "visible ASCII"),
    ],
)
def test_a_file_without_a_usable_token_is_refused(text, why):
    with pytest.raises(TokenProblem, match=why):
        parse_tokens(text, "f")


def test_match_names_the_token_and_nothing_else():
    tokens = Tokens([A, B])
    assert tokens.match(A) == 0 and tokens.match(B) == 1
    for other in ("", A[:-1], A + "a", A.upper(), f"Bearer {A}", "\udcff"):
        assert tokens.match(other) is None


def test_a_new_token_has_256_bits_and_is_new_each_time():
    made = {_token.new_token() for _ in range(100)}
    assert len(made) == 100
    assert all(len(token) == 43 and parse_tokens(token, "t") == (token,) for token in made)


def test_the_token_file_is_0600_whatever_the_umask_and_replaced_whole(tmp_path):
    path = str(tmp_path / "mcp-127.0.0.1-1.token")
    Path(path).write_text("old\n")
    old = os.umask(0)
    try:
        _token.write_token(path, A)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert Path(path).read_text() == f"{A}\n"
    assert os.listdir(tmp_path) == [os.path.basename(path)]


def test_only_the_token_the_server_wrote_is_removed(tmp_path):
    path = str(tmp_path / "t.token")
    _token.write_token(path, B)  # another server took the address since
    _token.remove_token(path, A)
    assert Path(path).exists()
    _token.remove_token(path, B)
    assert not Path(path).exists()
    _token.remove_token(path, B)  # already gone: nothing to do


def test_the_token_directory_must_lie_outside_every_root(scratch):
    root = Path(scratch) / "root"
    with pytest.raises(TokenProblem, match="inside the writable root"):
        _token.prepare_directory(str(root / "state"), [str(root)])
    assert not (root / "state").exists()
    made = Path(scratch) / "state" / "sessions"
    _token.prepare_directory(str(made), [str(root)])
    assert stat.S_IMODE(os.lstat(made).st_mode) == 0o700


def test_the_token_path_names_the_address():
    assert _token.token_path("/s", "127.0.0.1", 8765) == "/s/mcp-127.0.0.1-8765.token"
    assert _token.token_path("/s", "::1", 80) == "/s/mcp-__1-80.token"


def test_each_token_is_its_own_principal_and_never_its_value():
    """A session is bound to the principal that opened it: `token-N`, not the token."""
    tokens = Tokens([A, B])
    assert (tokens.principal(A), tokens.principal(B)) == ("token-1", "token-2")
    assert tokens.principal(A + "x") is None
    assert A not in (tokens.principal(A) or "")

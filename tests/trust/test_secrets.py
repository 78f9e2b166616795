"""deny_read's list and what it names on disk (trust/secrets.py): plain asserts."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from stockade.trust.secrets import (
    DEFAULT_DENY_READ,
    ENV_FILE_BUDGET,
    ENV_FILE_DEPTH,
    DenyRead,
    RootPatterns,
    check_pattern,
    glob_match,
    outermost,
    resolve_patterns,
    root_matches,
    state_directories,
)


def test_the_defaults_name_what_the_issue_lists():
    for item in ("~/.ssh", "~/.aws", "~/.netrc", "/etc/shadow", "state", "composition", ".env"):
        assert item in DEFAULT_DENY_READ


def test_a_bang_removes_a_default_and_others_add():
    patterns = resolve_patterns(("!~/.netrc", "*.pem", "/srv/keys"))
    assert "~/.netrc" not in patterns and "~/.ssh" in patterns
    assert patterns[-2:] == ("*.pem", "/srv/keys")


def test_bad_entries_are_refused_with_a_reason():
    assert check_pattern("!~/.nothing") is not None
    assert check_pattern("~bob/.ssh") is not None
    assert check_pattern("/") is not None
    assert check_pattern("~/a/../b") is not None
    assert check_pattern("/a/*/b") is not None
    assert check_pattern("[ab].pem") is not None
    assert check_pattern("~/.cargo/credentials*") is None
    assert check_pattern("secrets/*.key") is None


def test_glob_match():
    assert glob_match(".env.local", ".env.*")
    assert not glob_match(".envrc", ".env.*")
    assert glob_match("credentials.toml", "credentials*")


def test_state_directories_follow_the_environment():
    assert state_directories({"HOME": "/h"}) == ("/h/.local/state/stockade",)
    assert state_directories(
        {"HOME": "/h", "XDG_STATE_HOME": "/x", "STOCKADE_STATE_DIR": "/s"}
    ) == (
        "/s",
        "/x/stockade",
    )


def test_expand_finds_what_exists_by_real_path(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".cargo").mkdir()
    (home / ".cargo" / "credentials.toml").write_text("x")
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / ".env").write_text("x")
    (root / "a" / "b" / ".env.test").write_text("x")
    (root / "link").symlink_to(home / ".ssh")
    hidden = DenyRead().expand((str(root),), environ={"HOME": str(home)})
    assert set(hidden.paths) == {
        str(home / ".ssh"),
        str(home / ".cargo" / "credentials.toml"),
        str(root / ".env"),
        str(root / "a" / "b" / ".env.test"),
        *(path for path in ("/etc/shadow", "/etc/gshadow") if os.path.exists(path)),
    }
    assert hidden.gaps == ()
    assert hidden.covers(str(home / ".ssh" / "id_rsa"))


def test_a_path_holding_the_root_stays_readable_and_says_so(tmp_path):
    state = tmp_path / "state"
    root = state / "root"
    root.mkdir(parents=True)
    deny = DenyRead(("state",), state=(str(state),))
    hidden = deny.expand((str(root),), keep=(str(root),), environ={"HOME": str(tmp_path)})
    assert hidden.paths == ()
    assert hidden.gaps and "stays readable" in hidden.gaps[0]


def test_the_search_is_bounded_in_depth_and_budget(tmp_path):
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(ENV_FILE_DEPTH + 1)])
    deep.mkdir(parents=True)
    (deep / ".env").write_text("x")
    (deep.parent / ".env").write_text("x")
    found, stopped = root_matches(str(tmp_path), (".env",))
    assert found == [str(deep.parent / ".env")] and not stopped
    for number in range(ENV_FILE_BUDGET + 1):
        os.mkdir(tmp_path / f"w{number}")
    _, stopped = root_matches(str(tmp_path), (".env",))
    assert stopped


def test_denies_judges_a_path_as_the_fs_tools_use_it(tmp_path):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    root = tmp_path / "root"
    root.mkdir()
    deny = DenyRead()
    environ = {"HOME": str(home)}
    roots = (str(root),)
    assert deny.denies(str(home / ".aws" / "credentials"), roots, environ)
    assert deny.denies(str(root / "x" / ".env.prod"), roots, environ)
    assert not deny.denies(str(root / "x" / "main.py"), roots, environ)
    assert deny.denies("/etc/shadow", roots, environ)


def test_outermost():
    assert outermost(["/a/b", "/a", "/c", "/a/b/c"]) == ("/a", "/c")


def test_the_search_memo_sees_a_new_file_and_skips_tools_stores(tmp_path):
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    for store in (".git", "node_modules/pkg", "venv"):
        (root / store).mkdir(parents=True)
        (root / store / ".env").write_text("x")
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    deny = DenyRead((".env",))
    environ = {"HOME": str(tmp_path)}
    assert deny.expand((str(root),), environ=environ).paths == ()
    (root / "a" / "b" / ".env").write_text("x")
    assert deny.expand((str(root),), environ=environ).paths == (str(root / "a" / "b" / ".env"),)
    (root / "a" / "b" / ".env").unlink()
    assert deny.expand((str(root),), environ=environ).paths == ()


def _age(*paths):
    """Make `paths`' ctimes old enough for a search over them to be kept: a search
    only trusts directories that did not change within a clock tick of it."""
    import time

    time.sleep(0.05)
    return paths


def _forge_rename(root, name: str, moved: str) -> None:
    """What a confined command can do between two calls: rename `name` to `moved`, make
    an empty `name`, and set every directory's times back (os.utime)."""
    times = {
        path: (os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns) for path in (root, root / name)
    }
    os.rename(root / name, root / moved)
    os.mkdir(root / name)
    os.utime(root, ns=times[root])
    os.utime(root / moved, ns=times[root / name])
    os.utime(root / name, ns=times[root / name])


def test_a_search_is_reused_only_while_its_directories_are_unchanged(tmp_path, monkeypatch):
    import stockade.trust.secrets as secrets

    root = tmp_path / "root"
    (root / "app").mkdir(parents=True)
    (root / "app" / ".env").write_text("x")
    _age(root)
    searches = []
    real = secrets.root_matches

    def counted(*args, **kwargs):
        searches.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(secrets, "root_matches", counted)
    deny = DenyRead((".env",))
    environ = {"HOME": str(tmp_path)}
    first = deny.expand((str(root),), environ=environ)
    assert first.paths == (str(root / "app" / ".env"),)
    assert deny.expand((str(root),), environ=environ).paths == first.paths
    assert len(searches) == 1, "an unchanged root is not searched again"

    # The forgery restores every mtime (the control: with only mtimes compared, the
    # search above would be reused and app2/.env stay readable).
    before = {p: os.stat(p).st_mtime_ns for p in (root, root / "app")}
    _forge_rename(root, "app", "app2")
    assert os.stat(root).st_mtime_ns == before[root]
    assert os.stat(root / "app2").st_mtime_ns == before[root / "app"]
    assert os.stat(root / "app").st_mtime_ns == before[root / "app"]
    after = deny.expand((str(root),), environ=environ)
    assert after.paths == (str(root / "app2" / ".env"),)
    assert len(searches) == 2


def test_a_search_over_a_directory_changed_just_now_is_not_kept(tmp_path, monkeypatch):
    import stockade.trust.secrets as secrets

    root = tmp_path / "root"
    root.mkdir()
    (root / ".env").write_text("x")  # the root changed a moment ago
    searches = []
    real = secrets.root_matches
    monkeypatch.setattr(
        secrets, "root_matches", lambda *a, **k: searches.append(a[0]) or real(*a, **k)
    )
    deny = DenyRead((".env",))
    deny.expand((str(root),), environ={"HOME": str(tmp_path)})
    deny.expand((str(root),), environ={"HOME": str(tmp_path)})
    assert len(searches) == 2


def test_complement_grants_reach_everything_but_the_hidden_paths(tmp_path):
    """The plain tier's deny_read: every entry beside the way to a hidden path is read,
    each directory on the way listed only, the hidden path nothing; a symlink gets no
    grant of its own; a hidden path inside a writable root is a gap, said per path."""
    from stockade.trust.secrets import complement_grants

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / "notes.txt").write_text("x")
    (home / "project").mkdir()
    (home / "link").symlink_to(home / ".ssh")
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".env").write_text("x")
    hidden = (str(home / ".ssh"), str(root / ".env"))
    reads, lists, gaps = complement_grants(hidden, (str(root),))
    assert str(home / ".ssh") not in reads and str(home / ".ssh") not in lists
    assert {str(home / "notes.txt"), str(home / "project")} <= set(reads)
    assert str(home / "link") not in reads
    assert {"/", str(tmp_path), str(home)} <= set(lists)
    assert not any(path.startswith(str(home / ".ssh")) for path in reads)
    assert gaps == (
        f"deny_read: {root / '.env'} lies inside a writable root, which the plain tier "
        "grants whole",
    )
    assert complement_grants((), ("/w",)) == (("/",), (), ())


def test_a_complement_is_reused_only_while_its_directories_are_unchanged(tmp_path, monkeypatch):
    import stockade.trust.secrets as secrets

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    _age(home)
    import time

    time.sleep(0.05)
    made = []
    real = secrets.complement_grants
    monkeypatch.setattr(secrets, "complement_grants", lambda *a: made.append(a) or real(*a))
    deny = DenyRead(())
    # (Its answer lists /tmp's entries too, which other processes may change.)
    deny.complement((str(home / ".ssh"),), ())
    assert _reused(lambda: deny.complement((str(home / ".ssh"),), ()) is not None, made)
    made.append("kept")
    # A command renames its way around the list: the directory changed, grants again.
    (home / "new").write_text("x")
    again = deny.complement((str(home / ".ssh"),), ())
    assert made[-1] != "kept" and str(home / "new") in again[0]


def _reused(call, calls, tries: int = 20) -> bool:
    """Whether `call` (asserting its answer) was answered once without a resolution.
    Each listed path's ancestors up to / are watched, and another process on this
    machine may create something in /tmp meanwhile: then the next call resolves
    again, and one after a tick (once that change is old enough to trust) does not."""
    import time

    for _ in range(tries):
        calls.clear()
        assert call()
        if not calls:
            return True
        time.sleep(0.06)
    return False


def _resolutions(monkeypatch):
    """Count the real-path resolutions `DenyRead.existing` makes (the work it saves)."""
    import stockade.trust.secrets as secrets

    calls = []
    real = secrets.os.path.realpath

    def counted(path, *args, **kwargs):
        calls.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(secrets.os.path, "realpath", counted)
    return calls


def test_which_listed_paths_exist_is_reused_only_while_their_directories_are_unchanged(
    tmp_path, monkeypatch
):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key")
    _age(home)
    deny = DenyRead(("~/.ssh/id_rsa", "~/.aws/credentials"))
    environ = {"HOME": str(home)}
    first = deny.expand((), environ=environ)
    assert first.paths == (str(home / ".ssh" / "id_rsa"),)
    calls = _resolutions(monkeypatch)
    assert _reused(lambda: deny.expand((), environ=environ).paths == first.paths, calls), (
        "an unchanged disk is not resolved again"
    )

    # Made by the host between two calls (a confined command cannot write here, but
    # the answer must follow the disk): ~/.aws appears, the home's ctime moves.
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("secret")
    assert set(deny.expand((), environ=environ).paths) == {
        str(home / ".ssh" / "id_rsa"),
        str(home / ".aws" / "credentials"),
    }
    assert calls, "a changed directory is resolved again"


def test_a_forged_directory_time_does_not_keep_a_stale_answer(tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key")
    _age(home)
    deny = DenyRead(("~/.ssh/id_rsa",))
    environ = {"HOME": str(home)}
    assert deny.expand((), environ=environ).paths == (str(home / ".ssh" / "id_rsa"),)
    # Swap ~/.ssh for another directory holding no key, and set the times back: the
    # ctime still moves (the control: the mtimes are what they were).
    before = os.stat(home).st_mtime_ns
    _forge_rename(home, ".ssh", ".ssh-old")
    assert os.stat(home).st_mtime_ns == before
    assert deny.expand((), environ=environ).paths == ()


def test_a_listed_path_reached_through_a_link_is_resolved_every_call(tmp_path, monkeypatch):
    home = tmp_path / "home"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "keys").mkdir(parents=True)
    (elsewhere / "keys" / "id_rsa").write_text("key")
    home.mkdir()
    (home / ".ssh").symlink_to(elsewhere / "keys")
    _age(home, elsewhere)
    deny = DenyRead(("~/.ssh/id_rsa",))
    environ = {"HOME": str(home)}
    assert deny.expand((), environ=environ).paths == (str(elsewhere / "keys" / "id_rsa"),)
    calls = _resolutions(monkeypatch)
    deny.expand((), environ=environ)
    assert calls, "through a link, nothing is kept"
    # Retargeted between calls (the link's own directory's ctime would not show a
    # change in the target's tree): the answer follows.
    (elsewhere / "keys" / "id_rsa").unlink()
    assert deny.expand((), environ=environ).paths == ()


def test_a_directory_changed_just_now_keeps_no_existence_answer(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)  # changed a moment ago: not trusted yet
    deny = DenyRead(("~/.ssh",))
    environ = {"HOME": str(home)}
    deny.expand((), environ=environ)
    calls = _resolutions(monkeypatch)
    deny.expand((), environ=environ)
    assert calls


def test_a_home_of_slash_ends_the_ancestor_walk():
    """HOME=/ (as nobody's often is) makes `//.ssh`, whose dirname is `//` itself."""
    deny = DenyRead(("~/.ssh", "~/.aws/credentials"))
    assert deny.expand((), environ={"HOME": "/"}).paths == ()
    assert deny.existing(["//x/y", "/nonexistent/a/b"]) == []


def test_a_glob_is_matched_again_only_when_its_directory_changed(tmp_path, monkeypatch):
    import stockade.trust.secrets as secrets

    home = tmp_path / "home"
    (home / ".cargo").mkdir(parents=True)
    (home / ".cargo" / "credentials.toml").write_text("token")
    _age(home)
    listings = []
    real = secrets._matches
    monkeypatch.setattr(secrets, "_matches", lambda p: listings.append(p) or real(p))
    deny = DenyRead(("~/.cargo/credentials*",))
    environ = {"HOME": str(home)}
    assert deny.literal_paths(environ) == [str(home / ".cargo" / "credentials.toml")]
    assert deny.literal_paths(environ) == [str(home / ".cargo" / "credentials.toml")]
    assert len(listings) == 1, "an unchanged directory is not listed again"
    # A rename with the directory's times set back (what a command could do): its
    # ctime still moves, so the glob is matched again.
    times = os.stat(home / ".cargo")
    os.rename(home / ".cargo" / "credentials.toml", home / ".cargo" / "credentials")
    os.utime(home / ".cargo", ns=(times.st_atime_ns, times.st_mtime_ns))
    assert deny.literal_paths(environ) == [str(home / ".cargo" / "credentials")]
    assert len(listings) == 2


def test_the_expansion_follows_the_environment_it_read(tmp_path):
    deny = DenyRead(("~/.netrc", "state"))
    first = {"HOME": str(tmp_path / "a")}
    second = {"HOME": str(tmp_path / "b"), "STOCKADE_STATE_DIR": str(tmp_path / "state")}
    assert deny.literal_paths(first) == [
        str(tmp_path / "a" / ".netrc"),
        str(tmp_path / "a" / ".local" / "state" / "stockade"),
    ]
    assert deny.literal_paths(second) == [
        str(tmp_path / "b" / ".netrc"),
        str(tmp_path / "state"),
        str(tmp_path / "b" / ".local" / "state" / "stockade"),
    ]
    assert deny.literal_paths(first)[0] == str(tmp_path / "a" / ".netrc")


# Names and patterns over a small alphabet, so that matches are common.
_PIECE = st.text(alphabet=".env/ab*?", min_size=0, max_size=8)


@given(st.lists(_PIECE.filter(bool), max_size=4), _PIECE, _PIECE)
def test_the_sorted_root_patterns_answer_as_each_glob_does(patterns, directory, name):
    """`RootPatterns` (set, literal prefixes) answers exactly as testing each pattern
    with `glob_match`: a bare pattern on the name, one with a slash on the path."""
    relative = f"{directory}/{name}" if directory else name
    expected = any(
        glob_match(relative, pattern) if "/" in pattern else glob_match(name, pattern)
        for pattern in patterns
    )
    assert RootPatterns(patterns).matches(name, directory) == expected

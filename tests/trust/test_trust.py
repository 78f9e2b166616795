"""The trust base from stat facts: check_trusted, protected paths, binds and blockers.

Runs as root on a tmp_path under /tmp (sticky 1777: accepted as a parent). The
writable roots are always passed explicitly, so /tmp itself is never one.
"""

import os
import subprocess
import sys

import pytest

import stockade.trust.protect as trust_module
from stockade.trust import (
    BLOCK,
    PIN,
    PLACEHOLDER_TEXT,
    READ_ONLY,
    ROOT_PROTECTED,
    UNPROTECTABLE,
    Protection,
    Untrusted,
    check_trusted,
    first_missing,
    installation_paths,
    placeholder_text,
    protected_paths,
    protected_set,
    protections,
    relinkable,
    startup_files,
)

NOBODY = 65534


@pytest.fixture
def tree(tmp_path):
    """tmp_path/ws (a writable root) and tmp_path/outside (not a root), both 0755."""
    base = tmp_path.resolve()
    os.chmod(base, 0o755)
    ws = base / "ws"
    outside = base / "outside"
    ws.mkdir(mode=0o755)
    outside.mkdir(mode=0o755)
    return base, ws, outside


def write(path, text="x", mode=0o644):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


# --- check_trusted ----------------------------------------------------------------------


def test_a_private_file_outside_every_root_is_trusted(tree):
    _, ws, outside = tree
    path = write(outside / "stockade.yml")
    assert check_trusted(path, [str(ws)], what="the composition file") is None


def test_a_file_inside_a_root_is_untrusted_and_names_the_root(tree):
    _, ws, _ = tree
    path = write(ws / "stockade.yml")
    found = check_trusted(path, [str(ws)], what="the composition file")
    assert isinstance(found, Untrusted)
    assert found.root == str(ws)
    assert found.path == path
    assert found.what == "the composition file"
    assert "a confined command can write there" in found.why


def test_a_file_whose_parent_is_a_root_or_lies_in_one_is_untrusted(tree):
    _, ws, _ = tree
    path = write(ws / "deep" / "er" / "file")
    inner = str(ws / "deep")
    found = check_trusted(path, [inner], what="f")
    assert found is not None and found.root == inner
    # The root being a mere ancestor of the parent fails too.
    assert check_trusted(path, [str(ws)], what="f").root == str(ws)


def test_a_symlink_into_a_root_is_untrusted(tree):
    _, ws, outside = tree
    target = write(ws / "real.yml")
    link = outside / "link.yml"
    link.symlink_to(target)
    found = check_trusted(str(link), [str(ws)], what="f")
    assert found is not None and found.root == str(ws)


def test_a_symlink_in_a_root_pointing_outside_is_untrusted(tree):
    # The target is fine, but the link itself can be re-pointed by a confined command.
    _, ws, outside = tree
    target = write(outside / "real.yml")
    assert check_trusted(target, [str(ws)], what="f") is None
    link = ws / "link.yml"
    link.symlink_to(target)
    found = check_trusted(str(link), [str(ws)], what="f")
    assert found is not None and found.root == str(ws)


def test_a_symlink_whose_parent_dir_is_a_link_into_a_root_is_untrusted(tree):
    _, ws, outside = tree
    write(ws / "sub" / "file")
    (outside / "dirlink").symlink_to(ws / "sub")
    found = check_trusted(str(outside / "dirlink" / "file"), [str(ws)], what="f")
    assert found is not None and found.root == str(ws)


def test_a_group_or_other_writable_file_is_untrusted(tree):
    _, ws, outside = tree
    for mode in (0o664, 0o646):
        path = write(outside / f"loose-{mode:o}", mode=mode)
        found = check_trusted(path, [str(ws)], what="f")
        assert found is not None and found.root is None
        assert "writable by group or others" in found.why
        assert f"mode {mode:o}" in found.why


def test_a_group_writable_parent_makes_the_file_untrusted(tree):
    _, ws, outside = tree
    parent = outside / "shared"
    parent.mkdir()
    os.chmod(parent, 0o775)
    path = write(parent / "file")
    found = check_trusted(path, [str(ws)], what="f")
    assert found is not None and found.root is None
    assert "writable by group or others" in found.why
    # The failing component is named when it is not the file itself.
    assert str(parent) in found.why


def test_a_file_owned_by_another_uid_is_untrusted(tree):
    _, ws, outside = tree
    path = write(outside / "theirs")
    os.chown(path, NOBODY, -1)
    found = check_trusted(path, [str(ws)], what="f")
    assert found is not None and found.root is None
    assert f"owned by uid {NOBODY}" in found.why
    # ...unless that uid is the caller.
    assert check_trusted(path, [str(ws)], what="f", uid=NOBODY) is None


def test_a_parent_owned_by_another_uid_makes_the_file_untrusted(tree):
    _, ws, outside = tree
    parent = outside / "theirs"
    parent.mkdir()
    os.chown(parent, NOBODY, -1)
    path = write(parent / "file")
    found = check_trusted(path, [str(ws)], what="f")
    assert found is not None and f"owned by uid {NOBODY}" in found.why


def test_a_missing_path_is_untrusted_unless_it_may_be_created(tree):
    _, ws, outside = tree
    missing = str(outside / "not" / "there")
    found = check_trusted(missing, [str(ws)], what="f")
    assert found is not None and "does not exist" in found.why and found.root is None
    assert check_trusted(missing, [str(ws)], what="f", must_exist=False) is None


def test_a_missing_tail_is_still_checked_above_it(tree):
    _, ws, outside = tree
    # Under a root: refused although it may be created.
    found = check_trusted(str(ws / "new" / "file"), [str(ws)], what="f", must_exist=False)
    assert found is not None and found.root == str(ws)
    # Under a group-writable directory: refused too.
    loose = outside / "loose"
    loose.mkdir()
    os.chmod(loose, 0o770)
    found = check_trusted(str(loose / "new"), [str(ws)], what="f", must_exist=False)
    assert found is not None and "writable by group or others" in found.why


def test_a_missing_tail_behind_a_dangling_link_into_a_root_is_untrusted(tree):
    _, ws, outside = tree
    (outside / "link").symlink_to(ws / "missing")
    for path in (outside / "link", outside / "link" / "sub"):
        found = check_trusted(str(path), [str(ws)], what="f", must_exist=False)
        assert found is not None and found.root == str(ws)


def test_a_sticky_world_writable_parent_is_accepted_but_not_as_the_file(tree):
    _, ws, outside = tree
    sticky = outside / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    path = write(sticky / "file")
    assert check_trusted(path, [str(ws)], what="f") is None
    found = check_trusted(str(sticky), [str(ws)], what="dir")
    assert found is not None and "writable by group or others" in found.why
    # A world-writable directory without the sticky bit is no acceptable parent.
    os.chmod(sticky, 0o777)
    assert check_trusted(path, [str(ws)], what="f") is not None


def test_a_relative_path_is_checked_as_absolute(tree, monkeypatch):
    _, ws, outside = tree
    write(outside / "file")
    monkeypatch.chdir(outside)
    assert check_trusted("file", [str(ws)], what="f") is None
    monkeypatch.chdir(ws)
    write(ws / "file")
    assert check_trusted("file", [str(ws)], what="f").root == str(ws)


def test_untrusted_message_names_the_path_the_root_and_the_fix(tree):
    _, ws, _ = tree
    path = write(ws / "stockade.yml")
    found = check_trusted(path, [str(ws)], what="the composition file")
    text = found.message("move it elsewhere")
    assert text.startswith(f"the composition file {path}")
    assert f"inside the writable root {ws}" in text
    assert "not trusted" in text
    assert text.endswith("; move it elsewhere")
    bare = Untrusted("/p", "the file", "it is missing", None).message("fix it")
    assert bare == "the file /p is not trusted: it is missing; fix it"


# --- protected_paths --------------------------------------------------------------------

ROOT_ITEMS = ROOT_PROTECTED
GITDIR_ITEMS = ("hooks", "config", "config.worktree", "commondir")


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def gitdir_items(gitdir):
    return tuple(f"{gitdir}/{name}" for name in GITDIR_ITEMS)


def test_protected_paths_defaults_and_extra(tree):
    _, ws, _ = tree
    root = str(ws)
    # No `.git`: blocked whole, so no repository can be made at the root.
    defaults = (*(f"{root}/{name}" for name in ROOT_ITEMS), f"{root}/.git/")
    assert protected_paths(root, startup=()) == defaults
    extra = protected_paths(root, ["Makefile", "./ci/../.envrc", "/etc/elsewhere"], startup=())
    assert extra[len(ROOT_ITEMS) : -1] == (f"{root}/Makefile", f"{root}/.envrc", "/etc/elsewhere")
    # No repeats.
    assert protected_paths(root, ["stockade.yml"], startup=()) == defaults
    # "!NAME" leaves a default item writable (the composition's `unprotect`).
    dropped = protected_paths(root, ["!.vscode", "!.mcp.json"], startup=())
    assert f"{root}/.vscode/" not in dropped and f"{root}/.mcp.json" not in dropped
    assert f"{root}/.idea/" in dropped and f"{root}/.git/" in dropped


def test_an_empty_dotgit_is_blocked_whole_and_a_repository_per_gitdir(tree):
    _, ws, _ = tree
    (ws / ".git").mkdir()
    assert protected_paths(str(ws), startup=())[-1] == f"{ws}/.git/"
    git("init", "-q", ".", cwd=ws)
    assert protected_paths(str(ws), startup=())[len(ROOT_ITEMS) :] == gitdir_items(ws / ".git")


def test_protected_paths_follow_a_dotgit_file_to_its_gitdir_and_common_dir(tree):
    base, ws, _ = tree
    (ws / ".git").write_text("gitdir: ../x\n")
    gitdir = base / "x"
    gitdir.mkdir()
    (gitdir / "commondir").write_text("../common\n")
    paths = protected_paths(str(ws), startup=())
    # A `.git` FILE is itself protected; what it names, and its common dir, in full.
    assert paths[len(ROOT_ITEMS)] == f"{ws}/.git"
    assert paths[len(ROOT_ITEMS) + 1 :] == (
        *gitdir_items(base / "common"),
        *gitdir_items(base / "x"),
    )


def test_protected_paths_dotgit_file_without_commondir_or_gitdir_line(tree):
    base, ws, _ = tree
    (ws / ".git").write_text(f"gitdir: {base}/abs\n")
    assert protected_paths(str(ws), startup=())[len(ROOT_ITEMS) + 1 :] == gitdir_items(base / "abs")
    (ws / ".git").write_text("not a gitdir line\n")
    assert protected_paths(str(ws), startup=())[len(ROOT_ITEMS) :] == (f"{ws}/.git",)


@pytest.mark.parametrize(
    "content, target",
    [
        (b"gitdir: gd\r\n", "gd"),
        (b"gitdir: gd \n", "gd "),  # git strips only CR and LF, at the end
        (b"gitdir: gd\0ignored\n", "gd"),  # read as a C string
        (b"gitdir:gd\n", None),  # git needs "gitdir: " exactly
        (b" gitdir: gd\n", None),
        (b"gitdir: \n", None),
    ],
)
def test_a_dotgit_file_is_read_as_git_reads_it(tree, content, target):
    _, ws, _ = tree
    (ws / ".git").write_bytes(content)
    paths = protected_paths(str(ws), startup=())[len(ROOT_ITEMS) + 1 :]
    assert paths == (gitdir_items(ws / target) if target else ())


def test_a_pointer_is_resolved_as_the_kernel_walks_it(tree):
    """`a/link/../gd` leads where `link` points, then up: not to `a/gd`."""
    _, ws, outside = tree
    (ws / "a").mkdir()
    (outside / "deep").mkdir()
    (ws / "a" / "link").symlink_to(outside / "deep")
    (ws / ".git").write_text("gitdir: a/link/../gd\n")
    paths = protected_paths(str(ws), startup=())
    assert f"{outside}/gd/config" in paths and f"{ws}/a/gd/config" not in paths


def test_a_repository_with_worktrees_and_nested_submodules(tree):
    _, ws, _ = tree
    git("init", "-q", ".", cwd=ws)
    dotgit = ws / ".git"
    for worktree in ("wt1", "wt2"):
        (dotgit / "worktrees" / worktree).mkdir(parents=True)
        (dotgit / "worktrees" / worktree / "commondir").write_text("../..\n")
    # A submodule named "vendor/lib" (its name holds a "/"), with one of its own.
    lib = dotgit / "modules" / "vendor" / "lib"
    (lib / "modules" / "inner").mkdir(parents=True)
    (lib / "HEAD").write_text("ref: refs/heads/main\n")
    (lib / "modules" / "inner" / "config").write_text("[core]\n")
    (dotgit / "worktrees" / "not-a-dir").write_text("x")
    paths = protected_paths(str(ws), startup=())
    for gitdir in (dotgit, dotgit / "worktrees/wt1", dotgit / "worktrees/wt2", lib):
        assert set(gitdir_items(gitdir)) <= set(paths), gitdir
    assert set(gitdir_items(lib / "modules" / "inner")) <= set(paths)
    assert f"{dotgit}/modules/vendor/config" not in paths  # part of a name only


def test_a_commondir_placeholder_names_the_gitdir_itself(tree):
    _, ws, _ = tree
    git("init", "-q", ".", cwd=ws)
    (ws / ".git" / "commondir").write_text(".\n")
    assert protected_paths(str(ws), startup=())[len(ROOT_ITEMS) :] == gitdir_items(ws / ".git")


def test_nested_repositories_are_found_two_directories_down(tree):
    _, ws, _ = tree
    for where in ("one", "vendor/lib", "a/b/c", ".git-like/x"):
        (ws / where).mkdir(parents=True)
        git("init", "-q", ".", cwd=ws / where)
    git("init", "-q", "--bare", "bare", cwd=ws)
    git("init", "-q", "--bare", "deps/bare2", cwd=ws)
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text("gitdir: ../.gitdirs/sub\n")
    (ws / "linked").symlink_to(ws / "a" / "b")  # not followed
    paths = set(protected_paths(str(ws), startup=()))
    for gitdir in ("one/.git", "vendor/lib/.git", "bare", "deps/bare2", ".git-like/x/.git"):
        assert set(gitdir_items(ws / gitdir)) <= paths, gitdir
    assert f"{ws}/sub/.git" in paths and set(gitdir_items(ws / ".gitdirs/sub")) <= paths
    # Three levels down is beyond the bound (the claim says so: NEW_REPOSITORY_GAP).
    assert not any(path.startswith(f"{ws}/a/") for path in paths)
    assert not any(path.startswith(f"{ws}/linked/") for path in paths)
    # A temp root gets its own `.git` looked at, nothing below it.
    top = set(protected_paths(str(ws), startup=(), nested=False))
    assert not any(path.startswith(f"{ws}/one/") for path in top)


def test_the_search_for_repositories_stops_at_its_budget_and_says_so(tree, monkeypatch):
    _, ws, _ = tree
    for index in range(5):
        (ws / f"d{index}" / "x").mkdir(parents=True)
    assert protected_set(str(ws), startup=()).unknown == ()
    monkeypatch.setattr(trust_module, "SCAN_BUDGET", 3)
    assert protected_set(str(ws), startup=()).unknown == (
        f"repositories in {ws} past the first 3 directories",
    )


def test_git_directories_outside_every_root_need_nothing(tree):
    _, ws, outside = tree
    (ws / ".git").write_text(f"gitdir: {outside}/gd\n")
    (outside / "gd" / "worktrees" / "w").mkdir(parents=True)
    (outside / "gd" / "commondir").write_text(f"{ws}/common\n")
    paths = protected_paths(str(ws), startup=(), within=[str(ws)])
    assert not any(path.startswith(str(outside)) for path in paths)
    # ... but where its commondir leads, inside the root, is protected.
    assert set(gitdir_items(ws / "common")) <= set(paths)


def test_protected_paths_ignore_a_dotgit_symlink_to_a_file(tree):
    _, ws, outside = tree
    write(outside / "dotgit", "gitdir: ../x\n")
    (ws / ".git").symlink_to(outside / "dotgit")
    # What lies beneath a link to a file: nothing can be made there; the link is
    # relinkable's to report.
    assert protected_paths(str(ws), startup=())[len(ROOT_ITEMS) :] == gitdir_items(ws / ".git")


# --- startup files ------------------------------------------------------------------------


def test_startup_files_of_home_the_password_database_and_xdg(tmp_path, monkeypatch):
    import pwd

    home = tmp_path / "home"
    found = startup_files({"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    names = [name for name, _ in found]
    assert set(names) == {n for n in UNPROTECTABLE if n.startswith("~/")}  # every ~/ item
    assert ("~/.bashrc", f"{home}/.bashrc") in found
    assert ("~/.ssh", f"{home}/.ssh/") in found
    assert ("~/.config/git", f"{tmp_path}/xdg/git/") in found
    real_home = os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir)
    assert ("~/.gitconfig", f"{real_home}/.gitconfig") in found
    # A relative HOME is no home.
    assert all(path.startswith(real_home) for _, path in startup_files({"HOME": "rel"}))


def test_startup_files_are_protected_in_a_root_that_holds_the_home(tree):
    _, ws, outside = tree
    startup = startup_files({"HOME": str(ws / "home")})
    inside = protected_paths(str(ws), startup=startup)
    assert f"{ws}/home/.bashrc" in inside and f"{ws}/home/.config/git/" in inside
    # A root inside the home, or beside it, holds none of them.
    (ws / "home" / "project").mkdir(parents=True)
    assert not any(
        "/home/." in path for path in protected_paths(str(ws / "home" / "project"), startup=startup)
    )
    assert not any("/home/." in path for path in protected_paths(str(outside), startup=startup))
    dropped = protected_paths(str(ws), ["!~/.ssh", "!~/.bashrc"], startup=startup)
    assert f"{ws}/home/.ssh/" not in dropped and f"{ws}/home/.bashrc" not in dropped
    assert f"{ws}/home/.profile" in dropped


def test_unprotect_names_are_the_config_literal():
    from typing import get_args

    from stockade.config.builtins import Unprotectable

    assert get_args(Unprotectable) == UNPROTECTABLE


def test_placeholder_texts_are_the_package_files():
    from stockade.sandbox._argv import EMPTY_FILE, placeholder_source

    for name, text in PLACEHOLDER_TEXT.items():
        source = placeholder_source(f"/r/{name}")
        assert source != EMPTY_FILE
        with open(source) as handle:
            assert handle.read() == text == placeholder_text(f"/r/x/{name}")
    assert placeholder_source("/r/.git/config") == EMPTY_FILE and placeholder_text("/r/x") == ""


def test_the_bash_placeholders_read_on_as_bash_would(tmp_path):
    """An empty `.bash_profile` would hide `.profile` from a login bash."""
    home = tmp_path / "h"
    home.mkdir()
    (home / ".profile").write_text("echo from-profile\n")
    (home / ".bash_profile").write_text(PLACEHOLDER_TEXT[".bash_profile"])
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    login = ["bash", "--login", "-c", "true"]
    done = subprocess.run(login, env=env, capture_output=True, text=True, check=True)
    assert done.stdout == "from-profile\n"
    (home / ".bash_login").write_text(PLACEHOLDER_TEXT[".bash_login"])
    done = subprocess.run(login, env=env, capture_output=True, text=True, check=True)
    assert done.stdout == "from-profile\n"


# --- first_missing ----------------------------------------------------------------------


def test_first_missing_names_the_first_absent_component(tree):
    _, ws, _ = tree
    assert first_missing(str(ws / "a" / "b" / "c")) == str(ws / "a")
    (ws / "a").mkdir()
    assert first_missing(str(ws / "a" / "b" / "c")) == str(ws / "a" / "b")
    assert first_missing(str(ws / "a")) is None
    # A dangling symlink exists.
    (ws / "dangling").symlink_to(ws / "nowhere")
    assert first_missing(str(ws / "dangling")) is None


def test_first_missing_counts_an_empty_blocker_as_missing(tree):
    _, ws, _ = tree
    blocker = ws / ".git"
    blocker.mkdir()
    target = str(blocker / "hooks")
    assert first_missing(target) == target
    assert first_missing(target, blockers=[str(blocker)]) == str(blocker)
    # An empty file placeholder counts as well.
    write(ws / "stockade.yml", "")
    assert first_missing(str(ws / "stockade.yml"), [str(ws / "stockade.yml")]) == str(
        ws / "stockade.yml"
    )
    # Once something is inside, it is real and no longer counts as missing.
    (blocker / "HEAD").write_text("ref: refs/heads/main\n")
    assert first_missing(target, blockers=[str(blocker)]) == target
    write(ws / "stockade.yml", "x")
    assert first_missing(str(ws / "stockade.yml"), [str(ws / "stockade.yml")]) is None


def test_a_placeholder_swept_while_it_is_judged_counts_as_missing(tree):
    """Another process's `.mcp.json` placeholder (it holds its text, so it is read to be
    judged), removed between the look at it and the read: missing, so it is blocked and
    held (not bound read-only as a file of the user's, which the runner would then not
    find: "cannot protect .mcp.json: No such file or directory" under concurrent calls)."""
    from stockade.trust import PathFacts

    _, ws, _ = tree
    placeholder = ws / ".mcp.json"
    write(placeholder, placeholder_text(str(placeholder)))
    facts = PathFacts()
    assert facts.lexists(str(placeholder))  # looked at while it stood there
    placeholder.unlink()  # swept by its last user
    assert first_missing(str(placeholder), [str(placeholder)], facts=facts) == str(placeholder)
    # A file of the user's that is read the same way and still there is no placeholder.
    write(placeholder, '{"mcpServers": {"x": {}}}\n')
    assert first_missing(str(placeholder), [str(placeholder)]) is None


# --- protections ------------------------------------------------------------------------


def test_an_existing_protected_path_in_a_root_is_bound_read_only_at_its_real_path(tree):
    _, ws, _ = tree
    write(ws / "stockade.yml")
    (ws / "alias.yml").symlink_to(ws / "stockade.yml")
    assert protections([str(ws / "alias.yml")], [str(ws)]) == (
        Protection(str(ws / "stockade.yml"), READ_ONLY),
    )


def test_a_protected_path_outside_every_root_needs_nothing(tree):
    _, ws, outside = tree
    write(outside / "stockade.yml")
    assert protections([str(outside / "stockade.yml")], [str(ws)]) == ()
    # A link in the root to a file outside protects nothing either (it is read-only
    # already; `relinkable` reports the link).
    (ws / "link.yml").symlink_to(outside / "stockade.yml")
    assert protections([str(ws / "link.yml")], [str(ws)]) == ()
    # Missing, outside: nothing.
    assert protections([str(outside / "none" / "x")], [str(ws)]) == ()


def test_a_missing_protected_path_is_blocked_at_its_first_missing_component(tree):
    _, ws, _ = tree
    # `.git` is missing on the way to `.git/hooks`: blocked as a directory.
    assert protections([str(ws / ".git" / "hooks")], [str(ws)]) == (
        Protection(str(ws / ".git"), BLOCK, True),
    )
    (ws / ".git").mkdir()
    found = protections([str(ws / ".git" / "hooks"), str(ws / ".git" / "config")], [str(ws)])
    assert found == (
        Protection(str(ws / ".git"), PIN),
        Protection(str(ws / ".git" / "config"), BLOCK),
        Protection(str(ws / ".git" / "hooks"), BLOCK, True),  # git's hooks: a directory
    )
    assert not any(p.exists for p in found if p.kind == BLOCK)
    assert all(p.exists for p in found if p.kind != BLOCK)


def test_directories_between_the_root_and_a_protected_path_are_pinned_first(tree):
    _, ws, _ = tree
    hooks = ws / "a" / "b" / ".git" / "hooks"
    hooks.mkdir(parents=True)
    found = protections([str(hooks)], [str(ws)])
    assert found == (
        Protection(str(ws / "a"), PIN),
        Protection(str(ws / "a" / "b"), PIN),
        Protection(str(ws / "a" / "b" / ".git"), PIN),
        Protection(str(hooks), READ_ONLY),
    )
    # The root itself is never pinned (it is the writable bind already).
    assert all(p.path != str(ws) for p in found)


def test_nested_protections_keep_only_the_outermost(tree):
    _, ws, _ = tree
    (ws / ".git" / "hooks").mkdir(parents=True)
    write(ws / ".git" / "config")
    paths = [str(ws / ".git" / "hooks"), str(ws / ".git" / "config"), str(ws / ".git")]
    assert protections(paths, [str(ws)]) == (Protection(str(ws / ".git"), READ_ONLY),)
    # A missing protected path inside a blocked one is covered by the block.
    found = protections([str(ws / "x"), str(ws / "x" / "y" / "z")], [str(ws)])
    assert found == (Protection(str(ws / "x"), BLOCK, True),)  # x holds y/z: a directory


def test_a_workspace_root_inside_a_temp_root_pins_from_the_innermost_root(tree):
    base, _, _ = tree
    temp = base / "temp"
    ws = temp / "project"
    (ws / ".git" / "hooks").mkdir(parents=True)
    found = protections([str(ws / ".git" / "hooks")], [str(ws), str(temp)])
    assert found == (
        Protection(str(ws / ".git"), PIN),
        Protection(str(ws / ".git" / "hooks"), READ_ONLY),
    )
    # The same with the roots in the other order.
    assert protections([str(ws / ".git" / "hooks")], [str(temp), str(ws)]) == found


def test_protections_treat_an_empty_blocker_as_still_missing(tree):
    _, ws, _ = tree
    (ws / ".git").mkdir()  # the placeholder an earlier call's runner made
    hooks = str(ws / ".git" / "hooks")
    assert protections([hooks], [str(ws)], blockers=[str(ws / ".git")]) == (
        Protection(str(ws / ".git"), BLOCK, True),
    )


def test_protections_are_ordered_parents_first(tree):
    _, ws, _ = tree
    (ws / "z" / "deep" / "deeper").mkdir(parents=True)
    (ws / ".git" / "hooks").mkdir(parents=True)
    found = protections(
        [str(ws / "z" / "deep" / "deeper"), str(ws / ".git" / "hooks"), str(ws / "stockade.yml")],
        [str(ws)],
    )
    depths = [p.path.count("/") for p in found]
    assert depths == sorted(depths)
    for index, protection in enumerate(found):
        for later in found[index + 1 :]:
            assert not protection.path.startswith(later.path + "/")


# --- relinkable -------------------------------------------------------------------------


def test_relinkable_reports_a_dotgit_symlink_in_a_root(tree):
    _, ws, outside = tree
    (outside / "gitdir" / "hooks").mkdir(parents=True)
    (ws / ".git").symlink_to(outside / "gitdir")
    assert relinkable(str(ws / ".git" / "hooks"), [str(ws)]) == str(ws / ".git")
    assert relinkable(str(ws / ".git" / "config"), [str(ws)]) == str(ws / ".git")


def test_relinkable_is_none_without_a_symlink_in_a_root(tree):
    base, ws, outside = tree
    (ws / ".git" / "hooks").mkdir(parents=True)
    assert relinkable(str(ws / ".git" / "hooks"), [str(ws)]) is None
    assert relinkable(str(ws / "missing" / "x"), [str(ws)]) is None
    # A symlink outside every root (here: one that names the root) is not re-pointable.
    alias = base / "alias"
    alias.symlink_to(ws)
    assert relinkable(str(alias / ".git" / "hooks"), [str(ws)]) is None
    # A symlink outside the root leading elsewhere neither.
    (outside / "l").symlink_to(outside)
    assert relinkable(str(outside / "l" / "x"), [str(ws)]) is None


# --- installation_paths -----------------------------------------------------------------


def test_installation_paths_include_the_package_and_exclude_the_cwd(tmp_path, monkeypatch):
    package = os.path.dirname(os.path.dirname(os.path.realpath(trust_module.__file__)))
    paths = installation_paths()
    assert package in paths
    assert os.path.realpath(sys.executable) in paths
    assert len(paths) == len(set(paths))
    assert all(os.path.isabs(path) for path in paths)

    cwd = tmp_path.resolve()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "path", [*sys.path, str(cwd), ""])
    assert str(cwd) not in installation_paths()
    other = cwd / "site"
    other.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(other)])
    assert str(other) in installation_paths()


def test_another_users_link_in_a_sticky_directory_is_not_trusted(tmp_path):
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    target = tmp_path / "target"
    target.write_text("x")
    link = sticky / "cfg"
    link.symlink_to(target)
    os.chown(link, 65534, 65534, follow_symlinks=False)
    problem = check_trusted(str(link), [], what="f")
    assert problem is not None and "owned by uid 65534" in problem.why


def test_a_link_to_a_sticky_world_writable_directory_is_not_trusted(tmp_path):
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    (sticky / "self").symlink_to(sticky)
    assert check_trusted(str(sticky / "self"), [], what="f") is not None


def test_path_facts_find_the_real_path_os_path_realpath_finds(tmp_path):
    """PathFacts.realpath answers from memoised lstats where no component is a link;
    whatever the tree, it must agree with os.path.realpath."""
    from stockade.trust import PathFacts

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    (tmp_path / "a" / "rel").symlink_to("b")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    names = [
        "", "a", "a/b", "a/b/missing/deeper", "a/file", "a/file/under", "link",
        "link/b", "link/rel/x", "a/rel", "loop", "loop/x", "dangling", "dangling/x",
        "missing", "a/./b", "a/b/../file", "link/../a",
    ]  # fmt: skip
    facts = PathFacts()
    for name in names:
        path = str(tmp_path / name) if name else str(tmp_path)
        if "/./" in name or "/../" in name:
            path = f"{tmp_path}/{name}"
        assert facts.realpath(path) == os.path.realpath(path), name
        assert facts.realpath(path) == os.path.realpath(path), name  # memoised
        assert facts.lexists(path) == os.path.lexists(path), name
        assert facts.is_dir(path) == os.path.isdir(path), name
    assert PathFacts().realpath("relative/x") == os.path.realpath("relative/x")
    doubled = "/" + str(tmp_path / "a" / "b")  # POSIX keeps a leading "//" in normpath
    assert PathFacts().realpath(doubled) == os.path.realpath(doubled)

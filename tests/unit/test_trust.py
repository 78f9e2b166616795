"""The trust base from stat facts: check_trusted, protected paths, binds and blockers.

Runs as root on a tmp_path under /tmp (sticky 1777: accepted as a parent). The
writable roots are always passed explicitly, so /tmp itself is never one.
"""

import os
import sys

import pytest

import stockade.trust as trust_module
from stockade.trust import (
    BLOCK,
    PIN,
    READ_ONLY,
    Protection,
    Untrusted,
    check_trusted,
    first_missing,
    installation_paths,
    protected_paths,
    protections,
    relinkable,
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


def test_protected_paths_defaults_and_extra(tree):
    _, ws, _ = tree
    root = str(ws)
    assert protected_paths(root) == (
        f"{root}/.git/hooks",
        f"{root}/.git/config",
        f"{root}/stockade.yml",
    )
    extra = protected_paths(root, ["Makefile", "./ci/../.envrc", "/etc/elsewhere"])
    assert extra[3:] == (f"{root}/Makefile", f"{root}/.envrc", "/etc/elsewhere")
    # No repeats.
    assert protected_paths(root, ["stockade.yml"]) == protected_paths(root)
    assert protected_paths(root, defaults=()) == ()


def test_protected_paths_follow_a_dotgit_file_to_its_gitdir_and_common_dir(tree):
    base, ws, _ = tree
    (ws / ".git").write_text("gitdir: ../x\n")
    gitdir = base / "x"
    gitdir.mkdir()
    (gitdir / "commondir").write_text("../common\n")
    paths = protected_paths(str(ws))
    # A `.git` FILE replaces `.git/hooks` and `.git/config`: it is itself protected.
    assert paths[:2] == (f"{ws}/stockade.yml", f"{ws}/.git")
    assert paths[2:] == (
        f"{base}/x/hooks",
        f"{base}/x/config",
        f"{base}/x/config.worktree",
        f"{base}/common/hooks",
        f"{base}/common/config",
    )


def test_protected_paths_dotgit_file_without_commondir_or_gitdir_line(tree):
    base, ws, _ = tree
    (ws / ".git").write_text(f"gitdir: {base}/abs\n")
    assert protected_paths(str(ws))[2:] == (
        f"{base}/abs/hooks",
        f"{base}/abs/config",
        f"{base}/abs/config.worktree",
    )
    (ws / ".git").write_text("not a gitdir line\n")
    assert protected_paths(str(ws)) == (f"{ws}/stockade.yml", f"{ws}/.git")


def test_protected_paths_ignore_a_dotgit_symlink_to_a_file(tree):
    _, ws, outside = tree
    write(outside / "dotgit", "gitdir: ../x\n")
    (ws / ".git").symlink_to(outside / "dotgit")
    assert len(protected_paths(str(ws))) == 3


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
    package = os.path.dirname(os.path.realpath(trust_module.__file__))
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

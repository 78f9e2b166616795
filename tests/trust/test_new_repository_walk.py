"""The new-repository hold's walk (trust/new_repository.py), no kernel sandbox: the
gitlinks an index records, read as git writes them (versions 2, 3 and 4, sha1 and
sha256), and the repositories they lead to held like the root's own: an embedded
repository's `.git`, a submodule's `gitdir:` file into `.git/modules/` (followed, kept)
or elsewhere (held whole), a link in `.git/modules/` (held whole). The host's git
makes every fixture; plain asserts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from stockade.trust import new_repository

GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@example.invalid",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@example.invalid",
}


def git(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "protocol.file.allow=always", *args],
        cwd=where,
        env=GIT_ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def repository(where: Path, *init: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    git(where, "init", "-q", *init)
    git(where, "commit", "-q", "--allow-empty", "-m", "one")
    return where


def with_gitlinks(root: Path, *init: str) -> list[bytes]:
    """A repository at `root` with files and two embedded repositories as gitlinks
    (one with a long name below a directory: prefix compression has work to do)."""
    repository(root, *init)
    (root / "a.txt").write_text("a")
    (root / "deep" / "er").mkdir(parents=True)
    (root / "deep" / "er" / "b.txt").write_text("b")
    repository(root / "deep" / "er" / "embedded-with-a-long-name", *init)
    repository(root / "x", *init)
    git(root, "add", "-A")
    return [b"deep/er/embedded-with-a-long-name", b"x"]


@pytest.mark.parametrize("version", ["2", "3", "4"])
@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_the_gitlinks_of_an_index_as_git_wrote_it(tmp_path, version, object_format):
    expected = with_gitlinks(tmp_path, f"--object-format={object_format}")
    if version == "3":
        (tmp_path / "new.txt").write_text("n")
        git(tmp_path, "add", "-N", "new.txt")  # intent to add: an extended flag
    git(tmp_path, "update-index", "--index-version", version)
    data = (tmp_path / ".git" / "index").read_bytes()
    assert int.from_bytes(data[4:8], "big") == int(version)
    size = 32 if object_format == "sha256" else 20
    assert new_repository.gitlinks(data, size) == expected
    assert new_repository.gitlinks(data[:-60], size) in (None, expected)


def test_what_is_no_index_is_not_read():
    assert new_repository.gitlinks(b"") is None
    assert new_repository.gitlinks(b"DIRC" + (9).to_bytes(4, "big") + bytes(4)) is None
    assert (
        new_repository.gitlinks(b"DIRC" + (2).to_bytes(4, "big") + (5).to_bytes(4, "big")) is None
    )
    assert new_repository.gitlinks(b"DIRC" + (2).to_bytes(4, "big") + bytes(4)) == []


def fsmonitor(gitdir: Path) -> None:
    subprocess.run(
        ["git", "config", "--file", str(gitdir / "config"), "core.fsmonitor", "touch /x"],
        env=GIT_ENV,
        check=True,
    )


def test_an_embedded_repository_the_index_records_is_held(tmp_path):
    with_gitlinks(tmp_path)
    embedded = tmp_path / "deep" / "er" / "embedded-with-a-long-name"
    fsmonitor(embedded / ".git")
    (embedded / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\n")
    held, moved = new_repository.hold(str(tmp_path))
    where = "deep/er/embedded-with-a-long-name/.git"
    assert held == [f"{where}/hooks/post-checkout", f"{where}/config: core.fsmonitor"]
    assert moved == [f"{where}/hooks.stockade-held/", f"{where}/config.stockade-held"]
    assert "fsmonitor" not in (embedded / ".git" / "config").read_text()
    # Not recorded in the index: a repository in a subdirectory is the stated limit.
    repository(tmp_path / "unrecorded")
    fsmonitor(tmp_path / "unrecorded" / ".git")
    assert new_repository.hold(str(tmp_path)) == ([], [])


def test_a_submodule_is_followed_into_git_modules_and_kept(tmp_path):
    source = repository(tmp_path / "source")
    root = repository(tmp_path / "root")
    git(root, "submodule", "add", "-q", str(source), "s")
    git(root, "commit", "-qm", "sub")
    assert (root / "s" / ".git").is_file()
    # What `git submodule add` writes (core.worktree in the module's config) is kept.
    assert new_repository.hold(str(root)) == ([], [])
    fsmonitor(root / ".git" / "modules" / "s")
    held, _ = new_repository.hold(str(root))
    assert held == [".git/modules/s/config: core.fsmonitor"]
    assert git(root / "s", "status", "--short") == ""  # still a working submodule


def test_a_gitlink_whose_gitdir_file_leads_elsewhere_is_held_whole(tmp_path):
    source = repository(tmp_path / "source")
    root = repository(tmp_path / "root")
    git(root, "submodule", "add", "-q", str(source), "s")
    elsewhere = repository(root / "elsewhere")
    (root / "s" / ".git").write_text("gitdir: ../elsewhere/.git\n")
    held, moved = new_repository.hold(str(root))
    assert held == ["s/.git"] and moved == ["s/.git.stockade-held"]
    assert (root / "s" / ".git.stockade-held").read_text() == "gitdir: ../elsewhere/.git\n"
    assert (elsewhere / ".git" / "config").exists()  # not followed, not touched


def test_a_link_in_git_modules_is_held_whole(tmp_path):
    source = repository(tmp_path / "source")
    root = repository(tmp_path / "root")
    git(root, "submodule", "add", "-q", str(source), "s")
    os.rename(root / ".git" / "modules" / "s", root / "elsewhere")
    (root / ".git" / "modules" / "s").symlink_to("../../elsewhere")
    fsmonitor(root / "elsewhere")
    held, moved = new_repository.hold(str(root))
    # The link, and the submodule's `gitdir:` file that led through it (to nothing now).
    assert held == [".git/modules/s", "s/.git"]
    assert moved == [".git/modules/s.stockade-held", "s/.git.stockade-held"]
    assert (root / ".git" / "modules" / "s.stockade-held").is_symlink()
    assert "fsmonitor" in (root / "elsewhere" / "config").read_text()  # not followed


def test_an_index_that_cannot_be_read_holds_the_whole_git_directory(tmp_path):
    repository(tmp_path)
    (tmp_path / ".git" / "index").write_bytes(b"DIRC" + (7).to_bytes(4, "big") + bytes(4))
    assert new_repository.hold(str(tmp_path)) == ([".git"], [".git.stockade-held"])


def test_held_names_the_command_took_are_passed_over(tmp_path):
    repository(tmp_path)
    fsmonitor(tmp_path / ".git")
    (tmp_path / ".git" / "config.stockade-held").mkdir()
    (tmp_path / ".git" / "config.stockade-held.2").write_text("the command's")
    held, moved = new_repository.hold(str(tmp_path))
    assert held == [".git/config: core.fsmonitor"]
    assert moved == [".git/config.stockade-held.3"]
    assert (tmp_path / ".git" / "config.stockade-held.2").read_text() == "the command's"
    assert "fsmonitor" in (tmp_path / ".git" / "config.stockade-held.3").read_text()


def test_the_line_shows_the_commands_names_escaped(tmp_path):
    """A hook's name is the command's: a newline or a terminal's escape in it would
    make a line of its own, or move the person's cursor, where the line is shown."""
    repository(tmp_path)
    name = "pre-commit\x1b[2J\nstockade: nothing was held"
    (tmp_path / ".git" / "hooks" / name).write_text("#!/bin/sh\n")
    held, moved = new_repository.hold(str(tmp_path))
    assert held == [f".git/hooks/{name}"]
    line = new_repository.held_note(str(tmp_path), held, moved)
    assert "\n" not in line and "\x1b" not in line
    assert "pre-commit\\x1b[2J\\nstockade: nothing was held" in line

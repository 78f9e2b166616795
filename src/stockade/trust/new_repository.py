"""A repository a confined call made in a workspace root that had none: what of it git
would run (config keys, hooks), and holding that aside when the call ends.

Why: the root's `.git` is no longer blocked when missing (a placeholder broke `git
init` and go's VCS stamping), so a command can make one whose config or hooks the
person's own unconfined git runs later. What would run is moved aside (held, never
deleted) before the result is returned. Standard library and the host's git only.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Sequence

# Keys a new repository may keep: what `git init`, `git remote add`, `git branch -u`,
# `git submodule add` and `git config user.*` write, none of which runs a program.
# Matched as git names them: section, `*` for a subsection, key (lower case).
ALLOWED_KEYS: tuple[str, ...] = (
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "extensions.objectformat",
    "extensions.refstorage",
    "init.defaultbranch",
    "user.name",
    "user.email",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.update",
    "submodule.*.branch",
    "commit.gpgsign",
    "tag.gpgsign",
)
HELD = ".stockade-held"
# What else in a git directory makes git run or read something of its own.
HELD_FILES = ("config.worktree", "commondir")
GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "HOME": "/nonexistent",
    "LANG": "C",
}
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def without_repository(root: str) -> str | None:
    """`root`'s real path when it has no `.git` (as a call starts), else None."""
    real = os.path.realpath(root)
    return None if os.path.lexists(os.path.join(real, ".git")) else real


def made(root: str) -> bool:
    """Whether `root` (one `without_repository` named) has a `.git` now."""
    return os.path.lexists(os.path.join(root, ".git"))


def allowed_key(key: str) -> bool:
    """Whether `key` (as `git config --list` gives it: section[.subsection].name, the
    section and name lower-cased) runs nothing; a URL key runs nothing unless it
    names a transport that runs a command (`ext::`)."""
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    spelled = f"{section}.*.{name}" if subsection else f"{section}.{name}"
    return spelled.lower() in ALLOWED_KEYS


def offending_keys(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The keys of `pairs` (key, value) that are not allowed, in order, without repeats."""
    found: list[str] = []
    for key, value in pairs:
        bad = not allowed_key(key) or (
            key.lower().endswith(("url", "pushurl")) and value.lower().startswith("ext::")
        )
        if bad and key not in found:
            found.append(key)
    return found


def offending_hooks(entries: Sequence[tuple[str, bool]]) -> list[str]:
    """The hooks of `entries` ((name, is a regular file)) git could run: every one but
    git's own `*.sample` files."""
    return [name for name, regular in entries if not (regular and name.endswith(".sample"))]


def read_config(fd: int) -> list[tuple[str, str]] | None:
    """(key, value) of the config file open at `fd`, read by git without includes;
    None when git cannot parse it."""
    import subprocess  # only when a call made a repository: not on exec's fast path

    try:
        done = subprocess.run(
            ["git", "config", "--file", f"/proc/self/fd/{fd}", "--null", "--list"],
            env=GIT_ENV,
            capture_output=True,
            timeout=10,
            check=False,
            pass_fds=(fd,),
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    pairs: list[tuple[str, str]] = []
    for item in done.stdout.decode("utf-8", "replace").split("\0"):
        if item:
            key, _, value = item.partition("\n")
            pairs.append((key, value))
    return pairs


def hold(root: str) -> list[str]:
    """Hold what git would run in the repository at `root`/.git (made by a confined
    call): the paths held, relative to the root ([] when there was nothing). Moves
    go through descriptors of the directories opened without following a link."""
    try:
        root_fd = os.open(root, _DIR)
    except OSError:
        return []
    try:
        try:
            info = os.lstat(".git", dir_fd=root_fd)
        except OSError:
            return []
        if not stat.S_ISDIR(info.st_mode):
            # A link or a `gitdir:` file leads elsewhere: the whole pointer is held.
            os.rename(".git", ".git" + HELD, src_dir_fd=root_fd, dst_dir_fd=root_fd)
            return [".git"]
        gitdir = os.open(".git", _DIR, dir_fd=root_fd)
        try:
            return _hold_in(gitdir, root)
        finally:
            os.close(gitdir)
    except OSError:
        return []
    finally:
        os.close(root_fd)


def _hold_in(gitdir: int, root: str) -> list[str]:
    held: list[str] = []
    for name in HELD_FILES:
        if _exists(gitdir, name):
            os.rename(name, name + HELD, src_dir_fd=gitdir, dst_dir_fd=gitdir)
            held.append(f".git/{name}")
    try:
        hooks = os.open("hooks", _DIR, dir_fd=gitdir)
    except OSError:
        hooks = -1
        if _exists(gitdir, "hooks"):  # a link or a file where the hooks should be
            os.rename("hooks", "hooks" + HELD, src_dir_fd=gitdir, dst_dir_fd=gitdir)
            held.append(".git/hooks")
    if hooks >= 0:
        try:
            with os.scandir(hooks) as listed:
                entries = [(e.name, e.is_file(follow_symlinks=False)) for e in listed]
            bad = offending_hooks(entries)
            if bad:
                if not _exists(gitdir, "hooks" + HELD):
                    os.mkdir("hooks" + HELD, 0o700, dir_fd=gitdir)
                aside = os.open("hooks" + HELD, _DIR, dir_fd=gitdir)
                try:
                    for name in bad:
                        os.rename(name, name, src_dir_fd=hooks, dst_dir_fd=aside)
                        held.append(f".git/hooks/{name}")
                finally:
                    os.close(aside)
        finally:
            os.close(hooks)
    if _exists(gitdir, "config"):
        if not stat.S_ISREG(os.lstat("config", dir_fd=gitdir).st_mode):
            os.rename("config", "config" + HELD, src_dir_fd=gitdir, dst_dir_fd=gitdir)
            held.append(".git/config")
            return held
        # Read through this process's own descriptor of it: never a path re-walked.
        fd = os.open("config", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=gitdir)
        try:
            pairs = read_config(fd)
        finally:
            os.close(fd)
        bad = offending_keys(pairs) if pairs is not None else ["(unreadable config)"]
        if bad:
            os.rename("config", "config" + HELD, src_dir_fd=gitdir, dst_dir_fd=gitdir)
            kept = [(k, v) for k, v in pairs or () if k not in bad]
            _write_config(gitdir, kept)
            held += [f".git/config: {key}" for key in bad]
    return held


def _write_config(gitdir: int, pairs: Sequence[tuple[str, str]]) -> None:
    """A new `config` holding `pairs` only: written by git in a private directory of
    this process's (git writes through a lock file beside it), then copied into a file
    made new through the git directory's descriptor."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="stockade-held-") as scratch:
        path = os.path.join(scratch, "config")
        for key, value in pairs:
            subprocess.run(
                ["git", "config", "--file", path, "--add", key, value],
                env=GIT_ENV,
                capture_output=True,
                timeout=10,
                check=False,
            )
        data = b""
        if os.path.exists(path):
            with open(path, "rb") as written:
                data = written.read()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open("config", flags, 0o644, dir_fd=gitdir)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _exists(directory: int, name: str) -> bool:
    try:
        os.lstat(name, dir_fd=directory)
        return True
    except OSError:
        return False


def held_note(root: str, held: Sequence[str]) -> str:
    """The one line a result carries when `hold` held something."""
    return (
        f"[sandbox: the repository this command made in {root} held what git would run "
        f"({'; '.join(held)}): moved to .git/*{HELD} beside it, so no git run later on the "
        "host runs it; review them before moving them back]"
    )

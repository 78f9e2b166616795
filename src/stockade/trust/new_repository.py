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
)
# What `submodule.<name>.update` may say: any other value ("!command") is run by
# `git submodule update`.
SUBMODULE_UPDATES = ("checkout", "rebase", "merge", "none")
# URL schemes git serves itself; any other `scheme://` or a `helper::` prefix makes it
# run `git-remote-<name>` found on the PATH (`ext::` runs the command it names).
NATIVE_SCHEMES = ("file", "git", "ssh", "git+ssh", "ssh+git", "http", "https", "ftp", "ftps")
# Submodules' git directories below `modules/` looked at, at most (their names may
# hold "/": each level counts).
MODULES_BUDGET = 200
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


def made(root: str) -> bool:
    """Whether `root` (a workspace root that had no repository as the call started:
    `Guard.new_repository`) has a `.git` now: one lstat."""
    return os.path.lexists(os.path.join(root, ".git"))


def allowed_key(key: str) -> bool:
    """Whether `key` (as `git config --list` gives it: section[.subsection].name, the
    section and name lower-cased) runs nothing; a URL key runs nothing unless it
    names a transport that runs a command (`ext::`)."""
    section, _, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    spelled = f"{section}.*.{name}" if subsection else f"{section}.{name}"
    return spelled.lower() in ALLOWED_KEYS


def url_runs_nothing(url: str) -> bool:
    """Whether git reaching `url` runs no program of the URL's choosing: no
    `helper::` prefix (transport.c: scheme characters, then "::") and a scheme git
    serves itself, or none (a path, `host:path`)."""
    scheme = ""
    for char in url:
        if not (char.isascii() and (char.isalnum() or char in "+.-")):
            break
        scheme += char
    rest = url[len(scheme) :]
    if scheme and rest.startswith("::"):
        return False
    if scheme and rest.startswith("://"):
        return scheme.lower() in NATIVE_SCHEMES
    return True


def offending_keys(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The keys of `pairs` (key, value) that are not allowed, in order, without repeats:
    outside ALLOWED_KEYS, a URL that runs a program, a submodule update command."""
    found: list[str] = []
    for key, value in pairs:
        name = key.lower().rpartition(".")[2]
        bad = (
            not allowed_key(key)
            or (name in ("url", "pushurl") and not url_runs_nothing(value))
            or (name == "update" and value.strip().lower() not in SUBMODULE_UPDATES)
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


class _Whole(Exception):
    """What was made cannot be held piece by piece: the whole `.git` is held."""


def hold(root: str) -> tuple[list[str], list[str]]:
    """Hold what git would run in the repository at `root`/.git (made by a confined
    call) and in its submodules' git directories below `.git/modules/` (git status
    in the root runs git in each): (what was held, where it went), paths relative to
    the root (both empty when there was nothing). Moves go through descriptors of
    the directories opened without following a link. A `.git` that is no directory
    (a link, a `gitdir:` file) is held whole, never followed; so is one whose parts
    cannot be moved aside (a name taken, too many submodules to look at)."""
    try:
        root_fd = os.open(root, _DIR)
    except OSError:
        return [], []
    try:
        try:
            info = os.lstat(".git", dir_fd=root_fd)
        except OSError:
            return [], []
        if stat.S_ISDIR(info.st_mode):
            try:
                gitdir = os.open(".git", _DIR, dir_fd=root_fd)
                try:
                    held = _hold_in(gitdir, ".git")
                    _hold_modules(gitdir, ".git/modules", "modules", held, [MODULES_BUDGET])
                finally:
                    os.close(gitdir)
                return held, _asides(held)
            except (OSError, _Whole):
                pass
        # A link or a `gitdir:` file leads elsewhere: the whole pointer is held.
        aside = _free_name(root_fd, ".git" + HELD)
        os.rename(".git", aside, src_dir_fd=root_fd, dst_dir_fd=root_fd)
        return [".git"], [aside]
    except OSError as error:
        return [f".git (not held: {error.strerror or error})"], []
    finally:
        os.close(root_fd)


def _free_name(directory: int, name: str) -> str:
    """`name`, or `name.2`, `name.3`, ...: the first that does not exist in `directory`."""
    candidate, number = name, 1
    while _exists(directory, candidate):
        number += 1
        candidate = f"{name}.{number}"
    return candidate


def _asides(held: Sequence[str]) -> list[str]:
    """Where each kind of what `_hold_in` held went (in order, without repeats)."""
    moved: list[str] = []
    for item in held:
        path = item.partition(": ")[0]
        if ": " not in item and "/hooks/" in path:
            aside = path.rpartition("/hooks/")[0] + "/hooks" + HELD + "/"
        else:
            aside = path + HELD
        if aside not in moved:
            moved.append(aside)
    return moved


def _hold_modules(parent: int, where: str, name: str, held: list[str], budget: list[int]) -> None:
    """Hold what git would run in each submodule git directory below `name` (a
    directory of `parent`, shown as `where`), as trust/protect.py finds them."""
    try:
        directory = os.open(name, _DIR, dir_fd=parent)
    except OSError:
        return
    try:
        with os.scandir(directory) as listed:
            children = [e.name for e in listed if e.is_dir(follow_symlinks=False)]
        for child in children:
            if budget[0] <= 0:
                raise _Whole  # more than can be looked at: none of it is trusted
            budget[0] -= 1
            try:
                fd = os.open(child, _DIR, dir_fd=directory)
            except OSError:
                continue
            try:
                shown = f"{where}/{child}"
                if any(_exists(fd, m) for m in ("HEAD", "objects", "config", "hooks")):
                    held += _hold_in(fd, shown)
                    _hold_modules(fd, f"{shown}/modules", "modules", held, budget)
                else:  # a part of a name with "/" in it
                    _hold_modules(directory, shown, child, held, budget)
            finally:
                os.close(fd)
    finally:
        os.close(directory)


def _hold_in(gitdir: int, where: str) -> list[str]:
    """Hold what git would run in the git directory open at `gitdir` (shown as
    `where`, relative to the root)."""
    held: list[str] = []
    for name in HELD_FILES:
        if _exists(gitdir, name):
            os.rename(name, name + HELD, src_dir_fd=gitdir, dst_dir_fd=gitdir)
            held.append(f"{where}/{name}")
    try:
        hooks = os.open("hooks", _DIR, dir_fd=gitdir)
    except OSError:
        hooks = -1
        if _exists(gitdir, "hooks"):  # a link or a file where the hooks should be
            os.rename("hooks", "hooks" + HELD, src_dir_fd=gitdir, dst_dir_fd=gitdir)
            held.append(f"{where}/hooks")
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
                        held.append(f"{where}/hooks/{name}")
                finally:
                    os.close(aside)
        finally:
            os.close(hooks)
    if _exists(gitdir, "config"):
        if not stat.S_ISREG(os.lstat("config", dir_fd=gitdir).st_mode):
            os.rename("config", "config" + HELD, src_dir_fd=gitdir, dst_dir_fd=gitdir)
            held.append(f"{where}/config")
            return held
        # Read through this process's own descriptor of it: never a path re-walked.
        fd = os.open("config", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=gitdir)
        try:
            pairs = read_config(fd)
        finally:
            os.close(fd)
        bad = offending_keys(pairs) if pairs is not None else ["(unreadable by git)"]
        if bad:
            os.rename("config", "config" + HELD, src_dir_fd=gitdir, dst_dir_fd=gitdir)
            kept = [(k, v) for k, v in pairs or () if k not in bad]
            _write_config(gitdir, kept)
            held += [f"{where}/config: {key}" for key in bad]
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


def held_note(root: str, held: Sequence[str], moved_to: Sequence[str]) -> str:
    """The one line a result carries when `hold` held something (modes.py's text)."""
    from ..modes import held_repository_cause

    return held_repository_cause(root, tuple(held), tuple(moved_to))

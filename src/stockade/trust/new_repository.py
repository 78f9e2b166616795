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
    # A submodule's git directory names its worktree (`git submodule add` writes it).
    "core.worktree",
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
# Repositories looked at, at most, that the root's index (and theirs) records as
# gitlinks: submodules and embedded repositories, which git status in the root runs
# git in. Past it, or with an index this cannot read, the whole `.git` is held.
GITLINKS_BUDGET = 200
# An index read for its gitlinks, at most (a larger one: the whole `.git` is held).
INDEX_LIMIT = 256 << 20
# git's gitlink mode (a commit recorded in the index: a submodule or embedded repository).
GITLINK = 0o160000
# git reads a `.git` file of at most 1 MiB (trust.protect.POINTER_LIMIT).
POINTER_LIMIT = 1 << 20
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
    cannot be moved aside (a name taken, too many submodules to look at).

    Also the repositories the index records as gitlinks (`git submodule add`, or an
    embedded repository `git add`ed): git status in the root runs git in each, with
    its own config. A gitlink's `.git` directory is held as the root's; a `gitdir:`
    file leading into `.git/modules/` is followed there (those are held already),
    any other (or a link) is held whole beside it."""
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
                    held: list[str] = []
                    walk = _Walk(root, root_fd)
                    walk.repository(gitdir, ".git", root_fd, "", held)
                finally:
                    os.close(gitdir)
                return held, list(dict.fromkeys(walk.moved))
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


class _Walk:
    """One hold's walk of a repository made in `root` (open at `root_fd`): its git
    directories (the root's, `modules/**`, those of the gitlinks its indexes record),
    each held once, at most GITLINKS_BUDGET of them; `moved`: where what it held went."""

    def __init__(self, root: str, root_fd: int) -> None:
        self.root = root
        self.root_fd = root_fd
        self.left = GITLINKS_BUDGET
        self.modules_left = MODULES_BUDGET
        self.seen: set[tuple[int, int]] = set()
        self.moved: list[str] = []

    def repository(
        self, gitdir: int, where: str, worktree: int, shown: str, held: list[str]
    ) -> None:
        """Hold what git would run of the git directory open at `gitdir` (shown as
        `where`), of its submodules' below it, and of the gitlinks its index records
        below `worktree` (shown as `shown`: "" for the root, else ending in "/")."""
        info = os.fstat(gitdir)
        if (info.st_dev, info.st_ino) in self.seen:
            return
        self.seen.add((info.st_dev, info.st_ino))
        if self.left <= 0:
            raise _Whole  # more than can be looked at: none of it is trusted
        self.left -= 1
        held += _hold_in(gitdir, where, self.moved)
        self.modules(gitdir, f"{where}/modules", "modules", held)
        for path in _index_gitlinks(gitdir):
            self.gitlink(worktree, shown, path, held)

    def modules(self, parent: int, where: str, name: str, held: list[str]) -> None:
        """Hold what git would run in each submodule git directory below `name` (a
        directory of `parent`, shown as `where`), as trust/protect.py finds them;
        anything there but a directory (a link git would follow to a git directory
        elsewhere) is held whole."""
        try:
            info = os.lstat(name, dir_fd=parent)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            self.aside(parent, name, where, held)
            return
        directory = os.open(name, _DIR, dir_fd=parent)
        try:
            with os.scandir(directory) as listed:
                children = [(e.name, e.is_dir(follow_symlinks=False)) for e in listed]
            for child, is_dir in children:
                shown = f"{where}/{child}"
                if not is_dir:
                    self.aside(directory, child, shown, held)
                    continue
                if self.modules_left <= 0:
                    raise _Whole
                self.modules_left -= 1
                fd = os.open(child, _DIR, dir_fd=directory)
                try:
                    if any(_exists(fd, m) for m in ("HEAD", "objects", "config", "hooks")):
                        # Its index is read when a gitlink leads here (its worktree).
                        held += _hold_in(fd, shown, self.moved)
                        self.modules(fd, f"{shown}/modules", "modules", held)
                    else:  # a part of a name with "/" in it
                        self.modules(directory, shown, child, held)
                finally:
                    os.close(fd)
        finally:
            os.close(directory)

    def gitlink(self, worktree: int, shown: str, path: bytes, held: list[str]) -> None:
        """The repository at `path` (a gitlink of the index of the worktree open at
        `worktree`, shown as `shown`), when it is there: git status runs git in it."""
        parts = path.split(b"/")
        if any(part in (b"", b".", b"..", b".git") for part in parts):
            return  # git records no such path
        directory = os.dup(worktree)
        try:
            for part in parts:
                try:
                    below = os.open(part, _DIR, dir_fd=directory)
                except OSError:
                    return  # not a directory there (git goes beneath no link): not populated
                os.close(directory)
                directory = below
            where = f"{shown}{os.fsdecode(path)}"
            try:
                info = os.lstat(".git", dir_fd=directory)
            except FileNotFoundError:
                return
            if stat.S_ISDIR(info.st_mode):
                gitdir = os.open(".git", _DIR, dir_fd=directory)
                try:
                    self.repository(gitdir, f"{where}/.git", directory, f"{where}/", held)
                finally:
                    os.close(gitdir)
                return
            target = _pointer(directory) if stat.S_ISREG(info.st_mode) else None
            module = self.module_gitdir(where, target) if target is not None else None
            if module is None:
                self.aside(directory, ".git", f"{where}/.git", held)
                return
            gitdir, module_where = module
            try:
                self.repository(gitdir, module_where, directory, f"{where}/", held)
            finally:
                os.close(gitdir)
        finally:
            os.close(directory)

    def module_gitdir(self, where: str, target: str) -> tuple[int, str] | None:
        """The git directory a gitlink's `gitdir:` file at `where` leads to: opened,
        and its path from the root (None unless it lies in the root's
        `.git/modules/`, every part of the way a directory)."""
        if os.path.isabs(target):
            target = os.path.relpath(os.path.normpath(target), self.root)
        else:
            target = os.path.normpath(os.path.join(where, target))
        parts = target.split("/")
        if parts[:2] != [".git", "modules"] or len(parts) < 3 or ".." in parts:
            return None
        directory = os.dup(self.root_fd)
        for part in parts:
            try:
                below = os.open(part, _DIR, dir_fd=directory)
            except OSError:
                os.close(directory)
                return None
            os.close(directory)
            directory = below
        return directory, target

    def aside(self, directory: int, name: str, shown: str, held: list[str]) -> None:
        """Hold `name` in `directory` (shown as `shown`) whole, beside it."""
        aside = _free_name(directory, name + HELD)
        os.rename(name, aside, src_dir_fd=directory, dst_dir_fd=directory)
        held.append(shown)
        self.moved.append(f"{shown.rpartition('/')[0]}/{aside}".lstrip("/"))


def _pointer(directory: int) -> str | None:
    """Where the `.git` file in `directory` says the git directory is, as git reads it
    (`gitdir: `, CR and LF stripped at the end, a C string); None when it says none."""
    try:
        fd = os.open(
            ".git", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory
        )
    except OSError:
        return None
    try:
        data = os.read(fd, POINTER_LIMIT + 1)
    finally:
        os.close(fd)
    if len(data) > POINTER_LIMIT or not data.startswith(b"gitdir: "):
        return None
    value = data[len(b"gitdir: ") :].rstrip(b"\r\n").split(b"\0", 1)[0]
    return os.fsdecode(value) if value else None


def _index_gitlinks(gitdir: int) -> list[bytes]:
    """The paths the index of the git directory open at `gitdir` records as gitlinks
    ([] without an index). _Whole when there is one this cannot read: git would
    stop at a broken one, but a person may mend it."""
    try:
        fd = os.open(
            "index", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=gitdir
        )
    except FileNotFoundError:
        return []
    except OSError:
        raise _Whole from None  # a link, or what cannot be read
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > INDEX_LIMIT:
            raise _Whole
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    found = gitlinks(b"".join(chunks), _hash_size(gitdir))
    if found is None:
        raise _Whole
    return found


def _hash_size(gitdir: int) -> int:
    """The object names' size in the repository at `gitdir`: its (held) config's
    `extensions.objectformat` (sha256: 32 bytes), else sha1's 20."""
    try:
        fd = os.open("config", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=gitdir)
    except OSError:
        return 20
    try:
        pairs = read_config(fd) or []
    finally:
        os.close(fd)
    formats = [value.lower() for key, value in pairs if key.lower() == "extensions.objectformat"]
    return 32 if formats[-1:] == ["sha256"] else 20


def gitlinks(data: bytes, hash_size: int = 20) -> list[bytes] | None:
    """The paths an index file (`data`) records as gitlinks, in order; None when it is
    no index this reads. git's read-cache.c, versions 2 to 4: a header ("DIRC",
    version, entries), then each entry's 40 bytes of stat data (the mode at 24), the
    object name, 16 bits of flags (0x4000: 16 more, version 3 on), its path: NUL
    ended and padded to 8 bytes (2, 3), or prefix-compressed (4: a varint of bytes to
    drop from the previous path, then the rest, NUL ended, unpadded)."""
    import struct

    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return None
    found: list[bytes] = []
    offset, previous = 12, b""
    for _ in range(count):
        start = offset
        fixed = 40 + hash_size + 2
        if offset + fixed > len(data):
            return None
        (mode,) = struct.unpack(">I", data[offset + 24 : offset + 28])
        (flags,) = struct.unpack(">H", data[offset + fixed - 2 : offset + fixed])
        offset += fixed
        if flags & 0x4000:
            if version < 3:
                return None
            offset += 2
        if version == 4:
            drop, offset = _varint(data, offset)
            end = data.find(b"\0", offset)
            if drop < 0 or drop > len(previous) or end < 0:
                return None
            path = previous[: len(previous) - drop] + data[offset:end]
            offset = end + 1
        else:
            end = data.find(b"\0", offset)
            if end < 0:
                return None
            path = data[offset:end]
            offset = start + ((end - start + 8) & ~7)
        if offset > len(data):
            return None
        previous = path
        if mode & 0o170000 == GITLINK:
            found.append(path)
    return found


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """git's varint.c decode_varint at `offset`: (value, offset after it); value -1
    when it runs past the data."""
    if offset >= len(data):
        return -1, offset
    byte = data[offset]
    offset += 1
    value = byte & 127
    while byte & 128:
        if offset >= len(data) or value > 1 << 40:
            return -1, offset
        value += 1
        byte = data[offset]
        offset += 1
        value = (value << 7) + (byte & 127)
    return value, offset


def _hold_in(gitdir: int, where: str, moved: list[str]) -> list[str]:
    """Hold what git would run in the git directory open at `gitdir` (shown as
    `where`, relative to the root): what was held; where each went is added to
    `moved` (a name free in the git directory: one the command took is left alone)."""
    held: list[str] = []

    def aside(name: str) -> None:
        free = _free_name(gitdir, name + HELD)
        os.rename(name, free, src_dir_fd=gitdir, dst_dir_fd=gitdir)
        moved.append(f"{where}/{free}")

    for name in HELD_FILES:
        if _exists(gitdir, name):
            aside(name)
            held.append(f"{where}/{name}")
    try:
        hooks = os.open("hooks", _DIR, dir_fd=gitdir)
    except OSError:
        hooks = -1
        if _exists(gitdir, "hooks"):  # a link or a file where the hooks should be
            aside("hooks")
            held.append(f"{where}/hooks")
    if hooks >= 0:
        try:
            with os.scandir(hooks) as listed:
                entries = [(e.name, e.is_file(follow_symlinks=False)) for e in listed]
            bad = offending_hooks(entries)
            if bad:
                directory = _free_name(gitdir, "hooks" + HELD)
                os.mkdir(directory, 0o700, dir_fd=gitdir)
                moved.append(f"{where}/{directory}/")
                held_hooks = os.open(directory, _DIR, dir_fd=gitdir)
                try:
                    for name in bad:
                        os.rename(name, name, src_dir_fd=hooks, dst_dir_fd=held_hooks)
                        held.append(f"{where}/hooks/{name}")
                finally:
                    os.close(held_hooks)
        finally:
            os.close(hooks)
    if _exists(gitdir, "config"):
        if not stat.S_ISREG(os.lstat("config", dir_fd=gitdir).st_mode):
            aside("config")
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
            aside("config")
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
    """The one line a result carries when `hold` held something (modes.py's text).
    Names are the command's (a hook's may hold a newline or a terminal's escape): each
    is shown escaped, so that the line stays one and moves no cursor."""
    from ..modes import held_repository_cause

    return held_repository_cause(
        _shown(root), tuple(map(_shown, held)), tuple(map(_shown, moved_to))
    )


def _shown(text: str) -> str:
    """`text`, each character that is not printable (or a backslash) escaped as
    Python would write it."""
    return "".join(c if c.isprintable() and c != "\\" else ascii(c)[1:-1] for c in text)

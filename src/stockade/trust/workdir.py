"""Where a call's working directory really leads: judged once through a descriptor
(`judge_workdir`), and entered as that same directory (`enter_judged`). An asked call
is judged before the question too: the person is shown the real path (and
`workdir_note` when it is not where the spelling reads), and the start is bound to
what was shown (`check_approved`). Standard library.

A working directory is chosen by the model or a client, so it is attacker input: its
spelling (`..`, a symlink, `/proc/self/root/...`) is never judged, only the directory
an `O_PATH` descriptor on it names, by its real path and its identity.
"""

from __future__ import annotations

import os
import sys

from ..errors import CommandStartError, brief
from .check import is_under

# Opening a directory to judge or enter it: no read access, no following of a final
# symlink when entering (the judged real path has none), closed across every exec.
_JUDGE = (os.O_PATH if hasattr(os, "O_PATH") else os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC


class JudgedDirectory:
    """A working directory as judged: real (str: its real path when judged), identity
    (tuple[int, int]: its device and inode)."""

    __slots__ = ("identity", "real")

    def __init__(self, real: str, identity: tuple[int, int]) -> None:
        self.real, self.identity = real, identity

    def __repr__(self) -> str:
        return f"JudgedDirectory({self.real!r})"


def _real_path(fd: int, spelled: str) -> str:
    if sys.platform == "linux":
        return os.readlink(f"/proc/self/fd/{fd}")
    import fcntl

    getpath = getattr(fcntl, "F_GETPATH", None)
    if getpath is not None:  # macOS
        return os.fsdecode(fcntl.fcntl(fd, getpath, bytes(1024)).rstrip(b"\0"))
    return os.path.realpath(spelled)


def _unusable(spelled: str, error: OSError) -> CommandStartError:
    return CommandStartError(
        f"could not start the command in {brief(spelled)}: {error.strerror or error}"
    )


def judge_workdir(path: str) -> JudgedDirectory:
    """The directory `path` leads to now (symlinks and `..` followed, as chdir would):
    its real path and identity, read from one descriptor. CommandStartError when it is
    no directory this process can enter."""
    try:
        fd = os.open(path, _JUDGE)
    except OSError as error:
        raise _unusable(path, error) from None
    try:
        info = os.fstat(fd)
        real = _real_path(fd, path)
    except OSError as error:
        raise _unusable(path, error) from None
    finally:
        os.close(fd)
    return JudgedDirectory(real, (info.st_dev, info.st_ino))


def spawn_cwd(fd: int, judged: JudgedDirectory) -> str:
    """What a spawn's `cwd` names to enter the directory `fd` holds (`enter_judged`):
    the descriptor itself where the platform can name it, else the judged real path
    (its identity was just checked)."""
    return f"/proc/self/fd/{fd}" if sys.platform == "linux" else judged.real


def enter_judged(judged: JudgedDirectory) -> int:
    """A descriptor on the judged directory, for a spawn to enter (`spawn_cwd`):
    CommandStartError when what its real path names now is another directory (renamed
    or replaced since it was judged). The caller closes it."""
    flags = _JUDGE | os.O_NOFOLLOW
    try:
        fd = os.open(judged.real, flags)
    except OSError as error:
        raise _unusable(judged.real, error) from None
    try:
        info = os.fstat(fd)
    except OSError as error:
        os.close(fd)
        raise _unusable(judged.real, error) from None
    if (info.st_dev, info.st_ino) != judged.identity:
        os.close(fd)
        raise CommandStartError(
            f"could not start the command in {judged.real}: the directory there was "
            "replaced after the call was checked; nothing ran, try again"
        )
    return fd


def workdir_note(named: str | None, spelled: str, real: str, root: str) -> str | None:
    """One line for a person asked about a command whose working directory is not
    where its spelling reads (`spelled`, the model's `named` joined to the real
    `root`): a symlink on the way, or a directory outside the workspace root; None
    when it is just where it reads, inside the root."""
    through = real != spelled
    outside = not is_under(real, root)
    if not (through or outside):
        return None
    said = "the workspace root" if named is None else f'the workdir "{named}"'
    where = f", outside the workspace root {root}" if outside else ""
    if through:
        return f"{said} leads through a symlink to {real}{where}"
    return f"{said} is {real}{where}"


def check_approved(
    judged: JudgedDirectory, spelled: str, real: str, identity: tuple[int, int]
) -> None:
    """The start of an asked call: CommandStartError unless `spelled` leads now to the
    directory the person was shown (its real path `real` and its `identity`), so an
    answer never runs a command somewhere it was not shown (a directory swapped for a
    symlink, or renamed and replaced, while the person read the question)."""
    if judged.real == real and judged.identity == identity:
        return
    now = judged.real if judged.real != real else "another directory of the same name"
    raise CommandStartError(
        f"the working directory {brief(spelled)} changed after the person was asked: it "
        f"was {real} and now leads to {now}; call again to be asked anew"
    )

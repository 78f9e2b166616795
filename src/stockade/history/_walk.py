"""Looking at a root without ever leaving it: directories opened one component at a time
with O_NOFOLLOW from the root's descriptor, files read through O_NOFOLLOW descriptors,
links read as links; a path, or a whole subtree, turned into entries (contents stored).
"""

from __future__ import annotations

import collections
import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterator

import attrs

from ..reprs import fields_repr
from ..trust import (
    GITDIR_PROTECTED,
    HOME_PROTECTED,
    ROOT_PROTECTED,
    XDG_PROTECTED,
    placeholder_text,
)
from ._ignore import GITIGNORE, IgnoreRules
from ._index import Known, StatKey, stamp_of, stat_key
from ._inotify import (
    DIRECTORY_MASK,
    FILE_MASK,
    IN_MASK_ADD,
    SHARED_FILE_MASK,
    TRUSTED_FILESYSTEMS,
    Inotify,
    filesystem_type,
    watch_path,
)
from ._model import (
    CHANGING,
    NO_ROOM,
    NOT_REGULAR,
    OVER_BUDGET,
    SPENT,
    UNREADABLE,
    Entry,
    parent_of,
)
from ._store import SnapshotStore
from ._watches import Nominations, Watches

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_GONE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})
_IGNORE_FILE_LIMIT = 1 << 20
# The most paths a root's history leaves unseen as the sandbox's placeholders; past it
# one is recorded as any other entry. A root has some twenty protected paths (a few
# more with nested repositories), so only a command's own imitations pass it.
UNSEEN_LIMIT = 1024
# The names the sandbox makes placeholders under by default: left unseen past the limit
# too (up to twice it), so a command's thousand imitations cannot make the real ones
# count as changes.
_PLACEHOLDER_NAMES = frozenset(
    name.rstrip("/").rpartition("/")[2]
    for name in (*ROOT_PROTECTED, *GITDIR_PROTECTED, *HOME_PROTECTED, *XDG_PROTECTED)
)


class WatchingStopped(Exception):
    """Watching this root cannot be trusted or kept up; the tracker falls back to scans."""


class TooManyPaths(Exception):
    """A look listed more names than it may, or the index would pass the paths budget:
    the look stops there, before it reads or holds any more (the tracker decides)."""


def join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


class Beneath:
    """Directories of a root by relative path, each reached from the root's descriptor one
    component at a time without following a symlink; a few are kept open."""

    def __init__(self, root_fd: int, capacity: int = 64) -> None:
        self.root_fd = root_fd
        self._open: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._capacity = capacity

    def dir(self, path: str) -> int | None:
        """The directory `path`'s descriptor, or None when some component of it is missing
        or not a directory (a symlink is never followed)."""
        if not path:
            return self.root_fd
        fd = self._open.get(path)
        if fd is not None:
            self._open.move_to_end(path)
            return fd
        # Down from the deepest directory kept open, one component at a time: a loop, not
        # a recursion (a command may nest directories thousands deep).
        missing = [path]
        above = parent_of(path)
        while above and above not in self._open:
            missing.append(above)
            above = parent_of(above)
        fd = self._open[above] if above else self.root_fd
        if above:
            self._open.move_to_end(above)
        for step in reversed(missing):
            try:
                opened = os.open(step.rpartition("/")[2], DIRECTORY_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in _GONE or error.errno == errno.EACCES:
                    return None
                raise
            self._open[step] = fd = opened
            while len(self._open) > self._capacity:
                _, old = self._open.popitem(last=False)
                os.close(old)
        return fd

    def lstat(self, path: str) -> os.stat_result | None:
        parent = self.dir(parent_of(path))
        if parent is None:
            return None
        try:
            return os.stat(path.rpartition("/")[2], dir_fd=parent, follow_symlinks=False)
        except OSError as error:
            if error.errno in _GONE:
                return None
            raise

    def forget(self) -> None:
        """Close every kept descriptor (the tree may have moved since they were opened)."""
        for fd in self._open.values():
            os.close(fd)
        self._open.clear()


@attrs.define
class Watcher:
    """The inotify instance of a root and which watch stands for which path."""

    __repr__ = fields_repr

    inotify: Inotify
    # The most paths the pending nominations name before they become one full look
    # (bounded by the paths budget), so millions of events never become millions of
    # names held between boundaries.
    limit: int | None = None
    watches: Watches = attrs.field(factory=Watches)
    pending: Nominations = attrs.field(factory=Nominations)

    def drain(self) -> None:
        events = self.inotify.read()
        if events:
            self.pending.merge(self.watches.nominate(events), self.limit)

    def take(self) -> Nominations:
        self.drain()
        taken, self.pending = self.pending, Nominations()
        return taken

    def _add(self, path: bytes, mask: int) -> int | None:
        try:
            return self.inotify.add(path, mask)
        except OSError as error:
            if error.errno == errno.ENOSPC:
                raise WatchingStopped(
                    "the kernel's inotify watch limit was reached (fs.inotify.max_user_watches)"
                ) from None
            if error.errno in _GONE or error.errno == errno.EACCES:
                return None  # gone or unreadable since it was listed: its parent's events follow
            raise

    def _stand(self, path: str, wd: int, *, directory: bool) -> None:
        freed = self.watches.add(path, wd, directory=directory)
        if freed is not None:
            self.inotify.remove(freed)

    def watch_directory(self, fd: int, path: str) -> None:
        wd = self._add(watch_path(fd), DIRECTORY_MASK)
        if wd is not None:
            self._stand(path, wd, directory=True)

    def watch_file(self, directory_fd: int, name: str, path: str) -> None:
        # IN_MASK_ADD: another name of a file already watched widely keeps its wide mask.
        wd = self._add(watch_path(directory_fd, name), FILE_MASK | IN_MASK_ADD)
        if wd is not None:
            self._stand(path, wd, directory=False)

    def share_file(self, directory_fd: int, name: str, path: str) -> None:
        """`path` has other names (hard links): hear of writes through any of them."""
        wd = self.watches.of_path.get(path)
        if wd is None or wd in self.watches.shared:
            return
        again = self._add(watch_path(directory_fd, name), SHARED_FILE_MASK | IN_MASK_ADD)
        if again is not None:
            self._stand(path, again, directory=False)
            self.watches.shared.add(again)

    def forget(self, path: str) -> None:
        wd = self.watches.forget(path)
        if wd is not None:
            self.inotify.remove(wd)

    def close(self) -> None:
        self.inotify.close()


@attrs.define
class Reading:
    """What one boundary may still read: content bytes left (`why` names the bound that
    ends it), and each hard-linked file read so far by its stat identity, so its other
    names are not read again (a command's one file with 100 names cost 100 reads)."""

    __repr__ = fields_repr

    left: int
    why: str = SPENT
    linked: dict[StatKey, Known] = attrs.field(factory=dict)

    @classmethod
    def of(cls, budget: int, store: SnapshotStore | None) -> Reading:
        """`budget` bytes, or less where the store's filesystem has less room: half of
        it, since the store's write-ahead log holds a boundary's content once more
        until it is checkpointed."""
        room = max(0, store.room() // 2) if store is not None else budget
        return cls(room, NO_ROOM) if room < budget else cls(budget)


@attrs.define
class Found:
    """One look at a subtree: every path in it now, and the paths left out as ignored."""

    __repr__ = fields_repr

    entries: dict[str, Known] = attrs.field(factory=dict)
    ignored: set[str] = attrs.field(factory=set)


@attrs.define
class Looker:
    """Turns what is on disk into entries, storing contents the store lacks; adds the
    watches of what it looks at (when watching), each before the look it guards."""

    __repr__ = fields_repr

    beneath: Beneath
    rules: IgnoreRules
    store: SnapshotStore | None
    budget: int
    prior: Callable[[str], Known | None]
    reading: Reading | None = None
    watcher: Watcher | None = None
    root_dev: int = 0
    trusted_devices: set[int] = attrs.field(factory=set)
    # The most names `subtree` may list (None: no bound) and how many it has listed:
    # past the bound it raises TooManyPaths at once, never reading the rest.
    limit: int | None = None
    listed: int = 0
    # What looks like a placeholder is left unseen and named here, for the tracker to
    # look at again at every boundary (None: nothing is left unseen).
    unseen: set[str] | None = None

    def path(self, path: str) -> Known | None:
        """`path`'s state now (its parent known to be a looked-at directory); None when it
        is not there, or is ignored. A directory's inside is not looked at."""
        st = self.beneath.lstat(path)
        if st is None or self.ignored(path, st):
            return None
        directory = self.beneath.dir(parent_of(path))
        if directory is None:
            return None
        return self._entry(directory, path.rpartition("/")[2], path, st)

    def ignored(self, path: str, st: os.stat_result) -> bool:
        return self.rules.ignored(path, stat.S_ISDIR(st.st_mode))

    def subtree(self, top: str) -> Found:
        """Every path in `top` (itself included, unless it is the root) as it is now."""
        found = Found()
        if top:
            known = self.path(top)
            if known is None:
                st = self.beneath.lstat(top)
                if st is not None and self.ignored(top, st):
                    found.ignored.add(top)  # a placeholder left unseen is not left out
                return found
            found.entries[top] = known
            if known.entry.kind != "dir":
                return found
        stack = [top]
        while stack:
            directory = stack.pop()
            fd = self.beneath.dir(directory)
            if fd is None:
                continue  # gone or replaced since: the events of that come next
            self._check_device(fd)
            if self.watcher is not None:
                self.watcher.watch_directory(fd, directory)
            if not self.rules.record_ignored:
                self.rules = self.rules.with_file(directory, self._ignore_texts(fd, directory))
            for item in _listing(fd):
                self.listed += 1
                if self.limit is not None and self.listed > self.limit:
                    raise TooManyPaths
                path = join(directory, item.name)
                is_dir = item.is_dir(follow_symlinks=False)
                if self.rules.ignored(path, is_dir):
                    found.ignored.add(path)
                    continue
                try:
                    st = os.stat(item.name, dir_fd=fd, follow_symlinks=False)
                except OSError as error:
                    if error.errno in _GONE:
                        continue
                    raise
                known = self._entry(fd, item.name, path, st)
                if known is None:
                    continue
                found.entries[path] = known
                if known.entry.kind == "dir":
                    stack.append(path)
        return found

    # --- one entry -----------------------------------------------------------------------------

    def _entry(self, fd: int, name: str, path: str, st: os.stat_result) -> Known | None:
        mode = st.st_mode
        if st.st_mtime_ns == 0 and self._unseen(fd, name, path, st):
            return None  # the sandbox's own, made for a call and removed after: not a change
        if stat.S_ISDIR(mode):
            return Known(Entry("dir", stat.S_IMODE(mode)), stat_key(st), time.time_ns())
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(os.fsencode(name), dir_fd=fd)
            except OSError as error:
                if error.errno in _GONE or error.errno == errno.EINVAL:
                    return None  # replaced since it was listed: its events follow
                raise
            return Known(Entry("link", 0, len(target), target=target), stat_key(st), 0)
        if not stat.S_ISREG(mode):
            entry = Entry("other", stat.S_IMODE(mode), unrecorded=NOT_REGULAR, stamp=stamp_of(st))
            return Known(entry, stat_key(st), time.time_ns())
        if self.watcher is not None:
            # The watch first, then the look: a link or write after this is an event.
            self.watcher.watch_file(fd, name, path)
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError as error:
                if error.errno in _GONE:
                    return None
                raise
            if not stat.S_ISREG(st.st_mode):
                return self._entry(fd, name, path, st)
            if st.st_nlink > 1:
                self.watcher.share_file(fd, name, path)
        prior = self.prior(path)
        if prior is not None and (prior.still(st) or _left_unread(prior, st)):
            return prior
        return read_file(fd, name, st, self.budget, self.store, self.reading)

    def _unseen(self, fd: int, name: str, path: str, st: os.stat_result) -> bool:
        """Whether `path` (modified at 1970-01-01) is left unseen as a placeholder: a
        command can make one look so (`touch -d @0`), so each is named in `unseen` and
        looked at again at every boundary; what it holds by then is recorded there."""
        if self.unseen is None:
            return False
        held = len(self.unseen)
        if held >= 2 * UNSEEN_LIMIT or (held >= UNSEEN_LIMIT and name not in _PLACEHOLDER_NAMES):
            return False
        if self.prior(path) is not None:
            # The sandbox makes one only where nothing is: a path the history holds that
            # now looks like one was emptied and dated by a command, a change.
            return False
        if not is_placeholder(fd, name, st):
            return False
        self.unseen.add(path)
        return True

    def _check_device(self, fd: int) -> None:
        if self.watcher is None:
            return
        device = os.fstat(fd).st_dev
        if device in self.trusted_devices:
            return
        kind = filesystem_type(fd)
        if kind not in TRUSTED_FILESYSTEMS:
            raise WatchingStopped(
                f"part of the root is on a filesystem (type {kind:#x}) whose changes "
                "inotify may not hear of (network, FUSE)"
            )
        self.trusted_devices.add(device)

    def _ignore_texts(self, fd: int, directory: str) -> list[bytes]:
        # Only the `.gitignore` files, which are in the tree and so recorded: never
        # `.git/info/exclude`, which a command may write unseen (`.git` is not recorded)
        # to make a later harness drop the paths it names and not record their changes.
        own = read_small(fd, GITIGNORE)
        return [] if own is None else [own]


def _left_unread(prior: Known, st: os.stat_result) -> bool:
    """A file a boundary's byte budget or the store's room left unread stays so until it
    changes: read now, an unchanged file would look modified (its past is unknown)."""
    return prior.entry.unrecorded in (SPENT, NO_ROOM) and prior.key == stat_key(st)


def _listing(fd: int) -> Iterator[os.DirEntry[str]]:
    """The entries of directory `fd`, one at a time (a directory of millions is never read
    whole before the budget is checked); they end early when it went or became unreadable
    (its parent's events follow)."""
    try:
        with os.scandir(fd) as entries:
            yield from entries
    except OSError as error:
        if error.errno in _GONE or error.errno == errno.EACCES:
            return
        raise


def is_placeholder(fd: int, name: str, st: os.stat_result) -> bool:
    """Whether `name` (modified at 1970-01-01, `st`) is one of the placeholders the
    sandbox makes to mount a cover over a missing protected path: an empty directory,
    or a file holding nothing or exactly its name's placeholder text, marked by a
    modification time of 0 (sandbox/placeholders.py removes only those too)."""
    if stat.S_ISDIR(st.st_mode):
        try:
            handle = os.open(name, DIRECTORY_FLAGS, dir_fd=fd)
        except OSError:
            return False
        try:
            return not os.listdir(handle)
        except OSError:
            return False
        finally:
            os.close(handle)
    if not stat.S_ISREG(st.st_mode):
        return False
    text = placeholder_text(name).encode()
    if st.st_size == 0:
        return True
    if st.st_size != len(text):
        return False
    return read_small(fd, name) == text


def read_small(fd: int, name: str) -> bytes | None:
    """A small file's bytes (an ignore file: never through a symlink, as git reads it)."""
    try:
        handle = os.open(name, FILE_FLAGS, dir_fd=fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        return os.read(handle, _IGNORE_FILE_LIMIT)
    except OSError:
        return None
    finally:
        os.close(handle)


def _read_all(handle: int, limit: int) -> tuple[bytes | None, int]:
    """The file's bytes (None past `limit`) and how many were read."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(handle, 1 << 20)
        if not chunk:
            return b"".join(chunks), total
        total += len(chunk)
        if total > limit:
            return None, total
        chunks.append(chunk)


def read_file(
    fd: int,
    name: str,
    st: os.stat_result,
    budget: int,
    store: SnapshotStore | None,
    reading: Reading | None = None,
) -> Known | None:
    """A regular file's entry, its content stored unless the store has it (`store` None:
    only hashed). Never through a symlink; never more than `budget` bytes, nor more than
    `reading` has left (its other names, when hard-linked, are not read again)."""
    mode = stat.S_IMODE(st.st_mode)
    if st.st_size > budget:
        entry = Entry("file", mode, st.st_size, unrecorded=OVER_BUDGET, stamp=stamp_of(st))
        return Known(entry, stat_key(st), time.time_ns())
    if reading is not None:
        if st.st_nlink > 1 and (seen := reading.linked.get(stat_key(st))) is not None:
            return seen
        if st.st_size > reading.left:
            entry = Entry("file", mode, st.st_size, unrecorded=reading.why, stamp=stamp_of(st))
            return Known(entry, stat_key(st), time.time_ns())
    for _ in range(3):
        checked = time.time_ns()
        try:
            handle = os.open(name, FILE_FLAGS, dir_fd=fd)
        except OSError as error:
            if error.errno in _GONE:
                return None
            entry = Entry("file", mode, st.st_size, unrecorded=UNREADABLE, stamp=stamp_of(st))
            return Known(entry, stat_key(st), checked)
        limit = budget if reading is None else min(budget, reading.left)
        try:
            first = os.fstat(handle)
            if not stat.S_ISREG(first.st_mode):
                return None  # replaced since it was listed: its events follow
            data, spent = _read_all(handle, limit)
            last = os.fstat(handle)
        finally:
            os.close(handle)
        if reading is not None:
            reading.left = max(0, reading.left - spent)  # what was read counts, kept or not
        if data is None:
            why = OVER_BUDGET if reading is None or limit == budget else reading.why
            entry = Entry("file", mode, last.st_size, unrecorded=why, stamp=stamp_of(last))
            return Known(entry, stat_key(last), checked)
        if stat_key(first) == stat_key(last):
            digest = hashlib.sha256(data).hexdigest()
            if store is not None and not store.has(digest):
                store.put(digest, data)
            entry = Entry("file", stat.S_IMODE(last.st_mode), len(data), digest)
            known = Known(entry, stat_key(last), checked)
            if reading is not None and last.st_nlink > 1:
                reading.linked[stat_key(last)] = known
            return known
    entry = Entry("file", mode, st.st_size, unrecorded=CHANGING, stamp=stamp_of(st))
    return Known(entry, None, time.time_ns())

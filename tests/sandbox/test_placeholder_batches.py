"""Placeholders made first and held in batches (`placeholders.Parents`): what a
confined command in another call can put at a placeholder's name, or do to its
directory between a batch's holds, and every error path of making a directory first,
on a real filesystem. Two opens of one path stand for two processes."""

from __future__ import annotations

import errno
import fcntl
import os
import socket

import pytest

from stockade.sandbox import placeholders


def _fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture
def no_fd_leak():
    """The descriptors open before the test are all that is open after it."""
    before = _fds()
    yield
    assert _fds() - before == set()


# --- what stands at a directory placeholder's name -----------------------------------


def test_a_fifo_at_a_directory_placeholders_name_is_refused_and_kept(tmp_path, no_fd_leak):
    fifo = tmp_path / ".claude"
    os.mkfifo(fifo)
    with pytest.raises(placeholders.NotAPlaceholder):
        placeholders.hold(str(fifo), directory=True)
    assert os.path.exists(fifo) and not fifo.is_dir()
    assert placeholders.sweep(str(fifo)) and os.path.lexists(fifo)


def test_a_socket_at_a_directory_placeholders_name_is_refused_and_kept(tmp_path, no_fd_leak):
    path = tmp_path / ".codex"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(OSError):  # ENXIO: a socket cannot be opened
            placeholders.hold(str(path), directory=True)
        assert placeholders.sweep(str(path))
        assert os.path.lexists(path)
    finally:
        server.close()


@pytest.mark.parametrize("dangling", [False, True])
def test_a_link_at_a_directory_placeholders_name_makes_nothing_where_it_points(
    tmp_path, no_fd_leak, dangling
):
    """mkdir at a name a link holds fails (EEXIST, dangling or not): the make-first
    branch makes nothing at the link's target and holds nothing."""
    elsewhere = tmp_path / "elsewhere"
    if not dangling:
        elsewhere.mkdir()
    link = tmp_path / "root" / ".vscode"
    link.parent.mkdir()
    link.symlink_to(elsewhere / "target")
    with pytest.raises(placeholders.NotAPlaceholder):
        placeholders.hold(str(link), directory=True)
    assert not os.path.lexists(elsewhere / "target")
    assert os.path.islink(link)
    assert placeholders.sweep(str(link)) and os.path.islink(link)


def test_a_regular_file_at_a_directory_placeholders_name_is_held_unmarked_and_kept(
    tmp_path, no_fd_leak
):
    """Whatever regular file stands there is held as it is (the guard judged it): not
    marked, and not removed, even empty."""
    path = tmp_path / ".idea"
    path.write_text("")
    os.utime(path, (1000, 1000))
    fd = placeholders.hold(str(path), directory=True)
    assert fd is not None
    os.close(fd)
    assert os.stat(path).st_mtime_ns == 1000 * 10**9
    assert placeholders.sweep(str(path)) and path.is_file()


def test_the_users_own_empty_directory_is_not_marked_by_a_make_first(tmp_path, no_fd_leak):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    os.utime(hooks, (1000, 1000))
    fd = placeholders.hold(str(hooks), directory=True)
    assert fd is not None
    os.close(fd)
    assert os.stat(hooks).st_mtime_ns == 1000 * 10**9
    assert placeholders.sweep(str(hooks)) and hooks.is_dir()


# --- every error path of making a directory first ------------------------------------


def _fail_open_of(name: str, error: int, monkeypatch, then=None):
    """os.open of `name` (relative to a dir_fd) fails with `error`, after `then`."""
    real = os.open

    def failing(path, flags, mode=0o777, *, dir_fd=None):
        if path == name and dir_fd is not None:
            if then is not None:
                then(dir_fd)
            raise OSError(error, os.strerror(error), path)
        return real(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", failing)


@pytest.mark.parametrize(
    "error", [errno.EMFILE, errno.ENFILE, errno.EACCES, errno.ELOOP, errno.ENOTDIR]
)
def test_an_open_failing_after_the_mkdir_leaks_no_descriptor(
    tmp_path, monkeypatch, no_fd_leak, error
):
    path = tmp_path / ".claude"
    _fail_open_of(".claude", error, monkeypatch)
    with pytest.raises(OSError) as raised:
        placeholders.hold(str(path), directory=True)
    assert raised.value.errno == error


def test_a_directory_removed_between_mkdir_and_open_leaks_nothing(
    tmp_path, monkeypatch, no_fd_leak
):
    """Another call removes the directory just made (ENOENT on the open): nothing is
    held, no descriptor leaks, the caller is told (and retries)."""
    path = tmp_path / ".claude"
    _fail_open_of(
        ".claude", errno.ENOENT, monkeypatch, then=lambda d: os.rmdir(".claude", dir_fd=d)
    )
    with pytest.raises(FileNotFoundError):
        placeholders.hold(str(path), directory=True)
    assert not os.path.lexists(path)


def test_a_link_swapped_in_between_mkdir_and_open_is_not_followed(tmp_path, no_fd_leak):
    """The directory just made is replaced by a link before it is opened: the open
    (O_NOFOLLOW) refuses it, nothing is marked where it points, no descriptor leaks."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.utime(elsewhere, (1000, 1000))
    path = tmp_path / "root" / ".claude"
    path.parent.mkdir()
    real_mkdir = os.mkdir

    def mkdir_then_swap(name, mode=0o777, *, dir_fd=None):
        real_mkdir(name, mode, dir_fd=dir_fd)
        if name == ".claude":
            os.rmdir(name, dir_fd=dir_fd)
            os.symlink(elsewhere, name, dir_fd=dir_fd)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "mkdir", mkdir_then_swap)
        with pytest.raises(OSError) as raised:
            placeholders.hold(str(path), directory=True)
    assert raised.value.errno in (errno.ELOOP, errno.ENOTDIR)
    assert os.stat(elsewhere).st_mtime_ns == 1000 * 10**9


def test_a_fifo_swapped_in_between_mkdir_and_open_is_refused(tmp_path, no_fd_leak):
    path = tmp_path / ".claude"
    real_mkdir = os.mkdir

    def mkdir_then_swap(name, mode=0o777, *, dir_fd=None):
        real_mkdir(name, mode, dir_fd=dir_fd)
        if name == ".claude":
            os.rmdir(name, dir_fd=dir_fd)
            os.mkfifo(name, dir_fd=dir_fd)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "mkdir", mkdir_then_swap)
        with pytest.raises(OSError):
            placeholders.hold(str(path), directory=True)
    assert not path.is_dir()


@pytest.mark.parametrize("error", [errno.EACCES, errno.EROFS, errno.ENOSPC, errno.EMFILE])
def test_a_failing_mkdir_leaks_nothing(tmp_path, monkeypatch, no_fd_leak, error):
    def failing(name, mode=0o777, *, dir_fd=None):
        raise OSError(error, os.strerror(error), name)

    monkeypatch.setattr(os, "mkdir", failing)
    with pytest.raises(OSError) as raised:
        placeholders.hold(str(tmp_path / ".claude"), directory=True)
    assert raised.value.errno == error


def test_a_failing_mark_closes_the_descriptor_that_made_it(tmp_path, monkeypatch, no_fd_leak):
    def failing(*args, **kwargs):
        raise OSError(errno.EPERM, "no", "utime")

    monkeypatch.setattr(os, "utime", failing)
    with pytest.raises(PermissionError):
        placeholders.hold(str(tmp_path / ".claude"), directory=True)


def test_a_made_directory_a_remover_has_locked_is_let_go(tmp_path, monkeypatch, no_fd_leak):
    """Another process sweeps the directory just made before it is locked here (it
    found it marked and empty, and holds it exclusively): this hold gives way (None),
    closing the descriptor that made it."""
    path = tmp_path / ".claude"
    remover: list[int] = []
    real_flock = fcntl.flock

    def swept_first(fd, operation):
        if not remover:
            remover.append(os.open(path, os.O_RDONLY))
            real_flock(remover[0], fcntl.LOCK_EX)
        return real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", swept_first)
    try:
        assert placeholders.hold(str(path), directory=True) is None
    finally:
        os.close(remover[0])


def test_a_made_directory_replaced_before_its_lock_is_not_held(tmp_path, monkeypatch, no_fd_leak):
    """Another process removes the directory just made and makes it again before this
    one locks it: the descriptor that made it names no placeholder any more, so it is
    closed and the one there now is held."""
    path = tmp_path / ".claude"
    real_flock = fcntl.flock
    replaced: list[int] = []

    def replaced_first(fd, operation):
        if not replaced:
            replaced.append(os.fstat(fd).st_ino)
            os.rmdir(path)
            os.mkdir(path)
        return real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", replaced_first)
    fd = placeholders.hold(str(path), directory=True)
    assert fd is not None
    try:
        held, there = os.fstat(fd), os.lstat(path)
        assert (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino)
    finally:
        os.close(fd)


def test_every_attempt_spent_closes_the_last_made_directory(tmp_path, monkeypatch, no_fd_leak):
    """A directory removed again at each try (_ATTEMPTS of them): None, and the
    descriptor the last make opened is closed."""
    path = tmp_path / ".claude"
    real_flock = fcntl.flock

    def always_replaced(fd, operation):
        os.rmdir(path)
        return real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", always_replaced)
    assert placeholders.hold(str(path), directory=True) is None


# --- a batch's directories -----------------------------------------------------------


def test_a_directory_swapped_for_a_link_between_holds_makes_nothing_outside(tmp_path, no_fd_leak):
    """Between two holds of one batch the directory is swapped for a link to another
    place holding a marked, empty placeholder: nothing is made, marked or removed
    there, by the holds or by the batch's sweeps."""
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    bait = elsewhere / ".codex"
    bait.mkdir()
    os.utime(bait, (0, 0))
    os.utime(elsewhere, (1000, 1000))
    parents = placeholders.Parents()
    held: list[int] = []
    try:
        fd = placeholders.hold(str(root / ".claude"), True, parents)
        assert fd is not None
        held.append(fd)
        root.rename(tmp_path / "away")
        root.symlink_to(elsewhere)
        for name, directory in ((".codex", True), (".idea", True), ("stockade.yml", False)):
            try:
                fd = placeholders.hold(str(root / name), directory, parents)
            except placeholders.StaleView:
                continue
            if fd is not None:
                held.append(fd)
        for fd in held:
            os.close(fd)
        held.clear()
        for name in (".claude", ".codex", ".idea", "stockade.yml"):
            placeholders.sweep(str(root / name), parents)
    finally:
        for fd in held:
            os.close(fd)
        parents.close()
    assert sorted(os.listdir(elsewhere)) == [".codex"]
    assert os.stat(elsewhere).st_mtime_ns == 1000 * 10**9
    assert bait.is_dir()
    # A new batch judges the directory afresh: a link, so nothing is made or removed.
    with pytest.raises(placeholders.NotAPlaceholder):
        placeholders.hold(str(root / ".vscode"), directory=True)
    placeholders.sweep_all([str(root / ".codex")])
    assert sorted(os.listdir(elsewhere)) == [".codex"]


def test_a_batch_leaks_no_descriptor_on_a_refusal(tmp_path, no_fd_leak):
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / ".git")
    with pytest.raises(placeholders.NotAPlaceholder):
        placeholders.hold_all(
            [(str(tmp_path / ".claude"), True), (str(tmp_path / "sub" / ".git"), True)]
        )
    placeholders.sweep_all([str(tmp_path / ".claude")])
    assert not os.path.lexists(tmp_path / ".claude")


def test_a_sweep_batch_with_no_descriptor_left_tries_later(tmp_path, monkeypatch, no_fd_leak):
    """EMFILE opening a directory: that sweep is not done (False), nothing leaks,
    and the batch's other directories are swept."""
    (tmp_path / "a").mkdir()
    made = [str(tmp_path / "a" / ".claude"), str(tmp_path / ".codex")]
    for fd in placeholders.hold_all([(path, True) for path in made]):
        os.close(fd)
    real = placeholders._open_parent

    def short(parent):
        if parent == str(tmp_path / "a"):
            raise OSError(errno.EMFILE, "Too many open files")
        return real(parent)

    monkeypatch.setattr(placeholders, "_open_parent", short)
    parents = placeholders.Parents()
    try:
        assert placeholders.sweep(made[0], parents) is False
        assert placeholders.sweep(made[1], parents) is True
    finally:
        parents.close()
    assert os.path.isdir(made[0]) and not os.path.lexists(made[1])
    monkeypatch.setattr(placeholders, "_open_parent", real)
    placeholders.sweep_all([made[0]])
    assert not os.path.lexists(made[0])


def test_the_leak_check_catches_a_make_that_keeps_its_descriptor(tmp_path, monkeypatch):
    """Control for the tests above: a deliberately weakened `_make` that keeps the
    descriptor when marking fails is caught by the same check."""
    import inspect
    import types

    source = inspect.getsource(placeholders)
    kept = "    except BaseException:\n        os.close(fd)\n        raise\n    if directory:"
    assert kept in source
    weakened = types.ModuleType("weakened_placeholders")
    weakened.__dict__["__name__"] = "stockade.sandbox.weakened_placeholders"
    weakened.__dict__["__package__"] = "stockade.sandbox"
    exec(
        compile(
            source.replace(kept, "    except BaseException:\n        raise\n    if directory:"),
            "weakened",
            "exec",
        ),
        weakened.__dict__,
    )

    def failing(*args, **kwargs):
        raise OSError(errno.EPERM, "no", "utime")

    monkeypatch.setattr(os, "utime", failing)
    before = _fds()
    with pytest.raises(PermissionError):
        weakened.hold(str(tmp_path / ".claude"), directory=True)
    leaked = _fds() - before
    assert leaked
    for fd in leaked:
        os.close(int(fd))


# --- a batch's directory changing under it -------------------------------------------


@pytest.mark.parametrize("directory", [True, False])
def test_a_directory_removed_during_a_batch_is_a_stale_view(tmp_path, no_fd_leak, directory):
    """The batch opened `a`; by the next hold in it, `a` is gone (another call removed
    it): the guard saw a disk that has changed, so StaleView (the caller guards again),
    as a hold judging `a` afresh says, not a bare ENOENT the caller reports as an
    unavailable sandbox."""
    a = tmp_path / "a"
    a.mkdir()
    parents = placeholders.Parents()
    try:
        fd = placeholders.hold(str(a / ".claude"), True, parents)
        assert fd is not None
        os.close(fd)
        placeholders.sweep(str(a / ".claude"))
        a.rmdir()
        with pytest.raises(placeholders.StaleView):
            placeholders.hold(
                str(a / ("stockade.yml" if not directory else ".codex")), directory, parents
            )
    finally:
        parents.close()
    # Unbatched, the same: the directory judged afresh is gone.
    with pytest.raises(placeholders.StaleView):
        placeholders.hold(str(a / ".codex"), directory)


def _swap_while_waiting(tmp_path, monkeypatch, link: bool):
    """hold_all over root's `.claude` and `.codex`, `.codex` locked by a remover: while
    the batch waits, root is moved away and a new `root` put in its place (a real
    directory, or a link to one), and the remover lets go."""
    import time

    root = tmp_path / "root"
    root.mkdir()
    (root / ".codex").mkdir()
    os.utime(root / ".codex", (0, 0))
    remover = os.open(root / ".codex", os.O_RDONLY)
    fcntl.flock(remover, fcntl.LOCK_EX)
    new = tmp_path / "new"
    new.mkdir()
    real_sleep = time.sleep

    def swap(seconds):
        if os.path.isdir(tmp_path / "away"):
            return real_sleep(seconds)
        root.rename(tmp_path / "away")
        if link:
            root.symlink_to(new)
        else:
            new.rename(root)
        os.close(remover)

    monkeypatch.setattr(time, "sleep", swap)
    wanted = [(str(root / ".claude"), True), (str(root / ".codex"), True)]
    return wanted, (new if link else root)


@pytest.mark.parametrize("link", [False, True])
def test_a_directory_replaced_while_a_batch_waits_is_a_stale_view(
    tmp_path, monkeypatch, no_fd_leak, link
):
    """A command that can write root's parent locks one placeholder (the batch waits
    up to 2 s for it) and swaps root meanwhile: the batch, still working in the
    directory it opened, would hold placeholders that the paths bwrap mounts over no
    longer name. Its end checks each directory afresh: StaleView (guard again), every
    hold let go."""
    wanted, now = _swap_while_waiting(tmp_path, monkeypatch, link)
    with pytest.raises(placeholders.StaleView):
        placeholders.hold_all(wanted)
    assert os.listdir(now) == []


def test_without_the_batch_end_check_the_holds_miss_their_paths(tmp_path, monkeypatch):
    """Control: with the batch's end check switched off, the same swap leaves holds
    on placeholders the paths no longer name (what bwrap mounts over is unheld)."""
    monkeypatch.setattr(placeholders.Parents, "check", lambda self: None)
    wanted, _ = _swap_while_waiting(tmp_path, monkeypatch, link=False)
    fds = placeholders.hold_all(wanted)
    try:
        assert not all(
            placeholders.still_held(fd, path) for fd, (path, _) in zip(fds, wanted, strict=True)
        )
    finally:
        for fd in fds:
            os.close(fd)


def test_a_batchs_directory_descriptors_reach_no_command(tmp_path):
    """The batch's descriptors stay open across the executor's waits, while other
    calls' runners start: close-on-exec, as every hold is."""
    (tmp_path / "a").mkdir()
    parents = placeholders.Parents()
    try:
        fd = placeholders.hold(str(tmp_path / "a" / ".claude"), True, parents)
        assert fd is not None
        os.close(fd)
        opened = [fd for fd in parents._fds.values() if fd is not None]
        assert opened and not any(os.get_inheritable(fd) for fd in opened)
    finally:
        parents.close()
    assert parents._fds == {}

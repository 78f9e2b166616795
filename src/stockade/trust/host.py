"""Facts about this host that every room asks: its shared temp roots, a workspace root's
pinned real path, stockade's own installation, roots too broad to take. Standard library only.
"""

from __future__ import annotations

import os
import sys

from ..errors import ConfigError, InvalidPolicy

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def host_temp_roots(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The host's shared temp roots: /tmp, and $TMPDIR when set, absolute and existing.

    A confined call writes them only where the composition restores them
    (`allow_host_temp`; else its session's private directory, `private_tmp`), but the
    trust base counts them writable always: another composition may restore them."""
    roots = ["/tmp"]
    tmpdir = environ.get("TMPDIR")
    if tmpdir and os.path.isabs(tmpdir) and os.path.isdir(tmpdir):
        roots.append(tmpdir)
    resolved = [os.path.realpath(root) for root in roots if os.path.isdir(root)]
    return tuple(dict.fromkeys(resolved))


def _real_directory(path: str) -> str | None:
    """The real path of the directory at `path` as the kernel resolved it (one open, one
    readlink: checked on every call, so cheaper than os.path.realpath's lstat per
    component), or None when it is not a directory or /proc cannot say."""
    o_path = getattr(os, "O_PATH", None)  # Linux only; elsewhere: os.path.realpath
    if o_path is None:
        return None
    try:
        fd = os.open(path, o_path | os.O_DIRECTORY | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    return real if real.startswith("/") and not real.endswith(" (deleted)") else None


def resolve_workspace_root(root: str) -> str:
    """`root`, checked: an existing directory reached through no symlink.

    Roots are pinned to their real path once, when a session opens or the CLI
    starts. A root that resolves elsewhere now had a component swapped for a
    symlink since (a command whose root lies under a writable directory can do
    that) and must not be granted: that would hand out wherever the link points.
    """
    real = _real_directory(root)
    if real is None:
        if not os.path.isdir(root):
            raise InvalidPolicy(
                f"workspace root {root!r} does not exist or is not a directory; "
                "create it or choose another root"
            )
        real = os.path.realpath(root)
    if real != os.path.normpath(root):
        raise InvalidPolicy(
            f"workspace root {root!r} is now reached through a symlink (it resolves to "
            f"{real!r}); a root is granted only at its pinned real path. Reopen the "
            "session from the directory you mean."
        )
    return real


def check_temp_roots(temp_roots: Sequence[str]) -> None:
    """A call's temp roots (its session's private directory, the host's where granted)
    are still the real directories they were when they were found or made."""
    for temp_root in temp_roots:
        real = _real_directory(temp_root)
        if real is None and not os.path.isdir(temp_root):
            raise InvalidPolicy(
                f"temp directory {temp_root!r} no longer exists (its session has ended, "
                "or something removed it); open a new session"
            )
        if (real or os.path.realpath(temp_root)) != temp_root:
            raise InvalidPolicy(
                f"temp root {temp_root!r} is now reached through a symlink; refusing to "
                "grant it (restart the harness if $TMPDIR moved on purpose)"
            )


# --- what stockade's own next process runs --------------------------------------------


def installation_paths() -> tuple[str, ...]:
    """The files and directories whose contents the next stockade process runs.

    The package directory, the interpreter and its standard library, the prefix
    (a venv: its console script, site-packages and .pth files), the base prefix (the
    interpreter's own installation beneath a venv: its shared library, the links to
    it, a `python311.zip` it would import first) and every import directory on
    sys.path except the current directory (which `python -m` adds). An import entry
    that does not exist is named too (as the real path of its parent joined with its
    name): what a command made there would be imported first, so the guard blocks it.
    """
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    cwd = os.path.realpath(os.getcwd()) if _cwd_exists() else None
    candidates = [
        here,
        os.path.realpath(sys.executable) if sys.executable else "",
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(os.__file__)),
    ]
    missing: list[str] = []
    for entry in sys.path:
        if not entry:
            continue
        if os.path.isdir(entry):
            candidates.append(entry)
        elif not os.path.lexists(entry) and os.path.isabs(entry):
            missing.append(entry)
    found: list[str] = []
    for candidate in candidates:
        if not candidate or not os.path.exists(candidate):
            continue
        real = os.path.realpath(candidate)
        if real == cwd:
            continue
        found.append(real)
    found += [os.path.realpath(entry) for entry in missing]
    return tuple(dict.fromkeys(found))


# installation_links()'s answer for the spellings it was asked of (a link outside every
# writable root is out of a command's reach, one inside is refused): resolved again only
# when they change (an embedder adding to sys.path).
_LINKS: dict[tuple[str, ...], tuple[str, ...]] = {}
# Where this process was when this module was imported: a relative argv[0] names a path
# from there, whatever directory a long-lived harness moves to since.
_START: list[str] = []


def installation_links() -> tuple[str, ...]:
    """Every symlink met on the way from the paths, as written, by which this process
    found stockade (sys.argv[0]: the console script as started; the interpreter; the
    prefix; each import directory) to where they lead, each as its real directory and
    its name. `installation_paths` protects where they lead now; a link inside a
    writable root could be re-pointed, so that the next stockade process started the
    same way (or this one's next import) runs what a command chose: the guard refuses
    such a call (`sandbox._guard`). Resolved again only when those paths change.
    Each path is joined to the directory it was relative to, never normalized: a `..`
    after a link leaves the link's target, as the kernel resolves it."""
    spellings: tuple[str, ...] = (sys.executable, sys.prefix, sys.exec_prefix, sys.base_prefix)
    spellings += (sys.argv[0],) if sys.argv and os.sep in sys.argv[0] else ()
    spellings += tuple(entry for entry in sys.path if entry)
    known = _LINKS.get(spellings)
    if known is None:
        found: dict[str, None] = {}
        seen: dict[str, str | None] = {}
        for spelled in spellings:
            if spelled:
                _links_on_the_way(os.path.join(_start(), spelled), found, seen)
        known = tuple(found)
        _LINKS.clear()
        _LINKS[spellings] = known
    return known


def _start() -> str:
    if not _START:
        _START.append(os.getcwd() if _cwd_exists() else os.sep)
    return _START[0]


def _links_on_the_way(path: str, found: dict[str, None], seen: dict[str, str | None]) -> None:
    """Resolve `path` as the kernel would, a component at a time, adding each link met to
    `found`; `seen` memoizes each entry's answer (None: not a link) across paths."""
    pending = [part for part in path.split(os.sep) if part]
    resolved = os.sep
    for _ in range(4096):  # the kernel's 40 links; components besides
        if not pending:
            return
        name = pending.pop(0)
        if name == ".":
            continue
        if name == "..":
            resolved = os.path.dirname(resolved)
            continue
        entry = os.path.join(resolved, name)
        if entry not in seen:
            try:
                seen[entry] = os.readlink(entry)
            except OSError:  # not a link (EINVAL), or missing: as written, it leads here
                seen[entry] = None
        target = seen[entry]
        if target is None:
            resolved = entry
            continue
        found[entry] = None
        if len(found) > 256:
            return
        if target.startswith(os.sep):
            resolved = os.sep
        pending[:0] = [part for part in target.split(os.sep) if part]


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except OSError:
        return False
    return True


_start()  # recorded now (see _START)


def broad_root_refusal(
    root: str,
    *,
    explicit: bool,
    home: str | None,
    naming: str = "--root {root}",
    source: str = "the current directory",
) -> str | None:
    """Why a workspace root taken implicitly (the current directory) is refused, or None.

    A root of `/` makes workspace-write danger-full-access by another name, and the
    caller's home directory holds every startup file the person's tools run later. Both
    are honoured only when named on purpose (`explicit`: `--root`, a `cwd` given
    through the API, a composition `fallback_root`). `naming` says how the caller
    names a root on purpose (`{root}` stands for it); `source`, where the root came from.
    """
    if explicit:
        return None
    # One spelling of each (realpath and normpath keep a leading "//").
    real = "/" + os.path.normpath(os.path.realpath(root)).lstrip("/")
    if real == "/":
        what = "/, the whole disk"
    elif home and os.path.isabs(home) and real == os.path.realpath(home).rstrip("/"):
        what = f"{real}, your home directory"
    else:
        return None
    return (
        f"the workspace root would be {what} ({source}), which a "
        "workspace-write command could then write throughout; run from a project "
        f"directory, or pass {naming.format(root=real)} to mean it"
    )


def _is_a_home(real: str, home: str | None) -> bool:
    """Whether the real path `real` is `home` or an account's home directory (the
    passwd database); only the entries that could name it are resolved."""
    homes = [home] if home and os.path.isabs(home) else []
    try:
        import pwd

        homes += [entry.pw_dir for entry in pwd.getpwall() if os.path.isabs(entry.pw_dir)]
    except (ImportError, KeyError, OSError):
        pass
    name = os.path.basename(real)
    for candidate in homes:
        # A home reached through a link is resolved; one named otherwise cannot be it.
        named = os.path.basename(candidate.rstrip("/")) == name
        if (named or os.path.islink(candidate)) and os.path.realpath(candidate) == real:
            return True
    return False


def extra_root_refusal(
    path: str,
    *,
    home: str | None,
    hidden: Sequence[str] = (),
    installation: Sequence[str] = (),
    what: str = "writable root",
) -> tuple[str | None, str]:
    """Judge an extra writable root (`writable_roots`, `--writable`, a session's own):
    (why it is refused or None, its real path).

    Refused: a relative or missing path, not a directory, `/`, a home directory itself
    (it holds every startup file the person's tools run later), a directory holding
    or inside one of `hidden` (deny_read's paths: keys, the state directory, tokens),
    or holding or inside stockade's own `installation`. The workspace's protected
    metadata is kept read-only inside it by the guard, as in every writable root.
    """
    if not os.path.isabs(path):
        return f"{what} {path!r} must be an absolute path", path
    if not os.path.isdir(path):
        return f"{what} {path!r} does not exist or is not a directory", path
    real = "/" + os.path.normpath(os.path.realpath(path)).lstrip("/")
    if real == "/":
        return f"{what} {path!r} is /, the whole disk: name a project directory", real
    if _is_a_home(real, home):
        return (
            f"{what} {path!r} is a home directory ({real}), where every startup file "
            "the person's tools run later lives: name a directory inside it",
            real,
        )

    def related(other: str) -> bool:
        other = os.path.realpath(other)
        return _inside(real, other) or _inside(other, real)

    for secret in hidden:
        if os.path.lexists(secret) and related(secret):
            return (
                f"{what} {path!r} would expose {secret}, which no confined command may "
                "read or write (deny_read): name a directory that neither holds it nor "
                "lies inside it",
                real,
            )
    for own in installation:
        if related(own):
            return (
                f"{what} {path!r} would let a command rewrite stockade's own files "
                f"({own}): name a directory outside the installation",
                real,
            )
    return None, real


def _inside(path: str, parent: str) -> bool:
    parent = parent.rstrip("/")
    return path == parent or path.startswith(parent + "/") or parent == ""


def check_extra_roots(
    paths: Sequence[str | os.PathLike[str]],
    hidden: Sequence[str],
    *,
    what: str = "writable root",
    installation: Sequence[str] | None = None,
) -> tuple[str, ...]:
    """Each of `paths` judged as an extra writable root (`extra_root_refusal`, with
    deny_read's `hidden` paths and stockade's `installation`, read now when None):
    their real paths, in order, without repeats; ConfigError naming the first refused
    and why."""
    if not paths:
        return ()
    if installation is None:
        installation = installation_paths()
    home = os.environ.get("HOME")
    real: list[str] = []
    for path in paths:
        refusal, resolved = extra_root_refusal(
            os.fspath(path), home=home, hidden=hidden, installation=installation, what=what
        )
        if refusal is not None:
            raise ConfigError(refusal)
        real.append(resolved)
    return tuple(dict.fromkeys(real))

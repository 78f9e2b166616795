"""Sandbox-private tool caches: one persistent directory per user where confined
commands' toolchains keep their caches, and the variables that point them there.

Why a directory of stockade's own: a confined command that could write the host's
`~/.cache/pip` or `~/.cargo/registry` could plant an entry the person's own
unconfined tools later run (a poisoned wheel, a rewritten crate). Here nothing the
host runs unconfined reads it: only confined commands are pointed at it, so what one
writes reaches only other confined commands. The sessions of a user share it (a
second build reuses the first's downloads). Standard library only.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing itself is not imported on exec's fast path
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

# tool -> (variable, subdirectory) pairs. The subdirectory is where that variable
# points, under the cache root. Maven's local repository has no variable of its own:
# it rides in MAVEN_OPTS (`maven_opts`).
TOOL_VARIABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "xdg": (("XDG_CACHE_HOME", "xdg"),),
    "pip": (("PIP_CACHE_DIR", "pip"),),
    "uv": (("UV_CACHE_DIR", "uv"),),
    "npm": (("npm_config_cache", "npm"),),
    "yarn": (("YARN_CACHE_FOLDER", "yarn"),),
    "pnpm": (("npm_config_store_dir", "pnpm-store"),),
    "go": (("GOCACHE", "go-build"), ("GOMODCACHE", "go-mod")),
    "cargo": (("CARGO_HOME", "cargo"),),
    "maven": (),
    "gradle": (("GRADLE_USER_HOME", "gradle"),),
    "ccache": (("CCACHE_DIR", "ccache"),),
    "sccache": (("SCCACHE_DIR", "sccache"),),
}
TOOLS: tuple[str, ...] = tuple(TOOL_VARIABLES)
MAVEN_DIRECTORY = "maven"
MAVEN_OPTION = "-Dmaven.repo.local="
# The person's cargo configuration, seen read-only beside the sandbox's CARGO_HOME
# (registries, mirrors, build flags); never its credentials (deny_read hides them).
CARGO_CONFIG_NAMES = ("config.toml", "config")
DIRECTORY_NAME = os.path.join("stockade", "tools")


def default_directory(environ: Mapping[str, str] = os.environ) -> str | None:
    """`$XDG_CACHE_HOME/stockade/tools` (an existing XDG_CACHE_HOME; else ~/.cache of
    an existing home), or None without one."""
    base = environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base) or not os.path.isdir(base):
        home = environ.get("HOME", "")
        # Never a home made up: a HOME that does not exist (nobody's /nonexistent) has none.
        if not os.path.isabs(home) or not os.path.isdir(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, DIRECTORY_NAME)


def is_default(directory: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether `directory` (a real path) is the default directory (`default_directory`):
    stockade's own, at which no unconfined tool of the person's is pointed. One a
    composition names (`tool_caches.directory`) may be the person's tools' too."""
    default = default_directory(environ)
    return default is not None and os.path.realpath(default) == directory


def check_tools(names: Iterable[str]) -> tuple[str, ...]:
    """`names` in table order, or ValueError naming the unknown one and the allowed."""
    wanted = tuple(dict.fromkeys(names))
    for name in wanted:
        if name not in TOOL_VARIABLES:
            raise ValueError(f"unknown tool {name!r} (allowed: {', '.join(TOOLS)})")
    return tuple(name for name in TOOLS if name in wanted)


def variables(
    root: str, tools: Sequence[str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables a confined command gets for `tools` cached under `root`. `base`:
    the command's environment otherwise (MAVEN_OPTS keeps what it already says)."""
    env: dict[str, str] = {}
    for tool in tools:
        for name, sub in TOOL_VARIABLES[tool]:
            env[name] = os.path.join(root, sub)
    if "maven" in tools:
        option = MAVEN_OPTION + os.path.join(root, MAVEN_DIRECTORY)
        given = (base or {}).get("MAVEN_OPTS", "").split()
        kept = [word for word in given if not word.startswith(MAVEN_OPTION)]
        env["MAVEN_OPTS"] = " ".join((*kept, option))
    return env


def subdirectories(tools: Sequence[str]) -> tuple[str, ...]:
    """The directories under the root the tools use, each made before a call."""
    subs = [sub for tool in tools for _, sub in TOOL_VARIABLES[tool]]
    if "maven" in tools:
        subs.append(MAVEN_DIRECTORY)
    return tuple(subs)


class CacheProblem(Exception):
    """The cache directory cannot be used; the message says why and what to do."""


def _check_owned_directory(path: str, info: os.stat_result) -> None:
    if not stat.S_ISDIR(info.st_mode):
        raise CacheProblem(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise CacheProblem(f"{path} is owned by uid {info.st_uid}, not by you")
    if info.st_mode & 0o022:
        raise CacheProblem(f"{path} is writable by others (mode {stat.S_IMODE(info.st_mode):o})")


def prepare(root: str, tools: Sequence[str], home: str | None = None) -> str:
    """Make the cache root (0700, the user's, no symlink on its own name), and link the
    person's cargo configuration beside CARGO_HOME. Each tool makes its own directory
    in it (the root is writable to it). Returns the root's real path; CacheProblem
    when it cannot be used."""
    try:
        try:
            os.mkdir(root, 0o700)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(root), mode=0o700, exist_ok=True)
            os.mkdir(root, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(root)
        if stat.S_ISLNK(info.st_mode):
            raise CacheProblem(f"{root} is a symlink; remove it, stockade makes the directory")
        _check_owned_directory(root, info)
        real = os.path.realpath(root)
        if "cargo" in tools and home:
            _link_cargo_config(real, home)
    except OSError as error:
        raise CacheProblem(f"cannot make {root}: {error.strerror or error}") from None
    return real


def _link_cargo_config(root: str, home: str) -> None:
    """`cargo/config.toml` -> the person's ~/.cargo/config.toml (read-only in every
    call: it lies outside the writable roots). A command may replace the link in its
    own cache; it is made again here, and it only ever leads to the person's file."""
    for name in CARGO_CONFIG_NAMES:
        source = os.path.join(home, ".cargo", name)
        if not os.path.isfile(source):
            continue
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            try:  # noqa: SIM105 (contextlib is not imported on exec's fast path)
                os.mkdir("cargo", 0o700, dir_fd=fd)
            except FileExistsError:
                pass
            cargo = os.open(
                "cargo", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
            )
        finally:
            os.close(fd)
        try:
            try:
                if os.readlink(name, dir_fd=cargo) == source:
                    return
            except OSError:
                pass
            try:
                os.unlink(name, dir_fd=cargo)
            except FileNotFoundError:
                pass
            except IsADirectoryError:
                return  # a directory a command made there: cargo reads neither then
            os.symlink(source, name, dir_fd=cargo)
        finally:
            os.close(cargo)
        return


def usage(root: str) -> list[tuple[str, int]]:
    """(subdirectory, bytes) for each entry of the cache root, never following links."""
    rows: list[tuple[str, int]] = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return rows
    for name in names:
        rows.append((name, _size(os.path.join(root, name))))
    return rows


def _size(path: str) -> int:
    total = 0
    try:
        info = os.lstat(path)
    except OSError:
        return 0
    total += info.st_size
    if stat.S_ISDIR(info.st_mode):
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            for name in (*dirnames, *filenames):
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    continue
    return total


def prune(root: str, tools: Sequence[str] = TOOLS) -> list[str]:
    """Empty the cache of `tools` (every tool by default): what was removed. Links a
    command left are removed as links, never followed."""
    removed: list[str] = []
    for sub in dict.fromkeys(subdirectories(tools)):
        path = os.path.join(root, sub)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(info.st_mode):
            import shutil

            shutil.rmtree(path)
        else:
            os.unlink(path)
        removed.append(path)
    return removed


def clear_of(directory: str, roots: Sequence[str]) -> bool:
    """Whether `directory` neither lies in nor holds one of the workspace `roots`: the
    caches are stockade's own, never a file of the workspace (a root at HOME holds
    ~/.cache), and the probe's verdicts beside them stay out of a command's reach."""
    real = os.path.realpath(directory)
    for root in roots:
        root = os.path.realpath(root)
        if real == root or real.startswith(root.rstrip("/") + "/"):
            return False
        if root.startswith(real.rstrip("/") + "/"):
            return False
    return True


def directory_for(
    enabled: bool,
    named: str | None,
    tools: Sequence[str],
    hidden: Sequence[str],
    roots: Sequence[str] = (),
    installation: Sequence[str] | None = None,
) -> str | None:
    """The tool caches' directory (`named`, else the default), made for `tools` and
    checked as an extra writable root (deny_read's `hidden` paths): its real path, or
    None when off (`enabled` False). The default directory that cannot be made or used
    (no home, a read-only one, one deny_read covers, one in or over a workspace
    `root`) turns them off, and the policy message then names none; a named one must
    work (ConfigError)."""
    from ..errors import ConfigError
    from ..trust import check_extra_roots

    if not enabled:
        return None
    directory = named or default_directory()
    if directory is None:
        return None
    if not clear_of(directory, roots):
        if named is None:
            return None  # nothing is made inside the workspace
        raise ConfigError(
            f"tool_caches: {directory} lies in the workspace root or holds it; name a "
            "directory outside every workspace"
        )
    try:
        real = prepare(directory, tools, os.environ.get("HOME"))
        if named is None:
            # Stockade's own, 0700 under the person's ~/.cache (never /, a home or an
            # installation): only a deny_read path over or in it turns it off.
            return None if any(_related(real, path) for path in hidden) else real
        return check_extra_roots(
            (real,), hidden, what="the tool caches' directory", installation=installation
        )[0]
    except (CacheProblem, ConfigError) as problem:
        if named is None:
            return None
        raise ConfigError(
            f"tool_caches: {problem}; name another directory, or turn them off"
        ) from None


def _related(real: str, path: str) -> bool:
    path = os.path.normpath(path)
    return real == path or real.startswith(path + "/") or path.startswith(real + "/")


class CacheSetting:
    """A composition's tool_caches: enabled (bool), directory (str | None: the default),
    tools (tuple[str, ...]). `directory_for` makes the directory for one workspace."""

    __slots__ = ("directory", "enabled", "tools")

    def __init__(self, enabled: bool, directory: str | None, tools: tuple[str, ...]) -> None:
        self.enabled, self.directory, self.tools = enabled, directory, tools

    def directory_for(
        self,
        hidden: Sequence[str],
        roots: Sequence[str],
        installation: Sequence[str] | None = None,
    ) -> str | None:
        return directory_for(self.enabled, self.directory, self.tools, hidden, roots, installation)

"""Helpers for the trust-base battery (docs/security.md, "The trust base").

Each route plants something with a real workspace-write call (or, where the backend
already refuses the plant, writes it directly to show the later call refuses it too),
then a separate read-only call tries to write a file OUTSIDE every root. The verdict
is the host's state: that file must not exist. Each route also has an unconfined
control showing the plant would be real: the fake runner really runs things bare,
the planted composition really names one, and so on.

The scratch trees live under /var/tmp, outside every host temp root: /tmp is writable
in workspace-write, so a tree there would not be "outside the roots" at all.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from stockade.sandbox._select import host_paths
from stockade.trust import (
    GITDIR_PROTECTED,
    ROOT_PROTECTED,
    installation_paths,
    is_under,
    placeholder_text,
)

REPO = Path(__file__).resolve().parents[2]
IS_ROOT = os.geteuid() == 0
NOBODY = 65534

DENIED_WW = "[sandbox: file access denied under workspace-write mode]"
DENIED_RO = "[sandbox: file access denied under read-only mode]"
# What each backend's kernel path prints on a refused write (FACTS.md).
# The namespaced tier refuses a write outside the roots on its read-only host first.
DENIAL_TEXT = {"bwrap": "Read-only file system", "landlock": "Read-only file system"}
# A repository at the root; the temp root (/tmp) has no `.git`: named whole.
PROTECTED_GAP = "protected paths not enforced: " + ", ".join(
    sorted(
        {name.rstrip("/") for name in ROOT_PROTECTED}
        | {".git", *(f".git/{name}" for name in GITDIR_PROTECTED)}
    )
)


def _console_script() -> list[str]:
    """The `stockade` console script beside this interpreter, else `python -m stockade`.

    The console script is the covered way to run stockade: `python -m` puts the
    current directory first on sys.path (docs/security.md, "Not covered").
    """
    script = Path(sys.executable).parent / "stockade"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "stockade"]


STOCKADE = _console_script()


def cli(
    *args: str,
    cwd: str | os.PathLike[str],
    env: dict[str, str] | None = None,
    unset: tuple[str, ...] = (),
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """The `stockade` command as a person runs it: a fresh process, no stdin.

    `env` is laid over this process's environment after `unset` (and any
    STOCKADE_CONFIG) is removed from it.
    """
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in unset and key != "STOCKADE_CONFIG"
    }
    environ.update(env or {})
    words = list(args)
    home = environ.get("HOME")
    # These attacks root a call at HOME on purpose: name it, as a person must (an
    # implicit root of exactly HOME is refused).
    at_home = home is not None and os.path.realpath(cwd) == os.path.realpath(home)
    if words[:1] in (["run"], ["exec"]) and "--root" not in words and at_home:
        words[1:1] = ["--root", str(cwd)]
    return subprocess.run(
        [*STOCKADE, *words],
        capture_output=True,
        text=True,
        cwd=str(cwd),
        env=environ,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )


# --- planted runners ------------------------------------------------------------------


def pass_through(log: Path) -> str:
    """A "runner" that confines nothing: it notes that it ran (in `log`, outside every
    root), skips the options up to `--`, and runs the rest bare."""
    return (
        "#!/bin/sh\n"
        f'echo "$*" >> {shlex.quote(str(log))}\n'
        'while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done\n'
        "[ $# -gt 0 ] && shift\n"
        'exec "$@"\n'
    )


def fake_bwrap(log: Path, real: str = "/usr/bin/bwrap") -> str:
    """A planted `bwrap`: probe-shaped calls go to the real one (so the probe passes),
    everything else runs bare. It notes every run in `log`."""
    return (
        "#!/bin/sh\n"
        f'echo "$*" >> {shlex.quote(str(log))}\n'
        'case "$*" in\n'
        f'  *stockade-probe-ran*|*--probe*) exec {shlex.quote(real)} "$@" ;;\n'
        "esac\n"
        'while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done\n'
        "[ $# -gt 0 ] && shift\n"
        'exec "$@"\n'
    )


def bwrap_like_argv(runner: str, *command: str) -> list[str]:
    """An argv shaped like a confined one, for running a planted runner directly."""
    return [runner, "--ro-bind", "/", "/", "--unshare-pid", "--", *command]


def write_executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def heredoc(path: str, text: str) -> str:
    """A shell command writing `text` to `path` (a quoted heredoc: no expansion)."""
    assert "STOCKADE_EOF" not in text
    return f"cat > {shlex.quote(path)} <<'STOCKADE_EOF'\n{text}STOCKADE_EOF\n"


# --- scratch areas --------------------------------------------------------------------


@dataclass
class Area:
    """/var/tmp/stockade-trust-XXXX/{ws (the workspace root), outside, tools}.

    `outside` holds the targets no confined call may create; `tools` holds trusted
    helper files (a copy of a runner, a composition given with --config).
    """

    base: Path

    @property
    def root(self) -> Path:
        return self.base / "ws"

    @property
    def outside(self) -> Path:
        return self.base / "outside"

    @property
    def tools(self) -> Path:
        return self.base / "tools"

    @property
    def fake_log(self) -> Path:
        """Where a planted runner notes each time it ran (unconfined, it can)."""
        return self.outside / "fake-runner-ran"

    def target(self, name: str = "pwned") -> Path:
        return self.outside / name

    def make(self) -> Area:
        os.chmod(self.base, 0o755)  # an unprivileged caller must traverse it
        for directory in (self.root, self.outside, self.tools):
            directory.mkdir()
        return self


def new_area(prefix: str = "stockade-trust-") -> Area:
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    for temp_root in host_paths().temp_roots:
        if os.path.realpath(base).startswith(temp_root.rstrip("/") + "/"):
            shutil.rmtree(base)
            pytest.fail(f"{base} lies under the temp root {temp_root}; unset TMPDIR=/var/tmp")
    return Area(base).make()


def private_dir(prefix: str, parent: str) -> Path:
    """A fresh 0700 directory owned by this user (what check 1 accepts outside roots)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    path.chmod(0o700)
    return path


# --- host state -----------------------------------------------------------------------


def snapshot(
    top: Path, *, skip: tuple[str, ...] = (), placeholders: bool = True
) -> dict[str, tuple[object, ...]]:
    """Every entry under `top` (symlinks not followed): type, mode, owner, content.

    Directory times are left out: a blocker's mount point comes and goes in the root,
    which changes its parent's mtime without changing anything anyone trusts.
    `placeholders` False leaves out stockade's own placeholders (empty, marked by an
    mtime of 0), which a running harness keeps a moment after each call.
    """
    state: dict[str, tuple[object, ...]] = {}
    pending = [top]
    while pending:
        current = pending.pop()
        relative = os.path.relpath(current, top)
        if relative in skip:
            continue
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            continue
        if not placeholders and current != top and _is_placeholder(current, info):
            continue
        if stat.S_ISREG(info.st_mode):
            content: object = hashlib.sha256(current.read_bytes()).hexdigest()
        elif stat.S_ISLNK(info.st_mode):
            content = os.readlink(current)
        else:
            content = None
        state[relative] = (
            stat.S_IFMT(info.st_mode),
            stat.S_IMODE(info.st_mode),
            info.st_uid,
            content,
        )
        if stat.S_ISDIR(info.st_mode):
            pending.extend(current / name for name in os.listdir(current))
    return state


def _is_placeholder(path: Path, info: os.stat_result) -> bool:
    if info.st_mtime_ns != 0:
        return False
    if stat.S_ISDIR(info.st_mode):
        return not os.listdir(path)
    # Empty, or holding its name's placeholder text (a `commondir` of ".").
    text = placeholder_text(str(path)).encode()
    return stat.S_ISREG(info.st_mode) and path.read_bytes() == text


def describe_change(before: dict, after: dict) -> str:
    lines = [
        f"  {key}: {before.get(key)} -> {after.get(key)}"
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]
    return "\n".join(lines) or "  (no change)"


def file_state(path: Path) -> tuple[object, ...] | None:
    """Content and identity of one file (None: absent), for "unchanged on disk"."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, path.read_bytes())


# --- compositions and the checkout ----------------------------------------------------


def composition(state_dir: str | os.PathLike[str], **sandbox: object) -> list[dict]:
    """The sandboxed product path in code: provider (with `sandbox` as its config),
    bash under the sandbox, and the session log in `state_dir`."""
    return [
        {"id": "sandbox", "name": "stockade.sandbox.local", "config": sandbox},
        {"id": "bash", "name": "stockade.bash.sandbox"},
        {"id": "log", "name": "stockade.session.log", "config": {"state_dir": str(state_dir)}},
    ]


# Route 5 aims at stockade's own files in the checkout (the editable install).
PLANTED = REPO / "src" / "stockade" / "_planted_by_test.py"
PYVENV = REPO / ".venv" / "pyvenv.cfg"


def installation_in_repo() -> list[str]:
    """The parts of stockade's installation that lie in the checkout."""
    return [path for path in installation_paths() if is_under(path, str(REPO))]

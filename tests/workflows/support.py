"""What every workflow shares: a fresh home, the default composition on a forced
backend, the harness run as root or as uid 65534, and the checks every workflow ends
with (exit 0, no denial, no escalation, the host's home and caches untouched).

Each workflow runs in a fresh process (`_drive.py`), as root or as nobody, with a
HOME of its own under /var/tmp (outside every temp root): `~/.gitconfig` is the
person's, `~/proj` the session's root, and every other entry of the home is
snapshotted before and after (type, mode, size, content, mtime): nothing may appear,
change or go there but in the workspace and stockade's own directories (its tool
caches in `~/.cache/stockade`, its session logs in `~/.local/state/stockade`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from stockade.config.loader import default_composition_text

from ..support import IS_ROOT, NOBODY, REAL_BACKENDS, NobodyView, need, require_backend

HERE = Path(__file__).resolve().parent
DRIVE = HERE / "_drive.py"
WHO = ("root", "nobody")
# The interpreter a workflow's own Python commands use: the distribution's, which
# nobody can run too and which has ensurepip (`python -m venv`).
SYSTEM_PYTHON = "/usr/bin/python3"
# Where stockade's own state lives in a home: never the host's.
STOCKADE_OWN = (".cache/stockade", ".local/state/stockade")
# The host's own cache places a toolchain would write without stockade's caches.
HOST_CACHES = (".cache", ".npm", ".cargo", "go", ".m2", ".gradle", ".rustup")
GIT_CONFIG = "[user]\n\tname = Work Flow\n\temail = workflow@example.invalid\n"


@dataclass
class Place:
    """A workflow's ground: `home` (HOME), `root` (the session's root, in the home),
    `fixtures` (prepared beside the home, outside every writable root: local indexes,
    tarballs, bare remotes) and `config` (the composition's directory)."""

    who: str
    base: Path
    home: Path
    root: Path
    fixtures: Path
    config: Path
    before: dict[str, tuple] = field(default_factory=dict)

    @property
    def uid(self) -> int:
        return NOBODY if self.who == "nobody" else os.geteuid()

    @property
    def caches(self) -> Path:
        """Where the sandbox's tool caches land (stockade's default)."""
        return self.home / ".cache" / "stockade" / "tools"

    def hand_over(self) -> None:
        """Everything the fixture made becomes the user's (nobody's, for nobody), as a
        person's own home and clones are; the composition stays root's."""
        for top in (self.home, self.fixtures):
            for directory, dirs, files in os.walk(top):
                os.lchown(directory, self.uid, self.uid)
                for name in dirs + files:
                    os.lchown(os.path.join(directory, name), self.uid, self.uid)
        self.before = snapshot(self.home, self.root)

    def assert_home_untouched(self) -> None:
        after = snapshot(self.home, self.root)
        changed = sorted(
            name
            for name in set(self.before) | set(after)
            if self.before.get(name) != after.get(name)
        )
        assert changed == [], f"the host's home changed outside the workspace: {changed}"
        # Above all its caches: nothing of a toolchain's but in stockade's own directory.
        made = [
            name
            for name in after
            if name.split("/")[0] in HOST_CACHES
            and not any(name == own or name.startswith(own + "/") for own in STOCKADE_OWN)
        ]
        assert made == [], f"the host's caches hold: {made}"

    def cache_entries(self, tool: str) -> list[str]:
        """The files stockade's cache of `tool` holds (pip, npm, cargo, go-build, ...)."""
        top = self.caches / tool
        return sorted(str(p.relative_to(top)) for p in top.rglob("*") if p.is_file())


def new_place(who: str) -> Place:
    base = Path(tempfile.mkdtemp(prefix="stockade-workflow-", dir="/var/tmp"))
    base.chmod(0o755)
    home, fixtures, config = base / "home", base / "fixtures", base / "config"
    root = home / "proj"
    for directory in (home, root, fixtures, config):
        directory.mkdir()
        directory.chmod(0o755)
    (home / ".gitconfig").write_text(GIT_CONFIG)
    return Place(who, base, home, root, fixtures, config)


def snapshot(home: Path, root: Path) -> dict[str, tuple]:
    """Every entry under `home` but the workspace and stockade's own directories."""
    skip = {str(root), *(str(home / own) for own in STOCKADE_OWN)}
    seen: dict[str, tuple] = {}
    for directory, dirs, files in os.walk(home):
        dirs[:] = [d for d in dirs if os.path.join(directory, d) not in skip]
        for name in dirs + files:
            path = os.path.join(directory, name)
            if path in skip:
                continue
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    content = hashlib.sha256(handle.read()).hexdigest()
            elif stat.S_ISLNK(info.st_mode):
                content = os.readlink(path)
            else:
                content = ""
            what = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), info.st_uid)
            rel = os.path.relpath(path, home)
            if stat.S_ISDIR(info.st_mode) and any(
                own.startswith(rel + "/") for own in STOCKADE_OWN
            ):
                continue  # a directory on the way to stockade's own (~/.cache, ~/.local)
            seen[rel] = (*what, info.st_size if not stat.S_ISDIR(info.st_mode) else 0, content)
            if not stat.S_ISDIR(info.st_mode):
                seen[rel] += (info.st_mtime_ns,)
    return seen


def composition(
    place: Place, backend: str, sandbox: dict | None = None, bash: dict | None = None
) -> Path:
    """The embedded default composition, its backend forced (and any option the test
    names added to the sandbox's or bash's config), as a file outside every root."""
    text = default_composition_text()
    assert "    backend: auto " in text
    lines = [f"    backend: {backend}"]
    for key, value in (sandbox or {}).items():
        lines.append(f"    {key}: {json.dumps(value)}")
    text = text.replace("    backend: auto", "\n".join(lines) + "\n    # was", 1)
    for key, value in (bash or {}).items():
        old = f"    {key}: "
        assert old in text, key
        head, _, tail = text.partition(old)
        text = head + f"    {key}: {json.dumps(value)}  # was " + tail
    path = place.config / "stockade.yml"
    path.write_text(text)
    path.chmod(0o644)
    return path


@dataclass
class Outcome:
    results: list[dict]
    asked: list[dict]
    policy: str | None

    def text(self, index: int = -1) -> str:
        return self.results[index]["text"]

    def assert_clean(self) -> None:
        """Every call: exit 0, no denial, nothing granted; no escalation asked."""
        for result in self.results:
            facts = result["facts"]
            said = f"{facts.get('command')!r}:\n{result['text']}"
            assert facts.get("exit_code") == 0, said
            assert not result["is_error"], said
            assert facts.get("denied") is False and not facts.get("read_denied"), said
            assert "granted" not in facts, said
        assert self.asked == [], f"escalations asked: {self.asked}"


@dataclass(frozen=True)
class Workflows:
    """Runs workflows on one backend as one user."""

    backend: str
    who: str
    public: NobodyView

    @property
    def python(self) -> str:
        """The interpreter that runs this checkout's stockade as this user."""
        return self.public.python if self.who == "nobody" else sys.executable

    def path(self) -> str:
        """PATH for the workflow: the host's (less pyenv's shims, which read HOME), or
        for nobody the system's directories alone (root's home is out of its reach)."""
        if self.who == "nobody":
            return "/usr/local/bin:/usr/bin:/bin"
        kept = [p for p in os.environ.get("PATH", "").split(":") if p and "pyenv" not in p]
        return ":".join(dict.fromkeys([*kept, "/usr/local/bin", "/usr/bin", "/bin"]))

    def need(self, *tools: str) -> None:
        """Each tool on this user's PATH (nobody's is the system's alone)."""
        need(*tools, path=self.path())

    def environment(self, place: Place, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            "HOME": str(place.home),
            "PATH": self.path(),
            "LANG": "C.UTF-8",
            "USER": self.who,
            "LOGNAME": self.who,
            "STOCKADE_NO_PROBE_CACHE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if self.who == "nobody":
            env["PYTHONPATH"] = self.public.pythonpath
        else:
            # rustup's proxies find their toolchains under RUSTUP_HOME (default ~/.rustup,
            # the person's real home: the fresh HOME has none).
            rustup = os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup")
            if os.path.isdir(rustup):
                env["RUSTUP_HOME"] = rustup
        env.update(extra or {})
        return env

    def run(
        self,
        place: Place,
        steps: list[dict] | list[str],
        *,
        sandbox: dict | None = None,
        bash: dict | None = None,
        env: dict[str, str] | None = None,
        mode: str = "workspace-write",
        timeout: float = 300,
    ) -> Outcome:
        """Each step through the bash tool, in one session rooted at `place.root`."""
        config = composition(place, self.backend, sandbox, bash)
        spec = {
            "config": str(config),
            "cwd": str(place.root),
            "mode": mode,
            "steps": [{"command": s} if isinstance(s, str) else s for s in steps],
        }
        drive = self.public.path(DRIVE) if self.who == "nobody" else str(DRIVE)
        user = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if self.who == "nobody" else {}
        done = subprocess.run(
            [self.python, drive],
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            cwd=str(place.root),
            env=self.environment(place, env),
            timeout=timeout,
            check=False,
            **user,
        )
        assert done.returncode == 0, f"the driver failed:\n{done.stderr[-4000:]}"
        return Outcome(**json.loads(done.stdout))


def workflows_for(backend: str, who: str, public: NobodyView) -> Workflows:
    require_backend(backend)
    if who == "nobody" and not IS_ROOT:
        pytest.skip("running a workflow as uid 65534 needs a root caller")
    return Workflows(backend, who, public)


PARAMS = [(backend, who) for backend in REAL_BACKENDS for who in WHO]
IDS = [f"{backend}-{who}" for backend, who in PARAMS]

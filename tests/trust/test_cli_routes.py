"""Routes through the `stockade` command: a planted ./stockade.yml, the exec verdict
cache, and a fake `bwrap` on PATH. Each is planted by a real workspace-write call, then
a separate read-only call tries to create a file outside every root: it must not
appear, and no result may claim `full` for a call that was not confined.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from stockade.config import load_composition
from stockade.sandbox import backends
from stockade.sandbox.backends import _choose

from ..support import require_backend
from ._support import (
    DENIAL_TEXT,
    Area,
    bwrap_like_argv,
    cli,
    fake_bwrap,
    heredoc,
    pass_through,
    private_dir,
    write_executable,
)

# --- route 1: a stockade.yml written into the cwd (the default root) -----------------


def planted_composition(runner: Path) -> str:
    return (
        "- id: sandbox\n"
        "  name: stockade.sandbox.local\n"
        "  config:\n"
        f"    runner_command: {runner}\n"
        "- id: bash\n"
        "  name: stockade.bash.sandbox\n"
    )


def later_calls(target: Path) -> dict[str, tuple[str, ...]]:
    """The calls a person makes later from the same directory, each aimed outside."""
    return {
        "run": ("run", "--mode", "read-only", f"touch {target}"),
        "run-json": ("run", "--json", "--mode", "read-only", f"touch {target}"),
        "run-other-root": ("run", "--mode", "read-only", "--root", "/", f"touch {target}"),
        "exec": ("exec", "--mode", "read-only", "--", "touch", str(target)),
        "probe": ("probe",),
    }


def assert_one_line(done, *fragments: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    if "--json" in done.args:
        # With --json the one line is the error object on stdout, and stderr is empty.
        import json

        error = json.loads(done.stdout)["error"]
        assert (error["code"], done.stderr) == ("CONFIG", ""), done
        for fragment in fragments:
            assert fragment in error["detail"], (fragment, error["detail"])
        return error["detail"]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("stockade: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert "Traceback" not in done.stderr
    return lines[0]


def test_a_stockade_yml_planted_in_the_cwd_is_never_loaded(backend, area: Area):
    """Plant through a real workspace-write call from the cwd: bwrap and the Landlock
    launcher's namespaced tier keep `<root>/stockade.yml` read-only (the plant fails,
    nothing is left behind); were it written anyway (the plain tier cannot keep it),
    every later call from that directory refuses it (exit 2, one line naming the file
    and --config)."""
    runner = write_executable(area.tools / "pass-through", pass_through(area.fake_log))
    planted = area.root / "stockade.yml"
    text = planted_composition(runner)
    plant = cli(
        "run",
        "--mode",
        "workspace-write",
        "--backend",
        backend,
        heredoc("stockade.yml", text),
        cwd=area.root,
    )
    assert plant.returncode != 0, plant.stderr
    assert not os.path.lexists(planted), "the placeholder or the plant was left behind"
    # The plain tier (or anything the backend does not govern) could have written it:
    # the later calls must refuse it all the same.
    planted.write_text(text)
    target = area.target()
    for name, argv in later_calls(target).items():
        done = cli(*argv, cwd=area.root)
        assert not target.exists(), f"{name}: the planted runner_command was honoured"
        assert_one_line(done, str(planted), "--config")
    # Naming it does not help either: the file lies in the writable root.
    for how in ({"args": ("--config", "stockade.yml")}, {"env": {"STOCKADE_CONFIG": str(planted)}}):
        argv = ("exec", *how.get("args", ()), "--mode", "read-only", "--", "touch", str(target))
        done = cli(*argv, cwd=area.root, env=how.get("env"))
        assert not target.exists(), f"{how}: the planted runner_command was honoured"
        assert_one_line(done, str(planted), "runner_command is not honoured")
    assert not area.fake_log.exists(), area.fake_log.read_text()


def test_control_the_planted_composition_really_runs_commands_bare(area: Area):
    """Control: the plant is real. The composition names the pass-through runner, and
    the same file given with --config from a trusted place makes a read-only call
    write outside the roots."""
    runner = write_executable(area.tools / "pass-through", pass_through(area.fake_log))
    text = planted_composition(runner)
    trusted = area.tools / "trusted.yml"
    trusted.write_text(text)
    trusted.chmod(0o600)
    composition = load_composition(str(trusted))
    assert composition.provider.config.runner_command == str(runner)
    target = area.target("control")
    done = cli(
        "exec",
        "--config",
        str(trusted),
        "--mode",
        "read-only",
        "--",
        "touch",
        str(target),
        cwd=area.root,
    )
    assert done.returncode == 0, done.stderr
    assert target.exists() and area.fake_log.exists()


# --- route 2: the exec verdict cache --------------------------------------------------

CACHE_ENV = ("STOCKADE_NO_PROBE_CACHE", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME")
CACHE_NAME = f"probe-verdicts-{os.getuid()}"


def cache_in(base: Path) -> Path:
    return base / "stockade" / CACHE_NAME


def forged_cache(shape: str, runner: Path) -> str:
    """Cache lines under the REAL keys of both runners, each naming `runner` or a
    backend it is not: what a command that could write the cache would write."""
    lines = []
    for name, locate in backends.RUNNER_LOCATORS.items():
        key = _choose._identity(name, locate())
        other = "landlock" if name == "bwrap" else "bwrap"
        fields = {
            "abi-names-runner": (name, str(runner)),
            "backend-names-runner": (str(runner), ""),
            "runner-command": ("runner-command", ""),
            "other-backend": (other, "7"),
        }[shape]
        lines.append("\t".join((key, *fields)) + "\n")
    lines.append(f"{runner}\t{runner}\t{runner}\n")
    return "".join(lines)


SHAPES = ("abi-names-runner", "backend-names-runner", "runner-command", "other-backend")


def plant_through_exec(
    backend: str,
    root: Path,
    path: Path,
    text: str,
    env: dict[str, str],
    *,
    config: Path | None = None,
):
    argv = (
        "sh",
        "-c",
        f"mkdir -p {path.parent} && chmod 700 {path.parent}\n"
        f"{heredoc(str(path), text)}chmod 600 {path}\n",
    )
    done = cli(
        "exec",
        *(("--config", str(config)) if config is not None else ()),
        "--mode",
        "workspace-write",
        "--backend",
        backend,
        "--",
        *argv,
        cwd=root,
        env=env,
        unset=CACHE_ENV,
    )
    assert done.returncode == 0, f"the plant itself failed: {done.stderr}"
    assert path.read_text() == text, "the confined call could not write the cache"


def assert_confined_refusal(done, backend: str, target: Path, area: Area) -> None:
    assert not target.exists(), f"the read-only call wrote outside the roots: {done.stderr}"
    assert not area.fake_log.exists(), "the planted runner ran"
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert DENIAL_TEXT[backend] in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_exec_keeps_no_cache_inside_its_root(backend, area: Area):
    """HOME is the root (XDG variables unset): ~/.cache lies in the writable root, so
    no `stockade exec` there creates, reads or writes the cache."""
    home = area.root
    env = {"HOME": str(home)}
    for mode in ("workspace-write", "read-only"):
        done = cli(
            "exec",
            "--mode",
            mode,
            "--backend",
            backend,
            "--",
            "true",
            cwd=home,
            env=env,
            unset=CACHE_ENV,
        )
        assert done.returncode == 0, done.stderr
    assert not (home / ".cache").exists(), sorted(p.name for p in (home / ".cache").rglob("*"))
    # Control: from a root that does not hold it, the same cache is really used.
    other = area.base / "other"
    other.mkdir()
    done = cli("exec", "--backend", backend, "--", "true", cwd=other, env=env, unset=CACHE_ENV)
    assert done.returncode == 0, done.stderr
    assert cache_in(home / ".cache").is_file()


@pytest.mark.parametrize("shape", SHAPES)
def test_a_cache_forged_from_a_home_root_runs_nothing_bare(backend, area: Area, shape):
    """~/.cache is trusted for a call rooted elsewhere, but a call rooted at HOME can
    write it. Forged lines under the real keys must not make a later call (rooted
    elsewhere, so it does read the cache) run anything unconfined."""
    home, other = area.root, area.base / "other"
    other.mkdir()
    env = {"HOME": str(home)}
    cache = cache_in(home / ".cache")
    done = cli("exec", "--backend", backend, "--", "true", cwd=other, env=env, unset=CACHE_ENV)
    assert done.returncode == 0 and cache.is_file(), done.stderr
    runner = write_executable(area.tools / "pass-through", pass_through(area.fake_log))
    plant_through_exec(backend, home, cache, forged_cache(shape, runner), env)
    target = area.target()
    done = cli(
        "exec",
        "--mode",
        "read-only",
        "--backend",
        backend,
        "--",
        "touch",
        str(target),
        cwd=other,
        env=env,
        unset=CACHE_ENV,
    )
    assert_confined_refusal(done, backend, target, area)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_cache_in_a_temp_root_is_never_used(backend, area: Area, shape):
    """XDG_RUNTIME_DIR under /tmp (a host temp root: a composition may restore it to
    workspace-write calls, `allow_host_temp`): the cache is never written there, and one
    a command wrote (through such a composition) is never read."""
    runtime = private_dir("stockade-trust-run-", "/tmp")
    try:
        env = {"HOME": str(area.root), "XDG_RUNTIME_DIR": str(runtime)}
        cache = cache_in(runtime)
        done = cli(
            "exec",
            "--mode",
            "read-only",
            "--backend",
            backend,
            "--",
            "true",
            cwd=area.root,
            env=env,
            unset=CACHE_ENV,
        )
        assert done.returncode == 0, done.stderr
        assert not (runtime / "stockade").exists(), "the cache was kept in a temp root"
        runner = write_executable(area.tools / "pass-through", pass_through(area.fake_log))
        forged = forged_cache(shape, runner)
        shared = area.tools / "host-temp.yml"
        shared.write_text(
            "- id: sandbox\n  name: stockade.sandbox.local\n  config:\n"
            "    allow_host_temp: true\n- id: bash\n  name: stockade.bash.sandbox\n"
        )
        shared.chmod(0o600)
        plant_through_exec(backend, area.root, cache, forged, env, config=shared)
        target = area.target()
        done = cli(
            "exec",
            "--mode",
            "read-only",
            "--backend",
            backend,
            "--",
            "touch",
            str(target),
            cwd=area.root,
            env=env,
            unset=CACHE_ENV,
        )
        assert_confined_refusal(done, backend, target, area)
        assert cache.read_text() == forged, "the untrusted cache was used (rewritten)"
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_a_cache_in_a_trusted_place_works_and_holds_no_path(backend, area: Area):
    runtime = area.base / "run"
    runtime.mkdir(mode=0o700)
    env = {"HOME": str(area.root), "XDG_RUNTIME_DIR": str(runtime)}
    cache = cache_in(runtime)
    for _ in range(2):  # the second call reads what the first wrote
        done = cli(
            "exec",
            "--mode",
            "read-only",
            "--backend",
            backend,
            "--",
            "true",
            cwd=area.root,
            env=env,
            unset=CACHE_ENV,
        )
        assert done.returncode == 0, done.stderr
    assert cache.is_file()
    info = cache.stat()
    assert info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077 == 0
    text = cache.read_text()
    assert "/" not in text, f"the cache names a path: {text!r}"
    for line in text.splitlines():
        key, name, abi, ipc, tier, why = line.split("\t")
        assert key.split("|", 1)[0] == name and name in ("bwrap", "landlock"), line
        assert abi == "" or abi.isdigit(), line
        assert ipc in ("", "private", "filtered"), line
        assert tier in ("", "namespaced", "plain"), line
        assert "/" not in why, line
    # A confined command cannot touch it there.
    before = cache.read_bytes()
    done = cli(
        "exec",
        "--mode",
        "workspace-write",
        "--backend",
        backend,
        "--",
        "sh",
        "-c",
        f"echo forged >> {cache}",
        cwd=area.root,
        env=env,
        unset=CACHE_ENV,
    )
    # With network off the caller's $XDG_RUNTIME_DIR is a fresh, empty view for the
    # command (issue 37): the cache is not even in sight there.
    assert done.returncode != 0 and "Directory nonexistent" in done.stderr, done.stderr
    assert cache.read_bytes() == before
    # With network on it is in sight, and read-only.
    done = cli(
        "exec",
        "--mode",
        "workspace-write",
        "--backend",
        backend,
        "--network",
        "on",
        "--",
        "sh",
        "-c",
        f"echo forged >> {cache}",
        cwd=area.root,
        env=env,
        unset=CACHE_ENV,
    )
    assert done.returncode != 0 and DENIAL_TEXT[backend] in done.stderr, done.stderr
    assert cache.read_bytes() == before


# --- route 3: a fake bwrap on PATH, inside a writable root ---------------------------

PATH_DIRS = (".local/bin", ".venv/bin")


@pytest.mark.parametrize("where", PATH_DIRS)
def test_a_bwrap_planted_on_path_is_never_run(backend, area: Area, where):
    """HOME is the root and <root>/.local/bin and <root>/.venv/bin come first on PATH.
    A workspace-write call (on either backend) plants a `bwrap` there that passes the
    probe and runs everything else bare: later calls use the real bwrap only."""
    require_backend("bwrap")
    root = area.root
    fake = root / where / "bwrap"
    plant = (
        f"mkdir -p {fake.parent} && {heredoc(str(fake), fake_bwrap(area.fake_log))}"
        f"chmod 755 {fake}\n"
    )
    env = {
        "HOME": str(root),
        "PATH": f"{root}/.local/bin:{root}/.venv/bin:{os.environ['PATH']}",
    }
    done = cli("run", "--mode", "workspace-write", "--backend", backend, plant, cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    assert os.access(fake, os.X_OK), "the plant did not land"
    assert shutil.which("bwrap", path=env["PATH"]) == str(fake)

    target = area.target()
    for chosen in ("bwrap", "auto"):
        done = cli(
            "run",
            "--json",
            "--mode",
            "read-only",
            "--backend",
            chosen,
            f"touch {target}",
            cwd=root,
            env=env,
        )
        assert not target.exists(), f"--backend {chosen}: the fake bwrap ran the command bare"
        facts = json.loads(done.stdout)
        assert facts["backend"] == "bwrap" and facts["denied"] is True, facts
        assert facts["enforcement"] == "full", facts
        done = cli(
            "exec",
            "--mode",
            "read-only",
            "--backend",
            chosen,
            "--",
            "touch",
            str(target),
            cwd=root,
            env=env,
        )
        assert not target.exists(), f"exec --backend {chosen}: the fake bwrap ran it bare"
        assert done.returncode == 1 and DENIAL_TEXT["bwrap"] in done.stderr, done.stderr
    report = json.loads(cli("probe", "--json", cwd=root, env=env).stdout)
    runners = [c["runner"] for c in report["candidates"] if c["backend"] == "bwrap"]
    assert runners and not any(str(root) in (r or "") for r in runners), runners
    assert not area.fake_log.exists(), f"the fake bwrap ran: {area.fake_log.read_text()}"

    # Control: the fake really runs a command bare when it IS executed.
    control = area.target("control")
    ran = subprocess.run(
        bwrap_like_argv(str(fake), "touch", str(control)), capture_output=True, check=False
    )
    assert ran.returncode == 0 and control.exists(), ran.stderr
    assert area.fake_log.exists()


@pytest.mark.parametrize("key", ["bwrap_path", "runner_command"])
def test_a_configured_runner_inside_a_root_is_not_trusted_later(backend, area: Area, key):
    """The operator's trusted composition names a runner that lies inside a workspace
    root (a vendored bwrap). A call rooted there that does not use it (any call
    without that composition: another backend, or bwrap from /usr/bin) may rewrite
    it; a later read-only call with the composition must not run the rewrite."""
    require_backend("bwrap")
    runner = area.root / "bin" / "bwrap"
    runner.parent.mkdir()
    shutil.copy2("/usr/bin/bwrap", runner)
    config = area.tools / "stockade.yml"
    setting = "backend: bwrap\n    bwrap_path" if key == "bwrap_path" else "runner_command"
    config.write_text(
        "- id: sandbox\n  name: stockade.sandbox.local\n  config:\n"
        f"    {setting}: {runner}\n"
        "- id: bash\n  name: stockade.bash.sandbox\n"
    )
    config.chmod(0o600)
    # Control: with the composition, the runner is kept read-only in its own calls.
    done = cli(
        "run",
        "--config",
        str(config),
        "--mode",
        "workspace-write",
        f"cp /bin/true {runner}",
        cwd=area.root,
    )
    assert done.returncode != 0 and filecmp.cmp(runner, "/usr/bin/bwrap", shallow=False)
    # The plant, by a call that does not know about it.
    plant = f"{heredoc(str(runner), fake_bwrap(area.fake_log))}chmod 755 {runner}\n"
    done = cli("run", "--mode", "workspace-write", "--backend", backend, plant, cwd=area.root)
    assert done.returncode == 0, done.stderr
    assert "stockade-probe-ran" in runner.read_text(), "the plant did not land"
    target = area.target()
    done = cli(
        "run",
        "--json",
        "--config",
        str(config),
        "--mode",
        "read-only",
        f"touch {target}",
        cwd=area.root,
    )
    assert not target.exists(), f"the planted {key} ran the command bare: {done.stdout}"
    done = cli(
        "exec",
        "--config",
        str(config),
        "--mode",
        "read-only",
        "--",
        "touch",
        str(target),
        cwd=area.root,
    )
    assert not target.exists(), f"exec: the planted {key} ran the command bare"
    assert not area.fake_log.exists(), area.fake_log.read_text()

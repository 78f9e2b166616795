"""The trust base applied to one call: guard_call's protections, gaps and refusals, and
how the argv builders and `wrap` carry them."""

import os

import pytest

from stockade.sandbox import _argv as a
from stockade.sandbox import _dispatch
from stockade.sandbox import _profiles as p
from stockade.sandbox._guard import NO_GUARD, Guard, guard_call
from stockade.sandbox.backends import bwrap as bw
from stockade.sandbox.backends import fake as fk
from stockade.sandbox.backends import landlock as ll
from stockade.sandbox.backends import seatbelt as sb
from stockade.trust import BLOCK, NEW_REPOSITORY_GAP, PIN, READ_ONLY, ROOT_PROTECTED, Protection
from stockade.vocab import Enforcement, Network, SandboxMode, SandboxPolicy

WW = SandboxMode.WORKSPACE_WRITE
RO = SandboxMode.READ_ONLY
CMD = ("bash", "-c", "echo hi")


@pytest.fixture
def roots(tmp_path):
    """A workspace root with a `.git` holding only HEAD, a temp root and a place outside
    both. (An EMPTY `.git` is treated as a placeholder: see the placeholder test.)"""
    base = tmp_path.resolve()
    ws = base / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    temp = base / "temp"
    temp.mkdir()
    outside = base / "outside"
    outside.mkdir()
    return ws, temp, outside


def kinds(guard):
    return {protection.path: protection.kind for protection in guard.protections}


def named(*extra: str) -> str:
    """What Landlock names for `roots` (the temp root has no `.git`: blocked whole)."""
    items = {name.rstrip("/") for name in ROOT_PROTECTED} | {".git", *extra}
    items |= {f".git/{name}" for name in ("commondir", "config", "config.worktree", "hooks")}
    return ", ".join(sorted(items))


LANDLOCK_GAP = f"protected paths not enforced: {named()}"


# --- guard_call -------------------------------------------------------------------------


def test_read_only_needs_no_guard(roots):
    ws, temp, _ = roots
    (ws / "venv").mkdir()
    for backend in (bw.NAME, ll.NAME, sb.NAME, fk.NAME):
        guard = guard_call(
            backend,
            RO,
            str(ws),
            [str(temp)],
            installation=[str(ws / "venv")],
            trusted_files=[str(ws / "stockade.yml")],
        )
        assert guard == NO_GUARD == Guard((), (), None)


def test_an_unknown_backend_gets_no_guard(roots):
    ws, temp, _ = roots
    assert guard_call("mystery", WW, str(ws), [str(temp)]) == NO_GUARD


def test_bwrap_workspace_write_blocks_missing_repository_metadata(roots):
    ws, temp, _ = roots
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp)])
    # No bind can stop a repository being made in a subdirectory: always said.
    assert guard.refusal is None and guard.gaps == ()
    found = kinds(guard)
    assert found[str(ws / ".git")] == PIN
    for name in ("hooks", "config", "config.worktree", "commondir"):
        assert found[str(ws / ".git" / name)] == BLOCK
    directories = {p.path for p in guard.protections if p.directory}
    assert str(ws / ".git" / "hooks") in directories
    assert str(ws / ".git" / "commondir") not in directories
    for name in ("stockade.yml", ".mcp.json", ".vscode", ".idea", ".claude", ".codex"):
        assert found[str(ws / name)] == BLOCK
    # Every writable root gets the defaults: the temp root has no `.git` at all.
    assert found[str(temp / ".git")] == BLOCK
    assert found[str(temp / "stockade.yml")] == BLOCK
    assert found[str(temp / ".vscode")] == BLOCK
    # Pins come before what lies beneath them.
    paths = [protection.path for protection in guard.protections]
    assert paths.index(str(ws / ".git")) < paths.index(str(ws / ".git" / "hooks"))


def test_bwrap_binds_existing_metadata_read_only(roots):
    ws, temp, _ = roots
    (ws / ".git" / "hooks").mkdir()
    (ws / ".git" / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "Makefile").write_text("all:\n")
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp)], extra_protected=["Makefile"])
    found = kinds(guard)
    assert found[str(ws / ".git" / "hooks")] == READ_ONLY
    assert found[str(ws / ".git" / "config")] == READ_ONLY
    assert found[str(ws / "Makefile")] == READ_ONLY


def test_bwrap_protects_an_installation_inside_a_root_and_ignores_one_outside(roots):
    ws, temp, outside = roots
    (ws / "venv").mkdir()
    (outside / "venv").mkdir()
    guard = guard_call(
        bw.NAME,
        WW,
        str(ws),
        [str(temp)],
        installation=[str(ws / "venv"), str(outside / "venv")],
    )
    found = kinds(guard)
    assert found[str(ws / "venv")] == READ_ONLY
    assert str(outside / "venv") not in found
    assert guard.refusal is None and guard.gaps == ()


def test_bwrap_protects_a_trusted_file_inside_a_root(roots):
    ws, temp, outside = roots
    (ws / "conf.yml").write_text("x")
    (outside / "other.yml").write_text("x")
    guard = guard_call(
        bw.NAME,
        WW,
        str(ws),
        [str(temp)],
        trusted_files=[str(ws / "conf.yml"), str(outside / "other.yml")],
    )
    found = kinds(guard)
    assert found[str(ws / "conf.yml")] == READ_ONLY
    assert str(outside / "other.yml") not in found


def test_a_runner_inside_a_root_is_refused_unless_it_is_the_installation(roots):
    """Calls made without this composition could replace it: only the installation
    is protected in every call."""
    ws, temp, _ = roots
    (ws / "bin").mkdir()
    (ws / "bin" / "bwrap").write_text("#!/bin/sh\n")
    runner = str(ws / "bin" / "bwrap")
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp)], runner=runner)
    assert guard.refusal is not None and runner in guard.refusal
    assert "outside every workspace" in guard.refusal
    kept = guard_call(
        bw.NAME, WW, str(ws), [str(temp)], runner=runner, installation=[str(ws / "bin")]
    )
    assert kept.refusal is None
    assert kinds(kept)[str(ws / "bin")] == READ_ONLY


def test_bwrap_reports_a_dotgit_symlink_as_a_gap(roots):
    ws, temp, outside = roots
    (ws / ".git" / "HEAD").unlink()
    (ws / ".git").rmdir()
    (outside / "gitdir" / "hooks").mkdir(parents=True)
    (ws / ".git").symlink_to(outside / "gitdir")
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp)])
    assert guard.refusal is None
    assert guard.gaps == (
        f"{ws / '.git'} is a symlink inside a writable root: what it protects can be re-pointed",
    )
    # What it leads to lies outside every root: read-only already, nothing to bind.
    assert not any(path.startswith(str(outside)) for path in kinds(guard))


def test_seatbelt_and_runner_command_are_protecting_backends(roots):
    ws, temp, _ = roots
    bwrap = guard_call(bw.NAME, WW, str(ws), [str(temp)])
    for backend in (sb.NAME, fk.NAME):
        assert guard_call(backend, WW, str(ws), [str(temp)]) == bwrap


def test_landlock_workspace_write_cannot_protect_and_says_so(roots):
    ws, temp, _ = roots
    guard = guard_call(ll.NAME, WW, str(ws), [str(temp)])
    assert guard.protections == ()
    assert guard.refusal is None
    assert guard.gaps == (LANDLOCK_GAP,)
    extra = guard_call(ll.NAME, WW, str(ws), [str(temp)], extra_protected=["Makefile"])
    assert extra.gaps == (f"protected paths not enforced: {named('Makefile')}",)


def test_landlock_refuses_an_installation_inside_a_root(roots):
    ws, temp, _ = roots
    (ws / "venv").mkdir()
    guard = guard_call(ll.NAME, WW, str(ws), [str(temp)], installation=[str(ws / "venv")])
    assert guard.protections == () and guard.gaps == ()
    assert guard.refusal is not None
    assert str(ws / "venv") in guard.refusal
    assert f"inside the writable root {ws}" in guard.refusal
    assert "install stockade outside the workspace" in guard.refusal
    assert "allow_unprotected_installation" in guard.refusal


def test_landlock_refuses_a_runner_inside_a_root(roots):
    ws, temp, _ = roots
    (ws / "landlock-run").write_text("x")
    guard = guard_call(ll.NAME, WW, str(ws), [str(temp)], runner=str(ws / "landlock-run"))
    assert guard.refusal is not None and str(ws / "landlock-run") in guard.refusal


def test_landlock_may_accept_an_unprotected_installation_as_a_partial_claim(roots):
    ws, temp, _ = roots
    (ws / "venv").mkdir()
    guard = guard_call(
        ll.NAME,
        WW,
        str(ws),
        [str(temp)],
        installation=[str(ws / "venv")],
        allow_unprotected_installation=True,
    )
    assert guard.refusal is None and guard.protections == ()
    assert guard.gaps == (
        f"stockade's installation under {ws} is not protected",
        LANDLOCK_GAP,
    )


@pytest.mark.parametrize("backend", [bw.NAME, ll.NAME])
def test_a_link_on_the_way_to_the_installation_inside_a_root_is_refused(roots, backend):
    """stockade started through `ws/venv -> outside` (a venv reached through a link in
    the workspace): no bind holds the link, so a command could re-point it for the next
    stockade process started that way. Refused on every backend; read-only has nothing
    writable; the same link outside every root, or inside the installation (kept
    read-only), is none of the call's business."""
    ws, temp, outside = roots
    link = ws / "venv"
    link.symlink_to(outside)
    guard = guard_call(
        backend,
        WW,
        str(ws),
        [str(temp)],
        installation=[str(outside)],
        installation_links=[str(link)],
    )
    assert guard.protections == () and guard.refusal is not None
    assert guard.refusal.startswith(f"stockade was started through the symlink {link}, ")
    assert f"inside the writable root {ws}" in guard.refusal
    assert f"(that link leads to {outside})" in guard.refusal
    ro = guard_call(
        backend,
        RO,
        str(ws),
        [str(temp)],
        installation=[str(outside)],
        installation_links=[str(link)],
    )
    assert ro.refusal is None
    elsewhere = outside / "bin"
    elsewhere.symlink_to(outside)
    for harmless in ([str(elsewhere)], [str(ws / "venv-real" / "bin" / "python")]):
        (ws / "venv-real" / "bin").mkdir(parents=True, exist_ok=True)
        guard = guard_call(
            backend,
            WW,
            str(ws),
            [str(temp)],
            mounts=True,  # the Landlock launcher namespaced: it binds the installation
            installation=[str(outside), str(ws / "venv-real")],
            installation_links=harmless,
        )
        assert guard.refusal is None, harmless


@pytest.mark.parametrize("backend", [bw.NAME, ll.NAME])
def test_a_link_inside_an_installation_path_above_the_root_is_refused(roots, backend):
    """An installation path that holds the workspace (a venv around the project,
    Debian's prefix /usr around /usr/src/app) is bound by nothing, so a link in the root
    is not held by lying inside it: only a part of the installation the call binds
    read-only (inside a root) holds a link."""
    ws, temp, _ = roots
    link = ws / "tool"
    link.symlink_to(ws.parent)
    guard = guard_call(
        backend,
        WW,
        str(ws),
        [str(temp)],
        mounts=True,
        installation=[str(ws.parent)],
        installation_links=[str(link)],
    )
    assert guard.refusal is not None and str(link) in guard.refusal


def test_the_plain_tier_refuses_an_installation_in_the_root_in_its_own_words(roots):
    """Where nothing binds, a link inside the installation (a venv's own bin/python)
    is not held either; the refusal is the installation's, which says what to do."""
    ws, temp, _ = roots
    (ws / "venv" / "bin").mkdir(parents=True)
    (ws / "venv" / "bin" / "python").symlink_to("/usr/bin/env")
    guard = guard_call(
        ll.NAME,
        WW,
        str(ws),
        [str(temp)],
        installation=[str(ws / "venv")],
        installation_links=[str(ws / "venv" / "bin" / "python")],
    )
    assert guard.refusal is not None
    assert guard.refusal.startswith(f"stockade's installation ({ws / 'venv'}) lies inside")


def test_a_link_to_the_installation_may_be_accepted_as_a_partial_claim(roots):
    ws, temp, outside = roots
    link = ws / "venv"
    link.symlink_to(outside)
    guard = guard_call(
        bw.NAME,
        WW,
        str(ws),
        [str(temp)],
        installation=[str(outside)],
        installation_links=[str(link)],
        allow_unprotected_installation=True,
    )
    assert guard.refusal is None
    assert f"stockade was started through the link {link}" in guard.gaps


def test_landlock_ignores_an_installation_outside_every_root(roots):
    ws, temp, outside = roots
    guard = guard_call(ll.NAME, WW, str(ws), [str(temp)], installation=[str(outside)])
    assert guard.refusal is None
    assert guard.gaps == (LANDLOCK_GAP,)


def test_landlock_refuses_a_trusted_file_inside_a_root(roots):
    ws, temp, outside = roots
    (ws / "stockade.yml").write_text("x")
    guard = guard_call(
        ll.NAME,
        WW,
        str(ws),
        [str(temp)],
        trusted_files=[str(outside / "fine.yml"), str(ws / "stockade.yml")],
        # Even an accepted unprotected installation does not cover the file.
        allow_unprotected_installation=True,
    )
    assert guard.protections == () and guard.gaps == ()
    assert guard.refusal is not None
    assert str(ws / "stockade.yml") in guard.refusal
    assert f"inside the writable root {ws}" in guard.refusal


def test_landlock_lists_names_relative_to_the_innermost_root(tmp_path):
    temp = tmp_path.resolve() / "temp"
    ws = temp / "project"
    ws.mkdir(parents=True)
    guard = guard_call(ll.NAME, WW, str(ws), [str(temp)])
    # Neither has a `.git`: each is blocked whole, and named once.
    names = ", ".join(sorted({name.rstrip("/") for name in ROOT_PROTECTED} | {".git"}))
    assert guard.gaps == (f"protected paths not enforced: {names}",)


# --- the argv builders ------------------------------------------------------------------

PROTECTIONS = (
    Protection("/work/project/.git", PIN),
    Protection("/work/project/.git/hooks", READ_ONLY),
    Protection("/work/project/.git/config", BLOCK),
    Protection("/work/project/stockade.yml", BLOCK),
)
TEMP = ("/tmp",)


def test_bwrap_binds_protections_after_the_writable_roots():
    argv = bw.bwrap_argv("/usr/bin/bwrap", WW, "/work/project", TEMP, CMD, protections=PROTECTIONS)
    assert argv[-4:] == ("--", *CMD)
    # The last writable bind, then the protections in order, then `--`.
    writable = argv.index("/tmp") - 1
    assert argv[writable : writable + 3] == ("--bind", "/tmp", "/tmp")
    assert argv[writable + 3 : -4] == (
        "--bind",
        "/work/project/.git",
        "/work/project/.git",
        "--ro-bind",
        "/work/project/.git/hooks",
        "/work/project/.git/hooks",
        "--ro-bind",
        a.EMPTY_FILE,
        "/work/project/.git/config",
        "--ro-bind",
        a.EMPTY_FILE,
        "/work/project/stockade.yml",
    )
    assert argv.index("--bind") < argv.index("/work/project/.git")
    assert bw.bwrap_argv("/usr/bin/bwrap", WW, "/work/project", TEMP, CMD)[-7:] == (
        "--bind",
        "/tmp",
        "/tmp",
        "--",
        *CMD,
    )


def test_protection_args_per_kind():
    assert bw.protection_args(Protection("/r/d", PIN)) == ["--bind", "/r/d", "/r/d"]
    assert bw.protection_args(Protection("/r/f", READ_ONLY)) == ["--ro-bind", "/r/f", "/r/f"]
    assert bw.protection_args(Protection("/r/.git/config", BLOCK)) == [
        "--ro-bind",
        a.EMPTY_FILE,
        "/r/.git/config",
    ]
    assert bw.protection_args(Protection("/r/g/config.worktree", BLOCK)) == [
        "--ro-bind",
        a.EMPTY_FILE,
        "/r/g/config.worktree",
    ]
    # A missing name configured (or known) as a directory gets an empty directory.
    assert bw.protection_args(Protection("/r/private", BLOCK, True)) == [
        "--tmpfs",
        "/r/private",
        "--remount-ro",
        "/r/private",
    ]
    assert a.EMPTY_FILE.endswith("_data/empty") and os.path.getsize(a.EMPTY_FILE) == 0
    # Which blockers are directories is the trust base's call, never the name's.
    assert bw.protection_args(Protection("/r/.git", BLOCK, True)) == [
        "--tmpfs",
        "/r/.git",
        "--remount-ro",
        "/r/.git",
    ]


def test_confined_argv_passes_protections_to_every_mounting_runner():
    """bwrap's dialects bind them, and so does the Landlock launcher's namespaced tier
    (`--bind-*`, `--empty-dir`); its plain tier has no mount namespace to bind in."""
    for backend in (bw.NAME, fk.NAME):
        argv = _dispatch.confined_argv(
            backend, "/b", WW, "/work/project", TEMP, CMD, protections=PROTECTIONS
        )
        assert "/work/project/.git/hooks" in argv
    landlock = _dispatch.confined_argv(
        ll.NAME, "/l", WW, "/work/project", TEMP, CMD, protections=PROTECTIONS
    )
    for protection in PROTECTIONS:
        assert ll.launcher_protection_args(protection)[-1] == protection.path
        assert protection.path in landlock
    plain = _dispatch.confined_argv(
        ll.NAME, "/l", WW, "/work/project", TEMP, CMD, protections=PROTECTIONS, tier=ll.PLAIN
    )
    assert plain == ll.landlock_argv("/l", WW, "/work/project", TEMP, CMD, tier=ll.PLAIN)
    assert not any(path in plain for path in (x.path for x in PROTECTIONS))


def test_seatbelt_denies_writes_to_non_pin_protections_last():
    profile, params = sb.seatbelt_profile(WW, "/work/project", TEMP, PROTECTIONS)
    lines = profile.splitlines()
    assert lines[-3:] == [
        '(deny file-write* (subpath (param "PROTECTED_0")))',
        '(deny file-write* (subpath (param "PROTECTED_1")))',
        '(deny file-write* (subpath (param "PROTECTED_2")))',
    ]
    assert lines.index('(allow file-write* (subpath (param "WRITABLE_ROOT_0")))') < len(lines) - 3
    assert params == {
        "WRITABLE_ROOT_0": "/work/project",
        "WRITABLE_ROOT_1": "/tmp",
        "PROTECTED_0": "/work/project/.git/hooks",
        "PROTECTED_1": "/work/project/.git/config",
        "PROTECTED_2": "/work/project/stockade.yml",
    }
    argv = sb.seatbelt_argv(WW, "/work/project", TEMP, CMD, PROTECTIONS)
    assert "-DPROTECTED_0=/work/project/.git/hooks" in argv
    assert "-DPROTECTED_2=/work/project/stockade.yml" in argv
    assert "PROTECTED" not in sb.seatbelt_profile(WW, "/work/project", TEMP)[0]


# --- wrap -------------------------------------------------------------------------------

# Network on: these are about the trust base's gaps (network off adds its own).
POLICY = SandboxPolicy(WW, "/work/project", network=Network.ON)
HOST = p.HostPaths(temp_roots=TEMP)


def test_wrap_with_gaps_claims_partial():
    gap = "protected paths not enforced: stockade.yml"
    bwrap = p.wrap(p.Backend("bwrap", "/usr/bin/bwrap"), POLICY, HOST, CMD, gaps=(gap,))
    assert bwrap.enforcement is Enforcement.PARTIAL
    assert bwrap.gaps == (gap,)
    plain = p.Backend("landlock", "/l", abi=7, tier=ll.PLAIN, private_ipc=False)
    landlock = p.wrap(plain, POLICY, HOST, CMD, gaps=(gap,))
    assert landlock.enforcement is Enforcement.PARTIAL
    assert landlock.gaps[-1] == gap
    assert "chmod outside the writable roots" in landlock.gaps
    namespaced = p.wrap(p.Backend("landlock", "/l", abi=7, tier=ll.NAMESPACED), POLICY, HOST, CMD)
    assert namespaced.enforcement is Enforcement.FULL and namespaced.gaps == ()
    clean = p.wrap(p.Backend("bwrap", "/usr/bin/bwrap"), POLICY, HOST, CMD)
    assert clean.enforcement is Enforcement.FULL and clean.gaps == ()


def test_wrap_lists_blockers_for_bwrap_dialects_only():
    blocked = ("/work/project/.git/config", "/work/project/stockade.yml")
    for name in ("bwrap", "runner-command"):
        wrapped = p.wrap(
            p.Backend(name, "/b"), POLICY, HOST, CMD, protections=PROTECTIONS, blockers=blocked
        )
        assert wrapped.blockers == blocked
        assert wrapped.enforcement is Enforcement.FULL
        assert "/work/project/.git/hooks" in wrapped.argv
    seatbelt = p.wrap(
        p.Backend("seatbelt", "/usr/bin/sandbox-exec"),
        POLICY,
        HOST,
        CMD,
        protections=PROTECTIONS,
        blockers=blocked,
    )
    assert seatbelt.blockers == ()
    assert "-DPROTECTED_0=/work/project/.git/hooks" in seatbelt.argv


def test_guard_output_feeds_wrap(roots):
    ws, temp, _ = roots
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp)])
    policy = SandboxPolicy(WW, str(ws), network=Network.ON)
    wrapped = p.wrap(
        p.Backend("bwrap", "/usr/bin/bwrap"),
        policy,
        p.HostPaths(temp_roots=(str(temp),)),
        CMD,
        protections=guard.protections,
        gaps=guard.gaps,
    )
    assert wrapped.blockers == ()  # not passed: the guard's `creates` feeds it
    with_blockers = p.wrap(
        p.Backend("bwrap", "/usr/bin/bwrap"),
        policy,
        p.HostPaths(temp_roots=(str(temp),)),
        CMD,
        protections=guard.protections,
        blockers=guard.creates,
    )
    assert set(with_blockers.blockers) == {x.path for x in guard.protections if x.kind == BLOCK}
    assert str(ws / ".git" / "hooks") in with_blockers.blockers
    assert os.path.join(str(ws), ".git", "config") in wrapped.argv
    # Network on: every bind in place, the claim is full (a repository made during the
    # call is a standing limit `probe` states, not this call's gap).
    assert wrapped.enforcement is Enforcement.FULL
    assert wrapped.gaps == ()
    assert NEW_REPOSITORY_GAP not in wrapped.gaps


def test_an_empty_placeholder_is_blocked_again_not_nested_into(roots):
    """`stockade exec` cannot remove bwrap's placeholders: an empty `stockade.yml`
    left by an earlier run is blocked again as it is, an empty `.git` directory in a
    temp root too. In the workspace root an empty `.git` is no repository and blocks
    nothing (a new one made there is held when the call ends), nor is it nested into."""
    ws, temp, _ = roots
    (ws / ".git" / "HEAD").unlink()  # now an empty directory: a placeholder
    (ws / "stockade.yml").write_text("")
    (temp / ".git").mkdir()
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp)])
    by_path = {x.path: x for x in guard.protections}
    assert str(ws / ".git") not in by_path
    assert by_path[str(temp / ".git")].kind == BLOCK and by_path[str(temp / ".git")].directory
    assert by_path[str(ws / "stockade.yml")].kind == BLOCK
    assert not by_path[str(ws / "stockade.yml")].directory
    assert not any(path.startswith(str(ws / ".git") + "/") for path in by_path)
    # Every placeholder a call mounts over is one it holds while it runs, whoever made
    # it (the user's own empty ones are kept: only marked ones are ever removed).
    assert {str(temp / ".git"), str(ws / "stockade.yml")} <= set(guard.creates)
    assert set(guard.creates) == {x.path for x in guard.protections if x.kind == BLOCK}


def test_an_empty_workspace_inside_a_temp_root_is_no_placeholder(tmp_path):
    """An empty workspace under a temp root looks like an empty placeholder to a
    naive check: it must stay the writable root, never a read-only mount."""
    temp = tmp_path / "temp"
    ws = temp / "project"
    ws.mkdir(parents=True)
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp)])
    assert str(ws) not in {x.path for x in guard.protections}
    assert str(ws) not in guard.creates
    # The temp root's own `.git` is blocked; the workspace root's is not (held instead).
    assert str(temp / ".git") in guard.creates and str(ws / ".git") not in guard.creates


@pytest.mark.parametrize("backend", [bw.NAME, ll.NAME])
def test_the_guard_says_when_the_workspace_root_has_no_repository(roots, backend):
    """The start-of-call fact the executor and exec hold a new repository by
    (Guard.new_repository): the root's real path when its `.git` is missing or an
    empty directory, None when a repository is there; never for a read-only call."""
    ws, temp, _ = roots
    assert guard_call(backend, WW, str(ws), [str(temp)]).new_repository is None
    (ws / ".git" / "HEAD").unlink()
    assert guard_call(backend, WW, str(ws), [str(temp)]).new_repository == str(ws)
    (ws / ".git").rmdir()
    assert guard_call(backend, WW, str(ws), [str(temp)]).new_repository == str(ws)
    assert guard_call(backend, SandboxMode.READ_ONLY, str(ws), [str(temp)]).new_repository is None


def test_a_placeholder_removed_while_the_guard_looks_is_blocked_again(tmp_path, monkeypatch):
    """Another process removes its empty `.git` between the guard's lstat and its
    listdir: that is a missing `.git` (blocked at `.git`), never a `.git/config`
    whose directory no longer exists."""
    import stockade.trust.protect as trust

    ws, temp = tmp_path / "ws", tmp_path / "temp"
    (ws / ".git").mkdir(parents=True)
    temp.mkdir()
    real_listdir = os.listdir

    def listdir_after_removal(path):
        if str(path) == str(ws / ".git"):
            (ws / ".git").rmdir()
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_listdir(path)

    monkeypatch.setattr(trust.os, "listdir", listdir_after_removal)
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp)])
    blocked = {x.path for x in guard.protections if x.kind == BLOCK}
    assert str(ws / ".git") in blocked
    assert not any(path.startswith(str(ws / ".git") + "/") for path in blocked)


def test_a_root_of_stockades_own_gets_no_protected_names(roots):
    """A tool cache or exec's private temp directory (`own_roots`): only confined
    commands work there, so no name in it is protected (neither the settings names nor
    git metadata), while every other root keeps them."""
    ws, temp, _ = roots
    own = ws.parent / "own"
    (own / ".git").mkdir(parents=True)
    (own / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp), str(own)], own_roots=[str(own)])
    found = kinds(guard)
    assert not [path for path in found if path.startswith(str(own) + os.sep)]
    for root in (ws, temp):
        assert str(root / ".mcp.json") in found and str(root / ".vscode") in found
    assert found[str(ws / ".git" / "config")] == BLOCK
    assert found[str(temp / ".git")] == BLOCK


def test_what_an_own_root_holds_of_the_persons_stays_protected(roots):
    """What is protected wherever it lies stays so inside an own root: the startup
    files of a home it holds, stockade's installation, the composition file, and an
    absolute `protected_paths` entry."""
    ws, temp, _ = roots
    own = ws.parent / "own"
    (own / "venv").mkdir(parents=True)
    bashrc = str(own / ".bashrc")
    guard = guard_call(
        bw.NAME,
        WW,
        str(ws),
        [str(temp), str(own)],
        own_roots=[str(own)],
        startup=[(".bashrc", bashrc)],
        installation=[str(own / "venv")],
        trusted_files=[str(own / "stockade.yml")],
        extra_protected=[str(own / "keep")],
    )
    found = kinds(guard)
    for path in (bashrc, str(own / "venv"), str(own / "stockade.yml"), str(own / "keep")):
        assert path in found, path
    assert str(own / ".mcp.json") not in found


def test_the_workspace_root_is_never_an_own_root(roots):
    ws, temp, _ = roots
    guard = guard_call(bw.NAME, WW, str(ws), [str(temp)], own_roots=[str(ws), str(temp)])
    found = kinds(guard)
    assert found[str(ws / ".mcp.json")] == BLOCK
    assert found[str(ws / ".git" / "config")] == BLOCK
    assert str(temp / ".mcp.json") not in found

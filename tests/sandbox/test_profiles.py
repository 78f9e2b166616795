"""Each backend's argv/SBPL for each mode, as pure data."""

import msgspec
import pytest

from stockade.errors import InvalidPolicy
from stockade.messages import Wrapped
from stockade.sandbox import _argv as a
from stockade.sandbox import _dispatch
from stockade.sandbox import _profiles as p
from stockade.sandbox.backends import bwrap as bw
from stockade.sandbox.backends import landlock as ll
from stockade.sandbox.backends import seatbelt as sb
from stockade.vocab import Enforcement, Network, SandboxMode, SandboxPolicy

TEMP = ("/tmp", "/var/tmp/agent")
HOST = p.HostPaths(temp_roots=TEMP)
# Network on: the file-effect profiles as they were; network off is tested below.
ON = Network.ON
RO = SandboxPolicy(SandboxMode.READ_ONLY, "/work/project", network=ON)
WW = SandboxPolicy(SandboxMode.WORKSPACE_WRITE, "/work/project", network=ON)
CMD = ("bash", "-c", "echo hi")


def pairs(argv, flag):
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


@pytest.fixture
def another_caller(monkeypatch):
    """bwrap's argv as a caller other than root gets it: bwrap makes every mount (a
    root caller's filter stage makes the read-only ones: see
    test_bwrap_read_only_mounts_go_to_one_place_by_caller)."""
    monkeypatch.setattr(bw, "launcher_may_mount", lambda: False)


def test_bwrap_read_only_binds_host_read_only_and_drops_privilege():
    argv = bw.bwrap_argv("/usr/bin/bwrap", RO.mode, RO.workspace_root, TEMP, CMD)
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[-4:] == ("--", *CMD)
    for flag in ("--die-with-parent", "--unshare-pid", "--unshare-user-try"):
        assert flag in argv
    # The consumer's own new session replaces it, keeping one killable group.
    assert "--new-session" not in argv
    kept_terminal = bw.bwrap_argv(
        "/usr/bin/bwrap", RO.mode, RO.workspace_root, TEMP, CMD, new_session=True
    )
    assert "--new-session" in kept_terminal
    # With the launcher as its filter stage, which refuses TIOCSTI itself, the command
    # stays in the terminal's session: Ctrl-C and Ctrl-Z reach it as in a shell.
    filtered = bw.bwrap_argv(
        "/usr/bin/bwrap",
        RO.mode,
        RO.workspace_root,
        TEMP,
        CMD,
        new_session=True,
        launcher="/opt/landlock-run",
    )
    assert "--new-session" not in filtered
    assert bw.has_filter_stage(filtered) and not bw.has_filter_stage(kept_terminal)
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert ("/", "/") in pairs(argv, "--ro-bind")
    assert ("/proc/sys", "/proc/sys") in pairs(argv, "--ro-bind-try")
    assert ("/proc/sysrq-trigger", "/proc/sysrq-trigger") in pairs(argv, "--ro-bind-try")
    assert argv[argv.index("--dev") + 1] == "/dev"
    assert argv[argv.index("--proc") + 1] == "/proc"
    assert argv[argv.index("--remount-ro") + 1] == "/dev"
    assert pairs(argv, "--bind") == []
    # Read-only binds come after the private /proc, or they would be covered by it.
    assert argv.index("--proc") < argv.index("--ro-bind-try")


def test_bwrap_runs_the_launcher_as_its_filter_stage_and_unshares_ipc(another_caller):
    argv = bw.bwrap_argv(
        "/usr/bin/bwrap",
        WW.mode,
        WW.workspace_root,
        TEMP,
        CMD,
        launcher="/x/landlock-run",
        network=ON,
    )
    assert "--unshare-ipc" in argv
    # The inner argv after the last `--` is the command, unchanged.
    assert argv[-7:] == ("--", "/x/landlock-run", "--filters-only", "--", *CMD)
    # Read-only binds refuse metadata and inode ioctls with bwrap's own EROFS: no seal.
    ro = bw.bwrap_argv(
        "/usr/bin/bwrap", RO.mode, RO.workspace_root, TEMP, CMD, launcher="/x/landlock-run"
    )
    assert "--seal-metadata" not in ro
    # An operator's runner_command gets the bwrap dialect without the filter stage.
    runner = _dispatch.confined_argv(
        "runner-command", "/r", WW.mode, WW.workspace_root, TEMP, CMD, launcher="/x/l"
    )
    assert "/x/l" not in runner


def test_bwrap_claims_setuid_bits_open_without_its_filter_stage(another_caller):
    shipped = p.Backend("bwrap", "/usr/bin/bwrap")
    assert shipped.launcher is not None and shipped.launcher.endswith("_bin/landlock-run")
    wrapped = p.wrap(shipped, WW, HOST, CMD)
    assert wrapped.enforcement is Enforcement.FULL and wrapped.gaps == ()
    assert wrapped.argv[-6:-4] == (shipped.launcher, "--filters-only")
    # The launcher's own failures (exit 125 and its line) are runner failures too.
    assert wrapped.runner_failure_rules[1].exit_codes == frozenset({125})
    assert wrapped.runner_failure_rules[1].fatal_signatures == ("landlock-run:",)
    bare = p.Backend("bwrap", "/usr/bin/bwrap", launcher=None)
    unfiltered = p.wrap(bare, WW, HOST, CMD)
    assert unfiltered.enforcement is Enforcement.PARTIAL
    assert unfiltered.gaps == (bw.BWRAP_UNFILTERED_GAP,)
    # Read-only binds refuse the bits anyway.
    assert p.wrap(bare, RO, HOST, CMD).enforcement is Enforcement.FULL


def test_bwrap_workspace_write_binds_root_and_temp_roots_writable():
    argv = bw.bwrap_argv("/usr/bin/bwrap", WW.mode, WW.workspace_root, TEMP, CMD)
    assert pairs(argv, "--bind") == [
        ("/work/project", "/work/project"),
        ("/tmp", "/tmp"),
        ("/var/tmp/agent", "/var/tmp/agent"),
    ]
    assert "--remount-ro" not in argv


def test_writable_roots_do_not_repeat_a_root_that_is_also_a_temp_root():
    assert a.writable_roots(SandboxMode.WORKSPACE_WRITE, "/tmp", TEMP) == ("/tmp", "/var/tmp/agent")
    assert a.writable_roots(SandboxMode.READ_ONLY, "/work/project", TEMP) == ()


def test_landlock_read_only_writes_only_dev_null_and_seals_metadata():
    argv = ll.landlock_argv("/x/landlock-run", RO.mode, RO.workspace_root, TEMP, CMD, network=ON)
    assert argv == (
        "/x/landlock-run",
        "--die-with-parent",
        "--ro",
        "/",
        "--rw",
        "/dev/null",
        "--seal-metadata",
        "--read-only-host",
        "--private-ipc",
        "--",
        *CMD,
    )
    # Where the probe found no private IPC namespace possible, the launcher filters.
    filtered = ll.landlock_argv(
        "/x/landlock-run", RO.mode, RO.workspace_root, TEMP, CMD, private_ipc=False
    )
    assert "--private-ipc" not in filtered


def test_landlock_workspace_write_adds_root_and_temp_roots():
    argv = ll.landlock_argv("/x/landlock-run", WW.mode, WW.workspace_root, TEMP, CMD, network=ON)
    assert argv == (
        "/x/landlock-run",
        "--die-with-parent",
        "--ro",
        "/",
        "--rw",
        "/dev/null",
        "--rw",
        "/work/project",
        "--rw",
        "/tmp",
        "--rw",
        "/var/tmp/agent",
        "--read-only-host",
        "--private-ipc",
        "--",
        *CMD,
    )
    # The plain tier: no namespace, no read-only host, IPC filtered.
    plain = ll.landlock_argv(
        "/x/landlock-run", WW.mode, WW.workspace_root, TEMP, CMD, network=ON, tier=ll.PLAIN
    )
    assert plain == (
        "/x/landlock-run",
        "--die-with-parent",
        "--plain",
        "--ro",
        "/",
        "--rw",
        "/dev/null",
        "--rw",
        "/work/project",
        "--rw",
        "/tmp",
        "--rw",
        "/var/tmp/agent",
        "--",
        *CMD,
    )


def test_seatbelt_profile_is_readable_sbpl_with_parameterised_roots():
    profile, params = sb.seatbelt_profile(RO.mode, RO.workspace_root, TEMP, network=ON)
    assert profile.splitlines() == [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        '(allow file-write* (literal "/dev/null"))',
    ]
    assert params == {}
    profile, params = sb.seatbelt_profile(WW.mode, WW.workspace_root, TEMP)
    assert '(allow file-write* (subpath (param "WRITABLE_ROOT_0")))' in profile
    assert params == {
        "WRITABLE_ROOT_0": "/work/project",
        "WRITABLE_ROOT_1": "/tmp",
        "WRITABLE_ROOT_2": "/var/tmp/agent",
    }
    argv = sb.seatbelt_argv(WW.mode, WW.workspace_root, TEMP, CMD)
    assert argv[:3] == ("/usr/bin/sandbox-exec", "-p", profile)
    assert "-DWRITABLE_ROOT_0=/work/project" in argv
    assert argv[-4:] == ("--", *CMD)


def test_wrap_carries_each_backends_dialect():
    bwrap = p.wrap(p.Backend("bwrap", "/usr/bin/bwrap"), RO, HOST, CMD)
    assert bwrap.backend == "bwrap" and bwrap.enforcement is Enforcement.FULL
    assert bwrap.denial_signatures == ("Read-only file system", "Device or resource busy")
    assert bwrap.runner_failure_rules[0].exit_codes is None
    assert bwrap.runner_failure_rules[0].fatal_signatures == ("bwrap:",)

    landlock = p.wrap(p.Backend("landlock", "/l", abi=7), RO, HOST, CMD)
    # The namespaced tier refuses through its mounts too (read-only host, binds).
    assert landlock.denial_signatures == (
        "Read-only file system",
        "Device or resource busy",
        "Permission denied",
    )
    plain = p.wrap(p.Backend("landlock", "/l", abi=7, tier=ll.PLAIN), RO, HOST, CMD)
    assert plain.denial_signatures == ("Permission denied",)
    (rule,) = landlock.runner_failure_rules
    assert rule.exit_codes == frozenset({125})
    assert rule.fatal_signatures == ("landlock-run:",)
    assert rule.informational_lines == ("landlock-run: partial enforcement (older Landlock ABI)",)

    seatbelt = p.wrap(p.Backend("seatbelt", "/usr/bin/sandbox-exec"), RO, HOST, CMD)
    assert seatbelt.denial_signatures == ("Operation not permitted",)
    assert seatbelt.runner_failure_rules[0].fatal_signatures == ("sandbox-exec:",)
    assert seatbelt.enforcement is Enforcement.FULL


def test_landlock_enforcement_is_a_truthful_claim():
    full, none = ll.landlock_enforcement(SandboxMode.READ_ONLY, 7, network=ON)
    assert (full, none) == (Enforcement.FULL, ())
    # The namespaced tier makes the host read-only in its mount namespace: metadata
    # changes outside the roots are refused (EROFS), as under bwrap.
    held, none = ll.landlock_enforcement(SandboxMode.WORKSPACE_WRITE, 7, network=ON)
    assert (held, none) == (Enforcement.FULL, ())
    partial, gaps = ll.landlock_enforcement(
        SandboxMode.WORKSPACE_WRITE, 7, network=ON, tier=ll.PLAIN
    )
    assert partial is Enforcement.PARTIAL
    assert "chmod outside the writable roots" in gaps
    old, old_gaps = ll.landlock_enforcement(SandboxMode.READ_ONLY, 2, network=ON)
    assert old is Enforcement.PARTIAL
    assert old_gaps == ("truncate", "device ioctl", "abstract unix sockets")
    _, plain_gaps = ll.landlock_enforcement(SandboxMode.READ_ONLY, 2, network=ON, tier=ll.PLAIN)
    assert plain_gaps == (
        "truncate",
        "device ioctl",
        "abstract unix sockets",
        "signals to host processes",
        ll.PLAIN_UNSCOPED_GAP,
    )
    scoped, none = ll.landlock_enforcement(SandboxMode.READ_ONLY, 6, network=ON)
    assert (scoped, none) == (Enforcement.FULL, ())
    shared, ipc_gaps = ll.landlock_enforcement(
        SandboxMode.READ_ONLY, 7, private_ipc=False, network=ON
    )
    assert shared is Enforcement.PARTIAL and ipc_gaps == (ll.LANDLOCK_SHARED_IPC_GAP,)
    assert p.wrap(p.Backend("landlock", "/l", abi=7), WW, HOST, CMD).enforcement is Enforcement.FULL
    plain = p.Backend("landlock", "/l", abi=7, tier=ll.PLAIN, private_ipc=False)
    assert p.wrap(plain, WW, HOST, CMD).enforcement is Enforcement.PARTIAL


def test_wrapped_is_plain_data_that_round_trips():
    wrapped = p.wrap(p.Backend("landlock", "/l", abi=7), WW, HOST, CMD)
    assert msgspec.json.decode(msgspec.json.encode(wrapped), type=Wrapped) == wrapped


# --- network off ------------------------------------------------------------------------

OFF = Network.OFF
RO_OFF = SandboxPolicy(SandboxMode.READ_ONLY, "/work/project")
WW_OFF = SandboxPolicy(SandboxMode.WORKSPACE_WRITE, "/work/project")
SOCKETS = ("/run/docker.sock", "/var/tmp/svc/s.sock")


def test_network_is_off_unless_said():
    assert RO_OFF.network is OFF and WW_OFF.network is OFF
    argv = bw.bwrap_argv("/usr/bin/bwrap", WW.mode, WW.workspace_root, TEMP, CMD)
    assert "--unshare-net" in argv
    assert "--private-network" in ll.landlock_argv("/l", WW.mode, WW.workspace_root, TEMP, CMD)
    plain = ll.landlock_argv("/l", WW.mode, WW.workspace_root, TEMP, CMD, tier=ll.PLAIN)
    assert "--no-network" in plain


def test_bwrap_network_off_unshares_the_network_and_filters_families(another_caller):
    launcher = "/x/landlock-run"
    on = bw.bwrap_argv("/b", WW.mode, "/w", TEMP, CMD, launcher=launcher, network=ON)
    assert "--unshare-net" not in on and "--netns-only" not in on
    ro = bw.bwrap_argv("/b", RO.mode, "/w", TEMP, CMD, launcher=launcher, network=OFF)
    assert ro.index("--unshare-net") < ro.index("--cap-drop")
    stage = ro[ro.index(launcher) :]
    assert stage == (launcher, "--filters-only", "--netns-only", "--unix-pairs-only", "--", *CMD)
    # Read-only refuses every Unix socket but pairs: nothing to hide, no capability left.
    ro_hidden = bw.bwrap_argv(
        "/b", RO.mode, "/w", TEMP, CMD, launcher=launcher, network=OFF, hidden_sockets=()
    )
    assert "--cap-add" not in ro_hidden


def test_bwrap_workspace_write_hides_sockets_through_its_filter_stage(another_caller):
    launcher = "/x/landlock-run"
    argv = bw.bwrap_argv(
        "/b", WW.mode, "/w", TEMP, CMD, launcher=launcher, network=OFF, hidden_sockets=SOCKETS
    )
    # The stage gets CAP_SYS_ADMIN to mount with (and CAP_SETPCAP to drop the
    # bounding set), after everything else was dropped.
    drop = argv.index("--cap-drop")
    assert argv[drop : drop + 6] == (
        "--cap-drop",
        "ALL",
        "--cap-add",
        "CAP_SYS_ADMIN",
        "--cap-add",
        "CAP_SETPCAP",
    )
    stage = argv[argv.index(launcher) :]
    assert stage == (
        launcher,
        "--filters-only",
        "--netns-only",
        "--empty",
        a.EMPTY_FILE,
        "--hide-socket",
        SOCKETS[0],
        "--hide-socket",
        SOCKETS[1],
        "--",
        *CMD,
    )
    # Without a filter stage (an operator's runner) nothing hides them and no
    # capability is left.
    bare = bw.bwrap_argv("/b", WW.mode, "/w", TEMP, CMD, network=OFF, hidden_sockets=SOCKETS)
    assert "--cap-add" not in bare and "--hide-socket" not in bare
    assert "--unshare-net" in bare
    # Network on hides nothing.
    on = bw.bwrap_argv(
        "/b", WW.mode, "/w", TEMP, CMD, launcher=launcher, network=ON, hidden_sockets=SOCKETS
    )
    assert "--hide-socket" not in on and "--cap-add" not in on


def test_landlock_network_off():
    """The namespaced tier: a network namespace of the call's own (its loopback: a
    command's own servers work). The plain tier: no socket family but AF_UNIX."""
    ro = ll.landlock_argv("/l", RO.mode, "/w", TEMP, CMD, network=OFF)
    assert ro[ro.index("--private-ipc") :] == (
        "--private-ipc",
        "--private-network",
        "--unix-pairs-only",
        "--",
        *CMD,
    )
    plain = ll.landlock_argv("/l", RO.mode, "/w", TEMP, CMD, network=OFF, tier=ll.PLAIN)
    assert plain[plain.index("--seal-metadata") :] == (
        "--seal-metadata",
        "--no-network",
        "--unix-pairs-only",
        "--",
        *CMD,
    )
    ww = ll.landlock_argv("/l", WW.mode, "/w", TEMP, CMD, network=OFF, hidden_sockets=SOCKETS)
    assert ww[ww.index("--private-ipc") :] == (
        "--private-ipc",
        "--private-network",
        "--empty",
        a.EMPTY_FILE,
        "--hide-socket",
        SOCKETS[0],
        "--hide-socket",
        SOCKETS[1],
        "--",
        *CMD,
    )
    # No mount namespace possible (no private IPC namespace either): nothing hidden.
    shared = ll.landlock_argv(
        "/l", WW.mode, "/w", TEMP, CMD, network=OFF, hidden_sockets=SOCKETS, private_ipc=False
    )
    assert "--hide-socket" not in shared


def test_seatbelt_network_off_denies_the_network():
    profile, _ = sb.seatbelt_profile(WW.mode, "/w", TEMP)
    assert "(deny network*)" in profile.splitlines()


def test_hides_sockets_only_where_unix_sockets_stay_allowed():
    ww, ro = SandboxMode.WORKSPACE_WRITE, SandboxMode.READ_ONLY
    assert _dispatch.hides_sockets("bwrap", ww, OFF, launcher="/l")
    assert not _dispatch.hides_sockets("bwrap", ww, OFF, launcher=None)
    assert not _dispatch.hides_sockets("bwrap", ro, OFF, launcher="/l")
    assert not _dispatch.hides_sockets("bwrap", ww, ON, launcher="/l")
    assert _dispatch.hides_sockets("landlock", ww, OFF, private_ipc=True)
    assert not _dispatch.hides_sockets("landlock", ww, OFF, private_ipc=False)
    assert not _dispatch.hides_sockets("runner-command", ww, OFF, launcher="/l")
    assert not _dispatch.hides_sockets("seatbelt", ww, OFF)


def test_network_off_claims_never_full_for_what_is_not_governed():
    """The network claim stands apart from the file claim (issue 25): a gap of network
    off makes `network_enforcement` partial and leaves `enforcement` alone."""
    shipped = p.Backend("bwrap", "/usr/bin/bwrap")
    ro = p.wrap(shipped, RO_OFF, HOST, CMD)
    assert ro.enforcement is ro.network_enforcement is Enforcement.FULL
    ww = p.wrap(shipped, WW_OFF, HOST, CMD, hidden_sockets=SOCKETS)
    assert ww.enforcement is Enforcement.FULL and ww.gaps == ()
    assert ww.network_enforcement is Enforcement.PARTIAL
    assert ww.network_gaps == (p.UNFOUND_SOCKETS_GAP,)
    assert ww.protected == ()
    # A hidden socket inside a writable root is a mount point there: removing it is a
    # refusal ("Device or resource busy"), judged as one.
    tmux = "/tmp/tmux-0/default"
    inside = p.wrap(shipped, WW_OFF, HOST, CMD, hidden_sockets=(*SOCKETS, tmux))
    assert inside.protected == (tmux,)
    bare = p.Backend("bwrap", "/usr/bin/bwrap", launcher=None)
    assert p.wrap(bare, RO_OFF, HOST, CMD).network_gaps == (
        bw.UNFILTERED_FAMILIES_GAP,
        bw.UNHIDDEN_PATHNAME_GAP,
    )
    runner = p.Backend("runner-command", "/r")
    assert p.wrap(runner, WW_OFF, HOST, CMD).network_enforcement is Enforcement.PARTIAL
    landlock = p.Backend("landlock", "/l", abi=7)
    assert p.wrap(landlock, RO_OFF, HOST, CMD).enforcement is Enforcement.FULL
    wrapped = p.wrap(landlock, WW_OFF, HOST, CMD)
    assert p.UNFOUND_SOCKETS_GAP in wrapped.network_gaps
    assert p.UNFOUND_SOCKETS_GAP not in wrapped.gaps
    shared = p.Backend("landlock", "/l", abi=7, private_ipc=False)
    assert ll.LANDLOCK_PATHNAME_GAP in p.wrap(shared, WW_OFF, HOST, CMD).network_gaps
    # Network on claims nothing about the network.
    on = p.wrap(shipped, WW, HOST, CMD)
    assert on.gaps == on.network_gaps == () and on.network_enforcement is None


def test_network_claim_names_every_effect():
    for backend, launcher, tier in (
        ("bwrap", "/l", ll.NAMESPACED),
        ("bwrap", None, ll.NAMESPACED),
        ("landlock", None, ll.NAMESPACED),
        ("landlock", None, ll.PLAIN),
    ):
        for mode in (SandboxMode.READ_ONLY, SandboxMode.WORKSPACE_WRITE):
            effects, gaps = p.network_claim(backend, mode, OFF, abi=7, launcher=launcher, tier=tier)
            assert tuple(effects) == p.NETWORK_EFFECTS
            open_ = [how for how in effects.values() if how.startswith(p.NOT_GOVERNED)]
            assert [how.split(": ", 1)[1] for how in open_] == [
                gap for gap in gaps if gap != p.UNFOUND_SOCKETS_GAP
            ]
    assert p.network_claim("bwrap", SandboxMode.READ_ONLY, ON, launcher="/l") == ({}, ())
    # Below ABI 6 abstract sockets are open in workspace-write (listed with the
    # launcher's other older-ABI gaps), refused with the Unix sockets in read-only.
    # (The plain tier's: the namespaced tier's network namespace holds them.)
    effects, gaps = p.network_claim(
        "landlock", SandboxMode.WORKSPACE_WRITE, OFF, abi=5, tier=ll.PLAIN
    )
    assert effects[p.NET_ABSTRACT].startswith(p.NOT_GOVERNED)
    # ...and the network claim names it (it no longer lives only in the file claim).
    assert "abstract unix sockets (ABI < 6)" in gaps
    _, gaps = ll.landlock_enforcement(SandboxMode.WORKSPACE_WRITE, 5, network=OFF, tier=ll.PLAIN)
    assert gaps.count("abstract unix sockets") == 1
    namespaced, gaps = p.network_claim("landlock", SandboxMode.WORKSPACE_WRITE, OFF, abi=5)
    assert namespaced[p.NET_ABSTRACT] == namespaced[p.NET_TCP] and "abstract" not in str(gaps)


def test_sockets_under_dev_are_hidden_by_landlock_only(another_caller):
    """The Landlock launcher shows the command the host's /dev (a daemon's socket in
    /dev/shm is reachable there); bwrap's /dev is private, so its argv stays as it was."""
    shm = "/dev/shm/daemon.sock"
    landlock = ll.landlock_argv("/l", WW.mode, "/w", TEMP, CMD, network=OFF, hidden_sockets=(shm,))
    assert landlock[landlock.index("--hide-socket") + 1] == shm
    launcher = "/x/landlock-run"
    with_dev = bw.bwrap_argv(
        "/b", WW.mode, "/w", TEMP, CMD, launcher=launcher, hidden_sockets=(*SOCKETS, shm)
    )
    without = bw.bwrap_argv(
        "/b", WW.mode, "/w", TEMP, CMD, launcher=launcher, hidden_sockets=SOCKETS
    )
    assert with_dev == without
    only_dev = bw.bwrap_argv(
        "/b", WW.mode, "/w", TEMP, CMD, launcher=launcher, hidden_sockets=(shm,)
    )
    assert "--hide-socket" not in only_dev and "--cap-add" not in only_dev


def test_a_policys_temp_roots_are_its_private_dir_then_the_hosts():
    private = SandboxPolicy(SandboxMode.WORKSPACE_WRITE, "/w", temp_dir="/tmp/stockade-tmp-1")
    assert private.temp_roots == ("/tmp/stockade-tmp-1",)
    both = SandboxPolicy(
        SandboxMode.WORKSPACE_WRITE, "/w", temp_dir="/tmp/stockade-tmp-1", host_temp=("/tmp",)
    )
    assert both.temp_roots == ("/tmp/stockade-tmp-1", "/tmp")
    assert SandboxPolicy(SandboxMode.WORKSPACE_WRITE, "/w").temp_roots == ()
    with pytest.raises(InvalidPolicy, match="absolute"):
        SandboxPolicy(SandboxMode.WORKSPACE_WRITE, "/w", temp_dir="tmp")


def test_the_host_temp_roots_are_a_named_gap():
    """Restoring the host's shared temp roots (allow_host_temp) is claimed: partial,
    naming them, on every backend; read-only writes none, so claims nothing of it."""
    for backend in (p.Backend("bwrap", "/usr/bin/bwrap"), p.Backend("landlock", "/l", abi=7)):
        policy = SandboxPolicy(
            SandboxMode.WORKSPACE_WRITE, "/w", network=ON, temp_dir="/t/p", host_temp=("/tmp",)
        )
        wrapped = p.wrap(backend, policy, p.HostPaths(temp_roots=policy.temp_roots), CMD)
        assert p.host_temp_gap(("/tmp",)) in wrapped.gaps
        assert wrapped.enforcement is Enforcement.PARTIAL
        assert wrapped.writable == ("/w", "/t/p", "/tmp")
        private = msgspec.structs.replace(policy, host_temp=())
        assert p.host_temp_gap(("/tmp",)) not in p.wrap(backend, private, HOST, CMD).gaps
        read_only = msgspec.structs.replace(policy, mode=SandboxMode.READ_ONLY)
        assert p.wrap(backend, read_only, HOST, CMD).gaps == ()


def test_bwrap_protections_go_to_one_place_by_caller(monkeypatch):
    """A root caller's filter stage binds the protected paths (in bwrap's own mount
    namespace, after bwrap); any other caller's bwrap binds them itself. Never both,
    never neither; without a filter stage, bwrap does."""
    from stockade.trust import Protection

    protections = (
        Protection("/work/project/.git", "pin"),
        Protection("/work/project/.git/config", "read-only"),
        Protection("/work/project/.vscode", "block", True),
        Protection("/work/project/stockade.yml", "block"),
    )
    bwrap_own = ["--bind", "--ro-bind", "--tmpfs", "--remount-ro"]
    stage_own = ["--bind-pin", "--bind-ro", "--empty-dir", "--bind-file"]

    def argv(may_mount: bool, launcher: str | None = "/x/landlock-run") -> tuple[str, ...]:
        monkeypatch.setattr(bw, "launcher_may_mount", lambda: may_mount)
        return bw.bwrap_argv(
            "/usr/bin/bwrap", WW.mode, WW.workspace_root, TEMP, CMD,
            protections=protections, launcher=launcher,
        )  # fmt: skip

    def split(full: tuple[str, ...]) -> tuple[list[str], list[str]]:
        """(bwrap's options, the filter stage's), each up to its `--`."""
        runner_end = full.index("--")
        staged = "--filters-only" in full
        stage_end = full.index("--", runner_end + 1) if staged else runner_end
        return list(full[:runner_end]), list(full[runner_end:stage_end])

    runner, stage = split(argv(True))
    for protection in protections:
        assert protection.path not in runner
        assert protection.path in stage
    assert all(flag in stage for flag in stage_own)
    assert runner.count("--cap-add") == 2  # CAP_SYS_ADMIN, CAP_SETPCAP: the stage mounts
    runner, stage = split(argv(False))
    for protection in protections:
        assert protection.path in runner
        assert protection.path not in stage
    assert not any(flag in stage for flag in stage_own)
    assert all(flag in runner for flag in bwrap_own)
    assert "--cap-add" not in runner  # nothing to hide, cover or bind in the stage
    runner, stage = split(argv(True, launcher=None))
    assert all(protection.path in runner for protection in protections)
    assert stage == []


def test_bwrap_read_only_mounts_go_to_one_place_by_caller(monkeypatch):
    """/proc/sys and its neighbours read-only, and each fresh view's tmpfs made
    read-only once what it keeps is bound: a root caller's filter stage does both (in
    bwrap's own namespace, after every bind, the remounts last); any other caller's
    bwrap does (`--ro-bind-try`, `--remount-ro`), as bwrap does with no filter stage.
    Never both, never neither."""
    from stockade.trust import Protection

    fresh = a.fresh_plan(("/run", "/tmp"), ("/work/project", "/tmp/stockade-tmp-1"))
    protected = Protection("/work/project/.git/config", "read-only")

    def split(may_mount: bool, launcher: str | None = "/x/landlock-run"):
        monkeypatch.setattr(bw, "launcher_may_mount", lambda: may_mount)
        full = bw.bwrap_argv(
            "/usr/bin/bwrap", WW.mode, WW.workspace_root, ("/tmp/stockade-tmp-1",), CMD,
            launcher=launcher, fresh=fresh, protections=(protected,),
        )  # fmt: skip
        runner_end = full.index("--")
        stage_end = full.index("--", runner_end + 1) if launcher else runner_end
        return list(full[:runner_end]), list(full[runner_end:stage_end])

    def options(argv: list[str], flag: str) -> list[str]:
        return [argv[i + 1] for i, item in enumerate(argv) if item == flag]

    runner, stage = split(True)
    assert "--ro-bind-try" not in runner and "--remount-ro" not in runner
    assert options(stage, "--bind-ro-try") == list(bw.PROC_READ_ONLY)
    assert options(stage, "--remount-ro") == ["/run", "/tmp"]
    assert stage[-4:] == ["--remount-ro", "/run", "--remount-ro", "/tmp"]
    assert stage.index("--bind-ro") < stage.index("--bind-ro-try")
    assert runner.count("--cap-add") == 2  # the stage mounts, then drops every capability
    for may_mount, launcher in ((False, "/x/landlock-run"), (True, None)):
        runner, stage = split(may_mount, launcher)
        assert "--bind-ro-try" not in stage and "--remount-ro" not in stage
        assert [runner[i + 1] for i, f in enumerate(runner) if f == "--ro-bind-try"] == list(
            bw.PROC_READ_ONLY
        )
        assert options(runner, "--remount-ro") == ["/run", "/tmp"]
        # After the writable binds beneath them, and after bwrap's /proc.
        assert runner.index("--remount-ro") > runner.index("--bind")
        assert runner.index("--ro-bind-try") > runner.index("--proc")

"""Each backend's argv/SBPL for each mode, as pure data."""

import msgspec

from stockade.messages import Wrapped
from stockade.sandbox import _argv as a
from stockade.sandbox import _profiles as p
from stockade.vocab import Enforcement, SandboxMode, SandboxPolicy

TEMP = ("/tmp", "/var/tmp/agent")
HOST = p.HostPaths(temp_roots=TEMP)
RO = SandboxPolicy(SandboxMode.READ_ONLY, "/work/project")
WW = SandboxPolicy(SandboxMode.WORKSPACE_WRITE, "/work/project")
CMD = ("bash", "-c", "echo hi")


def pairs(argv, flag):
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def test_bwrap_read_only_binds_host_read_only_and_drops_privilege():
    argv = a.bwrap_argv("/usr/bin/bwrap", RO.mode, RO.workspace_root, TEMP, CMD)
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[-4:] == ("--", *CMD)
    for flag in ("--die-with-parent", "--unshare-pid", "--unshare-user-try"):
        assert flag in argv
    # The consumer's own new session replaces it, keeping one killable group.
    assert "--new-session" not in argv
    kept_terminal = a.bwrap_argv(
        "/usr/bin/bwrap", RO.mode, RO.workspace_root, TEMP, CMD, new_session=True
    )
    assert "--new-session" in kept_terminal
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


def test_bwrap_workspace_write_binds_root_and_temp_roots_writable():
    argv = a.bwrap_argv("/usr/bin/bwrap", WW.mode, WW.workspace_root, TEMP, CMD)
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
    argv = a.landlock_argv("/x/landlock-run", RO.mode, RO.workspace_root, TEMP, CMD)
    assert argv == (
        "/x/landlock-run",
        "--ro",
        "/",
        "--rw",
        "/dev/null",
        "--seal-metadata",
        "--",
        *CMD,
    )


def test_landlock_workspace_write_adds_root_and_temp_roots():
    argv = a.landlock_argv("/x/landlock-run", WW.mode, WW.workspace_root, TEMP, CMD)
    assert argv == (
        "/x/landlock-run",
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
    profile, params = a.seatbelt_profile(RO.mode, RO.workspace_root, TEMP)
    assert profile.splitlines() == [
        "(version 1)",
        "(allow default)",
        "(deny file-write*)",
        '(allow file-write* (literal "/dev/null"))',
    ]
    assert params == {}
    profile, params = a.seatbelt_profile(WW.mode, WW.workspace_root, TEMP)
    assert '(allow file-write* (subpath (param "WRITABLE_ROOT_0")))' in profile
    assert params == {
        "WRITABLE_ROOT_0": "/work/project",
        "WRITABLE_ROOT_1": "/tmp",
        "WRITABLE_ROOT_2": "/var/tmp/agent",
    }
    argv = a.seatbelt_argv(WW.mode, WW.workspace_root, TEMP, CMD)
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
    assert landlock.denial_signatures == ("Permission denied",)
    (rule,) = landlock.runner_failure_rules
    assert rule.exit_codes == frozenset({125})
    assert rule.fatal_signatures == ("landlock-run:",)
    assert rule.informational_lines == ("landlock-run: partial enforcement (older Landlock ABI)",)

    seatbelt = p.wrap(p.Backend("seatbelt", "/usr/bin/sandbox-exec"), RO, HOST, CMD)
    assert seatbelt.denial_signatures == ("Operation not permitted",)
    assert seatbelt.runner_failure_rules[0].fatal_signatures == ("sandbox-exec:",)
    assert seatbelt.enforcement is Enforcement.FULL


def test_landlock_enforcement_is_a_truthful_claim():
    full, none = p.landlock_enforcement(SandboxMode.READ_ONLY, 7)
    assert (full, none) == (Enforcement.FULL, ())
    partial, gaps = p.landlock_enforcement(SandboxMode.WORKSPACE_WRITE, 7)
    assert partial is Enforcement.PARTIAL
    assert "chmod outside the writable roots" in gaps
    old, old_gaps = p.landlock_enforcement(SandboxMode.READ_ONLY, 2)
    assert old is Enforcement.PARTIAL and old_gaps == ("truncate", "device ioctl")
    assert (
        p.wrap(p.Backend("landlock", "/l", abi=7), WW, HOST, CMD).enforcement is Enforcement.PARTIAL
    )


def test_wrapped_is_plain_data_that_round_trips():
    wrapped = p.wrap(p.Backend("landlock", "/l", abi=7), WW, HOST, CMD)
    assert msgspec.json.decode(msgspec.json.encode(wrapped), type=Wrapped) == wrapped

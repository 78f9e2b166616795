"""Tests for launcher/landlock-run.c.

The launcher is compiled from source here (once with ``cc -static`` and once
with ``musl-gcc -static``), so these tests do not depend on the package build.
They assert on effects on disk (existence, content, mode, owner, mtime,
xattrs), not only on messages.
"""

import ctypes
import json
import os
import platform
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "launcher" / "landlock-run.c"
CFLAGS = ["-static", "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror"]
PYTHON = [sys.executable, "-I", "-B"]
LAUNCHER_FAILURE = 125
NOBODY = 65534
IS_ROOT = os.geteuid() == 0
X86_64 = platform.machine() == "x86_64"

pytestmark = pytest.mark.kernel
requires_root = pytest.mark.skipif(not IS_ROOT, reason="needs a root caller")


def landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    create_ruleset, version_flag = 444, 1
    return libc.syscall(
        ctypes.c_long(create_ruleset), None, ctypes.c_size_t(0), ctypes.c_uint32(version_flag)
    )


@pytest.fixture(scope="module", params=["cc", "musl-gcc"])
def launcher(request, tmp_path_factory):
    compiler = request.param
    if shutil.which(compiler) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{compiler} is required in CI but is not installed")
        pytest.skip(f"{compiler} is not installed")
    binary = tmp_path_factory.mktemp(f"launcher-{compiler}") / "landlock-run"
    build = subprocess.run(
        [compiler, *CFLAGS, "-o", str(binary), str(SOURCE)], capture_output=True, text=True
    )
    assert build.returncode == 0, build.stderr
    return binary


def run(launcher, *args, **kwargs):
    return subprocess.run(
        [str(launcher), *map(str, args)], capture_output=True, text=True, timeout=10, **kwargs
    )


def assert_launcher_failure(result, *mentions):
    """Exit 125, nothing on stdout, exactly one `landlock-run: ` line on stderr."""
    assert result.returncode == LAUNCHER_FAILURE, result
    assert result.stdout == ""
    lines = result.stderr.splitlines(keepends=True)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("landlock-run: ") and lines[0].endswith("\n")
    for text in mentions:
        assert text in lines[0]


def assert_clean_success(result):
    assert result.returncode == 0, result
    assert result.stderr == ""


def assert_refused(result):
    assert result.returncode != 0, result
    assert "Permission denied" in result.stderr or "cross-device" in result.stderr


def proc_status(text):
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


@pytest.fixture
def area(tmp_path):
    """A granted directory, an ungranted sibling, and a file in the sibling."""
    inside = tmp_path / "inside"
    sibling = tmp_path / "sibling"
    inside.mkdir()
    sibling.mkdir()
    outside_file = sibling / "keep.txt"
    outside_file.write_text("original\n")
    return inside, sibling, outside_file


def granted(inside):
    return ["--ro", "/", "--rw", inside, "--rw", "/dev/null"]


# ---- probe ----


def test_probe_reports_the_running_abi(launcher):
    abi = landlock_abi()
    assert abi >= 1, "Landlock is not available on this machine"
    result = run(launcher, "--probe")
    assert_clean_success(result)
    level = "full" if abi >= 5 else "partial"
    assert result.stdout == f"landlock-run: probe ok: abi={abi} enforcement={level}\n"


def test_probe_rejects_other_arguments(launcher):
    assert_launcher_failure(run(launcher, "--probe", "--ro", "/"), "--probe")


# ---- launcher failures ----

FAILURES = {
    "missing_ro_path": (
        lambda t, child: ["--ro", t / "absent", "--rw", t, "--", *child],
        ["absent", "No such file or directory"],
    ),
    "missing_rw_path": (
        lambda t, child: ["--rw", t, "--rw", t / "absent", "--", *child],
        ["absent", "No such file or directory"],
    ),
    "unknown_flag": (
        lambda t, child: ["--ro", "/", "--bogus", "--rw", t, "--", *child],
        ["--bogus"],
    ),
    "equals_syntax": (lambda t, child: ["--ro=/", "--rw", t, "--", *child], ["--ro=/"]),
    "missing_value": (lambda t, child: ["--rw", t, "--ro"], ["--ro"]),
    "no_separator": (lambda t, child: ["--ro", "/", "--rw", t, *child], []),
    "empty_argv": (lambda t, child: ["--ro", "/", "--rw", t, "--"], []),
    "missing_program": (
        lambda t, child: ["--ro", "/", "--rw", t, "--", "stockade-no-such-prog"],
        ["stockade-no-such-prog", "No such file or directory"],
    ),
    "missing_program_path": (
        lambda t, child: ["--ro", "/", "--rw", t, "--", t / "nope"],
        ["nope", "No such file or directory"],
    ),
    "program_outside_sandbox": (
        lambda t, child: ["--rw", t, "--", *child],
        ["cannot execute", "Permission denied"],
    ),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_launcher_failure_prints_one_line_and_runs_nothing(launcher, tmp_path, case):
    marker = tmp_path / "child-ran"
    build_args, mentions = FAILURES[case]
    child = ["/bin/sh", "-c", f"touch {marker}"]
    result = run(launcher, *build_args(tmp_path, child))
    assert_launcher_failure(result, *mentions)
    assert not marker.exists()


def test_child_exit_status_125_is_just_a_child_result(launcher):
    result = run(launcher, "--ro", "/", "--", "sh", "-c", "exit 125")
    assert result.returncode == LAUNCHER_FAILURE
    assert result.stderr == "" and result.stdout == ""


def test_child_status_and_output_pass_through(launcher):
    result = run(launcher, "--ro", "/", "--", "sh", "-c", "echo out; exit 7")
    assert (result.returncode, result.stdout, result.stderr) == (7, "out\n", "")


# ---- read-only sandbox ----

READ_ONLY = ["--ro", "/", "--rw", "/dev/null"]
WRITES = {
    "redirect": "echo x > {p}",
    "mkdir": "mkdir {p}",
    "symlink": "ln -s /etc/hostname {p}",
    "fifo": "mkfifo {p}",
    "copy": "cp /etc/hostname {p}",
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_read_only_refuses_every_write(launcher, tmp_path, write):
    target = tmp_path / "new"
    result = run(launcher, *READ_ONLY, "--", "sh", "-c", WRITES[write].format(p=target))
    assert_refused(result)
    assert not os.path.lexists(target)


def test_read_only_refuses_removal(launcher, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("stay\n")
    assert_refused(run(launcher, *READ_ONLY, "--", "rm", "-f", victim))
    assert victim.read_text() == "stay\n"


def test_read_only_allows_dev_null_and_reads(launcher, tmp_path):
    readable = tmp_path / "readable"
    readable.write_text("hello\n")
    result = run(
        launcher,
        *READ_ONLY,
        "--",
        "sh",
        "-c",
        f"echo x > /dev/null && cat {readable} && ls {tmp_path}",
    )
    assert_clean_success(result)
    assert result.stdout == "hello\nreadable\n"


# ---- read-write directory ----


def test_writes_inside_the_granted_directory(launcher, area):
    inside, _, _ = area
    script = (
        f"cd {inside} && echo hi > f && mkdir d && mv f d/f && ln -s d/f l "
        f"&& ln d/f hard && rm l && truncate -s 1 hard"
    )
    assert_clean_success(run(launcher, *granted(inside), "--", "sh", "-c", script))
    assert (inside / "d" / "f").read_text() == "h"
    assert not os.path.lexists(inside / "l")


def test_sibling_directory_is_refused(launcher, area):
    inside, sibling, _ = area
    target = sibling / "new"
    assert_refused(run(launcher, *granted(inside), "--", "touch", target))
    assert not target.exists()


def test_grandchild_is_equally_confined(launcher, area):
    inside, sibling, _ = area
    target = sibling / "grandchild"
    result = run(
        launcher,
        *granted(inside),
        "--",
        "sh",
        "-c",
        f"sh -c 'touch {target}'; sh -c 'touch {inside}/ok'",
    )
    assert "Permission denied" in result.stderr
    assert not target.exists()
    assert (inside / "ok").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["truncate", "-s", "0"],
        [*PYTHON, "-c", "import os, sys; os.truncate(sys.argv[1], 0)"],
        ["sh", "-c", ': > "$0"'],
    ],
)
def test_truncating_an_outside_file_is_refused(launcher, area, command):
    inside, _, outside_file = area
    assert_refused(run(launcher, *granted(inside), "--", *command, outside_file))
    assert outside_file.read_text() == "original\n"


def test_renaming_an_inside_file_out_is_refused(launcher, area):
    inside, sibling, _ = area
    (inside / "mine").write_text("mine\n")
    assert_refused(run(launcher, *granted(inside), "--", "mv", inside / "mine", sibling))
    code = "import os, sys; os.rename(sys.argv[1], sys.argv[2])"
    result = run(
        launcher, *granted(inside), "--", *PYTHON, "-c", code, inside / "mine", sibling / "mine"
    )
    assert result.returncode != 0
    assert "PermissionError" in result.stderr or "Invalid cross-device" in result.stderr
    assert (inside / "mine").read_text() == "mine\n"
    assert not (sibling / "mine").exists()


def test_hard_links_across_the_boundary_are_refused(launcher, area):
    inside, sibling, outside_file = area
    (inside / "mine").write_text("mine\n")
    assert_refused(run(launcher, *granted(inside), "--", "ln", outside_file, inside / "in"))
    assert_refused(run(launcher, *granted(inside), "--", "ln", inside / "mine", sibling / "out"))
    assert not os.path.lexists(inside / "in")
    assert not os.path.lexists(sibling / "out")
    assert outside_file.stat().st_nlink == 1


def test_symlink_inside_does_not_lead_a_write_out(launcher, area):
    inside, _, outside_file = area
    link = inside / "escape"
    result = run(
        launcher,
        *granted(inside),
        "--",
        "sh",
        "-c",
        f"ln -s {outside_file} {link} && echo pwned > {link}",
    )
    assert_refused(result)
    assert link.is_symlink()
    assert outside_file.read_text() == "original\n"


# ---- privileges ----


@requires_root
def test_root_caller_loses_every_capability(launcher, area):
    inside, _, _ = area
    result = run(launcher, *granted(inside), "--", "cat", "/proc/self/status")
    assert_clean_success(result)
    status = proc_status(result.stdout)
    for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[field], 16) == 0, (field, status[field])
    assert status["NoNewPrivs"] == "1"
    assert status["Uid"].split()[1] == "0"
    code = "import ctypes; print(ctypes.CDLL(None).prctl(27, 0, 0, 0, 0))"  # PR_GET_SECUREBITS
    securebits = run(launcher, *granted(inside), "--", *PYTHON, "-c", code)
    locked_noroot = 0xEF  # NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, locks, KEEP_CAPS_LOCKED
    assert int(securebits.stdout) & locked_noroot == locked_noroot


@requires_root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_root_caller_without_setpcap_still_loses_every_capability(launcher):
    """Without CAP_SETPCAP the bounding set and securebits stay; capset and
    no_new_privs must still leave the child with nothing."""
    result = subprocess.run(
        [
            "setpriv",
            "--bounding-set=-setpcap",
            "--inh-caps=+net_bind_service",
            "--ambient-caps=+net_bind_service",
            "--",
            str(launcher),
            *READ_ONLY,
            "--",
            "cat",
            "/proc/self/status",
        ],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert_clean_success(result)
    status = proc_status(result.stdout)
    for field in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(status[field], 16) == 0, (field, status[field])
    assert int(status["CapBnd"], 16) != 0


@requires_root
def test_root_cannot_write_the_hostname(launcher, area):
    inside, _, _ = area
    hostname = Path("/proc/sys/kernel/hostname")
    before = hostname.read_text()
    result = run(launcher, *granted(inside), "--", "sh", "-c", f"echo stockade-x > {hostname}")
    assert_refused(result)
    assert hostname.read_text() == before


@requires_root
def test_root_cannot_mount(launcher, area):
    inside, _, _ = area
    before = Path("/proc/self/mountinfo").read_text()
    assert run(launcher, *granted(inside), "--", "mount", "-o", "remount,rw", "/").returncode != 0
    assert (
        run(launcher, *granted(inside), "--", "mount", "-t", "tmpfs", "none", inside).returncode
        != 0
    )
    assert not os.path.ismount(inside)
    assert Path("/proc/self/mountinfo").read_text() == before


@pytest.fixture
def public_dir():
    """A directory (and ancestors) that the nobody user can traverse."""
    path = Path(tempfile.mkdtemp(prefix="stockade-launcher-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def run_as_nobody(*args):
    return subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=10,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
    )


@requires_root
def test_setuid_root_copy_gains_nothing(launcher, public_dir):
    suid_cat = public_dir / "suid-cat"
    shutil.copy2(shutil.which("cat"), suid_cat)
    suid_cat.chmod(0o4755)
    nobody_launcher = public_dir / "landlock-run"
    shutil.copy2(launcher, nobody_launcher)

    control = proc_status(run_as_nobody(suid_cat, "/proc/self/status").stdout)
    if control["Uid"].split()[1] != "0":
        pytest.skip("setuid bits are ignored on this filesystem")
    assert int(control["CapEff"], 16) != 0

    as_root = run(nobody_launcher, *READ_ONLY, "--", suid_cat, "/proc/self/status")
    as_nobody = run_as_nobody(nobody_launcher, *READ_ONLY, "--", suid_cat, "/proc/self/status")
    for result, euid in ((as_root, "0"), (as_nobody, str(NOBODY))):
        assert_clean_success(result)
        status = proc_status(result.stdout)
        assert status["Uid"].split()[1] == euid
        assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0


@requires_root
def test_non_root_caller_is_confined_too(launcher, public_dir):
    nobody_launcher = public_dir / "landlock-run"
    shutil.copy2(launcher, nobody_launcher)
    writable = public_dir / "nobody-owned"
    writable.mkdir()
    os.chown(writable, NOBODY, NOBODY)
    # /tmp lets nobody create files by ordinary permissions; only Landlock stops it.
    stray = Path(tempfile.gettempdir()) / f"stockade-stray-{os.getpid()}"
    script = f"cat /proc/self/status; touch {writable}/ok; touch {stray}"
    result = run_as_nobody(
        nobody_launcher,
        "--ro",
        "/",
        "--rw",
        writable,
        "--rw",
        "/dev/null",
        "--",
        "sh",
        "-c",
        script,
    )
    try:
        assert "Permission denied" in result.stderr
        assert not stray.exists()
    finally:
        stray.unlink(missing_ok=True)
    assert (writable / "ok").exists()
    assert proc_status(result.stdout)["NoNewPrivs"] == "1"


# ---- metadata ----


def file_state(path):
    st = path.stat()
    return (
        stat.S_IMODE(st.st_mode),
        st.st_uid,
        st.st_gid,
        st.st_mtime_ns,
        sorted(os.listxattr(path)),
    )


def test_landlock_does_not_govern_metadata_without_seal(launcher, area):
    """Pins a known Landlock gap: mode, times and xattrs of files outside the
    granted paths remain changeable by their owner.  --seal-metadata exists
    because of this."""
    _, _, outside_file = area
    outside_file.chmod(0o644)
    code = "import os, sys; os.setxattr(sys.argv[1], 'user.stockade', b'1')"
    for command in (
        ["chmod", "600", outside_file],
        ["touch", "-d", "2000-01-01", outside_file],
        [*PYTHON, "-c", code, outside_file],
    ):
        assert_clean_success(run(launcher, *READ_ONLY, "--", *command))
    mode, _, _, mtime_ns, xattrs = file_state(outside_file)
    assert mode == 0o600
    assert 946_000_000 < mtime_ns // 10**9 < 978_307_200  # some time in 2000
    assert "user.stockade" in xattrs


SEALED = [*READ_ONLY, "--seal-metadata"]


@pytest.fixture
def sealed_target(area):
    _, _, outside_file = area
    outside_file.chmod(0o644)
    os.setxattr(outside_file, "user.existing", b"1")
    return outside_file


@pytest.mark.parametrize(
    "command",
    [
        ["chmod", "600"],
        ["chown", f"{os.getuid()}:{os.getgid()}"],
        ["touch", "-d", "2000-01-01"],
        ["touch", "-m"],
        [*PYTHON, "-c", "import os, sys; os.setxattr(sys.argv[1], 'user.new', b'1')"],
        [*PYTHON, "-c", "import os, sys; os.removexattr(sys.argv[1], 'user.existing')"],
    ],
    ids=["chmod", "chown", "touch-d", "touch-m", "setxattr", "removexattr"],
)
def test_seal_refuses_metadata_commands(launcher, sealed_target, command):
    before = file_state(sealed_target)
    result = run(launcher, *SEALED, "--", *command, sealed_target)
    assert result.returncode != 0
    assert "Permission denied" in result.stderr, result.stderr
    assert file_state(sealed_target) == before


# Every call uses invalid pointers/fds (-1) so nothing could change even if
# the filter let it through; a sealed call must fail with EACCES before that.
SEAL_PROBE = r"""
import ctypes, errno, fcntl, json, os, sys
path = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def raw(nr, *args):
    ctypes.set_errno(0)
    libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return errno.errorcode.get(ctypes.get_errno(), "OK")
def call(fn, *args, **kw):
    try:
        fn(*args, **kw)
        return "OK"
    except OSError as e:
        return errno.errorcode[e.errno]
fd = os.open(path, os.O_RDONLY)
flags = ctypes.c_long(0)
fcntl.ioctl(fd, 0x80086601, flags)  # FS_IOC_GETFLAGS: writes back the same flags
st = os.stat(path)
out = {
    "chmod": call(os.chmod, path, 0o600),
    "fchmod": call(os.fchmod, fd, 0o600),
    "chown": call(os.chown, path, st.st_uid, st.st_gid),
    "lchown": call(os.lchown, path, st.st_uid, st.st_gid),
    "fchown": call(os.fchown, fd, st.st_uid, st.st_gid),
    "utime": call(os.utime, path, (0, 0)),
    "futime": call(os.utime, fd, (0, 0)),
    "setxattr": call(os.setxattr, path, "user.new", b"1"),
    "fsetxattr": call(os.setxattr, fd, "user.new", b"1"),
    "lremovexattr": call(os.removexattr, path, "user.existing", follow_symlinks=False),
    "FS_IOC_SETFLAGS": call(fcntl.ioctl, fd, 0x40086602, flags),
    "FS_IOC_SETFLAGS_high_bits": raw(16, fd, 0xFFFFFFFF40086602 - 2**64, ctypes.addressof(flags)),
}
if sys.argv[2] == "x86_64":
    for name, nr in [("chmod", 90), ("fchmod", 91), ("chown", 92), ("fchown", 93),
                     ("lchown", 94), ("utime", 132), ("setxattr", 188), ("lsetxattr", 189),
                     ("fsetxattr", 190), ("removexattr", 197), ("lremovexattr", 198),
                     ("fremovexattr", 199), ("utimes", 235), ("fchownat", 260),
                     ("futimesat", 261), ("fchmodat", 268), ("utimensat", 280),
                     ("io_uring_setup", 425), ("fchmodat2", 452), ("setxattrat", 463),
                     ("removexattrat", 466), ("file_setattr", 469)]:
        out["raw_" + name] = raw(nr, -1, -1, -1, -1, -1, -1)
print(json.dumps(out))
"""


def seal_probe(launcher, target, *flags):
    result = run(
        launcher, *READ_ONLY, *flags, "--", *PYTHON, "-c", SEAL_PROBE, target, platform.machine()
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_seal_refuses_every_metadata_syscall(launcher, sealed_target):
    before = file_state(sealed_target)
    outcome = seal_probe(launcher, sealed_target, "--seal-metadata")
    assert {name: code for name, code in outcome.items() if code != "EACCES"} == {}
    assert file_state(sealed_target) == before


def test_metadata_syscalls_reach_the_kernel_without_seal(launcher, sealed_target):
    """Control for the test above: the raw calls are not refused for other reasons."""
    outcome = seal_probe(launcher, sealed_target)
    raw = {name: code for name, code in outcome.items() if name.startswith("raw_")}
    assert "EACCES" not in raw.values()
    assert outcome["chmod"] == "OK" and outcome["FS_IOC_SETFLAGS"] == "OK"


def test_seal_keeps_reads_writes_and_execs_working(launcher, area):
    inside, _, outside_file = area
    script = (
        f"cat {outside_file} && ls / > /dev/null && echo new > {inside}/f && sh -c 'echo nested'"
    )
    result = run(launcher, *granted(inside), "--seal-metadata", "--", "sh", "-c", script)
    assert_clean_success(result)
    assert result.stdout == "original\nnested\n"
    assert (inside / "f").read_text() == "new\n"
    status = run(launcher, *SEALED, "--", "cat", "/proc/self/status")
    assert proc_status(status.stdout)["Seccomp"] == "2"


@pytest.mark.skipif(not X86_64, reason="x32 exists only on x86_64")
def test_seal_kills_x32_syscalls(launcher):
    code = (
        "import ctypes; l = ctypes.CDLL(None); "
        "l.syscall(ctypes.c_long(0x40000000 | 39))"
    )  # x32 getpid
    result = run(launcher, *SEALED, "--", *PYTHON, "-c", code)
    assert result.returncode == -signal.SIGSYS


def test_terminal_injection_is_refused_in_every_mode(launcher, area):
    """TIOCSTI/TIOCLINUX would type into the caller's terminal, outside the sandbox."""
    inside, _, _ = area
    code = (
        "import errno, fcntl, os, termios\n"
        "fd = os.open('/dev/null', os.O_RDONLY)\n"
        "for request in (termios.TIOCSTI, 0x541C):\n"
        "    try:\n"
        "        fcntl.ioctl(fd, request, b'x')\n"
        "    except OSError as e:\n"
        "        print(errno.errorcode[e.errno])\n"
    )
    for flags in (granted(inside), (*granted(inside), "--seal-metadata")):
        result = run(launcher, *flags, "--", *PYTHON, "-c", code)
        assert result.stdout.split() == ["EPERM", "EPERM"], result.stderr
    # Without the launcher the same calls reach the driver (which says ENOTTY).
    plain = subprocess.run([*PYTHON, "-c", code], capture_output=True, text=True, check=False)
    assert plain.stdout.split() == ["ENOTTY", "ENOTTY"]


def test_a_grant_reached_through_a_symlink_is_refused(launcher, area, tmp_path):
    """A root's component swapped for a link must not redirect the grant."""
    inside, _, _ = area
    link = tmp_path / "link-to-inside"
    link.symlink_to(inside)
    marker = inside / "ran"
    result = run(launcher, "--ro", "/", "--rw", str(link), "--", "touch", str(marker))
    assert_launcher_failure(result, str(link))
    assert not marker.exists()

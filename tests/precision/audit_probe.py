"""By hand, as root: does the kernel say directly when Landlock (or bwrap) refused?

    .venv/bin/python -m tests.precision.audit_probe [--enable-audit]

Not a test (it is not collected): with `--enable-audit` it turns the host's audit
switch on for the measurement and back to what it was in a `finally`. What it found
on Linux 6.18 (Landlock ABI 7) is in docs/security.md ("Precision of `denied`").

For each run it forks a child that restricts itself with Landlock (writes handled,
read/execute granted on /) and execs `touch` on a path outside its grants, while a
NETLINK_AUDIT socket bound to the AUDIT_NLGRP_READLOG multicast group collects
records: with the default flags, with LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (the
launcher execs the command, so only "new exec" logging could see its denials), and
a refused write under bwrap.
"""

from __future__ import annotations

import ctypes
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time

NETLINK_AUDIT = 9
AUDIT_GET, AUDIT_SET = 1000, 1001
AUDIT_NLGRP_READLOG = 1
AUDIT_LANDLOCK_ACCESS, AUDIT_LANDLOCK_DOMAIN, AUDIT_SYSCALL = 1423, 1424, 1300
NR_CREATE_RULESET, NR_ADD_RULE, NR_RESTRICT_SELF = 444, 445, 446
HANDLED_ABI1 = (1 << 13) - 1
READ_EXECUTE = (1 << 0) | (1 << 2) | (1 << 3)
LOG_NEW_EXEC_ON = 1 << 1
PR_SET_NO_NEW_PRIVS = 38

libc = ctypes.CDLL(None, use_errno=True)


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def audit_socket(groups: int) -> socket.socket:
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT)
    sock.bind((0, groups))
    return sock


def audit_status() -> dict[str, int]:
    with audit_socket(0) as sock:
        sock.send(struct.pack("=LHHLL", 16, AUDIT_GET, 1, 1, 0))
        while True:
            data = sock.recv(65536)
            if struct.unpack("=H", data[4:6])[0] == AUDIT_GET:
                names = ("mask", "enabled", "failure", "pid")
                return dict(zip(names, struct.unpack("=4I", data[16:32]), strict=True))


def set_audit_enabled(value: int) -> None:
    body = struct.pack("=10I", 1, value, 0, 0, 0, 0, 0, 0, 0, 0)  # mask: ENABLED
    with audit_socket(0) as sock:
        sock.send(struct.pack("=LHHLL", 16 + len(body), AUDIT_SET, 1 | 4, 1, 0) + body)
        sock.recv(65536)


def landlocked_exec(flags: int, argv: list[str]) -> None:
    """In a forked child: restrict writes everywhere, then exec `argv`."""
    attr = RulesetAttr(HANDLED_ABI1)
    ruleset = libc.syscall(NR_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    rule = PathBeneath(READ_EXECUTE, os.open("/", os.O_PATH))
    libc.syscall(NR_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0)
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if libc.syscall(NR_RESTRICT_SELF, ruleset, flags) != 0:
        os.write(2, f"restrict_self({flags}): errno {ctypes.get_errno()}\n".encode())
        os._exit(3)
    os.execvp(argv[0], argv)


def collect(sock: socket.socket, pids: set[int]) -> list[tuple[int, str, float]]:
    """The records of events that involve one of `pids` (the multicast group carries
    every process's; the records of one event share its `audit(TIME:SERIAL)`)."""
    records, start = [], time.perf_counter()
    while select.select([sock], [], [], 0.3)[0]:
        data = sock.recv(65536)
        length, kind = struct.unpack("=LH", data[:6])
        text = data[16:length].decode(errors="replace").rstrip("\x00")
        records.append((kind, text, time.perf_counter() - start))
    events = {
        text.split(")", 1)[0] for _, text, _ in records if any(f" pid={p} " in text for p in pids)
    }
    return [
        record
        for record in records
        if record[1].split(")", 1)[0] in events
        and record[0] in (AUDIT_LANDLOCK_ACCESS, AUDIT_LANDLOCK_DOMAIN, AUDIT_SYSCALL)
    ]


def landlock_run(label: str, flags: int, target: str) -> None:
    with audit_socket(AUDIT_NLGRP_READLOG) as sock:
        child = os.fork()
        if child == 0:
            landlocked_exec(flags, ["touch", target])
        _, status = os.waitpid(child, 0)
        records = collect(sock, {child})
    print(f"{label}: exit {os.waitstatus_to_exitcode(status)}, {len(records)} records")
    for kind, text, _ in records:
        print(f"    type={kind} {text[:220]}")


def bwrap_run(target: str) -> None:
    with audit_socket(AUDIT_NLGRP_READLOG) as sock:
        argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-user-try"]
        done = subprocess.run([*argv, "--", "touch", target], capture_output=True, text=True)
        found = []
        while select.select([sock], [], [], 0.3)[0]:
            data = sock.recv(65536)
            text = data[16 : struct.unpack("=L", data[:4])[0]].decode(errors="replace")
            if "touch" in text:
                found.append(text)
    print(f"bwrap: exit {done.returncode} ({done.stderr.strip()}), {len(found)} records")


def main() -> None:
    before = audit_status()
    print(f"audit status: {before}")
    enable = "--enable-audit" in sys.argv[1:]
    with tempfile.TemporaryDirectory(dir="/var/tmp") as scratch:
        target = os.path.join(scratch, "refused")
        try:
            if enable:
                set_audit_enabled(1)
                print(f"audit switched on for the measurement: {audit_status()}")
            landlock_run("landlock, default flags", 0, target)
            landlock_run("landlock, LOG_NEW_EXEC_ON", LOG_NEW_EXEC_ON, target)
            bwrap_run(target)
        finally:
            if enable:
                set_audit_enabled(before["enabled"])
                print(f"audit switch restored: {audit_status()}")


if __name__ == "__main__":
    main()

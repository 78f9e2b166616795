/*
 * landlock-run: run a command under a Landlock filesystem sandbox.
 *
 *   landlock-run [--ro PATH]... [--rw PATH]... [--seal-metadata] [--private-ipc]
 *                [--no-network | --private-network [--proxy-bridge PORT:PATH]...]
 *                [--unix-pairs-only]
 *                [--empty FILE --hide-socket PATH...] [--deny-read PATH...]
 *                [--read-only-host] [--bind-ro P | --bind-pin P | --bind-file SRC P |
 *                 --empty-dir P]... [--fresh-dir DIR]... [--keep PATH]...
 *                [--bind-socket SOCKET VIEW]...
 *                [--cgroup-make DIR]... [--cgroup-set[-if-present] PATH=VALUE]...
 *                [--cgroup-fd N | --cgroup-procs PATH]... [--rlimit NAME=VALUE]... -- ARGV...
 *   landlock-run --filters-only [--seal-metadata]
 *                [--no-network | --netns-only [--proxy-bridge PORT:PATH]...]
 *                [--unix-pairs-only]
 *                [--empty FILE --hide-socket PATH...] [--deny-read PATH...]
 *                [--cgroup-fd N]... [--rlimit NAME=VALUE]... -- ARGV...
 *   landlock-run --limits-only [--cgroup-make DIR] [--cgroup-set[-if-present] PATH=VALUE]...
 *                [--cgroup-fd N | --cgroup-procs PATH]...
 *                [--rlimit NAME=VALUE]... -- ARGV...
 *   landlock-run --probe
 *
 * The child may read and execute beneath --ro paths, do anything the running
 * Landlock ABI can govern beneath --rw paths, and nothing else on the
 * filesystem.  On ABI >= 6 it may neither signal nor connect to an abstract
 * Unix socket of a process outside its Landlock domain.  Before exec, every
 * capability is dropped and no_new_privs is set, so a root caller is confined
 * just like anyone else.
 *
 * The child runs in a PID namespace of its own, under a small init: when it
 * ends (or the launcher is killed), every process it started ends too, however
 * it left its process group (see "One call's processes").  The namespace is
 * made directly with CAP_SYS_ADMIN, else inside a user namespace mapping only
 * the caller's ids; where neither works the launcher fails (and so does
 * --probe): no command runs whose processes could outlive it.
 *
 * --no-network: no socket of any family but AF_UNIX (socket and socketpair;
 * seccomp, EAFNOSUPPORT), and on ABI >= 4 a ruleset that handles TCP bind and
 * connect with no port allowed.  --netns-only (--filters-only inside a runner
 * that gave the command a network namespace of its own, bwrap --unshare-net):
 * AF_INET, AF_INET6 and AF_NETLINK reach only that namespace and stay allowed;
 * every other family but AF_UNIX is refused (vsock, for one, ignores network
 * namespaces).  --unix-pairs-only (with either): not even an AF_UNIX socket(),
 * only socketpair() of stream or seqpacket type, so no Unix socket can be
 * reached by name (a datagram pair could still send to a named socket).
 *
 * --private-network (Landlock mode): the call gets a network namespace of its own,
 * made with its PID namespace (as --private-ipc's), with only a loopback, which
 * the launcher brings up; the command keeps the families --netns-only keeps
 * (AF_INET, AF_INET6 and AF_NETLINK reach only that namespace: a TCP or UDP
 * socket, a route or a raw netlink query there changes nothing outside; vsock and
 * packet sockets stay refused), and no TCP rule is needed.  Abstract Unix sockets
 * are per network namespace too: the host's are out of reach.  A named Unix socket
 * is not (see --hide-socket, --unix-pairs-only), nor is a descriptor the caller
 * passes in (it keeps the namespace it was made in).
 *
 * --proxy-bridge PORT:PATH (with --private-network, or --filters-only
 * --netns-only; repeatable, one PORT each): a bridge process listens on
 * 127.0.0.1:PORT (and [::1]:PORT where the namespace has IPv6) before the command
 * starts, and relays each connection to the Unix socket PATH and back (see "The
 * proxy bridge" below for what it holds and how it ends).  The command is then
 * told HTTP_PROXY=http://127.0.0.1:PORT by its caller: the namespace's loopback,
 * and through it PATH, is all the network it has.  In Landlock mode the bridge is
 * behind the call's covers: a PATH also given to --hide-socket, or beneath a
 * --deny-read path, is refused.  Under a runner it starts before them: PATH may be
 * hidden from the command and still be the bridge's.
 *
 * --hide-socket PATH (with --empty FILE, an empty file): a network namespace
 * does not cover named Unix sockets, which connect() finds through the file
 * system.  Each PATH that is still a socket is covered with a read-only bind of
 * FILE in a mount namespace of the command's own (connect() then meets a
 * regular file: ECONNREFUSED); one that is gone is skipped.  The namespace is
 * made as for --private-ipc; inside a runner (--filters-only) that takes
 * CAP_SYS_ADMIN, which the runner leaves the launcher for this (bwrap
 * --cap-add) and the launcher drops before exec like every other capability.
 *
 * --fresh-dir DIR, --keep PATH, --bind-socket SOCKET VIEW (not --plain): DIR, a
 * runtime directory where daemons bind sockets (/run, /tmp), becomes an empty
 * read-only tmpfs in the call's mount namespace, after every other mount, so a
 * socket bound there after the call started is out of reach too; each --keep PATH
 * beneath it is bound back as it was, and each SOCKET at VIEW (see fresh_views).
 *
 * --deny-read PATH: each PATH (a real path; one that is gone is skipped) is covered,
 * in the same mount namespace, by an empty file or directory of mode 000 on a
 * read-only tmpfs of the launcher's own: with every capability dropped, reading,
 * listing, writing or changing it fails (EACCES, or EROFS for a write), for root
 * too, and the mount cannot be undone by the command (its namespace's mounts are
 * locked in any namespace it makes).
 *
 * Seccomp filters, each killing foreign-architecture and x32 calls:
 *  - always: no TIOCSTI/TIOCLINUX (typing into the caller's terminal); no
 *    setuid/setgid bit set or created (chmod family, open/creat/mkdir/mknod
 *    with the bits), openat2 (its mode is out of a filter's sight) and
 *    io_uring (it would bypass every filter) refused;
 *  - without --private-ipc: no SysV or POSIX IPC object of the host created,
 *    removed or changed (--private-ipc instead gives the child an IPC namespace
 *    of its own, made with the PID namespace; it fails if that cannot be);
 *  - --seal-metadata (read-only): the metadata changes Landlock does not govern
 *    (mode, owner, timestamps, extended attributes), and every ioctl but an
 *    allowlist of terminal, file-query and socket-query requests.
 *
 * --filters-only installs the always-on filters (and the seal when asked) and
 * nothing else: for a runner that already confines files, drops capabilities
 * and makes IPC private (bwrap), run inside it.  With --hide-socket or
 * --deny-read it also puts the command in a Landlock domain that allows every
 * file access, for its ptrace rule alone: the runner's own processes stay in the
 * mount namespace without the covers, and /proc/PID/root would lead there.
 * It also unblocks SIGINT and SIGQUIT for the command: its caller holds them
 * blocked in the runner, whose outer process shares the terminal's foreground
 * group with the command and would die of the terminal's ^C or ^\ (and take
 * the sandbox with it) where the command should get it, as in a shell.
 *
 * Resource limits, in every mode but --probe (--limits-only applies them alone, for a
 * command its caller runs unconfined, then execs ARGV):
 *  - --cgroup-make DIR (up to 8) and --cgroup-set PATH=VALUE (up to 16; with
 *    -if-present a missing PATH is skipped): the command's own cgroup, made here
 *    (a DIR that exists already is a failure: a call never joins a group it did not
 *    make) and limited, in the order given, before any join.  Each DIR and PATH must
 *    be on a cgroup file system.  Made here rather than by the caller, so the caller
 *    does not spend its own time on it for every command (issue 26); the caller
 *    removes the group once the command has ended.
 *  - --cgroup-procs PATH (up to 8): the same, the launcher opening PATH itself first
 *    (where it can: not inside a runner that mounted the cgroup file system
 *    read-only, as bwrap does).
 *  - --cgroup-fd N (up to 8): N is a descriptor the caller opened for writing on a
 *    cgroup's cgroup.procs.  The launcher writes "0" to it, which moves the writer
 *    (the kernel judges the write by the opener's credentials, so it works under a
 *    runner or another uid), and closes it: the command never holds it, so it cannot
 *    move anything else there.  This is the launcher's first step, before it makes any
 *    process or namespace: the monitor, init, the bridge and the command are all
 *    counted (a pids.max must leave room for the launcher's own processes).  A bad
 *    descriptor, one not on a cgroup file system, or a refused write is a launcher
 *    failure: no command runs without the limits asked for.
 *  - --rlimit NAME=VALUE (NAME one of nproc, as, data, cpu, fsize, nofile; VALUE a
 *    decimal number or "unlimited"): soft and hard limit VALUE, except cpu, whose
 *    hard limit is 5 seconds more (SIGXCPU first, so the end says which limit it
 *    was; SIGKILL for a command that ignores it).  Set last, after the program is
 *    looked up and just before exec, so a low nofile or as cannot break the
 *    launcher's own setup.  By then, in Landlock mode and under bwrap, no
 *    capability is held (--limits-only keeps the caller's): a VALUE above the
 *    current hard limit fails.  The kernel never applies nproc to the global root
 *    uid.
 *
 * Any failure of the launcher itself exits 125 without running the child and
 * prints exactly one line, starting "landlock-run: ", on stderr.  Otherwise
 * the launcher ends as the child did: its exit status, or its death by a signal.  A command it
 * cannot execute is the command's result, as in a shell: 127 (not found) or 126,
 * with the shell's line ("CMD: command not found", "CMD: Permission denied").
 *
 * Built as a static binary with glibc or musl, so it includes no <linux/...>
 * header: the few kernel UAPI definitions it needs are declared below.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <termios.h>
#include <netinet/in.h>
#include <unistd.h>

#define LAUNCHER_FAILURE 125
#define PROBE_TIMEOUT_SECONDS 5

/* ---- openat2 (include/uapi/linux/openat2.h) ---- */

#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#define RESOLVE_NO_SYMLINKS 0x04ULL

struct open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};

/* ---- Landlock UAPI (include/uapi/linux/landlock.h) ---- */

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

/* The struct grows with the ABI; ruleset_attr_size() passes the prefix each ABI knows. */
struct landlock_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;	/* ABI 4 */
	uint64_t scoped;		/* ABI 6 */
};

#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define NET_ABI 4
#define SCOPE_ABI 6

struct landlock_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define LANDLOCK_RULE_PATH_BENEATH 1
#define LANDLOCK_RULE_NET_PORT 2

struct landlock_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
} __attribute__((packed));

#define ACCESS_EXECUTE (1ULL << 0)
#define ACCESS_WRITE_FILE (1ULL << 1)
#define ACCESS_READ_FILE (1ULL << 2)
#define ACCESS_READ_DIR (1ULL << 3)
/* ABI 1 also knows REMOVE_DIR, REMOVE_FILE and the MAKE_* rights, bits 4 to 12. */
#define ACCESS_ABI_1 ((1ULL << 13) - 1)
#define ACCESS_REFER (1ULL << 13)	/* ABI 2 */
#define ACCESS_TRUNCATE (1ULL << 14)	/* ABI 3 */
#define ACCESS_IOCTL_DEV (1ULL << 15)	/* ABI 5 */

#define ACCESS_READ_ONLY (ACCESS_READ_FILE | ACCESS_READ_DIR | ACCESS_EXECUTE)
/* The kernel rejects (EINVAL) directory-only rights on a non-directory. */
#define ACCESS_FILE_ONLY (ACCESS_EXECUTE | ACCESS_WRITE_FILE | ACCESS_READ_FILE | \
			  ACCESS_TRUNCATE | ACCESS_IOCTL_DEV)

/* Below this ABI, truncate(2) (3), device ioctls (5), or signals and abstract Unix
 * sockets reaching host processes (6) escape the sandbox. */
#define FULL_ENFORCEMENT_ABI SCOPE_ABI

/* ---- Capability and securebits UAPI ---- */

#define CAPABILITY_VERSION_3 0x20080522
#define CAP_SETPCAP 8
#define CAP_SYS_ADMIN 21

struct cap_header {
	uint32_t version;
	int pid;
};

struct cap_data {
	uint32_t effective;
	uint32_t permitted;
	uint32_t inheritable;
};

#define SECBIT_NOROOT (1U << 0)
#define SECBIT_NOROOT_LOCKED (1U << 1)
#define SECBIT_NO_SETUID_FIXUP (1U << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1U << 3)
#define SECBIT_KEEP_CAPS_LOCKED (1U << 5)
#define SECBIT_NO_CAP_AMBIENT_RAISE (1U << 6)
#define SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED (1U << 7)

/* ---- seccomp / classic BPF UAPI ---- */

struct sock_filter {
	uint16_t code;
	uint8_t jt;
	uint8_t jf;
	uint32_t k;
};

struct sock_fprog {
	unsigned short len;
	const struct sock_filter *filter;
};

struct seccomp_data {
	int nr;
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t args[6];
};

#define SECCOMP_MODE_FILTER 2
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#define SECCOMP_RET_ERRNO 0x00050000U
#define SECCOMP_RET_ALLOW 0x7fff0000U

#define BPF_LD_W_ABS 0x20	/* BPF_LD | BPF_W | BPF_ABS */
#define BPF_JEQ_K 0x15		/* BPF_JMP | BPF_JEQ | BPF_K */
#define BPF_JGE_K 0x35		/* BPF_JMP | BPF_JGE | BPF_K */
#define BPF_JSET_K 0x45		/* BPF_JMP | BPF_JSET | BPF_K */
#define BPF_AND_K 0x54		/* BPF_ALU | BPF_AND | BPF_K */
#define BPF_RET_K 0x06		/* BPF_RET | BPF_K */

#if defined(__x86_64__)
#define AUDIT_ARCH_NATIVE 0xC000003EU
#elif defined(__aarch64__)
#define AUDIT_ARCH_NATIVE 0xC00000B7U
#elif defined(__riscv) && __riscv_xlen == 64
#define AUDIT_ARCH_NATIVE 0xC00000F3U
#else
#error "unsupported architecture: add its AUDIT_ARCH and metadata syscalls"
#endif

/* The filters read the low 32 bits of a 64-bit syscall argument. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the seccomp filters assume a little-endian seccomp_data");
#define ARG_LOW_WORD(n) offsetof(struct seccomp_data, args[n])

/*
 * Every filter starts here: syscall numbers are only meaningful for the native
 * arch, so an i386 (int 0x80) or x32 call kills the process.  Leaves the syscall
 * number in the accumulator.
 */
#ifdef __x86_64__
#define X32_GUARD \
	{ BPF_JGE_K, 0, 1, 0x40000000U }, \
	{ BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS },
#else
#define X32_GUARD
#endif
#define ARCH_GUARD \
	{ BPF_LD_W_ABS, 0, 0, offsetof(struct seccomp_data, arch) }, \
	{ BPF_JEQ_K, 1, 0, AUDIT_ARCH_NATIVE }, \
	{ BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS }, \
	{ BPF_LD_W_ABS, 0, 0, offsetof(struct seccomp_data, nr) }, \
	X32_GUARD

#define RET_ALLOW { BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW }
/* EACCES, so the shell reports "Permission denied" as for Landlock's own denials. */
#define RET_DENY { BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EACCES }

/* The syscall (number in the accumulator) fails with `err`. */
#define REFUSE_WITH(nr, err) \
	{ BPF_JEQ_K, 0, 1, (nr) }, \
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | (err) }
#define DENY(nr) REFUSE_WITH(nr, EACCES)

/* The syscall is refused when argument `arg` has any of `bits`; else allowed. */
#define DENY_IF_BITS(nr, arg, bits) \
	{ BPF_JEQ_K, 0, 4, (nr) }, \
	{ BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(arg) }, \
	{ BPF_JSET_K, 0, 1, (bits) }, \
	RET_DENY, \
	RET_ALLOW

/* Refused when `flags_arg` has any of `flags` and `mode_arg` any of `bits`. */
#define DENY_IF_BOTH(nr, flags_arg, flags, mode_arg, bits) \
	{ BPF_JEQ_K, 0, 6, (nr) }, \
	{ BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(flags_arg) }, \
	{ BPF_JSET_K, 0, 3, (flags) }, \
	{ BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(mode_arg) }, \
	{ BPF_JSET_K, 0, 1, (bits) }, \
	RET_DENY, \
	RET_ALLOW

/* Refused when command argument `arg` (IPC_64 masked off) is `a` or `b`. */
#define DENY_IF_CMD(nr, arg, a, b) \
	{ BPF_JEQ_K, 0, 6, (nr) }, \
	{ BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(arg) }, \
	{ BPF_AND_K, 0, 0, ~(uint32_t)IPC_64 }, \
	{ BPF_JEQ_K, 2, 0, (a) }, \
	{ BPF_JEQ_K, 1, 0, (b) }, \
	RET_ALLOW, \
	RET_DENY

/* Generic syscall numbers newer than the libc headers we build against. */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif
#ifndef __NR_file_setattr
#define __NR_file_setattr 469
#endif

/*
 * Always installed (both runners, every confining mode): a setuid or setgid file
 * made by a confined command (root owns what root makes) would run with its
 * owner's privileges for whoever executes it later, outside the sandbox.
 * open/openat carry the mode only with O_CREAT or O_TMPFILE; openat2 hides it in a
 * struct a filter cannot read, so it is refused with ENOSYS (callers fall back to
 * openat); io_uring would issue opens past every filter.
 */
#define SPECIAL_MODE_BITS (S_ISUID | S_ISGID)
#define CREATING_FLAGS (O_CREAT | (O_TMPFILE & ~O_DIRECTORY))

static const struct sock_filter setid_filter[] = {
	ARCH_GUARD
#ifdef __NR_chmod
	DENY_IF_BITS(__NR_chmod, 1, SPECIAL_MODE_BITS),
#endif
	DENY_IF_BITS(__NR_fchmod, 1, SPECIAL_MODE_BITS),
	DENY_IF_BITS(__NR_fchmodat, 2, SPECIAL_MODE_BITS),
	DENY_IF_BITS(__NR_fchmodat2, 2, SPECIAL_MODE_BITS),
#ifdef __NR_creat
	DENY_IF_BITS(__NR_creat, 1, SPECIAL_MODE_BITS),
#endif
#ifdef __NR_open
	DENY_IF_BOTH(__NR_open, 1, CREATING_FLAGS, 2, SPECIAL_MODE_BITS),
#endif
	DENY_IF_BOTH(__NR_openat, 2, CREATING_FLAGS, 3, SPECIAL_MODE_BITS),
#ifdef __NR_mkdir
	DENY_IF_BITS(__NR_mkdir, 1, SPECIAL_MODE_BITS),
#endif
	DENY_IF_BITS(__NR_mkdirat, 2, SPECIAL_MODE_BITS),
#ifdef __NR_mknod
	DENY_IF_BITS(__NR_mknod, 1, SPECIAL_MODE_BITS),
#endif
	DENY_IF_BITS(__NR_mknodat, 2, SPECIAL_MODE_BITS),
	REFUSE_WITH(__NR_openat2, ENOSYS),
	DENY(__NR_io_uring_setup),
	RET_ALLOW,
};

/*
 * Without a private IPC namespace: no host IPC object may be created, removed or
 * have its owner or mode changed.  Using an existing one (sending, receiving,
 * attaching, semaphore operations) stays possible; the caller claims it.
 */
#define IPC_CREAT 01000
#define IPC_RMID 0
#define IPC_SET 1
#define IPC_64 0x100

static const struct sock_filter ipc_filter[] = {
	ARCH_GUARD
	DENY_IF_BITS(__NR_mq_open, 1, O_CREAT),
	DENY(__NR_mq_unlink),
	DENY_IF_BITS(__NR_msgget, 1, IPC_CREAT),
	DENY_IF_BITS(__NR_semget, 2, IPC_CREAT),
	DENY_IF_BITS(__NR_shmget, 2, IPC_CREAT),
	DENY_IF_CMD(__NR_msgctl, 1, IPC_RMID, IPC_SET),
	DENY_IF_CMD(__NR_semctl, 2, IPC_RMID, IPC_SET),
	DENY_IF_CMD(__NR_shmctl, 1, IPC_RMID, IPC_SET),
	RET_ALLOW,
};

/*
 * --seal-metadata (read-only): no metadata change is legitimate anywhere.  ioctl
 * is an allowlist: an inode can be changed by requests no list of known ones
 * would keep up with (FS_IOC_SETVERSION rewrites the generation and ctime), so
 * only terminal, file-query and socket-query requests pass.  The kernel
 * truncates the request to 32 bits; so do we.
 */
#define ALLOW_IOCTL(request) \
	{ BPF_JEQ_K, 0, 1, (request) }, \
	RET_ALLOW

static const struct sock_filter seal_filter[] = {
	ARCH_GUARD
#ifdef __NR_chmod
	DENY(__NR_chmod),
#endif
	DENY(__NR_fchmod),
	DENY(__NR_fchmodat),
	DENY(__NR_fchmodat2),
#ifdef __NR_chown
	DENY(__NR_chown),
#endif
	DENY(__NR_fchown),
#ifdef __NR_lchown
	DENY(__NR_lchown),
#endif
	DENY(__NR_fchownat),
#ifdef __NR_utime
	DENY(__NR_utime),
#endif
#ifdef __NR_utimes
	DENY(__NR_utimes),
#endif
#ifdef __NR_futimesat
	DENY(__NR_futimesat),
#endif
	DENY(__NR_utimensat),
	DENY(__NR_setxattr),
	DENY(__NR_lsetxattr),
	DENY(__NR_fsetxattr),
	DENY(__NR_setxattrat),
	DENY(__NR_removexattr),
	DENY(__NR_lremovexattr),
	DENY(__NR_fremovexattr),
	DENY(__NR_removexattrat),
	/* Inode flags (e.g. nodump, noatime) may be set by the file's owner. */
	DENY(__NR_file_setattr),
	/* io_uring performs setxattr without passing through this filter. */
	DENY(__NR_io_uring_setup),
	{ BPF_JEQ_K, 1, 0, __NR_ioctl },
	RET_ALLOW,
	{ BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(1) },
	/* Terminals: termios (and termios2), flush/drain, window size, job control. */
	ALLOW_IOCTL(0x5401U),		/* TCGETS */
	ALLOW_IOCTL(0x5402U),		/* TCSETS */
	ALLOW_IOCTL(0x5403U),		/* TCSETSW */
	ALLOW_IOCTL(0x5404U),		/* TCSETSF */
	ALLOW_IOCTL(0x802C542AU),	/* TCGETS2 */
	ALLOW_IOCTL(0x402C542BU),	/* TCSETS2 */
	ALLOW_IOCTL(0x402C542CU),	/* TCSETSW2 */
	ALLOW_IOCTL(0x402C542DU),	/* TCSETSF2 */
	ALLOW_IOCTL(0x5409U),		/* TCSBRK (tcdrain) */
	ALLOW_IOCTL(0x540AU),		/* TCXONC (tcflow) */
	ALLOW_IOCTL(0x540BU),		/* TCFLSH (tcflush) */
	ALLOW_IOCTL(0x540FU),		/* TIOCGPGRP */
	ALLOW_IOCTL(0x5410U),		/* TIOCSPGRP */
	ALLOW_IOCTL(0x5411U),		/* TIOCOUTQ, SIOCOUTQ */
	ALLOW_IOCTL(0x5413U),		/* TIOCGWINSZ */
	ALLOW_IOCTL(0x5414U),		/* TIOCSWINSZ */
	ALLOW_IOCTL(0x5429U),		/* TIOCGSID */
	/* Any descriptor: pending bytes, blocking, async, close-on-exec. */
	ALLOW_IOCTL(0x541BU),		/* FIONREAD, SIOCINQ */
	ALLOW_IOCTL(0x5421U),		/* FIONBIO */
	ALLOW_IOCTL(0x5452U),		/* FIOASYNC */
	ALLOW_IOCTL(0x5451U),		/* FIOCLEX */
	ALLOW_IOCTL(0x5450U),		/* FIONCLEX */
	/* Files: reads of flags, generation, fsxattr, block size, extents. */
	ALLOW_IOCTL(0x80086601U),	/* FS_IOC_GETFLAGS */
	ALLOW_IOCTL(0x80046601U),	/* FS_IOC32_GETFLAGS */
	ALLOW_IOCTL(0x80087601U),	/* FS_IOC_GETVERSION */
	ALLOW_IOCTL(0x80047601U),	/* FS_IOC32_GETVERSION */
	ALLOW_IOCTL(0x801C581FU),	/* FS_IOC_FSGETXATTR */
	ALLOW_IOCTL(0x00000002U),	/* FIGETBSZ */
	ALLOW_IOCTL(0xC020660BU),	/* FS_IOC_FIEMAP */
	/* Sockets: interface and timestamp queries (every SIOCS* stays refused). */
	ALLOW_IOCTL(0x8905U),		/* SIOCATMARK */
	ALLOW_IOCTL(0x8906U),		/* SIOCGSTAMP */
	ALLOW_IOCTL(0x8907U),		/* SIOCGSTAMPNS */
	ALLOW_IOCTL(0x8910U),		/* SIOCGIFNAME */
	ALLOW_IOCTL(0x8912U),		/* SIOCGIFCONF */
	ALLOW_IOCTL(0x8913U),		/* SIOCGIFFLAGS */
	ALLOW_IOCTL(0x8915U),		/* SIOCGIFADDR */
	ALLOW_IOCTL(0x8917U),		/* SIOCGIFDSTADDR */
	ALLOW_IOCTL(0x8919U),		/* SIOCGIFBRDADDR */
	ALLOW_IOCTL(0x891BU),		/* SIOCGIFNETMASK */
	ALLOW_IOCTL(0x891DU),		/* SIOCGIFMETRIC */
	ALLOW_IOCTL(0x8921U),		/* SIOCGIFMTU */
	ALLOW_IOCTL(0x8927U),		/* SIOCGIFHWADDR */
	ALLOW_IOCTL(0x8933U),		/* SIOCGIFINDEX */
	ALLOW_IOCTL(0x8935U),		/* SIOCGIFPFLAGS */
	ALLOW_IOCTL(0x8942U),		/* SIOCGIFTXQLEN */
	ALLOW_IOCTL(0x8970U),		/* SIOCGIFMAP */
	RET_DENY,
};

/*
 * Always installed, last (so its EPERM is the answer where another filter also
 * refuses): a confined command may hold the caller's terminal (stockade exec), and
 * TIOCSTI/TIOCLINUX would let it type into that terminal's shell, outside the
 * sandbox.  No command needs either.
 */
#define TIOCSTI 0x5412U
#define TIOCLINUX 0x541CU

static const struct sock_filter tty_filter[] = {
	ARCH_GUARD
	{ BPF_JEQ_K, 1, 0, __NR_ioctl },
	RET_ALLOW,
	{ BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(1) },
	REFUSE_WITH(TIOCSTI, EPERM),
	REFUSE_WITH(TIOCLINUX, EPERM),
	RET_ALLOW,
};

#define FILTER(name) (name), sizeof(name) / sizeof((name)[0])

/*
 * Network off (--no-network, --netns-only): socket() only for the allowed
 * families, socketpair() only for AF_UNIX (TIPC has pairs too).  Refused with
 * EAFNOSUPPORT, as systemd's RestrictAddressFamilies= does: programs take it for
 * a family this system lacks, and the text ("Address family not supported by
 * protocol") is never mistaken for a file denial ("Permission denied" would
 * make the executor offer a wider mode, which brings no network back).
 * io_uring, which could open sockets past this filter, is refused by the
 * setuid guard in every mode.  Built at run time: the allowed families vary.
 */
#define NET_REFUSAL EAFNOSUPPORT
#define NET_FILTER_MAX 40
#define SOCK_TYPE_MASK 0xfU

/*
 * NETWORK_PROXY (--plain with --proxy-bridge): no namespace of the call's own, so the
 * host's network is the command's: only TCP over IPv4 or IPv6 (SOCK_STREAM, protocol 0
 * or IPPROTO_TCP: not SCTP or MPTCP, which Landlock's TCP rules do not govern) besides
 * AF_UNIX, and Landlock allows one TCP connect port, the bridge's.
 */
enum network { NETWORK_ON, NETWORK_OFF, NETWORK_NETNS, NETWORK_PROXY };

struct filter_buffer {
	struct sock_filter insn[NET_FILTER_MAX];
	size_t len;
};

static void emit(struct filter_buffer *buf, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	struct sock_filter insn = { code, jt, jf, k };

	/* The largest program built below has 23 instructions; install checks the length. */
	if (buf->len < NET_FILTER_MAX)
		buf->insn[buf->len] = insn;
	buf->len++;
}

static size_t build_net_filter(struct filter_buffer *buf, enum network network,
			       int unix_pairs_only)
{
	static const struct sock_filter guard[] = { ARCH_GUARD };
	uint32_t families[4];
	size_t count = 0, guard_len = sizeof(guard) / sizeof(guard[0]);

	if (!unix_pairs_only)
		families[count++] = AF_UNIX;
	if (network == NETWORK_NETNS) {
		families[count++] = AF_INET;
		families[count++] = AF_INET6;
		families[count++] = AF_NETLINK;
	}
	buf->len = 0;
	for (size_t i = 0; i < guard_len; i++)
		emit(buf, guard[i].code, guard[i].jt, guard[i].jf, guard[i].k);
	if (network == NETWORK_PROXY) {
		/*
		 * socket(family, type, protocol): [nr][load family][unix?][inet?][inet6?]
		 * [refuse][load type][stream?][refuse][load protocol][0?][tcp?][refuse][allow]
		 */
		emit(buf, BPF_JEQ_K, 0, 14, __NR_socket);
		emit(buf, BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(0));
		emit(buf, BPF_JEQ_K, unix_pairs_only ? 0 : 11, 0, AF_UNIX);
		emit(buf, BPF_JEQ_K, 2, 0, AF_INET);
		emit(buf, BPF_JEQ_K, 1, 0, AF_INET6);
		emit(buf, BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | NET_REFUSAL);
		emit(buf, BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(1));
		emit(buf, BPF_AND_K, 0, 0, SOCK_TYPE_MASK);
		emit(buf, BPF_JEQ_K, 1, 0, SOCK_STREAM);
		emit(buf, BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | NET_REFUSAL);
		emit(buf, BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(2));
		emit(buf, BPF_JEQ_K, 2, 0, 0);
		emit(buf, BPF_JEQ_K, 1, 0, IPPROTO_TCP);
		emit(buf, BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | NET_REFUSAL);
		emit(buf, BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW);
		goto pairs;
	}
	/* socket(family, ...): [nr check][load][one test per family][refuse][allow] */
	emit(buf, BPF_JEQ_K, 0, (uint8_t)(count + 3), __NR_socket);
	emit(buf, BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(0));
	for (size_t i = 0; i < count; i++)
		emit(buf, BPF_JEQ_K, (uint8_t)(count - i), 0, families[i]);
	emit(buf, BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | NET_REFUSAL);
	emit(buf, BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW);
pairs:
	/* socketpair(family, type, ...): AF_UNIX only; datagram pairs too unless pairs-only. */
	emit(buf, BPF_JEQ_K, 0, unix_pairs_only ? 7 : 4, __NR_socketpair);
	emit(buf, BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(0));
	if (unix_pairs_only) {
		emit(buf, BPF_JEQ_K, 0, 4, AF_UNIX);
		emit(buf, BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(1));
		emit(buf, BPF_AND_K, 0, 0, SOCK_TYPE_MASK);
		emit(buf, BPF_JEQ_K, 1, 0, SOCK_DGRAM);
	} else {
		emit(buf, BPF_JEQ_K, 0, 1, AF_UNIX);
	}
	emit(buf, BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW);
	emit(buf, BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | NET_REFUSAL);
	emit(buf, BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW);
	return buf->len;
}

/* ---- Failure reporting ---- */

/*
 * Every exit but init's: stdio flushed, no exit handlers.  The command's
 * process runs on init's memory until it execs (a vfork-style clone), where
 * exit() would run them on memory it does not own.
 */
static _Noreturn void leave(int status)
{
	fflush(NULL);
	_exit(status);
}

static _Noreturn void fatal(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "landlock-run: %s\n", msg);
	leave(LAUNCHER_FAILURE);
}

/* ---- Landlock ---- */

static int landlock_abi(void)
{
	return (int)syscall(__NR_landlock_create_ruleset, NULL, (size_t)0,
			    LANDLOCK_CREATE_RULESET_VERSION);
}

static const char *landlock_unavailable_reason(int err)
{
	switch (err) {
	case ENOSYS:
		return "Landlock is not supported by this kernel";
	case EOPNOTSUPP:
		return "Landlock is disabled at boot (not in the lsm= list)";
	default:
		return strerror(err);
	}
}

static int require_landlock_abi(const char *context)
{
	int abi = landlock_abi();

	if (abi <= 0)
		fatal("%s%s", context,
		      landlock_unavailable_reason(abi < 0 ? errno : ENOSYS));
	return abi;
}

static uint64_t handled_access_for_abi(int abi)
{
	uint64_t access = ACCESS_ABI_1;

	if (abi >= 2)
		access |= ACCESS_REFER;
	if (abi >= 3)
		access |= ACCESS_TRUNCATE;
	if (abi >= 5)
		access |= ACCESS_IOCTL_DEV;
	return access;
}

/* The prefix of the attribute struct the running ABI knows (older kernels reject more). */
static size_t ruleset_attr_size(int abi)
{
	if (abi >= SCOPE_ABI)
		return sizeof(struct landlock_ruleset_attr);
	if (abi >= NET_ABI)
		return offsetof(struct landlock_ruleset_attr, scoped);
	return offsetof(struct landlock_ruleset_attr, handled_access_net);
}

/*
 * From ABI 6 the domain is also scoped: no signal to, and no connection to an
 * abstract Unix socket of, a process outside it (the harness, host processes),
 * network on or off.  `no_network` (ABI >= 4): TCP bind and connect are handled
 * and no rule allows a port, behind the seccomp filter that already refuses
 * every socket family but AF_UNIX.
 */
static int create_ruleset(int abi, int no_network)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = handled_access_for_abi(abi) };

	if (no_network && abi >= NET_ABI)
		attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP |
			LANDLOCK_ACCESS_NET_CONNECT_TCP;
	if (abi >= SCOPE_ABI)
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
	return (int)syscall(__NR_landlock_create_ruleset, &attr, ruleset_attr_size(abi), 0U);
}

static int restrict_self(int ruleset_fd)
{
	return (int)syscall(__NR_landlock_restrict_self, ruleset_fd, 0U);
}

/*
 * Grants are opened without following any symlink: a component swapped for a link
 * (by a command whose root lies under a writable directory) must not redirect a
 * grant to wherever the link points.  openat2 predates Landlock; a container whose
 * seccomp policy hides it still gets O_NOFOLLOW on the last component.
 */
static int open_grant(const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS,
	};
	int fd = (int)syscall(__NR_openat2, AT_FDCWD, path, &how, sizeof(how));

	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	return fd;
}

/* Allow TCP connect to `port` (on any address: Landlock's TCP rules know ports only). */
static void add_connect_rule(int ruleset_fd, uint16_t port)
{
	struct landlock_net_port_attr rule = {
		.allowed_access = LANDLOCK_ACCESS_NET_CONNECT_TCP,
		.port = port,
	};

	if (syscall(__NR_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_NET_PORT, &rule, 0U) != 0)
		fatal("cannot allow connecting to port %u: %s", (unsigned)port, strerror(errno));
}

/*
 * `optional` (--ro-try, the plain tier's complement grants, listed by the caller a
 * moment ago): a path gone since, or out of this caller's reach (another user's 0700
 * directory: the command could not read it either), is skipped rather than fatal.
 */
static void add_path_rule(int ruleset_fd, const char *path, uint64_t access, int optional)
{
	struct landlock_path_beneath_attr rule;
	struct stat st;
	int fd = open_grant(path);

	if (fd < 0 && optional && (errno == ENOENT || errno == EACCES || errno == ELOOP))
		return;
	if (fd < 0)
		fatal("cannot open %s without following a symlink: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0)
		fatal("cannot stat %s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		access &= ACCESS_FILE_ONLY;
	rule.allowed_access = access;
	rule.parent_fd = fd;
	if (syscall(__NR_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH,
		    &rule, 0U) != 0)
		fatal("cannot add a rule for %s: %s", path, strerror(errno));
	close(fd);
}

/* ---- Privileges ---- */

/* Whether an effective capability below 32 is held. */
static int has_capability(int cap)
{
	struct cap_header hdr = { CAPABILITY_VERSION_3, 0 };
	struct cap_data data[2];

	if (syscall(SYS_capget, &hdr, data) != 0)
		fatal("capget: %s", strerror(errno));
	return (data[0].effective >> cap) & 1;
}

/* With an empty bounding set, no exec (setuid root included) can regain a capability. */
static void drop_bounding_set(void)
{
	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
			fatal("cannot drop capability %d from the bounding set: %s",
			      cap, strerror(errno));
	if (errno != EINVAL)
		fatal("cannot read the capability bounding set: %s", strerror(errno));
}

/* Stop uid 0 from meaning "all capabilities" at exec, and lock that in. */
static void lock_securebits(void)
{
	const unsigned wanted = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
		SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
		SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
		SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	int current = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);

	if (current < 0)
		fatal("cannot read securebits: %s", strerror(errno));
	if (prctl(PR_SET_SECUREBITS, (unsigned)current | wanted, 0, 0, 0) != 0)
		fatal("cannot set securebits: %s", strerror(errno));
}

static void drop_capabilities(void)
{
	struct cap_header hdr = { CAPABILITY_VERSION_3, 0 };
	struct cap_data none[2] = { { 0, 0, 0 }, { 0, 0, 0 } };

	/* Both steps need CAP_SETPCAP; an unprivileged caller has nothing to drop there. */
	if (has_capability(CAP_SETPCAP)) {
		drop_bounding_set();
		lock_securebits();
	}
	/*
	 * capset() below would also empty the ambient set; clearing it first
	 * keeps each step sufficient on its own.  EINVAL: kernel older than 4.3,
	 * which has no ambient set.
	 */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 &&
	    errno != EINVAL)
		fatal("cannot clear ambient capabilities: %s", strerror(errno));
	if (syscall(SYS_capset, &hdr, none) != 0)
		fatal("cannot drop capabilities: %s", strerror(errno));
}

/* ---- IPC ---- */

static int write_proc_self(const char *name, const char *text)
{
	char path[64];
	int fd, err = 0;
	size_t len = strlen(text);

	snprintf(path, sizeof(path), "/proc/self/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (write(fd, text, len) != (ssize_t)len)
		err = errno ? errno : EIO;
	close(fd);
	return err;
}

/*
 * Give this process (and so the command) namespaces of its own: `flags` holds
 * CLONE_NEWIPC (SysV objects and POSIX message queues of the host, the mqueue
 * file system being per IPC namespace, are then out of sight) and/or
 * CLONE_NEWNS (for --hide-socket).  With CAP_SYS_ADMIN directly; otherwise
 * inside a new user namespace that maps only the caller's uid and gid (files of
 * other owners then show as the overflow uid, as under bwrap).  A new mount
 * namespace is made a slave of the host's, so nothing mounted in it propagates
 * back.  Returns 0 or an errno.
 */
#define REC_SLAVE ((1UL << 14) | (1UL << 19))	/* MS_REC | MS_SLAVE */

static int private_namespaces(int flags)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int err;

	if (!has_capability(CAP_SYS_ADMIN) || unshare(flags) != 0) {
		if (unshare(CLONE_NEWUSER | flags) != 0)
			return errno;
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
		if ((err = write_proc_self("uid_map", map)) != 0)
			return err;
		if ((err = write_proc_self("setgroups", "deny")) != 0)
			return err;
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		if ((err = write_proc_self("gid_map", map)) != 0)
			return err;
	}
	if ((flags & CLONE_NEWNS) &&
	    syscall(SYS_mount, NULL, "/", NULL, REC_SLAVE, NULL) != 0)
		return errno;
	return 0;
}

/*
 * What a protected path becomes in the call's mount namespace (the namespaced tier,
 * as bwrap's binds): --bind-ro PATH, PATH bound read-only onto itself; --bind-pin
 * PATH, bound onto itself (a mount point: it cannot be renamed or removed);
 * --bind-file SOURCE PATH, SOURCE bound read-only onto PATH (a placeholder file);
 * --empty-dir PATH, an empty read-only directory onto PATH (a placeholder directory).
 */
enum mount_kind { MOUNT_READ_ONLY, MOUNT_PIN, MOUNT_FILE, MOUNT_EMPTY_DIR };

struct mount_spec {
	enum mount_kind kind;
	const char *source;	/* MOUNT_FILE only */
	const char *path;
};

/*
 * A grant's access: --ro, --rw, --list (list a directory, nothing beneath it read),
 * or --ro-try (--ro, skipped when the path is gone or out of the caller's reach).
 */
enum grant { GRANT_READ, GRANT_WRITE, GRANT_LIST, GRANT_READ_TRY };

/* ---- Hiding named Unix sockets ---- */

#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#define TREE_CLONE 1U			/* OPEN_TREE_CLONE */
#define FROM_EMPTY_PATH 0x04U		/* MOVE_MOUNT_F_EMPTY_PATH */
#define TO_EMPTY_PATH 0x40U		/* MOVE_MOUNT_T_EMPTY_PATH */
#define ATTR_RDONLY 0x01ULL		/* MOUNT_ATTR_RDONLY */

struct mount_attributes {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};

static int open_grant(const char *path);

/*
 * A detached, read-only bind of `empty`; each hidden socket gets a clone of it.
 * mount_setattr needs Linux 5.12 (Landlock needs 5.13); where it is missing the
 * clone must be read-only already (under bwrap, whose tree is).
 */
static int empty_mount(const char *empty)
{
	struct mount_attributes attr = { .attr_set = ATTR_RDONLY };
	struct statvfs info;
	int fd = (int)syscall(__NR_open_tree, AT_FDCWD, empty, TREE_CLONE | O_CLOEXEC);

	if (fd < 0)
		fatal("cannot hide sockets: cannot bind %s: %s", empty, strerror(errno));
	if (syscall(__NR_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
		if (errno != ENOSYS || fstatvfs(fd, &info) != 0 || !(info.f_flag & ST_RDONLY))
			fatal("cannot hide sockets: cannot make %s read-only: %s", empty,
			      strerror(errno));
	}
	return fd;
}

/*
 * Cover each path that is still a socket with a clone of `empty`.  The socket is
 * opened without following a symlink (the caller resolved its real path) and the
 * bind is attached to that very dentry: nothing can swap it in between.  One
 * that is gone, or that this process cannot reach (then neither can the
 * command, which has the same credentials and no capability), is skipped.
 */
static void hide_sockets(const char *empty, const char **paths, int count)
{
	int source = empty_mount(empty);

	for (int i = 0; i < count; i++) {
		struct stat st;
		int target = open_grant(paths[i]), clone;

		if (target < 0) {
			if (errno == ENOENT || errno == EACCES || errno == ENOTDIR)
				continue;
			fatal("cannot hide the socket %s: %s", paths[i], strerror(errno));
		}
		if (fstat(target, &st) != 0)
			fatal("cannot hide the socket %s: %s", paths[i], strerror(errno));
		if (!S_ISSOCK(st.st_mode)) {
			close(target);
			continue;
		}
		clone = (int)syscall(__NR_open_tree, source, "",
				     TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH);
		if (clone < 0)
			fatal("cannot hide the socket %s: %s", paths[i], strerror(errno));
		/* ENOENT: the socket was being removed meanwhile (nothing to cover). */
		if (syscall(__NR_move_mount, clone, "", target, "",
			    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0 && errno != ENOENT)
			fatal("cannot hide the socket %s: %s", paths[i], strerror(errno));
		close(clone);
		close(target);
	}
	close(source);
}

/* ---- Hiding what no command may read (--deny-read) ---- */

#ifndef __NR_fsopen
#define __NR_fsopen 430
#endif
#ifndef __NR_fsconfig
#define __NR_fsconfig 431
#endif
#ifndef __NR_fsmount
#define __NR_fsmount 432
#endif
#define FS_CLOEXEC 1U			/* FSOPEN_CLOEXEC, FSMOUNT_CLOEXEC */
#define CONFIG_SET_STRING 1U		/* FSCONFIG_SET_STRING */
#define CONFIG_CMD_CREATE 6U		/* FSCONFIG_CMD_CREATE */
#define TREE_RECURSIVE 0x8000U		/* AT_RECURSIVE, for open_tree and mount_setattr */
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

static void set_read_only(int mount_fd, const char *what)
{
	struct mount_attributes attr = { .attr_set = ATTR_RDONLY };

	if (syscall(__NR_mount_setattr, mount_fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0)
		fatal("cannot hide %s: cannot make its cover read-only: %s", what, strerror(errno));
}

/*
 * A detached tmpfs of the launcher's own holding an empty file "f" and an empty
 * directory "d", both mode 000, the mount read-only: with no capability left,
 * opening either (or searching "d") fails with EACCES, for root too, and neither
 * can be chmod'ed back or written.
 */
static int unreadable_mount(void)
{
	int fs = (int)syscall(__NR_fsopen, "tmpfs", FS_CLOEXEC), mnt, file;

	if (fs < 0)
		fatal("cannot hide unreadable paths: cannot make a tmpfs: %s", strerror(errno));
	if (syscall(__NR_fsconfig, fs, CONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		fatal("cannot hide unreadable paths: cannot make a tmpfs: %s", strerror(errno));
	mnt = (int)syscall(__NR_fsmount, fs, FS_CLOEXEC, 0U);
	if (mnt < 0)
		fatal("cannot hide unreadable paths: cannot mount a tmpfs: %s", strerror(errno));
	close(fs);
	if (mkdirat(mnt, "d", 0) != 0 || fchmodat(mnt, "d", 0, 0) != 0)
		fatal("cannot hide unreadable paths: %s", strerror(errno));
	file = openat(mnt, "f", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
	if (file < 0 || fchmod(file, 0) != 0)
		fatal("cannot hide unreadable paths: %s", strerror(errno));
	close(file);
	set_read_only(mnt, "unreadable paths");
	return mnt;
}

/*
 * Cover each path with a clone of the unreadable file or directory (as it is a
 * file or a directory), attached to the very dentry opened without following a
 * symlink (the caller resolved the real path: one that became a link since fails
 * the call).  One that is gone is skipped: there is nothing left to read; so is one
 * this process cannot reach (a caller of less privilege than the one who listed
 * it): neither can the command, which has the same credentials and no capability.
 */
static void hide_unreadable(const char **paths, int count)
{
	int source = unreadable_mount();

	for (int i = 0; i < count; i++) {
		struct stat st;
		int target = open_grant(paths[i]), clone;

		if (target < 0) {
			if (errno == ENOENT || errno == EACCES || errno == ENOTDIR)
				continue;
			fatal("cannot hide %s: %s", paths[i], strerror(errno));
		}
		if (fstat(target, &st) != 0)
			fatal("cannot hide %s: %s", paths[i], strerror(errno));
		clone = (int)syscall(__NR_open_tree, source, S_ISDIR(st.st_mode) ? "d" : "f",
				     TREE_CLONE | O_CLOEXEC);
		if (clone < 0)
			fatal("cannot hide %s: %s", paths[i], strerror(errno));
		set_read_only(clone, paths[i]);
		if (syscall(__NR_move_mount, clone, "", target, "",
			    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
			fatal("cannot hide %s: %s", paths[i], strerror(errno));
		close(clone);
		close(target);
	}
	close(source);
}

/*
 * --read-only-host (the namespaced tier): in the call's mount namespace every mount is
 * made read-only but the writable grants, which are bound back writable, as bwrap's
 * --ro-bind / / with its --bind grants.  Landlock refuses writing outside the grants
 * but not changing metadata there (chmod, chown, utimes, xattrs: FACTS.md); a
 * read-only mount refuses those too (EROFS), so the namespaced tier governs them as
 * bwrap does.  The grants are cloned before the tree goes read-only (their clones
 * stay writable) and attached over themselves after; covers and protected binds come
 * after, on top of both.  Devices (/dev/null, a terminal) are written through a
 * read-only mount as before.  Only this namespace's copies change: the host's
 * mounts are untouched.
 */
static void read_only_host(const char **paths, const int *grants, int count)
{
	struct mount_attributes attr = { .attr_set = ATTR_RDONLY };
	int *clones = calloc((size_t)count + 1, sizeof(int)), root;

	if (clones == NULL)
		fatal("out of memory");
	for (int i = 0; i < count; i++) {
		int at;

		clones[i] = -1;
		if (grants[i] != GRANT_WRITE || strcmp(paths[i], "/dev/null") == 0)
			continue;
		if ((at = open_grant(paths[i])) < 0)
			fatal("cannot keep %s writable: %s", paths[i], strerror(errno));
		clones[i] = (int)syscall(__NR_open_tree, at, "",
					 TREE_CLONE | TREE_RECURSIVE | O_CLOEXEC | AT_EMPTY_PATH);
		if (clones[i] < 0)
			fatal("cannot keep %s writable: %s", paths[i], strerror(errno));
		close(at);
	}
	if ((root = open_grant("/")) < 0 ||
	    syscall(__NR_mount_setattr, root, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
		    sizeof(attr)) != 0)
		fatal("cannot make the host read-only for the command: %s", strerror(errno));
	close(root);
	for (int i = 0; i < count; i++) {
		int at;

		if (clones[i] < 0)
			continue;
		if ((at = open_grant(paths[i])) < 0 ||
		    syscall(__NR_move_mount, clones[i], "", at, "",
			    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
			fatal("cannot keep %s writable: %s", paths[i], strerror(errno));
		close(at);
		close(clones[i]);
	}
	free(clones);
}

/*
 * The empty file or directory a missing protected path is bound over, made here when
 * its caller did not (as bwrap makes its mount points): beside the path's parent,
 * opened without following a symlink, never replacing anything (O_EXCL, mkdirat).
 * Returns it opened as open_grant does, or -1 with errno.
 */
static int make_placeholder(const char *path, int directory)
{
	char parent[4096];
	const char *name = strrchr(path, '/');
	int at, made;

	if (name == NULL || name == path || (size_t)(name - path) >= sizeof(parent)) {
		errno = ENOENT;
		return -1;
	}
	memcpy(parent, path, (size_t)(name - path));
	parent[name - path] = '\0';
	if ((at = open_grant(parent)) < 0)
		return -1;
	if (directory)
		made = mkdirat(at, name + 1, 0755);
	else {
		made = openat(at, name + 1, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (made >= 0)
			made = close(made);
	}
	close(at);
	if (made != 0 && errno != EEXIST)
		return -1;
	return open_grant(path);
}

/* An empty directory, mode 0755, on a read-only tmpfs of the launcher's own. */
static int empty_directory_mount(void)
{
	int fs = (int)syscall(__NR_fsopen, "tmpfs", FS_CLOEXEC), mnt;

	if (fs < 0 ||
	    syscall(__NR_fsconfig, fs, CONFIG_SET_STRING, "mode", "0755", 0) != 0 ||
	    syscall(__NR_fsconfig, fs, CONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		fatal("cannot protect paths: cannot make a tmpfs: %s", strerror(errno));
	mnt = (int)syscall(__NR_fsmount, fs, FS_CLOEXEC, 0U);
	if (mnt < 0)
		fatal("cannot protect paths: cannot mount a tmpfs: %s", strerror(errno));
	close(fs);
	set_read_only(mnt, "an empty directory");
	return mnt;
}

/*
 * The trust base's protected paths (the namespaced tier; bwrap binds the same): each
 * one bound in the call's mount namespace as its kind says, attached to the very
 * dentry opened without following a symlink (a link swapped in since the caller
 * resolved it fails the call).  A read-only bind cannot be undone by the command: it
 * holds no capability, and a mount namespace it makes locks these with the rest.
 */
static void bind_protected(const struct mount_spec *mounts, int count)
{
	struct mount_attributes attr = { .attr_set = ATTR_RDONLY };
	int empty = -1;

	for (int i = 0; i < count; i++) {
		const struct mount_spec *m = &mounts[i];
		int target = open_grant(m->path), from = target, clone;

		if (target < 0 && errno == ENOENT &&
		    (m->kind == MOUNT_EMPTY_DIR || m->kind == MOUNT_FILE))
			target = make_placeholder(m->path, m->kind == MOUNT_EMPTY_DIR);
		if (target < 0)
			fatal("cannot protect %s: %s", m->path, strerror(errno));
		if (m->kind == MOUNT_FILE && (from = open_grant(m->source)) < 0)
			fatal("cannot protect %s: cannot open %s: %s", m->path, m->source,
			      strerror(errno));
		if (m->kind == MOUNT_EMPTY_DIR)
			from = empty >= 0 ? empty : (empty = empty_directory_mount());
		clone = (int)syscall(__NR_open_tree, from, "",
				     TREE_CLONE | TREE_RECURSIVE | O_CLOEXEC | AT_EMPTY_PATH);
		if (clone < 0)
			fatal("cannot protect %s: %s", m->path, strerror(errno));
		if (m->kind != MOUNT_PIN &&
		    syscall(__NR_mount_setattr, clone, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
			    sizeof(attr)) != 0)
			fatal("cannot protect %s: cannot make it read-only: %s", m->path,
			      strerror(errno));
		if (syscall(__NR_move_mount, clone, "", target, "",
			    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
			fatal("cannot protect %s: %s", m->path, strerror(errno));
		close(clone);
		if (from != target && from != empty)
			close(from);
		close(target);
	}
	if (empty >= 0)
		close(empty);
}

/*
 * --fresh-dir DIR (the namespaced tier): a runtime directory where host daemons put
 * their sockets (/run, /tmp, $XDG_RUNTIME_DIR) becomes an empty read-only tmpfs in the
 * call's mount namespace, so a socket bound there after the call started is out of
 * the command's sight (the per-socket covers only reach the ones that existed).  Done
 * last, over every other mount: each --keep PATH beneath DIR (the call's roots, temp
 * directory, working directory, proxy socket) is cloned first, with every mount
 * beneath it (its grants' writability, covers and protected binds as they are), and
 * attached back at PATH inside the fresh view; each --bind-socket SOCKET VIEW (VIEW
 * beneath DIR, beneath no --keep) binds the host's SOCKET, read-only, at VIEW (a VIEW
 * beneath no DIR must be a socket already, and SOCKET is bound over it).  Their
 * mount points are made in the new tmpfs before it goes read-only; nothing is made
 * on the host.  A DIR that is gone is skipped; a kept path that is gone fails the call.
 */
static int covered_by(const char *cover, const char *path);

struct fresh_spec {
	const char **dirs;
	int ndirs;
	const char **keeps;
	int nkeeps;
	const char **sockets;	/* --bind-socket SOCKET VIEW: sockets[2k], sockets[2k+1] */
	int nsockets;
};

/* The mount point for `relative` (beneath the tmpfs `root`): its directories, then a
 * directory or an empty file; opened as open_grant does. */
static int fresh_mount_point(int root, const char *relative, int directory, const char *path)
{
	char part[4096];
	int at = root, next;
	const char *start = relative;

	if (strlen(relative) >= sizeof(part))
		fatal("cannot keep %s in sight: the path is too long", path);
	for (;;) {
		const char *slash = strchr(start, '/');
		size_t len = slash ? (size_t)(slash - start) : strlen(start);

		memcpy(part, start, len);
		part[len] = '\0';
		if (len == 0 || strcmp(part, ".") == 0 || strcmp(part, "..") == 0)
			fatal("cannot keep %s in sight: not a plain absolute path", path);
		if (slash == NULL && !directory) {
			next = openat(at, part, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (next < 0 && errno != EEXIST)
				fatal("cannot keep %s in sight: %s", path, strerror(errno));
			if (next >= 0)
				close(next);
		} else if (mkdirat(at, part, 0755) != 0 && errno != EEXIST) {
			fatal("cannot keep %s in sight: %s", path, strerror(errno));
		}
		next = openat(at, part, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			fatal("cannot keep %s in sight: %s", path, strerror(errno));
		if (at != root)
			close(at);
		at = next;
		if (slash == NULL)
			return at;
		start = slash + 1;
	}
}

/* The fresh directory `path` lies beneath (-1: none). */
static int fresh_dir_of(const struct fresh_spec *fresh, const char *path)
{
	for (int d = 0; d < fresh->ndirs; d++)
		if (covered_by(fresh->dirs[d], path) && strcmp(fresh->dirs[d], path) != 0)
			return d;
	return -1;
}

/* A detached clone of `path` (its mounts beneath it too); *directory says what it is. */
static int clone_kept(const char *path, int recursive, int *directory)
{
	struct stat st;
	int at = open_grant(path), clone;

	if (at < 0 || fstat(at, &st) != 0)
		fatal("cannot keep %s in sight: %s", path, strerror(errno));
	*directory = S_ISDIR(st.st_mode);
	clone = (int)syscall(__NR_open_tree, at, "", TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH |
			     (recursive ? TREE_RECURSIVE : 0U));
	if (clone < 0)
		fatal("cannot keep %s in sight: %s", path, strerror(errno));
	close(at);
	return clone;
}

/* The detached clone *socket attached at the mount point `at` (VIEW); both closed. */
static void attach_socket(int *socket, int at, const char *view)
{
	if (syscall(__NR_move_mount, *socket, "", at, "", FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
		fatal("--bind-socket: cannot bind %s: %s", view, strerror(errno));
	close(at);
	close(*socket);
	*socket = -1;
}

static void fresh_views(const struct fresh_spec *fresh)
{
	int *keeps = calloc((size_t)fresh->nkeeps + 1, sizeof(int));
	int *keep_dir = calloc((size_t)fresh->nkeeps + 1, sizeof(int));
	int *sockets = calloc((size_t)fresh->nsockets + 1, sizeof(int));
	int unused;

	if (keeps == NULL || keep_dir == NULL || sockets == NULL)
		fatal("out of memory");
	/* Clones first: once a fresh view is up, what it covers is out of reach. */
	for (int k = 0; k < fresh->nkeeps; k++) {
		keeps[k] = -1;
		if (fresh_dir_of(fresh, fresh->keeps[k]) < 0)
			continue;
		for (int j = 0; j < fresh->nkeeps; j++)
			if (j != k && covered_by(fresh->keeps[j], fresh->keeps[k]) &&
			    (strcmp(fresh->keeps[j], fresh->keeps[k]) != 0 || j < k))
				goto beneath_another;
		keeps[k] = clone_kept(fresh->keeps[k], 1, &keep_dir[k]);
beneath_another:;
	}
	for (int s = 0; s < fresh->nsockets; s++) {
		const char *source = fresh->sockets[2 * s];
		struct stat st;

		if (stat(source, &st) != 0 || !S_ISSOCK(st.st_mode))
			fatal("--bind-socket: %s is no socket", source);
		sockets[s] = clone_kept(source, 0, &unused);
		set_read_only(sockets[s], source);
	}
	/* A VIEW beneath no fresh view is a socket in sight already (a granted agent's
	 * restricted socket put where its clients look for the full one): bound over it,
	 * never over anything else, and nothing is made on the host. */
	for (int s = 0; s < fresh->nsockets; s++) {
		const char *view = fresh->sockets[2 * s + 1];
		struct stat st;
		int at;

		if (fresh_dir_of(fresh, view) >= 0)
			continue;
		at = open_grant(view);
		if (at < 0 || fstat(at, &st) != 0 || !S_ISSOCK(st.st_mode))
			fatal("--bind-socket: %s is no socket to bind over", view);
		attach_socket(&sockets[s], at, view);
	}
	for (int d = 0; d < fresh->ndirs; d++) {
		struct stat st;
		int target = open_grant(fresh->dirs[d]), fs, root;

		if (target < 0) {
			if (errno == ENOENT)
				continue;
			fatal("cannot make %s fresh: %s", fresh->dirs[d], strerror(errno));
		}
		if (fstat(target, &st) != 0 || !S_ISDIR(st.st_mode))
			fatal("cannot make %s fresh: not a directory", fresh->dirs[d]);
		fs = (int)syscall(__NR_fsopen, "tmpfs", FS_CLOEXEC);
		if (fs < 0 ||
		    syscall(__NR_fsconfig, fs, CONFIG_SET_STRING, "mode", "0755", 0) != 0 ||
		    syscall(__NR_fsconfig, fs, CONFIG_CMD_CREATE, NULL, NULL, 0) != 0 ||
		    (root = (int)syscall(__NR_fsmount, fs, FS_CLOEXEC, 0U)) < 0)
			fatal("cannot make %s fresh: %s", fresh->dirs[d], strerror(errno));
		close(fs);
		if (syscall(__NR_move_mount, root, "", target, "", FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
			fatal("cannot make %s fresh: %s", fresh->dirs[d], strerror(errno));
		close(target);
		for (int k = 0; k < fresh->nkeeps; k++) {
			const char *path = fresh->keeps[k];
			int at;

			if (keeps[k] < 0 || fresh_dir_of(fresh, path) != d)
				continue;
			at = fresh_mount_point(root, path + strlen(fresh->dirs[d]) +
					       (strcmp(fresh->dirs[d], "/") != 0), keep_dir[k], path);
			if (syscall(__NR_move_mount, keeps[k], "", at, "",
				    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
				fatal("cannot keep %s in sight: %s", path, strerror(errno));
			close(at);
			close(keeps[k]);
			keeps[k] = -1;
		}
		for (int s = 0; s < fresh->nsockets; s++) {
			const char *view = fresh->sockets[2 * s + 1];
			int at;

			if (sockets[s] < 0 || fresh_dir_of(fresh, view) != d)
				continue;
			at = fresh_mount_point(root, view + strlen(fresh->dirs[d]) +
					       (strcmp(fresh->dirs[d], "/") != 0), 0, view);
			attach_socket(&sockets[s], at, view);
		}
		/* Only the tmpfs itself: what was attached on it keeps its own flags. */
		set_read_only(root, fresh->dirs[d]);
		close(root);
	}
	for (int k = 0; k < fresh->nkeeps; k++)
		if (keeps[k] >= 0)
			close(keeps[k]);
	for (int s = 0; s < fresh->nsockets; s++)
		if (sockets[s] >= 0)
			fatal("--bind-socket: %s was not bound (its --fresh-dir is gone)",
			      fresh->sockets[2 * s + 1]);
	free(keeps);
	free(keep_dir);
	free(sockets);
}

/* ---- Program lookup ---- */

static int check_executable(const char *path)
{
	struct stat st;
	int fd;

	if (stat(path, &st) != 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return EACCES;
	if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) != 0)
		return errno;
	/*
	 * access(2) does not consult Landlock.  Every rule we add grants
	 * READ_FILE together with EXECUTE, so a refused read predicts a
	 * refused exec whenever ordinary permissions allow the read.
	 */
	if (faccessat(AT_FDCWD, path, R_OK, AT_EACCESS) == 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return errno;
		close(fd);
	}
	return 0;
}

/*
 * The command could not be executed: that is the command's result, as in a
 * shell (127 not found, 126 found but not executable), not a launcher failure,
 * so the line says it as a shell does, without the "landlock-run:" prefix.
 */
#define EXIT_NOT_FOUND 127
#define EXIT_NOT_EXECUTABLE 126

static _Noreturn void exec_failed(const char *name, int err)
{
	if (err == ENOENT && *name != '\0' && strchr(name, '/') == NULL)
		fprintf(stderr, "%s: command not found\n", name);
	else
		fprintf(stderr, "%s: %s\n", name, strerror(err));
	leave(err == ENOENT ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE);
}

/*
 * Resolve NAME as execvp would, so that a missing or forbidden program is
 * reported before the partial-enforcement notice, never after it.
 */
static char *resolve_program(char *name)
{
	const char *dirs = getenv("PATH");
	int err, saw_eacces = 0;

	if (*name == '\0' || strchr(name, '/') != NULL) {
		err = check_executable(name);
		if (err != 0)
			exec_failed(name, err);
		return name;
	}
	if (dirs == NULL)
		dirs = "/usr/local/bin:/usr/bin:/bin";
	for (const char *dir = dirs;; dir++) {
		size_t len = strcspn(dir, ":");
		char *candidate;

		/* An empty PATH entry means the current directory. */
		if (asprintf(&candidate, "%.*s%s%s", (int)len, dir,
			     len ? "/" : "", name) < 0)
			fatal("out of memory");
		err = check_executable(candidate);
		if (err == 0)
			return candidate;
		saw_eacces |= err == EACCES;
		free(candidate);
		dir += len;
		if (*dir == '\0')
			break;
	}
	exec_failed(name, saw_eacces ? EACCES : ENOENT);
}

/* ---- Resource limits (--cgroup-fd, --rlimit) ---- */

#define CGROUP_FD_MAX 8			/* --cgroup-fd options: one per v1 hierarchy, say */
#define CGROUP_SUPER_MAGIC 0x27e0ebUL
#define CGROUP2_SUPER_MAGIC 0x63677270UL
/* RLIMIT_CPU: SIGXCPU at the soft limit (so the end says which limit it was), and
 * SIGKILL this many seconds later at the hard one, for a command that ignores it. */
#define CPU_GRACE_SECONDS 5

static const struct limit_name {
	const char *name;
	int resource;
} limit_names[] = {
	{ "nproc", RLIMIT_NPROC }, { "as", RLIMIT_AS }, { "data", RLIMIT_DATA },
	{ "cpu", RLIMIT_CPU }, { "fsize", RLIMIT_FSIZE }, { "nofile", RLIMIT_NOFILE },
};

#define LIMIT_NAME_COUNT (sizeof(limit_names) / sizeof(limit_names[0]))

#define CGROUP_SET_MAX 16		/* --cgroup-set options: pids.max, memory's two, ... */

struct limits {
	const char *cgroup_makes[CGROUP_FD_MAX];	/* --cgroup-make DIR */
	int ncgroup_makes;
	struct cgroup_set {
		const char *path;
		const char *value;
		int if_present;
	} cgroup_sets[CGROUP_SET_MAX];
	int ncgroup_sets;
	int cgroup_fds[CGROUP_FD_MAX];
	int ncgroup_fds;
	const char *cgroup_procs[CGROUP_FD_MAX];	/* --cgroup-procs PATH: opened here */
	int ncgroup_procs;
	struct rlimit_spec {
		const struct limit_name *limit;
		const char *text;	/* VALUE as given, for messages */
		rlim_t value;
	} rlimits[LIMIT_NAME_COUNT];
	int nrlimits;
};

/* --cgroup-fd N: a descriptor above 2 (stdio is the command's), given once. */
static void cgroup_fd_option(const char *value, struct limits *l)
{
	char *end;
	long fd;

	errno = 0;
	fd = strtol(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || fd < 3 ||
	    fd > INT32_MAX)
		fatal("--cgroup-fd needs a descriptor number above 2, not %s", value);
	for (int k = 0; k < l->ncgroup_fds; k++)
		if (l->cgroup_fds[k] == fd)
			fatal("--cgroup-fd: descriptor %ld given twice", fd);
	if (l->ncgroup_fds == CGROUP_FD_MAX)
		fatal("--cgroup-fd: at most %d cgroups", CGROUP_FD_MAX);
	l->cgroup_fds[l->ncgroup_fds++] = (int)fd;
}

/* --rlimit NAME=VALUE: VALUE a decimal number or "unlimited", each NAME once. */
static void rlimit_option(const char *arg, struct limits *l)
{
	const char *equals = strchr(arg, '='), *value;
	const struct limit_name *limit = NULL;
	unsigned long long number;
	char *end;

	if (equals == NULL)
		fatal("--rlimit needs NAME=VALUE, not %s", arg);
	for (size_t k = 0; k < LIMIT_NAME_COUNT; k++)
		if (strlen(limit_names[k].name) == (size_t)(equals - arg) &&
		    strncmp(limit_names[k].name, arg, (size_t)(equals - arg)) == 0)
			limit = &limit_names[k];
	if (limit == NULL)
		fatal("--rlimit: unknown limit %.*s (one of nproc, as, data, cpu, fsize, nofile)",
		      (int)(equals - arg), arg);
	for (int k = 0; k < l->nrlimits; k++)
		if (l->rlimits[k].limit == limit)
			fatal("--rlimit: %s given twice", limit->name);
	value = equals + 1;
	if (strcmp(value, "unlimited") == 0) {
		number = RLIM_INFINITY;
	} else {
		errno = 0;
		number = strtoull(value, &end, 10);
		if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 ||
		    number > (unsigned long long)RLIM_INFINITY)
			fatal("--rlimit %s: the value must be a decimal number or unlimited, "
			      "not %s", limit->name, value);
	}
	l->rlimits[l->nrlimits].limit = limit;
	l->rlimits[l->nrlimits].text = value;
	l->rlimits[l->nrlimits++].value = (rlim_t)number;
}

/* --cgroup-set[-if-present] PATH=VALUE: VALUE what is written to PATH, as given. */
static void cgroup_set_option(const char *option, char *arg, struct limits *l)
{
	char *equals = strchr(arg, '=');

	if (equals == NULL || equals == arg)
		fatal("%s needs PATH=VALUE, not %s", option, arg);
	if (l->ncgroup_sets == CGROUP_SET_MAX)
		fatal("%s: at most %d settings", option, CGROUP_SET_MAX);
	*equals = '\0';
	l->cgroup_sets[l->ncgroup_sets].path = arg;
	l->cgroup_sets[l->ncgroup_sets].value = equals + 1;
	l->cgroup_sets[l->ncgroup_sets++].if_present = strcmp(option, "--cgroup-set") != 0;
}

static int is_limits_option(const char *arg)
{
	static const char *const names[] = {
		"--cgroup-fd", "--rlimit", "--cgroup-procs", "--cgroup-make", "--cgroup-set",
		"--cgroup-set-if-present",
	};

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (strcmp(arg, names[k]) == 0)
			return 1;
	return 0;
}

/* The --cgroup-* options and --rlimit NAME=VALUE; 1 when argv[*i] was one. */
static int limits_option(int argc, char **argv, int *i, struct limits *l)
{
	const char *arg = argv[*i];

	if (!is_limits_option(arg))
		return 0;
	if (*i + 1 == argc)
		fatal("%s needs %s", arg,
		      strcmp(arg, "--rlimit") == 0 ? "NAME=VALUE" :
		      strcmp(arg, "--cgroup-fd") == 0 ? "a descriptor number" :
		      strncmp(arg, "--cgroup-set", 12) == 0 ? "PATH=VALUE" : "a path");
	if (strcmp(arg, "--cgroup-fd") == 0) {
		cgroup_fd_option(argv[++*i], l);
	} else if (strcmp(arg, "--cgroup-procs") == 0) {
		if (l->ncgroup_procs == CGROUP_FD_MAX)
			fatal("--cgroup-procs: at most %d cgroups", CGROUP_FD_MAX);
		l->cgroup_procs[l->ncgroup_procs++] = argv[++*i];
	} else if (strcmp(arg, "--cgroup-make") == 0) {
		if (l->ncgroup_makes == CGROUP_FD_MAX)
			fatal("--cgroup-make: at most %d cgroups", CGROUP_FD_MAX);
		l->cgroup_makes[l->ncgroup_makes++] = argv[++*i];
	} else if (strncmp(arg, "--cgroup-set", 12) == 0) {
		cgroup_set_option(arg, argv[++*i], l);
	} else {
		rlimit_option(argv[++*i], l);
	}
	return 1;
}

static int on_cgroup_fs(const struct statfs *fs)
{
	return (unsigned long)fs->f_type == CGROUP_SUPER_MAGIC ||
	       (unsigned long)fs->f_type == CGROUP2_SUPER_MAGIC;
}

/* --cgroup-make and --cgroup-set, in order: the command's group made and limited. */
static void make_cgroups(const struct limits *l)
{
	struct statfs fs;

	for (int k = 0; k < l->ncgroup_makes; k++) {
		const char *dir = l->cgroup_makes[k];

		if (mkdir(dir, 0755) != 0)
			fatal("cannot make the command's cgroup %s: %s", dir,
			      errno == EEXIST ? "it exists already" : strerror(errno));
		if (statfs(dir, &fs) != 0 || !on_cgroup_fs(&fs)) {
			rmdir(dir);
			fatal("cannot make the command's cgroup %s: not on a cgroup file system",
			      dir);
		}
	}
	for (int k = 0; k < l->ncgroup_sets; k++) {
		const struct cgroup_set *set = &l->cgroup_sets[k];
		size_t length = strlen(set->value);
		int fd = open(set->path, O_WRONLY | O_CLOEXEC);

		if (fd < 0 && errno == ENOENT && set->if_present)
			continue;
		if (fd < 0)
			fatal("cannot limit the command's cgroup (%s): %s", set->path,
			      strerror(errno));
		if (fstatfs(fd, &fs) != 0 || !on_cgroup_fs(&fs))
			fatal("cannot limit the command's cgroup (%s): not a cgroup file",
			      set->path);
		errno = 0;
		if (write(fd, set->value, length) != (ssize_t)length)
			fatal("cannot limit the command's cgroup (%s=%s): %s", set->path,
			      set->value, strerror(errno ? errno : EIO));
		close(fd);
	}
}

/*
 * Move this process into each cgroup (writing "0" to a cgroup.procs moves the
 * writer; the kernel judges the write by the opener's credentials, so the
 * caller's descriptor works here whoever we now are), then close the descriptor:
 * the command must never hold it.  A descriptor on anything but a cgroup file
 * system would take the write and limit nothing: refused too.  Any failure is
 * fatal; no command runs without the limits its caller asked for.
 */
static void join_cgroups(const struct limits *l)
{
	struct statfs fs;

	make_cgroups(l);

	/*
	 * --cgroup-procs PATH: opened here, while nothing confines this process yet (a
	 * caller that can open a descriptor for us costs it a slower spawn: keeping
	 * descriptors open across its exec makes CPython's child walk /proc/self/fd).
	 */
	for (int k = 0; k < l->ncgroup_procs; k++) {
		int fd = open(l->cgroup_procs[k], O_WRONLY | O_CLOEXEC);

		if (fd < 0)
			fatal("cannot join the command's cgroup (%s): %s", l->cgroup_procs[k],
			      strerror(errno));
		if (fstatfs(fd, &fs) != 0 || !on_cgroup_fs(&fs))
			fatal("cannot join the command's cgroup (%s): not a cgroup file",
			      l->cgroup_procs[k]);
		errno = 0;
		if (write(fd, "0", 1) != 1)
			fatal("cannot join the command's cgroup (%s): %s", l->cgroup_procs[k],
			      strerror(errno ? errno : EIO));
		close(fd);
	}
	for (int k = 0; k < l->ncgroup_fds; k++) {
		int fd = l->cgroup_fds[k];

		if (fstatfs(fd, &fs) != 0)
			fatal("cannot join the command's cgroup (fd %d): %s", fd, strerror(errno));
		if (!on_cgroup_fs(&fs))
			fatal("cannot join the command's cgroup (fd %d): not a cgroup file", fd);
		errno = 0;
		if (write(fd, "0", 1) != 1)
			fatal("cannot join the command's cgroup (fd %d): %s", fd,
			      strerror(errno ? errno : EIO));
		close(fd);
	}
}

/* The command's rlimits: soft = hard = VALUE (cpu: hard = VALUE + CPU_GRACE_SECONDS). */
static void apply_rlimits(const struct limits *l)
{
	for (int k = 0; k < l->nrlimits; k++) {
		const struct rlimit_spec *spec = &l->rlimits[k];
		struct rlimit limit = { spec->value, spec->value };

		if (spec->limit->resource == RLIMIT_CPU && spec->value != RLIM_INFINITY)
			limit.rlim_max = spec->value > RLIM_INFINITY - 1 - CPU_GRACE_SECONDS
				? RLIM_INFINITY : spec->value + CPU_GRACE_SECONDS;
		if (setrlimit(spec->limit->resource, &limit) != 0)
			fatal("cannot set the command's %s limit to %s: %s", spec->limit->name,
			      spec->text, strerror(errno));
	}
}

/* ---- Run ---- */

#define BRIDGE_MAX 8			/* --proxy-bridge options */

struct bridge_spec {
	uint16_t port;			/* on the namespace's loopback */
	const char *path;		/* the Unix socket each connection is relayed to */
};


struct options {
	const char **paths;	/* in command-line order */
	int *writable;		/* each path's enum grant */
	int npaths;
	int plain;		/* --plain: no namespace at all */
	int read_only_host;	/* --read-only-host: every mount read-only but the --rw grants */
	struct mount_spec *mounts;
	int nmounts;
	struct fresh_spec fresh;	/* --fresh-dir, --keep, --bind-socket */
	int seal_metadata;
	int private_ipc;
	int die_with_parent;
	enum network network;
	int unix_pairs_only;
	const char *empty;
	const char **hidden;	/* --hide-socket paths */
	int nhidden;
	const char **unreadable;	/* --deny-read paths */
	int nunreadable;
	int private_network;
	struct bridge_spec bridges[BRIDGE_MAX];
	int nbridges;
	struct limits limits;	/* --cgroup-fd, --rlimit */
	char **argv;
};

/* The network options both modes take; 1 when `arg` was one of them. */
static int network_option(const char *arg, struct options *opt)
{
	if (strcmp(arg, "--no-network") == 0) {
		if (opt->network == NETWORK_NETNS)
			fatal("--no-network and --netns-only exclude each other");
		opt->network = NETWORK_OFF;
	} else if (strcmp(arg, "--netns-only") == 0) {
		if (opt->network == NETWORK_OFF)
			fatal("--no-network and --netns-only exclude each other");
		opt->network = NETWORK_NETNS;
	} else if (strcmp(arg, "--unix-pairs-only") == 0) {
		opt->unix_pairs_only = 1;
	} else {
		return 0;
	}
	return 1;
}

/* --empty FILE, --hide-socket PATH and --deny-read PATH; 1 when argv[*i] was one
 * (its value taken). */
static int hiding_option(int argc, char **argv, int *i, struct options *opt)
{
	const char *arg = argv[*i];

	if (strcmp(arg, "--empty") != 0 && strcmp(arg, "--hide-socket") != 0 &&
	    strcmp(arg, "--deny-read") != 0)
		return 0;
	if (*i + 1 == argc)
		fatal("%s needs a path", arg);
	if (strcmp(arg, "--empty") == 0) {
		opt->empty = argv[++*i];
	} else if (strcmp(arg, "--deny-read") == 0) {
		if (opt->unreadable == NULL &&
		    (opt->unreadable = calloc((size_t)argc, sizeof(char *))) == NULL)
			fatal("out of memory");
		opt->unreadable[opt->nunreadable++] = argv[++*i];
	} else {
		if (opt->hidden == NULL && (opt->hidden = calloc((size_t)argc, sizeof(char *))) == NULL)
			fatal("out of memory");
		opt->hidden[opt->nhidden++] = argv[++*i];
	}
	return 1;
}

/* --proxy-bridge PORT:PATH; 1 when argv[*i] was it (its value taken). */
static int bridge_option(int argc, char **argv, int *i, struct options *opt)
{
	struct sockaddr_un addr;
	const char *value, *path;
	char *end;
	unsigned long port;

	if (strcmp(argv[*i], "--proxy-bridge") != 0)
		return 0;
	if (*i + 1 == argc)
		fatal("--proxy-bridge needs PORT:PATH");
	value = argv[++*i];
	errno = 0;
	port = strtoul(value, &end, 10);
	if (end == value || *end != ':' || errno != 0 || port > 65535 ||
	    value[0] < '0' || value[0] > '9')
		fatal("--proxy-bridge needs PORT:PATH (a port from 0 to 65535), not %s", value);
	path = end + 1;
	if (*path == '\0')
		fatal("--proxy-bridge needs PORT:PATH (a socket path), not %s", value);
	if (strlen(path) >= sizeof(addr.sun_path))
		fatal("--proxy-bridge: the socket path is too long (at most %zu bytes): %s",
		      sizeof(addr.sun_path) - 1, path);
	for (int k = 0; k < opt->nbridges; k++)
		if (opt->bridges[k].port == port)
			fatal("--proxy-bridge: port %lu given twice", port);
	if (opt->nbridges == BRIDGE_MAX)
		fatal("--proxy-bridge: at most %d bridges", BRIDGE_MAX);
	opt->bridges[opt->nbridges].port = (uint16_t)port;
	opt->bridges[opt->nbridges++].path = path;
	return 1;
}

/* Whether `path` is `cover` or lies beneath it (as strings: the caller passes real paths). */
static int covered_by(const char *cover, const char *path)
{
	size_t len = strlen(cover);

	while (len > 1 && cover[len - 1] == '/')
		len--;
	return strncmp(cover, path, len) == 0 &&
		(path[len] == '\0' || path[len] == '/' || (len == 1 && cover[0] == '/'));
}

/*
 * In Landlock mode the bridge runs in the call's mount namespace, after the covers:
 * a PATH hidden or made unreadable there could never be reached.  (Under a runner
 * the bridge starts before them, in the runner's namespace: no conflict.)
 */
static void check_bridge_paths(const struct options *opt)
{
	for (int k = 0; k < opt->nbridges; k++) {
		const char *path = opt->bridges[k].path;

		for (int i = 0; i < opt->nhidden; i++)
			if (strcmp(opt->hidden[i], path) == 0)
				fatal("--proxy-bridge: %s is also a --hide-socket path: the bridge "
				      "could not reach it", path);
		for (int i = 0; i < opt->nunreadable; i++)
			if (covered_by(opt->unreadable[i], path))
				fatal("--proxy-bridge: %s is under --deny-read %s: the bridge could "
				      "not reach it", path, opt->unreadable[i]);
	}
}

/* --bind-ro, --bind-pin, --bind-file SOURCE, --empty-dir; 1 when argv[*i] was one. */
static int mount_option(int argc, char **argv, int *i, struct options *opt)
{
	const char *arg = argv[*i];
	struct mount_spec spec = { 0 };
	int values;

	if (strcmp(arg, "--bind-ro") == 0)
		spec.kind = MOUNT_READ_ONLY;
	else if (strcmp(arg, "--bind-pin") == 0)
		spec.kind = MOUNT_PIN;
	else if (strcmp(arg, "--bind-file") == 0)
		spec.kind = MOUNT_FILE;
	else if (strcmp(arg, "--empty-dir") == 0)
		spec.kind = MOUNT_EMPTY_DIR;
	else
		return 0;
	values = spec.kind == MOUNT_FILE ? 2 : 1;
	if (*i + values >= argc)
		fatal("%s needs %s", arg, values == 2 ? "SOURCE PATH" : "a path");
	if (spec.kind == MOUNT_FILE)
		spec.source = argv[++*i];
	spec.path = argv[++*i];
	if (spec.path[0] != '/' || (spec.source != NULL && spec.source[0] != '/'))
		fatal("%s needs absolute paths", arg);
	if (opt->mounts == NULL && (opt->mounts = calloc((size_t)argc, sizeof(*opt->mounts))) == NULL)
		fatal("out of memory");
	opt->mounts[opt->nmounts++] = spec;
	return 1;
}

/* --fresh-dir DIR, --keep PATH, --bind-socket SOCKET VIEW; 1 when argv[*i] was one. */
static int fresh_option(int argc, char **argv, int *i, struct options *opt)
{
	struct fresh_spec *fresh = &opt->fresh;
	const char *arg = argv[*i];
	int values = strcmp(arg, "--bind-socket") == 0 ? 2 : 1;

	if (strcmp(arg, "--fresh-dir") != 0 && strcmp(arg, "--keep") != 0 && values != 2)
		return 0;
	if (*i + values >= argc)
		fatal("%s needs %s", arg, values == 2 ? "SOCKET VIEW" : "a path");
	for (int k = 1; k <= values; k++)
		if (argv[*i + k][0] != '/')
			fatal("%s needs absolute paths", arg);
	if (fresh->dirs == NULL &&
	    ((fresh->dirs = calloc((size_t)argc, sizeof(char *))) == NULL ||
	     (fresh->keeps = calloc((size_t)argc, sizeof(char *))) == NULL ||
	     (fresh->sockets = calloc((size_t)argc, sizeof(char *))) == NULL))
		fatal("out of memory");
	if (strcmp(arg, "--fresh-dir") == 0) {
		fresh->dirs[fresh->ndirs++] = argv[++*i];
	} else if (strcmp(arg, "--keep") == 0) {
		fresh->keeps[fresh->nkeeps++] = argv[++*i];
	} else {
		fresh->sockets[2 * fresh->nsockets] = argv[++*i];
		fresh->sockets[2 * fresh->nsockets++ + 1] = argv[++*i];
	}
	return 1;
}

/* Fresh directories neither nest nor lie at or beneath a kept path (which they would hide). */
static void check_fresh_options(const struct fresh_spec *fresh)
{
	for (int d = 0; d < fresh->ndirs; d++) {
		for (int e = 0; e < fresh->ndirs; e++)
			if (e != d && covered_by(fresh->dirs[e], fresh->dirs[d]))
				fatal("--fresh-dir: %s lies beneath --fresh-dir %s", fresh->dirs[d],
				      fresh->dirs[e]);
		for (int k = 0; k < fresh->nkeeps; k++)
			if (covered_by(fresh->keeps[k], fresh->dirs[d]))
				fatal("--fresh-dir: %s lies at or beneath --keep %s", fresh->dirs[d],
				      fresh->keeps[k]);
	}
	for (int s = 0; s < fresh->nsockets; s++) {
		const char *view = fresh->sockets[2 * s + 1];

		/* Beneath no fresh view: bound over the socket already at VIEW (fresh_views). */
		if (fresh_dir_of(fresh, view) < 0)
			continue;
		for (int k = 0; k < fresh->nkeeps; k++)
			if (covered_by(fresh->keeps[k], view))
				fatal("--bind-socket: %s lies beneath --keep %s", view, fresh->keeps[k]);
	}
}

/*
 * --plain makes no namespace: nothing can be covered or bound, IPC stays the host's
 * (filtered), and a bridge listens on the host's loopback, on any free port.
 */
static void check_plain_options(struct options *opt)
{
	if (opt->private_ipc || opt->private_network || opt->network == NETWORK_NETNS)
		fatal("--plain makes no namespace: not with --private-ipc, --private-network "
		      "or --netns-only");
	if (opt->nhidden > 0 || opt->nunreadable > 0 || opt->nmounts > 0 || opt->read_only_host ||
	    opt->fresh.ndirs > 0 || opt->fresh.nkeeps > 0 || opt->fresh.nsockets > 0)
		fatal("--plain makes no mount namespace: nothing can be hidden or bound "
		      "(--hide-socket, --deny-read, --bind-*, --empty-dir, --read-only-host, "
		      "--fresh-dir, --keep, --bind-socket)");
	if (opt->nbridges > 1)
		fatal("--plain takes one --proxy-bridge at most");
	if (opt->nbridges == 1) {
		if (opt->network == NETWORK_OFF)
			fatal("--no-network and --proxy-bridge exclude each other");
		opt->network = NETWORK_PROXY;
	}
}

static void check_network_options(const struct options *opt)
{
	if (opt->unix_pairs_only && opt->network == NETWORK_ON)
		fatal("--unix-pairs-only needs --no-network or --netns-only");
	if (opt->nhidden > 0 && opt->empty == NULL)
		fatal("--hide-socket needs --empty FILE");
}

static void parse_options(int argc, char **argv, struct options *opt)
{
	opt->paths = calloc((size_t)argc, sizeof(*opt->paths));
	opt->writable = calloc((size_t)argc, sizeof(*opt->writable));
	if (opt->paths == NULL || opt->writable == NULL)
		fatal("out of memory");
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "--") == 0) {
			if (i + 1 == argc)
				fatal("no command given after --");
			if (opt->plain)
				check_plain_options(opt);
			else
				for (int k = 0; k < opt->nbridges; k++)
					if (opt->bridges[k].port == 0)
						fatal("--proxy-bridge: port 0 (any) only with --plain");
			if (opt->private_network) {
				if (opt->network == NETWORK_OFF)
					fatal("--no-network and --private-network exclude each other");
				/* A namespace of the call's own: the families --netns-only keeps. */
				opt->network = NETWORK_NETNS;
			}
			/* Only --private-network makes one here; else only --filters-only may say there is one. */
			if (opt->network == NETWORK_NETNS && !opt->private_network)
				fatal("--netns-only needs --filters-only inside a private network namespace");
			if (opt->nbridges > 0 && !opt->private_network && !opt->plain)
				fatal("--proxy-bridge needs --private-network (a network namespace of the call's own)");
			check_network_options(opt);
			check_bridge_paths(opt);
			check_fresh_options(&opt->fresh);
			opt->argv = argv + i + 1;
			return;
		}
		if (network_option(arg, opt) || hiding_option(argc, argv, &i, opt) ||
		    bridge_option(argc, argv, &i, opt) ||
		    limits_option(argc, argv, &i, &opt->limits)) {
			continue;
		} else if (strcmp(arg, "--private-network") == 0) {
			opt->private_network = 1;
		} else if (strcmp(arg, "--seal-metadata") == 0) {
			opt->seal_metadata = 1;
		} else if (strcmp(arg, "--private-ipc") == 0) {
			opt->private_ipc = 1;
		} else if (strcmp(arg, "--die-with-parent") == 0) {
			opt->die_with_parent = 1;
		} else if (strcmp(arg, "--plain") == 0) {
			opt->plain = 1;
		} else if (strcmp(arg, "--read-only-host") == 0) {
			opt->read_only_host = 1;
		} else if (strcmp(arg, "--ro") == 0 || strcmp(arg, "--rw") == 0 ||
			   strcmp(arg, "--list") == 0 || strcmp(arg, "--ro-try") == 0) {
			if (i + 1 == argc)
				fatal("%s needs a path", arg);
			opt->writable[opt->npaths] = strcmp(arg, "--rw") == 0 ? GRANT_WRITE
				: strcmp(arg, "--list") == 0 ? GRANT_LIST
				: strcmp(arg, "--ro-try") == 0 ? GRANT_READ_TRY : GRANT_READ;
			opt->paths[opt->npaths++] = argv[++i];
		} else if (mount_option(argc, argv, &i, opt) || fresh_option(argc, argv, &i, opt)) {
			continue;
		} else {
			fatal("unknown option: %s", arg);
		}
	}
	fatal("missing -- before the command");
}

static void install_filter(const struct sock_filter *filter, size_t length, const char *what)
{
	struct sock_fprog prog = {
		.len = (unsigned short)length,
		.filter = filter,
	};

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
		fatal("cannot install the %s: %s", what, strerror(errno));
}

/*
 * The filters every confined command gets.  Among filters that refuse the same
 * call, the one installed last gives the errno: the terminal guard goes last.
 */
static void install_filters(int seal_metadata, int filter_ipc, enum network network,
			    int unix_pairs_only)
{
	struct filter_buffer net;

	/* Required to filter syscalls (and to restrict ourselves) without CAP_SYS_ADMIN. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fatal("cannot set no_new_privs: %s", strerror(errno));
	if (seal_metadata)
		install_filter(FILTER(seal_filter), "metadata seal");
	if (filter_ipc)
		install_filter(FILTER(ipc_filter), "IPC filter");
	if (network != NETWORK_ON) {
		if (build_net_filter(&net, network, unix_pairs_only) > NET_FILTER_MAX)
			fatal("cannot build the network filter: too long");
		install_filter(net.insn, net.len, "network filter");
	}
	install_filter(FILTER(setid_filter), "setuid guard");
	install_filter(FILTER(tty_filter), "terminal guard");
}

/* ---- The proxy bridge (--proxy-bridge PORT:PATH) ---- */

/*
 * The command's only way out of a network namespace of its own (--private-network,
 * or bwrap --unshare-net with --filters-only --netns-only): a relay listening on
 * the namespace's loopback, 127.0.0.1:PORT (and [::1]:PORT where the namespace has
 * IPv6), that carries each connection it accepts to the Unix socket PATH (the
 * harness's proxy, whose socket the runner leaves in sight) and back, half-closes
 * included.  The listening sockets are bound and listening before the command
 * starts, so its first connection waits in the backlog however fast it is.
 *
 * The bridge is a process of its own, forked by the launcher before the command's
 * filters are installed (so it is under none of them: it needs AF_UNIX where the
 * command may be refused it), and it holds no more than it needs: no capability,
 * no_new_privs, not dumpable (the command cannot trace or read it), a session of
 * its own (a ^C or a hangup for the command's terminal does not reach it), stdin
 * and stdout and stderr on /dev/null, no descriptor but its sockets, a Landlock
 * domain of its own with no file access and no TCP bind or connect (where Landlock
 * is there), and a seccomp allowlist of the calls a relay makes, socket() only for
 * AF_UNIX.  It ends with the call:
 *  - Landlock mode: it is a child of init, in the call's PID namespace (pid 2: the
 *    command is then pid 3), with PR_SET_PDEATHSIG; when the command ends, init
 *    ends, and the kernel kills it with the namespace.
 *  - --filters-only: the launcher forks twice, so the bridge is no child of the
 *    command (which would see it in wait()); it is reparented to the runner's pid 1
 *    (bwrap's init), and watches the command through a pidfd of the launcher's own
 *    process (the command execs in it): the command gone, the bridge exits; the
 *    runner's PID namespace (--unshare-pid) kills it too when the command ends.
 * A bridge that cannot be set up reports its one line through a pipe the launcher
 * waits on, and the launcher fails (125) before the command runs.
 *
 * Bounded: at most RELAY_MAX connections at once (one more is accepted and reset),
 * RELAY_BUFFER bytes in flight per direction, and a connect to PATH that blocks
 * (the proxy's backlog full) gives up after UNIX_CONNECT_TIMEOUT_SECONDS and resets
 * that connection.  A connection that fails midway (a reset, a write to a closed
 * peer) is reset on the TCP side, so the client sees a broken transfer, not a
 * short one.
 */
#define RELAY_MAX 256
#define RELAY_BUFFER (64 * 1024)
#define LISTENER_MAX (2 * BRIDGE_MAX)
#define ACCEPTS_PER_ROUND 16
#define UNIX_CONNECT_TIMEOUT_SECONDS 5
#define BRIDGE_READY '+'
#define BRIDGE_PAUSE_MS 100

#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* <net/if.h>, <linux/sockios.h>: enough of struct ifreq to set an interface's flags. */
#define GET_INTERFACE_FLAGS 0x8913	/* SIOCGIFFLAGS */
#define SET_INTERFACE_FLAGS 0x8914	/* SIOCSIFFLAGS */
#define INTERFACE_UP 0x1		/* IFF_UP */

struct interface_request {
	char name[16];
	union {
		short flags;
		char size[24];
	} u;
};

/* A fresh network namespace has a loopback that is down: bring it up. */
static void loopback_up(void)
{
	struct interface_request request = { .name = "lo" };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	/* syscall(): <sys/ioctl.h> would bring the kernel's terminal constants in. */
	if (fd < 0 || syscall(SYS_ioctl, fd, GET_INTERFACE_FLAGS, &request) != 0)
		fatal("cannot bring up the call's loopback: %s", strerror(errno));
	request.u.flags |= INTERFACE_UP;
	if (syscall(SYS_ioctl, fd, SET_INTERFACE_FLAGS, &request) != 0)
		fatal("cannot bring up the call's loopback: %s", strerror(errno));
	close(fd);
}

struct listener {
	int fd;
	int bridge;			/* index in options.bridges */
};

/* A listening socket on the loopback of `family`, or -1 with errno. */
static int listen_on(int family, uint16_t port)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				    .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, err;

	if (fd < 0)
		return -1;
	if ((family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) ||
	    (family == AF_INET ? bind(fd, (struct sockaddr *)&in4, sizeof(in4))
	     : bind(fd, (struct sockaddr *)&in6, sizeof(in6))) != 0 ||
	    listen(fd, SOMAXCONN) != 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* Every bridge's listening sockets, in the namespace this process is in now. */
static int open_listeners(const struct options *opt, struct listener *out)
{
	int n = 0;

	for (int k = 0; k < opt->nbridges; k++) {
		int fd = listen_on(AF_INET, opt->bridges[k].port);

		if (fd < 0)
			fatal("--proxy-bridge: cannot listen on 127.0.0.1:%u: %s",
			      (unsigned)opt->bridges[k].port, strerror(errno));
		out[n++] = (struct listener){ fd, k };
		/* IPv6 is optional: a namespace without ::1 (or a kernel without IPv6) has none. */
		fd = listen_on(AF_INET6, opt->bridges[k].port);
		if (fd >= 0)
			out[n++] = (struct listener){ fd, k };
		else if (errno != EADDRNOTAVAIL && errno != EAFNOSUPPORT)
			fatal("--proxy-bridge: cannot listen on [::1]:%u: %s",
			      (unsigned)opt->bridges[k].port, strerror(errno));
	}
	return n;
}

/* The calls a relay makes (both libcs, every supported arch); anything else is EPERM. */
#define ALLOW(nr) \
	{ BPF_JEQ_K, 0, 1, (nr) }, \
	RET_ALLOW

static const struct sock_filter bridge_filter[] = {
	ARCH_GUARD
	/* socket(): AF_UNIX only, for the connection to PATH. */
	{ BPF_JEQ_K, 0, 4, __NR_socket },
	{ BPF_LD_W_ABS, 0, 0, ARG_LOW_WORD(0) },
	{ BPF_JEQ_K, 0, 1, AF_UNIX },
	RET_ALLOW,
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EAFNOSUPPORT },
#ifdef __NR_poll
	ALLOW(__NR_poll),
#endif
	ALLOW(__NR_ppoll),
#ifdef __NR_accept
	ALLOW(__NR_accept),
#endif
	ALLOW(__NR_accept4),
	ALLOW(__NR_connect),
	ALLOW(__NR_read),
	ALLOW(__NR_write),
	ALLOW(__NR_recvfrom),
	ALLOW(__NR_sendto),
	ALLOW(__NR_setsockopt),
	ALLOW(__NR_fcntl),
	ALLOW(__NR_shutdown),
	ALLOW(__NR_close),
#ifdef __NR_dup2
	ALLOW(__NR_dup2),
#endif
	ALLOW(__NR_dup3),
	ALLOW(__NR_brk),
	ALLOW(__NR_mmap),
	ALLOW(__NR_munmap),
	ALLOW(__NR_mremap),
	ALLOW(__NR_madvise),
	ALLOW(__NR_getrandom),
	ALLOW(__NR_futex),
	ALLOW(__NR_rt_sigreturn),
	ALLOW(__NR_rt_sigprocmask),
	ALLOW(__NR_restart_syscall),
	ALLOW(__NR_clock_gettime),
	ALLOW(__NR_exit),
	ALLOW(__NR_exit_group),
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM },
};

/* flow[i] carries what fd[i] sends to fd[1 - i]. */
struct flow {
	size_t len, off;		/* bytes in its buffer; how many of them are sent */
	int eof;			/* its source sent EOF */
	int shut;			/* so the destination was shut down for writing */
	int reading, writing;		/* what it asked poll() for this round */
};

struct relay {
	int fd[2];			/* [0] the accepted TCP connection, [1] the Unix socket */
	struct flow flow[2];
	short revents[2];
	char *buffer;			/* flow[i]'s is buffer + i * RELAY_BUFFER; NULL: slot free */
};

static struct relay relays[RELAY_MAX];
static int relays_active;

/* Close without a FIN: the client sees its connection reset, not a clean end. */
static void reset(int tcp)
{
	struct linger now = { 1, 0 };

	setsockopt(tcp, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
	close(tcp);
}

static void relay_close(struct relay *r, int broken)
{
	if (broken)
		reset(r->fd[0]);
	else
		close(r->fd[0]);
	close(r->fd[1]);
	free(r->buffer);
	r->buffer = NULL;
	relays_active--;
}

/* A connection to the Unix socket `path`, non-blocking, or -1. */
static int connect_unix(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval limit = { UNIX_CONNECT_TIMEOUT_SECONDS, 0 };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memcpy(addr.sun_path, path, strlen(path));	/* its length checked when parsed */
	/* A blocking connect() to a Unix socket waits for its backlog at most this long. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit)) != 0 ||
	    connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* 1 when accept() must wait: no descriptor or memory left for now. */
static int accept_some(const struct listener *l, const struct options *opt, int max)
{
	for (int k = 0; k < ACCEPTS_PER_ROUND; k++) {
		int tcp = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), other;
		struct relay *r = NULL;

		if (tcp < 0)
			return errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
				errno == ENOMEM;
		for (int i = 0; i < RELAY_MAX && relays_active < max; i++)
			if (relays[i].buffer == NULL) {
				r = &relays[i];
				break;
			}
		if (r == NULL || (other = connect_unix(opt->bridges[l->bridge].path)) < 0) {
			reset(tcp);
			continue;
		}
		memset(r, 0, sizeof(*r));
		if ((r->buffer = malloc(2 * RELAY_BUFFER)) == NULL) {
			close(other);
			reset(tcp);
			continue;
		}
		r->fd[0] = tcp;
		r->fd[1] = other;
		relays_active++;
	}
	return 0;
}

static int would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* Send what flow i holds; 0 when the relay broke. */
static int relay_send(struct relay *r, int i)
{
	struct flow *f = &r->flow[i];
	ssize_t sent = send(r->fd[1 - i], r->buffer + i * RELAY_BUFFER + f->off, f->len - f->off,
			    MSG_NOSIGNAL);

	if (sent < 0)
		return would_block();
	f->off += (size_t)sent;
	if (f->off == f->len)
		f->len = f->off = 0;
	return 1;
}

/* Move what poll() said can move; close the relay when both ways are done. */
static void relay_step(struct relay *r)
{
	for (int i = 0; i < 2; i++) {
		struct flow *f = &r->flow[i];

		if (f->reading && r->revents[i]) {
			ssize_t got = recv(r->fd[i], r->buffer + i * RELAY_BUFFER, RELAY_BUFFER, 0);

			if (got > 0) {
				f->len = (size_t)got;
				f->off = 0;
				f->writing = 1;	/* try at once: the peer is usually ready */
				r->revents[1 - i] |= POLLOUT;
			} else if (got == 0) {
				f->eof = 1;
			} else if (!would_block()) {
				relay_close(r, 1);
				return;
			}
		}
		if (f->writing && f->len > f->off && r->revents[1 - i] && !relay_send(r, i)) {
			relay_close(r, 1);
			return;
		}
	}
	for (int i = 0; i < 2; i++) {
		struct flow *f = &r->flow[i];

		if (f->eof && f->len == 0 && !f->shut) {
			/* Half-close: the other side reads EOF and may still answer. */
			if (shutdown(r->fd[1 - i], SHUT_WR) != 0 && errno != ENOTCONN) {
				relay_close(r, 1);
				return;
			}
			f->shut = 1;
		}
	}
	if (r->flow[0].shut && r->flow[1].shut)
		relay_close(r, 0);
}

static _Noreturn void bridge_loop(const struct options *opt, const struct listener *ls, int n,
				  int watch_fd, int max)
{
	static struct pollfd fds[1 + LISTENER_MAX + 2 * RELAY_MAX];
	static struct relay *owner[2 * RELAY_MAX];
	int paused = 0;

	for (;;) {
		nfds_t count = 0, first;

		if (watch_fd >= 0)
			fds[count++] = (struct pollfd){ .fd = watch_fd, .events = POLLIN };
		for (int k = 0; k < n; k++)
			fds[count++] = (struct pollfd){ .fd = paused ? -1 : ls[k].fd, .events = POLLIN };
		first = count;
		for (int i = 0; i < RELAY_MAX; i++) {
			struct relay *r = &relays[i];
			short events[2] = { 0, 0 };

			if (r->buffer == NULL)
				continue;
			for (int s = 0; s < 2; s++) {
				struct flow *f = &r->flow[s];

				f->reading = !f->eof && f->len == 0;
				f->writing = f->len > f->off;
				if (f->reading)
					events[s] |= POLLIN;
				if (f->writing)
					events[1 - s] |= POLLOUT;
				r->revents[s] = 0;
			}
			for (int s = 0; s < 2; s++) {
				/* An fd asked for nothing is left out: its POLLHUP would spin the loop. */
				fds[count] = (struct pollfd){ .fd = events[s] ? r->fd[s] : -1,
							      .events = events[s] };
				owner[count - first] = r;
				count++;
			}
		}
		if (poll(fds, count, paused ? BRIDGE_PAUSE_MS : -1) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			_exit(1);
		}
		if (watch_fd >= 0 && fds[0].revents)
			_exit(0);	/* the command is gone */
		for (nfds_t j = first; j < count; j++)
			owner[j - first]->revents[(j - first) % 2] = fds[j].revents;
		for (nfds_t j = first; j < count; j += 2)
			if (owner[j - first]->buffer != NULL &&
			    (owner[j - first]->revents[0] || owner[j - first]->revents[1]))
				relay_step(owner[j - first]);
		if (paused) {
			paused = 0;
			continue;
		}
		for (int k = 0; k < n; k++)
			if (fds[first - (nfds_t)n + (nfds_t)k].revents & POLLIN)
				paused |= accept_some(&ls[k], opt, max);
	}
}

/* Close every descriptor from 3 up but `keep`. */
static void close_other_fds(int *keep, int count)
{
	unsigned low = 3;

	for (int i = 1; i < count; i++)		/* a handful: insertion sort */
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (int i = 0; i <= count; i++) {
		unsigned high = i < count ? (unsigned)keep[i] : ~0U;

		if (high < low)
			continue;
		if (high > low &&
		    syscall(__NR_close_range, low, high == ~0U ? ~0U : high - 1, 0U) != 0) {
			long limit = sysconf(_SC_OPEN_MAX);

			if (errno != ENOSYS)
				fatal("cannot close the bridge's descriptors: %s", strerror(errno));
			for (long fd = low; fd < (high == ~0U ? limit : (long)high) && fd < 65536; fd++)
				close((int)fd);
		}
		if (high != ~0U)
			low = high + 1;
	}
}

/* Enough descriptors for every relay where the hard limit allows; the relays it allows. */
static int relay_limit(int listeners)
{
	const rlim_t spare = 16;	/* 0-2, the listeners' slack, the pidfd, a connect in progress */
	rlim_t wanted = spare + (rlim_t)listeners + 2 * RELAY_MAX;
	struct rlimit limit;

	if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
		fatal("cannot read the bridge's descriptor limit: %s", strerror(errno));
	if (limit.rlim_cur < wanted) {
		limit.rlim_cur = limit.rlim_max < wanted ? limit.rlim_max : wanted;
		if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
			fatal("cannot raise the bridge's descriptor limit: %s", strerror(errno));
	}
	if (limit.rlim_cur >= wanted)
		return RELAY_MAX;
	if (limit.rlim_cur < spare + (rlim_t)listeners + 2)
		fatal("the descriptor limit (%lu) leaves the bridge no connection",
		      (unsigned long)limit.rlim_cur);
	return (int)((limit.rlim_cur - spare - (rlim_t)listeners) / 2);
}

/*
 * The bridge process: shed everything, tell `report_fd` it is ready (or fail there
 * with its one line), and relay.  `watch_fd`: a pidfd whose process's end ends the
 * bridge, or -1; `tied_to_parent`: die with the parent (init) instead.
 */
static _Noreturn void bridge_main(const struct options *opt, const struct listener *ls, int n,
				  int report_fd, int watch_fd, int tied_to_parent)
{
	int keep[LISTENER_MAX + 2], nkeep = 0, null_fd, abi, max;
	const char ready = BRIDGE_READY;
	sigset_t none;

	/* Until it is ready, its failure line (fatal) goes to the one waiting for it. */
	if (dup2(report_fd, STDERR_FILENO) < 0)
		_exit(LAUNCHER_FAILURE);
	if (tied_to_parent && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
		fatal("cannot tie the proxy bridge to the call: %s", strerror(errno));
	if (setsid() < 0)
		fatal("cannot give the proxy bridge a session of its own: %s", strerror(errno));
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0)
		fatal("cannot open /dev/null for the proxy bridge: %s", strerror(errno));
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (int k = 0; k < n; k++)
		keep[nkeep++] = ls[k].fd;
	if (watch_fd >= 0)
		keep[nkeep++] = watch_fd;
	keep[nkeep++] = null_fd;
	close_other_fds(keep, nkeep);
	max = relay_limit(n);
	drop_capabilities();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fatal("cannot set no_new_privs for the proxy bridge: %s", strerror(errno));
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* Landlock where there is one: no file, no TCP bind or connect (accept needs neither). */
	abi = landlock_abi();
	if (abi > 0) {
		int ruleset_fd = create_ruleset(abi, 1);

		if (ruleset_fd < 0 || restrict_self(ruleset_fd) != 0)
			fatal("cannot confine the proxy bridge: %s", strerror(errno));
		close(ruleset_fd);
	}
	install_filter(FILTER(bridge_filter), "proxy bridge's filter");
	if (write(STDERR_FILENO, &ready, 1) != 1)
		_exit(LAUNCHER_FAILURE);
	if (dup2(null_fd, STDERR_FILENO) < 0)
		_exit(LAUNCHER_FAILURE);
	close(null_fd);
	bridge_loop(opt, ls, n, watch_fd, max);
}

/* Wait for the bridge on `fd`: ready, or fail with its line. */
static void await_bridge(int fd)
{
	char report[1024];
	size_t got = 0;

	while (got < sizeof(report) - 1) {
		ssize_t n = read(fd, report + got, sizeof(report) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fatal("cannot hear from the proxy bridge: %s", strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
		if (report[0] == BRIDGE_READY)
			break;
	}
	close(fd);
	if (got > 0 && report[0] == BRIDGE_READY)
		return;
	if (got == 0)
		fatal("the proxy bridge did not start");
	/* The bridge's own "landlock-run: ..." line. */
	report[got] = '\0';
	fputs(report, stderr);
	if (report[got - 1] != '\n')
		fputc('\n', stderr);
	leave(LAUNCHER_FAILURE);
}

static void close_listeners(const struct listener *ls, int n)
{
	for (int k = 0; k < n; k++)
		close(ls[k].fd);
}

/*
 * --filters-only: listen in the runner's network namespace, then fork twice (the
 * bridge is no child of the command) and wait until it is ready.
 */
static void start_detached_bridge(const struct options *opt)
{
	struct listener ls[LISTENER_MAX];
	int n = open_listeners(opt, ls), ready[2], watch;
	pid_t first;

	/* This process becomes the command (exec keeps the pid): the bridge watches it. */
	watch = (int)syscall(__NR_pidfd_open, getpid(), 0U);
	if (watch < 0)
		fatal("--proxy-bridge: cannot watch the command (pidfd_open): %s", strerror(errno));
	if (pipe2(ready, O_CLOEXEC) != 0)
		fatal("cannot start the proxy bridge: %s", strerror(errno));
	first = fork();
	if (first < 0)
		fatal("cannot start the proxy bridge: %s", strerror(errno));
	if (first == 0) {
		pid_t bridge;

		close(ready[0]);
		if (dup2(ready[1], STDERR_FILENO) < 0)
			_exit(LAUNCHER_FAILURE);
		bridge = fork();
		if (bridge < 0)
			fatal("cannot start the proxy bridge: %s", strerror(errno));
		if (bridge == 0)
			bridge_main(opt, ls, n, ready[1], watch, 0);
		_exit(0);
	}
	close(ready[1]);
	waitpid(first, NULL, 0);
	await_bridge(ready[0]);
	close_listeners(ls, n);
	close(watch);
}

/* ---- One call's processes: a PID namespace ---- */

/*
 * The command runs as pid 2 of a PID namespace of its own, under a tiny init
 * (pid 1, this program), so nothing it starts outlives it: when the command
 * ends, init ends, and the kernel kills every process left in the namespace,
 * whatever it did to leave its process group (setsid, a double fork), before
 * init is reaped.  The launcher's first process stays in the caller's namespace
 * (the caller waits for it): it waits for init and ends as the command did.
 *
 *   launcher (caller's pid)  waits for init, passes signals on, ends as the command
 *     init (pid 1)           passes signals on, reaps orphans, ends with the command
 *       command (pid 2)      confines itself, execs ARGV
 *
 * With --proxy-bridge, init forks the bridge first (pid 2, see "The proxy
 * bridge"), waits until it is ready, and the command is pid 3.
 *
 * Cost: init shares the launcher's memory (CLONE_VM: no page tables copied,
 * nothing to tear down at its exit) and the command is a vfork-style clone of
 * init until it execs, so the namespace costs two task creations, no memory
 * copy.  Sharing memory asks for care: after the clone the launcher only waits,
 * passes signals on and exits (no allocation, no stdio until init is gone);
 * init only drops its capabilities, waits and passes signals on; the three
 * share errno, so an error text can only be wrong if two fail at once.
 *
 * Signals: a signal sent to the launcher or to init by a process (kill, a
 * supervisor) is passed down, so `kill PID` reaches the command.  One the
 * kernel sends to the whole foreground group (^C, ^\, a window change, a
 * hangup) reaches the command directly and is not passed down again.  Stop
 * signals keep their default: ^Z stops the launcher (the shell's job) and the
 * command; init, as a namespace's init, ignores them.
 *
 * If the launcher dies, init gets SIGKILL (PR_SET_PDEATHSIG, checked once
 * against a pidfd of the launcher for a death before it was set) and the
 * namespace goes with it.  Init cannot be traced, read or signalled to death
 * by the command: another Landlock domain, not dumpable, no capability held,
 * and a namespace's init ignores what it does not wait for.
 */
static const int passed_on[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH,
};

#define STACK_SIZE (256 * 1024)

/* What init and the command need, in the memory the three share. */
static struct call {
	struct options opt;
	int abi;
	int ruleset_fd;
	int launcher_fd;
	struct listener listeners[LISTENER_MAX];	/* --proxy-bridge's, until the bridge has them */
	int nlisteners;
	sigset_t caller_mask;
	sigset_t waited;
	volatile int ending_signal;	/* the command was killed by it (init writes) */
	_Alignas(16) char init_stack[STACK_SIZE];
	_Alignas(16) char command_stack[STACK_SIZE];
} call;

/* Pass `info`'s signal to `pid` unless the kernel sent it to the whole group. */
static void pass_on(const siginfo_t *info, pid_t pid)
{
	if (info->si_code != SI_KERNEL)
		kill(pid, info->si_signo);
}

/* End as `signum` would have ended us (it already ended the command). */
static _Noreturn void die_by(int signum)
{
	struct rlimit none = { 0, 0 };
	sigset_t only;

	/* The command dumped its own core, if any: not the launcher's too. */
	setrlimit(RLIMIT_CORE, &none);
	signal(signum, SIG_DFL);
	sigemptyset(&only);
	sigaddset(&only, signum);
	sigprocmask(SIG_UNBLOCK, &only, NULL);
	raise(signum);
	_exit(128 + signum);	/* a signal this process does not die of */
}

/* The launcher's first process: wait for init, passing signals on, and end as it did. */
static _Noreturn void monitor(pid_t init)
{
	siginfo_t info;
	int status;

	for (;;) {
		if (sigwaitinfo(&call.waited, &info) < 0)
			continue;
		if (info.si_signo != SIGCHLD)
			pass_on(&info, init);
		else if (waitpid(init, &status, WNOHANG) == init)
			break;
	}
	if (WIFSIGNALED(status))
		die_by(WTERMSIG(status));
	if (call.ending_signal)
		die_by(call.ending_signal);
	leave(WEXITSTATUS(status));
}

/*
 * The command's process, on init's memory until it execs: it confines itself
 * (init stays out of the domain and runs none of the filters) and execs.
 */
static int command(void *unused)
{
	char *program;

	(void)unused;
	install_filters(call.opt.seal_metadata, !call.opt.private_ipc, call.opt.network,
			call.opt.unix_pairs_only);
	if (restrict_self(call.ruleset_fd) != 0)
		fatal("cannot enforce the Landlock ruleset: %s", strerror(errno));
	close(call.ruleset_fd);
	if (sigprocmask(SIG_SETMASK, &call.caller_mask, NULL) != 0)
		fatal("cannot unblock signals: %s", strerror(errno));
	program = resolve_program(call.opt.argv[0]);
	/*
	 * The rlimits after every step of the launcher's own (a low nofile or as must not
	 * break them), and after the lookup too (it opens the program).  The last
	 * fallible step before the notice; only a kernel-level exec failure can follow it.
	 */
	apply_rlimits(&call.opt.limits);
	if (call.abi < FULL_ENFORCEMENT_ABI)
		fputs("landlock-run: partial enforcement (older Landlock ABI)\n", stderr);
	execv(program, call.opt.argv);
	exec_failed(call.opt.argv[0], errno);
}

/*
 * Init forks the bridge (pid 2) before the command, and the command starts only once
 * the bridge is ready.  A plain clone, not libc's fork(): init runs on the
 * launcher's memory, and the bridge gets a copy of it with no libc bookkeeping.
 */
static void start_bridge_in_sandbox(void)
{
	int ready[2];
	pid_t pid;

	if (pipe2(ready, O_CLOEXEC) != 0)
		fatal("cannot start the proxy bridge: %s", strerror(errno));
	pid = (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, 0UL);
	if (pid < 0)
		fatal("cannot start the proxy bridge: %s", strerror(errno));
	if (pid == 0) {
		close(ready[0]);
		bridge_main(&call.opt, call.listeners, call.nlisteners, ready[1], -1, 1);
	}
	close(ready[1]);
	await_bridge(ready[0]);
	close_listeners(call.listeners, call.nlisteners);
	call.nlisteners = 0;
}

/* MS_NOSUID | MS_NODEV | MS_NOEXEC, as a procfs is usually mounted. */
#define PROC_FLAGS (2UL | 4UL | 8UL)

/* Init: start the command, pass signals on, reap every orphan, end with the command. */
static int init(void *unused)
{
	struct pollfd gone = { .fd = call.launcher_fd, .events = POLLIN };
	siginfo_t info;
	pid_t child, pid;
	int status;

	(void)unused;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
		fatal("cannot tie the sandbox to the launcher: %s", strerror(errno));
	if (call.launcher_fd >= 0) {
		if (poll(&gone, 1, 0) != 0)
			_exit(LAUNCHER_FAILURE);	/* the launcher is gone already */
		close(call.launcher_fd);
	}
	/*
	 * A /proc of the namespace's own, so the command's pids (getpid, $$) name its
	 * own processes there and the host's are out of sight.  A kernel that refuses
	 * (a procfs with hidden parts, in a container) leaves the host's /proc: every
	 * path in it stays under the same Landlock rules either way.
	 */
	syscall(SYS_mount, "proc", "/proc", "proc", PROC_FLAGS, NULL);
	/* Init holds no capability either; the command (and the bridge) inherit the empty sets. */
	drop_capabilities();
	if (call.nlisteners > 0)
		start_bridge_in_sandbox();
	child = (pid_t)clone(command, call.command_stack + STACK_SIZE,
			     CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	if (child < 0)
		fatal("cannot start the command: %s", strerror(errno));
	close(call.ruleset_fd);
	for (;;) {
		if (sigwaitinfo(&call.waited, &info) < 0)
			continue;
		if (info.si_signo != SIGCHLD) {
			pass_on(&info, child);
			continue;
		}
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			if (pid != child)
				continue;	/* an orphan */
			if (WIFSIGNALED(status)) {
				/* Init cannot die of a signal it sends itself: the launcher does. */
				call.ending_signal = WTERMSIG(status);
				_exit(128 + WTERMSIG(status));
			}
			_exit(WEXITSTATUS(status));
		}
	}
}

/* ---- The plain tier (--plain): no namespace at all ---- */

/*
 * Where no namespace can be made (no user namespaces for this caller: a container
 * under Docker's default seccomp profile, Ubuntu 24.04's AppArmor restriction, or
 * user.max_user_namespaces=0; and no CAP_SYS_ADMIN), the call still ends with its
 * command: the launcher's second process, the guardian, is a child subreaper and the
 * command's parent, so every process the command leaves (a setsid, a double fork, a
 * daemon) is adopted by it; when the command exits, or the launcher is killed, it
 * kills every child it has, reaps them, and again with what they leave, until none
 * is left.  It stands in a process group of its own (a kill of the launcher's group
 * does not take it before it has done so: the launcher's death is its signal,
 * PR_SET_PDEATHSIG), and outside the command's Landlock domain, so from ABI 6 the
 * command cannot signal it (the scope); it holds no capability.
 *
 * The rest is what needs no namespace: the Landlock ruleset (a deny_read outside the
 * writable roots is the caller's complement grants, --list and --ro), seccomp (no
 * socket family but AF_UNIX, or TCP alone with the bridge), no_new_privs, every
 * capability dropped, host IPC objects not created, removed or changed.  With
 * --proxy-bridge 0:PATH the bridge listens on the host's loopback, on a free port,
 * the only TCP port Landlock lets the command connect to, and the command's proxy
 * variables are set to it.
 */
#define LAUNCHER_GONE SIGRTMAX

/* The bridge's listening sockets on the host's loopback, on one free port for both. */
static int open_plain_listener(struct options *opt, struct listener *out)
{
	struct sockaddr_in bound;
	socklen_t size = sizeof(bound);
	int n = 0, fd = listen_on(AF_INET, opt->bridges[0].port);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&bound, &size) != 0)
		fatal("--proxy-bridge: cannot listen on the host's loopback: %s", strerror(errno));
	opt->bridges[0].port = ntohs(bound.sin_port);
	out[n++] = (struct listener){ fd, 0 };
	/* [::1] on the same port where it is free; IPv4 alone otherwise. */
	fd = listen_on(AF_INET6, opt->bridges[0].port);
	if (fd >= 0)
		out[n++] = (struct listener){ fd, 0 };
	return n;
}

/* The variables that point the command's clients at the bridge (network/bridge.py's). */
static void set_proxy_environment(uint16_t port)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
					     "https_proxy" };
	static const char *const socks[] = { "ALL_PROXY", "all_proxy" };
	char http[64], socks5[64];

	snprintf(http, sizeof(http), "http://127.0.0.1:%u", (unsigned)port);
	snprintf(socks5, sizeof(socks5), "socks5h://127.0.0.1:%u", (unsigned)port);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (setenv(names[i], http, 1) != 0)
			fatal("cannot set %s: %s", names[i], strerror(errno));
	for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++)
		if (setenv(socks[i], socks5, 1) != 0)
			fatal("cannot set %s: %s", socks[i], strerror(errno));
	if (setenv("NO_PROXY", "", 1) != 0 || setenv("no_proxy", "", 1) != 0)
		fatal("cannot set NO_PROXY: %s", strerror(errno));
}

/* This process's children's pids (at most `max`), or -1 when they cannot be listed. */
static int children_of_self(pid_t *out, int max)
{
	char path[64], buffer[4096];
	FILE *file;
	int n = 0;
	long pid;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/children", (long)getpid());
	file = fopen(path, "re");
	if (file == NULL)
		return -1;
	setvbuf(file, buffer, _IOFBF, sizeof(buffer));
	while (n < max && fscanf(file, "%ld", &pid) == 1)
		out[n++] = (pid_t)pid;
	fclose(file);
	return n;
}

/* Without /proc/PID/task/TID/children: every process whose parent is this one. */
static int children_by_scan(pid_t *out, int max)
{
	char path[64], line[512];
	pid_t self = getpid();
	DIR *proc = opendir("/proc");
	struct dirent *entry;
	int n = 0;

	if (proc == NULL)
		fatal("cannot list the call's processes: %s", strerror(errno));
	while (n < max && (entry = readdir(proc)) != NULL) {
		FILE *stat_file;
		char *end;
		long parent;

		long number;

		if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
			continue;
		number = strtol(entry->d_name, NULL, 10);
		snprintf(path, sizeof(path), "/proc/%ld/stat", number);
		if ((stat_file = fopen(path, "re")) == NULL)
			continue;
		end = fgets(line, sizeof(line), stat_file) ? strrchr(line, ')') : NULL;
		fclose(stat_file);
		if (end != NULL && sscanf(end + 1, " %*c %ld", &parent) == 1 && parent == self)
			out[n++] = (pid_t)number;
	}
	closedir(proc);
	return n;
}

/*
 * Kill every child, reap it, and do the same with what it leaves (orphans come to
 * this subreaper), until none is left.  A child is never signalled after it was
 * reaped (its pid could be another's then): only listed children are signalled, and
 * they are reaped only here.
 */
static void end_every_process(void)
{
	static pid_t children[1024];

	for (;;) {
		int n = children_of_self(children, 1024);

		if (n < 0)
			n = children_by_scan(children, 1024);
		for (int i = 0; i < n; i++)
			kill(children[i], SIGKILL);
		if (waitpid(-1, NULL, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD && n == 0)
				return;
			continue;
		}
		while (waitpid(-1, NULL, __WALL | WNOHANG) > 0)
			;
	}
}

/*
 * Out of the launcher's process group, and, when that group held the terminal's
 * foreground, with it: ^C and ^Z reach the command as in a shell.
 */
static void take_terminal(void)
{
	int foreground = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	sigset_t ttou, before;

	if (setpgid(0, 0) != 0)
		fatal("cannot give the call a process group of its own: %s", strerror(errno));
	if (!foreground)
		return;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &before);
	tcsetpgrp(STDIN_FILENO, getpid());
	sigprocmask(SIG_SETMASK, &before, NULL);
}

/* 1 when `path` is `cover` or lies beneath it, component-wise (both canonical). */
static int at_or_beneath(const char *path, const char *cover)
{
	size_t n = strlen(cover);

	while (n > 1 && cover[n - 1] == '/')
		n--;
	if (n == 1 && cover[0] == '/')
		return 1;
	return strncmp(path, cover, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* 0 when the canonical `cwd` is at or beneath `cover`, or its real place cannot be told. */
static int clear_of(const char *cwd, const char *cover)
{
	char real[4096];

	if (realpath(cover, real) != NULL)
		return !at_or_beneath(cwd, real);
	/* A cover made where nothing was yet is above cwd only if named so. */
	return errno == ENOENT && cover[0] == '/' && !at_or_beneath(cwd, cover);
}

/* 1 when the canonical `cwd` is clear of every cover the options mount. */
static int clear_of_covers(const char *cwd, const struct options *opt)
{
	for (int i = 0; i < opt->nhidden; i++)
		if (!clear_of(cwd, opt->hidden[i]))
			return 0;
	for (int i = 0; i < opt->nunreadable; i++)
		if (!clear_of(cwd, opt->unreadable[i]))
			return 0;
	for (int i = 0; i < opt->nmounts; i++)
		if (!clear_of(cwd, opt->mounts[i].path))
			return 0;
	for (int i = 0; i < opt->fresh.ndirs; i++)
		if (!clear_of(cwd, opt->fresh.dirs[i]))
			return 0;
	return 1;
}

/*
 * The launcher was started in its working directory before the covers above were
 * mounted, so it still stands on the directory beneath any cover over it (or over
 * one of its parents), where relative names would reach what the cover hides.  Its
 * caller refuses such a directory before anything runs; should one become covered
 * in between (renamed beneath a covered path), entering it again by its path, now
 * through every cover, finds another directory or none, and the call fails.  A
 * caller without the right to walk to its own directory by name (an unprivileged
 * caller started inside a mode-700 tree) cannot enter it again; it keeps the one it
 * stands on when no cover is at or above it.  The path is read before the covers go
 * up (after, getcwd could name it through them).
 */
static void read_workdir(char *path, size_t size)
{
	if (getcwd(path, size) == NULL)
		fatal("cannot read the working directory: %s", strerror(errno));
	if (path[0] != '/')
		fatal("the working directory is out of the command's reach");
}

static void reenter_workdir(const char *path, const struct options *opt)
{
	struct stat before, after;

	if (stat(".", &before) != 0)
		fatal("cannot read the working directory %s: %s", path, strerror(errno));
	if (chdir(path) != 0) {
		if (errno == EACCES && clear_of_covers(path, opt))
			return;	/* still on `before`: no cover is over it */
		fatal("the working directory %s is hidden from the command: run it elsewhere",
		      path);
	}
	if (stat(".", &after) != 0 || before.st_dev != after.st_dev ||
	    before.st_ino != after.st_ino)
		fatal("the working directory %s is hidden from the command: run it elsewhere",
		      path);
}

/* The guardian: start the command, pass signals on, end every process it leaves. */
static int plain_init(void *unused)
{
	struct pollfd gone = { .fd = call.launcher_fd, .events = POLLIN };
	siginfo_t info;
	pid_t child, pid;
	int status, ended = -1;

	(void)unused;
	if (prctl(PR_SET_PDEATHSIG, LAUNCHER_GONE, 0, 0, 0) != 0)
		fatal("cannot tie the call to the launcher: %s", strerror(errno));
	if (call.launcher_fd >= 0) {
		if (poll(&gone, 1, 0) != 0)
			_exit(LAUNCHER_FAILURE);	/* the launcher is gone already */
		close(call.launcher_fd);
	}
	take_terminal();
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
		fatal("cannot adopt the call's processes: %s", strerror(errno));
	drop_capabilities();
	if (call.nlisteners > 0)
		start_bridge_in_sandbox();
	child = (pid_t)clone(command, call.command_stack + STACK_SIZE,
			     CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	if (child < 0)
		fatal("cannot start the command: %s", strerror(errno));
	close(call.ruleset_fd);
	while (ended < 0) {
		if (sigwaitinfo(&call.waited, &info) < 0)
			continue;
		if (info.si_signo == LAUNCHER_GONE) {
			end_every_process();
			_exit(LAUNCHER_FAILURE);
		}
		if (info.si_signo != SIGCHLD) {
			pass_on(&info, child);
			continue;
		}
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			if (pid == child) {
				ended = status;
				break;
			}
	}
	end_every_process();
	if (WIFSIGNALED(ended)) {
		call.ending_signal = WTERMSIG(ended);
		_exit(128 + WTERMSIG(ended));
	}
	_exit(WEXITSTATUS(ended));
}

static _Noreturn void run_plain(void)
{
	pid_t pid;

	if (call.opt.nbridges > 0) {
		call.nlisteners = open_plain_listener(&call.opt, call.listeners);
		add_connect_rule(call.ruleset_fd, call.opt.bridges[0].port);
		set_proxy_environment(call.opt.bridges[0].port);
	}
	/* ENOSYS before Linux 5.3: the death signal alone then. */
	call.launcher_fd = (int)syscall(__NR_pidfd_open, getpid(), 0U);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&call.waited);
	for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
		sigaddset(&call.waited, passed_on[i]);
	sigaddset(&call.waited, SIGCHLD);
	sigaddset(&call.waited, LAUNCHER_GONE);
	if (sigprocmask(SIG_BLOCK, &call.waited, &call.caller_mask) != 0)
		fatal("cannot block signals: %s", strerror(errno));
	pid = (pid_t)clone(plain_init, call.init_stack + STACK_SIZE, CLONE_VM | SIGCHLD, NULL);
	if (pid < 0)
		fatal("cannot start the call's guardian: %s", strerror(errno));
	for (int k = 0; k < call.nlisteners; k++)
		close(call.listeners[k].fd);
	monitor(pid);
}

static _Noreturn void run(int argc, char **argv)
{
	uint64_t handled;
	char workdir[4096];
	pid_t pid;
	int err;

	parse_options(argc, argv, &call.opt);
	/* First: the monitor, init, the bridge and the command are all made in the cgroups. */
	join_cgroups(&call.opt.limits);
	/*
	 * --die-with-parent (bwrap's option of the same name): a caller that waits for us
	 * and is killed takes the call with it, as init dies with us.  The parent read
	 * before the death signal is set: one already gone by then is noticed after it.
	 */
	if (call.opt.die_with_parent) {
		pid_t parent = getppid();

		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
			fatal("cannot tie the call to its caller: %s", strerror(errno));
		if (getppid() != parent)
			fatal("the caller is gone");
	}
	call.abi = require_landlock_abi("");
	handled = handled_access_for_abi(call.abi);
	if (call.opt.network == NETWORK_PROXY && call.abi < NET_ABI)
		fatal("the proxy bridge without a network namespace needs Landlock's TCP rules "
		      "(ABI %d, this kernel has %d)", NET_ABI, call.abi);
	call.ruleset_fd = create_ruleset(call.abi, call.opt.network == NETWORK_OFF ||
					 call.opt.network == NETWORK_PROXY);
	if (call.ruleset_fd < 0)
		fatal("cannot create a Landlock ruleset: %s", strerror(errno));
	/* Paths are opened while we still hold the caller's privileges. */
	for (int i = 0; i < call.opt.npaths; i++)
		add_path_rule(call.ruleset_fd, call.opt.paths[i],
			      call.opt.writable[i] == GRANT_WRITE ? handled
			      : call.opt.writable[i] == GRANT_LIST ? ACCESS_READ_DIR
			      : ACCESS_READ_ONLY,
			      call.opt.writable[i] == GRANT_READ_TRY || call.opt.writable[i] == GRANT_LIST);
	if (call.opt.plain)
		run_plain();
	/*
	 * Before the capabilities go: unsharing needs CAP_SYS_ADMIN (or a user
	 * namespace).  Always a PID namespace, and a mount namespace for its /proc;
	 * the IPC namespace when asked.  No PID namespace, no run: fail closed.
	 */
	err = private_namespaces(CLONE_NEWPID | CLONE_NEWNS |
				 (call.opt.private_ipc ? CLONE_NEWIPC : 0) |
				 (call.opt.private_network ? CLONE_NEWNET : 0));
	if (err != 0)
		fatal("cannot make the command's PID%s namespace%s: %s",
		      call.opt.private_ipc && call.opt.private_network ? ", IPC and network"
		      : call.opt.private_ipc ? " and IPC"
		      : call.opt.private_network ? " and network" : "",
		      call.opt.private_ipc || call.opt.private_network ? "s" : "", strerror(err));
	/* unshare() moved this process into the new network namespace already. */
	if (call.opt.private_network)
		loopback_up();
	if (call.opt.nbridges > 0)
		call.nlisteners = open_listeners(&call.opt, call.listeners);
	if (call.opt.nhidden > 0 || call.opt.nunreadable > 0 || call.opt.nmounts > 0 ||
	    call.opt.read_only_host || call.opt.fresh.ndirs > 0 || call.opt.fresh.nsockets > 0)
		read_workdir(workdir, sizeof(workdir));
	if (call.opt.read_only_host)
		read_only_host(call.opt.paths, call.opt.writable, call.opt.npaths);
	if (call.opt.nhidden > 0)
		hide_sockets(call.opt.empty, call.opt.hidden, call.opt.nhidden);
	if (call.opt.nunreadable > 0)
		hide_unreadable(call.opt.unreadable, call.opt.nunreadable);
	if (call.opt.nmounts > 0)
		bind_protected(call.opt.mounts, call.opt.nmounts);
	/* Last: the fresh views go over everything above, and keep what the call needs. */
	if (call.opt.fresh.ndirs > 0 || call.opt.fresh.nsockets > 0)
		fresh_views(&call.opt.fresh);
	if (call.opt.nhidden > 0 || call.opt.nunreadable > 0 || call.opt.nmounts > 0 ||
	    call.opt.read_only_host || call.opt.fresh.ndirs > 0 || call.opt.fresh.nsockets > 0)
		reenter_workdir(workdir, &call.opt);

	/* ENOSYS before Linux 5.3: the death signal alone then. */
	call.launcher_fd = (int)syscall(__NR_pidfd_open, getpid(), 0U);
	/* Per memory, so init's too: neither can be traced or read by the command. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* SIGCHLD ignored by the caller would reap init unseen; the command gets the default. */
	signal(SIGCHLD, SIG_DFL);
	/* Blocked before the clone, so nothing sent meanwhile is lost; taken by sigwaitinfo. */
	sigemptyset(&call.waited);
	for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
		sigaddset(&call.waited, passed_on[i]);
	sigaddset(&call.waited, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &call.waited, &call.caller_mask) != 0)
		fatal("cannot block signals: %s", strerror(errno));
	pid = (pid_t)clone(init, call.init_stack + STACK_SIZE, CLONE_VM | SIGCHLD, NULL);
	if (pid < 0)
		fatal("cannot start the sandbox's init: %s", strerror(errno));
	/* Init has its own copies (its descriptor table is not shared): these go to the bridge. */
	for (int k = 0; k < call.nlisteners; k++)
		close(call.listeners[k].fd);
	monitor(pid);
}

/*
 * The covers above live in a mount namespace of the command's own, but the runner's
 * processes (bwrap's pid 1) stay in the one without them, and /proc/PID/root of a
 * process of the same uid would lead the command there, past every cover.  A
 * Landlock domain that allows every file access keeps the files as the mount table
 * has them and refuses what Landlock always refuses a domain: ptrace access, and so
 * /proc/PID/root, /proc/PID/cwd and /proc/PID/fd, to any process outside it.  No
 * scope is asked (signals and abstract sockets stay as the runner has them).  On a
 * kernel without Landlock there is nothing to add (the claim says what that leaves).
 */
static void seal_outside_processes(void)
{
	struct landlock_ruleset_attr attr = { 0 };
	int abi = landlock_abi(), ruleset;

	if (abi <= 0)
		return;
	attr.handled_access_fs = handled_access_for_abi(abi);
	ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr,
			       offsetof(struct landlock_ruleset_attr, handled_access_net), 0U);
	if (ruleset < 0)
		fatal("cannot create a Landlock ruleset: %s", strerror(errno));
	add_path_rule(ruleset, "/", attr.handled_access_fs, 0);
	if (restrict_self(ruleset) != 0)
		fatal("cannot keep the runner's processes out of reach: %s", strerror(errno));
	close(ruleset);
}

/*
 * The terminal's ^C and ^\ are the command's: the caller blocks SIGINT and SIGQUIT
 * for the runner (bwrap) that shares the terminal's foreground group with the
 * command, so that neither the runner nor its sandbox ends of them; the command
 * gets them as a shell would give them (a disposition the caller left, such as
 * nohup's ignore, is kept: only the mask changes).
 */
static void unblock_terminal_signals(void)
{
	sigset_t terminal;

	sigemptyset(&terminal);
	sigaddset(&terminal, SIGINT);
	sigaddset(&terminal, SIGQUIT);
	sigprocmask(SIG_UNBLOCK, &terminal, NULL);
}

/*
 * --filters-only [--seal-metadata] [--no-network | --netns-only] [--unix-pairs-only]
 * [--proxy-bridge PORT:PATH]... -- ARGV: inside a runner (bwrap) that already
 * confines files, holds no capability and gave the command an IPC namespace of its
 * own (and, with --netns-only, a network namespace); only the seccomp filters are
 * added, and the bridge (in the runner's namespaces, before any of the command's
 * own) is started.
 */
static _Noreturn void filters_only(int argc, char **argv)
{
	struct options opt = { 0 };
	char *program;
	int i = 2;

	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--seal-metadata") == 0)
			opt.seal_metadata = 1;
		else if (!network_option(argv[i], &opt) && !hiding_option(argc, argv, &i, &opt) &&
			 !bridge_option(argc, argv, &i, &opt) &&
			 !limits_option(argc, argv, &i, &opt.limits))
			fatal("--filters-only takes only --seal-metadata, the network options, "
			      "--proxy-bridge, --empty, --hide-socket, --deny-read, --cgroup-fd, "
			      "--cgroup-procs and "
			      "--rlimit, not %s", argv[i]);
	}
	if (i == argc)
		fatal("missing -- before the command");
	if (i + 1 == argc)
		fatal("no command given after --");
	if (opt.nbridges > 0 && opt.network != NETWORK_NETNS)
		fatal("--proxy-bridge needs --netns-only with --filters-only (the runner's network "
		      "namespace)");
	check_network_options(&opt);
	/* First, as in Landlock mode: the bridge is made in the cgroups too. */
	join_cgroups(&opt.limits);
	/* Before any namespace of the command's own: the bridge stays in the runner's. */
	if (opt.nbridges > 0)
		start_detached_bridge(&opt);
	/*
	 * The runner left CAP_SYS_ADMIN (and CAP_SETPCAP) for this only: the sockets are
	 * covered in a mount namespace of the command's own (never the one this was
	 * started in, whatever that is), then every capability goes.
	 */
	if (opt.nhidden > 0 || opt.nunreadable > 0) {
		int err = private_namespaces(CLONE_NEWNS);

		if (err != 0)
			fatal("cannot make a mount namespace to hide paths in: %s", strerror(err));
		char workdir[4096];

		read_workdir(workdir, sizeof(workdir));
		if (opt.nhidden > 0)
			hide_sockets(opt.empty, opt.hidden, opt.nhidden);
		if (opt.nunreadable > 0)
			hide_unreadable(opt.unreadable, opt.nunreadable);
		reenter_workdir(workdir, &opt);
		drop_capabilities();
	}
	install_filters(opt.seal_metadata, 0, opt.network, opt.unix_pairs_only);
	if (opt.nhidden > 0 || opt.nunreadable > 0)
		seal_outside_processes();
	program = resolve_program(argv[i + 1]);
	apply_rlimits(&opt.limits);
	unblock_terminal_signals();
	execv(program, argv + i + 1);
	exec_failed(argv[i + 1], errno);
}

/*
 * --limits-only [--cgroup-*]... [--rlimit NAME=VALUE]... -- ARGV: for a command
 * its caller runs unconfined: the limits alone, then ARGV (no Landlock, no filters,
 * no namespace).
 */
static _Noreturn void limits_only(int argc, char **argv)
{
	struct limits limits = { 0 };
	char *program;
	int i = 2;

	for (; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (!limits_option(argc, argv, &i, &limits))
			fatal("--limits-only takes only --cgroup-make, --cgroup-set, --cgroup-fd, "
			      "--cgroup-procs and --rlimit, not %s", argv[i]);
	if (i == argc)
		fatal("missing -- before the command");
	if (i + 1 == argc)
		fatal("no command given after --");
	join_cgroups(&limits);
	program = resolve_program(argv[i + 1]);
	apply_rlimits(&limits);
	execv(program, argv + i + 1);
	exec_failed(argv[i + 1], errno);
}

/* ---- Probe ---- */

enum probe_status {
	PROBE_ENFORCED,
	PROBE_NO_RULESET,
	PROBE_NO_NNP,
	PROBE_NO_RESTRICT,
	PROBE_WRITE_ALLOWED,
	PROBE_READ_ALLOWED,
	PROBE_STATUS_COUNT,
};

static const char *const probe_failures[PROBE_STATUS_COUNT] = {
	[PROBE_NO_RULESET] = "cannot create a ruleset",
	[PROBE_NO_NNP] = "cannot set no_new_privs",
	[PROBE_NO_RESTRICT] = "cannot enforce a ruleset",
	[PROBE_WRITE_ALLOWED] = "a write was not refused",
	[PROBE_READ_ALLOWED] = "a read was not refused",
};

static int refused(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno == EACCES;
}

/* Runs in the forked child: confine ourselves with no rules and try to escape. */
static enum probe_status probe_child(int abi)
{
	int ruleset_fd = create_ruleset(abi, 0);

	if (ruleset_fd < 0)
		return PROBE_NO_RULESET;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return PROBE_NO_NNP;
	if (restrict_self(ruleset_fd) != 0)
		return PROBE_NO_RESTRICT;
	if (!refused("/dev/null", O_WRONLY))
		return PROBE_WRITE_ALLOWED;
	if (!refused("/", O_RDONLY | O_DIRECTORY))
		return PROBE_READ_ALLOWED;
	return PROBE_ENFORCED;
}

/* Interrupts waitpid() so that a hanging probe counts as a failure. */
static void on_alarm(int sig)
{
	(void)sig;
}

/* The child's exit status; a hang, a signal or a failed wait is fatal. */
static int wait_for_child(pid_t child)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	int status;

	if (sigaction(SIGALRM, &sa, NULL) != 0)
		fatal("probe failed: sigaction: %s", strerror(errno));
	alarm(PROBE_TIMEOUT_SECONDS);
	if (waitpid(child, &status, 0) != child) {
		int err = errno;

		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		fatal("probe failed: %s", err == EINTR ? "timed out" : strerror(err));
	}
	alarm(0);
	if (WIFSIGNALED(status))
		fatal("probe failed: killed by signal %d", WTERMSIG(status));
	return WEXITSTATUS(status);
}

static void wait_for_probe(pid_t child)
{
	int status = wait_for_child(child);

	if (status != PROBE_ENFORCED)
		fatal("probe failed: %s", status < PROBE_STATUS_COUNT
		      ? probe_failures[status] : "unexpected exit status");
}

/*
 * 0 when this caller can make the namespaces `flags` names (tried in a
 * throwaway child), else the errno.
 */
static int namespaces_error(int flags)
{
	pid_t child = fork();

	if (child < 0)
		fatal("probe failed: fork: %s", strerror(errno));
	if (child == 0)
		_exit(private_namespaces(flags) & 0xff);
	return wait_for_child(child);
}

static int probe(void)
{
	int abi = require_landlock_abi("probe failed: "), err;
	pid_t child = fork();

	if (child < 0)
		fatal("probe failed: fork: %s", strerror(errno));
	if (child == 0)
		_exit(probe_child(abi));
	wait_for_probe(child);
	/*
	 * The strongest tier this caller can have: namespaced (PID, mount and network
	 * namespaces of the call's own, IPC too where possible), else plain (none; the
	 * guardian ends the call's processes), with why not the stronger.
	 */
	err = namespaces_error(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET);
	if (printf("landlock-run: probe ok: abi=%d enforcement=%s tier=%s ipc=%s%s%s\n", abi,
		   abi >= FULL_ENFORCEMENT_ABI ? "full" : "partial",
		   err == 0 ? "namespaced" : "plain",
		   err == 0 && namespaces_error(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET |
						CLONE_NEWIPC) == 0 ? "private" : "filtered",
		   err == 0 ? "" : " why=", err == 0 ? "" : strerror(err)) < 0 ||
	    fflush(stdout) != 0)
		fatal("probe failed: cannot write the report: %s", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--probe") == 0) {
		if (argc != 2)
			fatal("--probe takes no other arguments");
		return probe();
	}
	if (argc >= 2 && strcmp(argv[1], "--filters-only") == 0)
		filters_only(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--limits-only") == 0)
		limits_only(argc, argv);
	run(argc, argv);
}

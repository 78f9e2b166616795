/*
 * The seccomp filters, each killing foreign-architecture and x32 calls:
 *  - always: no TIOCSTI/TIOCLINUX (typing into the caller's terminal); no
 *    setuid/setgid bit set or created (chmod family, open/creat/mkdir/mknod
 *    with the bits), openat2 (its mode is out of a filter's sight) and
 *    io_uring (it would bypass every filter) refused;
 *  - without --private-ipc: no SysV or POSIX IPC object of the host created,
 *    removed or changed (--private-ipc instead gives the child an IPC namespace
 *    of its own, made with the PID namespace; it fails if that cannot be);
 *  - --seal-metadata (read-only): the metadata changes Landlock does not govern
 *    (mode, owner, timestamps, extended attributes), and every ioctl but an
 *    allowlist of terminal, file-query and socket-query requests;
 *  - the network options: the socket families the command may open (below);
 *  - the proxy bridge's own: an allowlist of the calls a relay makes (bridge.c).
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
 */
#include "landlock-run.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* ---- seccomp / classic BPF UAPI (struct sock_filter: landlock-run.h) ---- */

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
#define SOCK_TYPE_MASK 0xfU

/* NETWORK_PROXY (landlock-run.h): TCP over IPv4 or IPv6 alone, besides AF_UNIX. */

static void emit(struct filter_buffer *buf, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	struct sock_filter insn = { code, jt, jf, k };

	/* The largest program built below has 30 instructions (NETWORK_PROXY with
	 * --unix-pairs-only, on x86_64: tests/launcher/unit/test_seccomp.c); the caller checks
	 * the length. */
	if (buf->len < NET_FILTER_MAX)
		buf->insn[buf->len] = insn;
	buf->len++;
}

TESTABLE size_t build_net_filter(struct filter_buffer *buf, enum network network,
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

/*
 * The proxy bridge's (bridge.c): the calls a relay makes (both libcs, every supported
 * arch); anything else is EPERM.
 */
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

/* ---- Installing ---- */

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
 * The filters every confined command gets, in the order they are installed.  Among
 * filters that refuse the same call, the one installed last gives the errno: the
 * terminal guard goes last.  `net` holds the network filter's program.
 */
TESTABLE size_t plan_filters(int seal_metadata, int filter_ipc, enum network network,
			     int unix_pairs_only, struct filter_buffer *net,
			     struct filter_program out[FILTERS_MAX])
{
	size_t n = 0;

	if (seal_metadata)
		out[n++] = (struct filter_program){ FILTER(seal_filter), "metadata seal" };
	if (filter_ipc)
		out[n++] = (struct filter_program){ FILTER(ipc_filter), "IPC filter" };
	if (network != NETWORK_ON) {
		if (build_net_filter(net, network, unix_pairs_only) > NET_FILTER_MAX)
			fatal("cannot build the network filter: too long");
		out[n++] = (struct filter_program){ net->insn, net->len, "network filter" };
	}
	out[n++] = (struct filter_program){ FILTER(setid_filter), "setuid guard" };
	out[n++] = (struct filter_program){ FILTER(tty_filter), "terminal guard" };
	return n;
}

void install_filters(int seal_metadata, int filter_ipc, enum network network,
		     int unix_pairs_only)
{
	struct filter_program programs[FILTERS_MAX];
	struct filter_buffer net;
	size_t n;

	/* Required to filter syscalls (and to restrict ourselves) without CAP_SYS_ADMIN. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fatal("cannot set no_new_privs: %s", strerror(errno));
	n = plan_filters(seal_metadata, filter_ipc, network, unix_pairs_only, &net, programs);
	for (size_t i = 0; i < n; i++)
		install_filter(programs[i].insn, programs[i].len, programs[i].what);
}

TESTABLE const struct filter_program bridge_program = {
	FILTER(bridge_filter), "proxy bridge's filter"
};

void install_bridge_filter(void)
{
	install_filter(bridge_program.insn, bridge_program.len, bridge_program.what);
}

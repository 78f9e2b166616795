/*
 * seccomp.c: the filters each command gets, in order, judged by a classic-BPF
 * interpreter written here (the kernel's rules: every program is run, the last
 * installed first, and the action of highest precedence wins), then installed for
 * real in a child.
 */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* include/uapi/linux/seccomp.h and audit.h, written out again here. */
#define RET_KILL_PROCESS 0x80000000U
#define RET_ERRNO 0x00050000U
#define RET_ALLOW 0x7fff0000U
#if defined(__x86_64__)
#define ARCH 0xC000003EU
#elif defined(__aarch64__)
#define ARCH 0xC00000B7U
#elif defined(__riscv)
#define ARCH 0xC00000F3U
#endif
#define ARCH_I386 0x40000003U
#define BPF_MAXINSNS 4096

struct data {
	int nr;
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t args[6];
};

/* A program the kernel's checker takes: in bounds, forward jumps, loads aligned within
 * struct seccomp_data, the last instruction a return. */
static int valid(const struct filter_program *p)
{
	if (p->len == 0 || p->len > BPF_MAXINSNS || p->insn[p->len - 1].code != 0x06)
		return 0;
	for (size_t pc = 0; pc < p->len; pc++) {
		const struct sock_filter *i = &p->insn[pc];

		switch (i->code) {
		case 0x20:
			if (i->k % 4 != 0 || i->k + 4 > sizeof(struct data))
				return 0;
			break;
		case 0x15: case 0x35: case 0x45:
			if (pc + 1 + i->jt >= p->len || pc + 1 + i->jf >= p->len)
				return 0;
			break;
		case 0x54: case 0x06:
			break;
		default:
			return 0;
		}
	}
	return 1;
}

static uint32_t run(const struct filter_program *p, const struct data *d)
{
	uint32_t a = 0;

	for (size_t pc = 0; pc < p->len; pc++) {
		const struct sock_filter *i = &p->insn[pc];

		switch (i->code) {
		case 0x20:	/* BPF_LD | BPF_W | BPF_ABS */
			memcpy(&a, (const char *)d + i->k, sizeof(a));
			break;
		case 0x15:	/* BPF_JMP | BPF_JEQ | BPF_K */
			pc += a == i->k ? i->jt : i->jf;
			break;
		case 0x35:	/* BPF_JMP | BPF_JGE | BPF_K */
			pc += a >= i->k ? i->jt : i->jf;
			break;
		case 0x45:	/* BPF_JMP | BPF_JSET | BPF_K */
			pc += (a & i->k) ? i->jt : i->jf;
			break;
		case 0x54:	/* BPF_ALU | BPF_AND | BPF_K */
			a &= i->k;
			break;
		case 0x06:	/* BPF_RET | BPF_K */
			return i->k;
		}
	}
	return 0xdeadbeefU;
}

/* The stack's answer: the last installed runs first; a lower (signed) action wins. */
static uint32_t stack(const struct filter_program *p, size_t n, const struct data *d)
{
	uint32_t ret = RET_ALLOW;

	for (size_t k = n; k-- > 0;) {
		uint32_t cur = run(&p[k], d);

		if ((int32_t)(cur & 0xffff0000U) < (int32_t)(ret & 0xffff0000U))
			ret = cur;
	}
	return ret;
}

static struct filter_program programs[FILTERS_MAX];
static struct filter_buffer net;
static size_t count;

static void plan(int seal, int ipc, enum network network, int pairs_only)
{
	count = plan_filters(seal, ipc, network, pairs_only, &net, programs);
	for (size_t k = 0; k < count; k++)
		CHECK(valid(&programs[k]));
}

static uint32_t call(long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	struct data d = { .nr = (int)nr, .arch = ARCH, .args = { a0, a1, a2, a3, 0, 0 } };

	return stack(programs, count, &d);
}

#define REFUSED(err) (RET_ERRNO | (err))

static void order(void)
{
	plan(0, 1, NETWORK_ON, 0);
	CHECK_EQ(count, 3);
	CHECK_STR(programs[0].what, "IPC filter");
	CHECK_STR(programs[1].what, "setuid guard");
	CHECK_STR(programs[2].what, "terminal guard");
	plan(1, 1, NETWORK_OFF, 0);
	CHECK_EQ(count, 5);
	CHECK_STR(programs[0].what, "metadata seal");
	CHECK_STR(programs[1].what, "IPC filter");
	CHECK_STR(programs[2].what, "network filter");
	CHECK(programs[2].insn == net.insn);
	CHECK_STR(programs[3].what, "setuid guard");
	CHECK_STR(programs[4].what, "terminal guard");
	plan(0, 0, NETWORK_NETNS, 1);
	CHECK_EQ(count, 3);
	CHECK_STR(programs[0].what, "network filter");
}

static void foreign_calls_are_killed(void)
{
	struct data i386 = { .nr = 15, .arch = ARCH_I386 };

	plan(1, 1, NETWORK_PROXY, 1);
	for (size_t k = 0; k < count; k++)
		CHECK_EQ(run(&programs[k], &i386), RET_KILL_PROCESS);
	CHECK(valid(&bridge_program));
	CHECK_EQ(run(&bridge_program, &i386), RET_KILL_PROCESS);
#ifdef __x86_64__
	{
		struct data x32 = { .nr = 0x40000000 | __NR_chmod, .arch = ARCH };

		for (size_t k = 0; k < count; k++)
			CHECK_EQ(run(&programs[k], &x32), RET_KILL_PROCESS);
		CHECK_EQ(run(&bridge_program, &x32), RET_KILL_PROCESS);
	}
#endif
}

static void setid_guard(void)
{
	plan(0, 0, NETWORK_ON, 0);
	CHECK_EQ(call(__NR_fchmod, 3, 04755, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_fchmod, 3, 02711, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_fchmod, 3, 0755, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_fchmodat, AT_FDCWD, 0, 06755, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_fchmodat, AT_FDCWD, 0, 01777, 0), RET_ALLOW);
	/* openat: the mode counts only when the call creates. */
	CHECK_EQ(call(__NR_openat, AT_FDCWD, 0, O_CREAT | O_WRONLY, 04755), REFUSED(EACCES));
	CHECK_EQ(call(__NR_openat, AT_FDCWD, 0, O_TMPFILE | O_RDWR, 02755), REFUSED(EACCES));
	CHECK_EQ(call(__NR_openat, AT_FDCWD, 0, O_RDONLY, 04755), RET_ALLOW);
	CHECK_EQ(call(__NR_openat, AT_FDCWD, 0, O_CREAT | O_WRONLY, 0644), RET_ALLOW);
	/* The upper half of a 64-bit mode is never read: bits there change nothing. */
	CHECK_EQ(call(__NR_openat, AT_FDCWD, 0, O_CREAT, (1ULL << 32) | 0644), RET_ALLOW);
	CHECK_EQ(call(__NR_mkdirat, AT_FDCWD, 0, 02775, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_mknodat, AT_FDCWD, 0, S_IFREG | 04755, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_mkdirat, AT_FDCWD, 0, 0755, 0), RET_ALLOW);
	CHECK_EQ(call(437 /* openat2 */, AT_FDCWD, 0, 0, 0), REFUSED(ENOSYS));
	CHECK_EQ(call(__NR_io_uring_setup, 8, 0, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_read, 0, 0, 0, 0), RET_ALLOW);
}

static void ipc(void)
{
	plan(0, 1, NETWORK_ON, 0);
	CHECK_EQ(call(__NR_mq_open, 0, O_CREAT | O_RDWR, 0600, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_mq_open, 0, O_RDWR, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_mq_unlink, 0, 0, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_msgget, 1, 01000 | 0600, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_msgget, 1, 0600, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_semget, 1, 1, 01000, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_shmget, 1, 4096, 01000, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_shmctl, 1, 0 /* IPC_RMID */, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_shmctl, 1, 0x100 | 1 /* IPC_64 | IPC_SET */, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_shmctl, 1, 2 /* IPC_STAT */, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_semctl, 1, 0, 0 /* IPC_RMID */, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_msgctl, 1, 1 /* IPC_SET */, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_msgsnd, 1, 0, 0, 0), RET_ALLOW);
	/* A private IPC namespace: no IPC filter. */
	plan(0, 0, NETWORK_ON, 0);
	CHECK_EQ(call(__NR_mq_open, 0, O_CREAT | O_RDWR, 0600, 0), RET_ALLOW);
}

static void seal_and_terminal(void)
{
	plan(1, 0, NETWORK_ON, 0);
	CHECK_EQ(call(__NR_fchmod, 3, 0644, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_fchown, 3, 0, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_utimensat, AT_FDCWD, 0, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_setxattr, 0, 0, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_removexattr, 0, 0, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_ioctl, 0, 0x5401 /* TCGETS */, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_ioctl, 0, 0x541B /* FIONREAD */, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_ioctl, 3, 0x80086601 /* FS_IOC_GETFLAGS */, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_ioctl, 3, 0x40086602 /* FS_IOC_SETFLAGS */, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_ioctl, 3, 0x40087602 /* FS_IOC_SETVERSION */, 0, 0), REFUSED(EACCES));
	CHECK_EQ(call(__NR_read, 0, 0, 0, 0), RET_ALLOW);
	/* TIOCSTI: the seal refuses it too (EACCES), the terminal guard, last, says EPERM. */
	CHECK_EQ(call(__NR_ioctl, 0, 0x5412, 0, 0), REFUSED(EPERM));
	CHECK_EQ(call(__NR_ioctl, 0, 0x541C /* TIOCLINUX */, 0, 0), REFUSED(EPERM));
	plan(0, 0, NETWORK_ON, 0);
	CHECK_EQ(call(__NR_ioctl, 0, 0x5412, 0, 0), REFUSED(EPERM));
	/* The kernel truncates the request to 32 bits; so does the filter. */
	CHECK_EQ(call(__NR_ioctl, 0, 0xffffffff00005412ULL, 0, 0), REFUSED(EPERM));
	CHECK_EQ(call(__NR_ioctl, 0, 0x40086602, 0, 0), RET_ALLOW);
}

#define AF_VSOCK_ 40
#define AF_PACKET_ 17
#define SCTP 132
#define MPTCP 262

static void network(void)
{
	static const enum network all[] = { NETWORK_OFF, NETWORK_NETNS, NETWORK_PROXY };
	const uint32_t no = REFUSED(EAFNOSUPPORT);

	for (size_t k = 0; k < 3; k++)
		for (int pairs = 0; pairs <= 1; pairs++)
			CHECK(build_net_filter(&net, all[k], pairs) <= NET_FILTER_MAX);
#ifdef __x86_64__
	/* The longest, as seccomp.c's emit() says. */
	CHECK_EQ(build_net_filter(&net, NETWORK_PROXY, 1), 30);
#endif
	plan(0, 0, NETWORK_ON, 0);
	CHECK_EQ(call(__NR_socket, AF_INET, SOCK_STREAM, 0, 0), RET_ALLOW);
	plan(0, 0, NETWORK_OFF, 0);
	CHECK_EQ(call(__NR_socket, AF_UNIX, SOCK_STREAM, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socket, AF_INET, SOCK_STREAM, 0, 0), no);
	CHECK_EQ(call(__NR_socket, AF_INET6, SOCK_DGRAM, 0, 0), no);
	CHECK_EQ(call(__NR_socket, AF_NETLINK, SOCK_RAW, 0, 0), no);
	CHECK_EQ(call(__NR_socketpair, AF_UNIX, SOCK_DGRAM, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socketpair, 30 /* AF_TIPC */, SOCK_STREAM, 0, 0), no);
	plan(0, 0, NETWORK_OFF, 1);
	CHECK_EQ(call(__NR_socket, AF_UNIX, SOCK_STREAM, 0, 0), no);
	CHECK_EQ(call(__NR_socketpair, AF_UNIX, SOCK_STREAM, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socketpair, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socketpair, AF_UNIX, SOCK_DGRAM, 0, 0), no);
	CHECK_EQ(call(__NR_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, 0), no);
	plan(0, 0, NETWORK_NETNS, 0);
	CHECK_EQ(call(__NR_socket, AF_INET, SOCK_DGRAM, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socket, AF_INET6, SOCK_STREAM, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socket, AF_NETLINK, SOCK_RAW, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socket, AF_UNIX, SOCK_STREAM, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socket, AF_PACKET_, SOCK_RAW, 0, 0), no);
	CHECK_EQ(call(__NR_socket, AF_VSOCK_, SOCK_STREAM, 0, 0), no);
	plan(0, 0, NETWORK_NETNS, 1);
	CHECK_EQ(call(__NR_socket, AF_UNIX, SOCK_STREAM, 0, 0), no);
	CHECK_EQ(call(__NR_socket, AF_INET, SOCK_STREAM, 0, 0), RET_ALLOW);
	/* The plain tier's bridge: TCP alone (not SCTP or MPTCP), over IPv4 or IPv6. */
	plan(0, 0, NETWORK_PROXY, 0);
	CHECK_EQ(call(__NR_socket, AF_INET, SOCK_STREAM, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socket, AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, IPPROTO_TCP, 0),
		 RET_ALLOW);
	CHECK_EQ(call(__NR_socket, AF_UNIX, SOCK_DGRAM, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socket, AF_INET, SOCK_DGRAM, 0, 0), no);
	CHECK_EQ(call(__NR_socket, AF_INET, SOCK_STREAM, SCTP, 0), no);
	CHECK_EQ(call(__NR_socket, AF_INET, SOCK_STREAM, MPTCP, 0), no);
	CHECK_EQ(call(__NR_socket, AF_NETLINK, SOCK_RAW, 0, 0), no);
	plan(0, 0, NETWORK_PROXY, 1);
	CHECK_EQ(call(__NR_socket, AF_UNIX, SOCK_STREAM, 0, 0), no);
	CHECK_EQ(call(__NR_socket, AF_INET, SOCK_STREAM, 0, 0), RET_ALLOW);
	CHECK_EQ(call(__NR_socketpair, AF_UNIX, SOCK_STREAM, 0, 0), RET_ALLOW);
}

static void bridge(void)
{
	struct data d = { .arch = ARCH };

	d.nr = __NR_socket;
	d.args[0] = AF_UNIX;
	CHECK_EQ(run(&bridge_program, &d), RET_ALLOW);
	d.args[0] = AF_INET;
	CHECK_EQ(run(&bridge_program, &d), REFUSED(EAFNOSUPPORT));
	d.nr = __NR_accept4;
	CHECK_EQ(run(&bridge_program, &d), RET_ALLOW);
	d.nr = __NR_ppoll;
	CHECK_EQ(run(&bridge_program, &d), RET_ALLOW);
	d.nr = __NR_sendto;
	CHECK_EQ(run(&bridge_program, &d), RET_ALLOW);
	d.nr = __NR_openat;
	CHECK_EQ(run(&bridge_program, &d), REFUSED(EPERM));
	d.nr = __NR_execve;
	CHECK_EQ(run(&bridge_program, &d), REFUSED(EPERM));
	d.nr = __NR_bind;
	CHECK_EQ(run(&bridge_program, &d), REFUSED(EPERM));
	CHECK_STR(bridge_program.what, "proxy bridge's filter");
}

/* The filters installed for real: no_new_privs, and the kernel answers as planned. */
static void installed(void)
{
	const char *file = unit_path(unit_tmpdir(), "file");
	int pid, fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	long before = strtol(unit_status("Seccomp_filters"), NULL, 10);

	CHECK(fd >= 0);
	close(fd);
	pid = unit_fork();
	if (pid == 0) {
		install_filters(0, 1, NETWORK_OFF, 0);
		CHECK_STR(unit_status("NoNewPrivs"), "1");
		/* The IPC filter, the network filter and the two guards. */
		CHECK_EQ(strtol(unit_status("Seccomp_filters"), NULL, 10), before + 4);
		errno = 0;
		CHECK(socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EAFNOSUPPORT);
		errno = 0;
		CHECK(chmod(file, 04755) != 0 && errno == EACCES);
		CHECK(chmod(file, 0600) == 0);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		CHECK(fd >= 0);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
}

int main(void)
{
	order();
	foreign_calls_are_killed();
	setid_guard();
	ipc();
	seal_and_terminal();
	network();
	bridge();
	installed();
	return unit_done();
}

/*
 * nons: run ARGV as a caller for whom no namespace can be made, as a container under
 * Docker's default seccomp profile is: a seccomp filter refuses unshare, setns and
 * clone with a namespace flag (EPERM) and clone3 (ENOSYS, so libcs fall back to
 * clone), installed while CAP_SYS_ADMIN is still held; then CAP_SYS_ADMIN leaves the
 * bounding, permitted, effective and inheritable sets.  For the tests only: it changes
 * nothing of the host, only of the process it runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct sock_filter { uint16_t code; uint8_t jt, jf; uint32_t k; };
struct sock_fprog { unsigned short len; const struct sock_filter *filter; };
struct seccomp_data { int nr; uint32_t arch; uint64_t ip; uint64_t args[6]; };
struct cap_header { uint32_t version; int pid; };
struct cap_data { uint32_t effective, permitted, inheritable; };

#define NAMESPACE_FLAGS 0x7E020080U	/* CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME} */
#define CAP_SYS_ADMIN 21
#define LD_NR { 0x20, 0, 0, offsetof(struct seccomp_data, nr) }
#define LD_ARG0 { 0x20, 0, 0, offsetof(struct seccomp_data, args[0]) }
#define RET(v) { 0x06, 0, 0, (v) }
#define ALLOW 0x7fff0000U
#define ERRNO(e) (0x00050000U | (e))

int main(int argc, char **argv)
{
	static const struct sock_filter filter[] = {
		LD_NR,
		{ 0x15, 0, 1, __NR_unshare }, RET(ERRNO(EPERM)),
		{ 0x15, 0, 1, __NR_setns }, RET(ERRNO(EPERM)),
		{ 0x15, 0, 1, 435 /* clone3 */ }, RET(ERRNO(ENOSYS)),
		{ 0x15, 0, 3, __NR_clone },
		LD_ARG0,
		{ 0x45, 0, 1, NAMESPACE_FLAGS }, RET(ERRNO(EPERM)),
		RET(ALLOW),
	};
	struct sock_fprog prog = { sizeof(filter) / sizeof(filter[0]), filter };
	struct cap_header hdr = { 0x20080522, 0 };
	struct cap_data data[2];

	if (argc < 2) {
		fputs("usage: nons ARGV...\n", stderr);
		return 2;
	}
	if (prctl(PR_SET_SECCOMP, 2, &prog, 0, 0) != 0) {
		perror("nons: seccomp");
		return 1;
	}
	if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0 ||
	    syscall(SYS_capget, &hdr, data) != 0) {
		perror("nons: capabilities");
		return 1;
	}
	data[0].effective &= ~(1U << CAP_SYS_ADMIN);
	data[0].permitted &= ~(1U << CAP_SYS_ADMIN);
	data[0].inheritable &= ~(1U << CAP_SYS_ADMIN);
	if (syscall(SYS_capset, &hdr, data) != 0) {
		perror("nons: capset");
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "nons: %s: %s\n", argv[1], strerror(errno));
	return 127;
}

/*
 * landlock-run: run a command under a Landlock filesystem sandbox.
 *
 *   landlock-run [--ro PATH]... [--rw PATH]... [--seal-metadata] -- ARGV...
 *   landlock-run --probe
 *
 * The child may read and execute beneath --ro paths, do anything the running
 * Landlock ABI can govern beneath --rw paths, and nothing else on the
 * filesystem.  Before exec, every capability is dropped and no_new_privs is
 * set, so a root caller is confined just like anyone else.  --seal-metadata
 * adds a seccomp filter for the metadata changes Landlock does not govern
 * (mode, owner, timestamps, extended attributes, inode flags).
 *
 * Any failure of the launcher itself exits 125 without running the child and
 * prints exactly one line, starting "landlock-run: ", on stderr.
 *
 * Built as a static binary with glibc or musl, so it includes no <linux/...>
 * header: the few kernel UAPI definitions it needs are declared below.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* Only the first member: the kernel accepts this prefix on every ABI. */
struct landlock_ruleset_attr {
	uint64_t handled_access_fs;
};

struct landlock_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define LANDLOCK_RULE_PATH_BENEATH 1

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

/* Below this ABI, truncate(2) and device ioctls escape the sandbox. */
#define FULL_ENFORCEMENT_ABI 5

/* ---- Capability and securebits UAPI ---- */

#define CAPABILITY_VERSION_3 0x20080522
#define CAP_SETPCAP 8

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

/* The filter reads the low 32 bits of a 64-bit syscall argument. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the seccomp filter assumes a little-endian seccomp_data");
#define ARG1_LOW_WORD offsetof(struct seccomp_data, args[1])

/* Inode-flag ioctls (chattr), include/uapi/linux/fs.h. */
#define FS_IOC_SETFLAGS 0x40086602U
#define FS_IOC32_SETFLAGS 0x40046602U
#define FS_IOC_FSSETXATTR 0x401c5820U

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

/* EACCES, so the shell reports "Permission denied" as for Landlock's own denials. */
#define DENY(nr) \
	{ BPF_JEQ_K, 0, 1, (nr) }, \
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EACCES }

static const struct sock_filter seal_filter[] = {
	/* Syscall numbers are only meaningful for the native arch. */
	{ BPF_LD_W_ABS, 0, 0, offsetof(struct seccomp_data, arch) },
	{ BPF_JEQ_K, 1, 0, AUDIT_ARCH_NATIVE },
	{ BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS },
	{ BPF_LD_W_ABS, 0, 0, offsetof(struct seccomp_data, nr) },
#ifdef __x86_64__
	/* x32 calls share the x86_64 audit arch but use other numbers. */
	{ BPF_JGE_K, 0, 1, 0x40000000U },
	{ BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS },
#endif
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
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW },
	/* The kernel truncates the ioctl command to 32 bits; so do we. */
	{ BPF_LD_W_ABS, 0, 0, ARG1_LOW_WORD },
	DENY(FS_IOC_SETFLAGS),
	DENY(FS_IOC32_SETFLAGS),
	DENY(FS_IOC_FSSETXATTR),
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW },
};

/*
 * Always installed: a confined command may hold the caller's terminal (stockade
 * exec), and TIOCSTI/TIOCLINUX would let it type into that terminal's shell,
 * outside the sandbox.  No command needs either.
 */
#define TIOCSTI 0x5412U
#define TIOCLINUX 0x541CU

static const struct sock_filter tty_filter[] = {
	{ BPF_LD_W_ABS, 0, 0, offsetof(struct seccomp_data, arch) },
	{ BPF_JEQ_K, 1, 0, AUDIT_ARCH_NATIVE },
	{ BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS },
	{ BPF_LD_W_ABS, 0, 0, offsetof(struct seccomp_data, nr) },
	{ BPF_JEQ_K, 1, 0, __NR_ioctl },
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW },
	{ BPF_LD_W_ABS, 0, 0, ARG1_LOW_WORD },
	{ BPF_JEQ_K, 0, 1, TIOCSTI },
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM },
	{ BPF_JEQ_K, 0, 1, TIOCLINUX },
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM },
	{ BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW },
};

/* ---- Failure reporting ---- */

static _Noreturn void fatal(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "landlock-run: %s\n", msg);
	exit(LAUNCHER_FAILURE);
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

static int create_ruleset(uint64_t handled)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = handled };

	return (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof(attr), 0U);
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

static void add_path_rule(int ruleset_fd, const char *path, uint64_t access)
{
	struct landlock_path_beneath_attr rule;
	struct stat st;
	int fd = open_grant(path);

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

static int has_setpcap(void)
{
	struct cap_header hdr = { CAPABILITY_VERSION_3, 0 };
	struct cap_data data[2];

	if (syscall(SYS_capget, &hdr, data) != 0)
		fatal("capget: %s", strerror(errno));
	return (data[0].effective >> CAP_SETPCAP) & 1;
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
	if (has_setpcap()) {
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
			fatal("cannot execute %s: %s", name, strerror(err));
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
	fatal("cannot execute %s: %s", name,
	      strerror(saw_eacces ? EACCES : ENOENT));
}

/* ---- Run ---- */

struct options {
	const char **paths;	/* in command-line order */
	int *writable;
	int npaths;
	int seal_metadata;
	char **argv;
};

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
			opt->argv = argv + i + 1;
			return;
		}
		if (strcmp(arg, "--seal-metadata") == 0) {
			opt->seal_metadata = 1;
		} else if (strcmp(arg, "--ro") == 0 || strcmp(arg, "--rw") == 0) {
			if (i + 1 == argc)
				fatal("%s needs a path", arg);
			opt->writable[opt->npaths] = strcmp(arg, "--rw") == 0;
			opt->paths[opt->npaths++] = argv[++i];
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

static _Noreturn void run(int argc, char **argv)
{
	struct options opt = { 0 };
	uint64_t handled;
	char *program;
	int abi, ruleset_fd;

	parse_options(argc, argv, &opt);
	abi = require_landlock_abi("");
	handled = handled_access_for_abi(abi);
	ruleset_fd = create_ruleset(handled);
	if (ruleset_fd < 0)
		fatal("cannot create a Landlock ruleset: %s", strerror(errno));
	/* Paths are opened while we still hold the caller's privileges. */
	for (int i = 0; i < opt.npaths; i++)
		add_path_rule(ruleset_fd, opt.paths[i],
			      opt.writable[i] ? handled : ACCESS_READ_ONLY);

	drop_capabilities();
	/* Required to restrict ourselves (and to filter syscalls) without CAP_SYS_ADMIN. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fatal("cannot set no_new_privs: %s", strerror(errno));
	install_filter(tty_filter, sizeof(tty_filter) / sizeof(tty_filter[0]), "terminal guard");
	if (opt.seal_metadata)
		install_filter(seal_filter, sizeof(seal_filter) / sizeof(seal_filter[0]),
			       "metadata seal");
	if (restrict_self(ruleset_fd) != 0)
		fatal("cannot enforce the Landlock ruleset: %s", strerror(errno));
	close(ruleset_fd);

	/* Last fallible step before the notice; only a kernel-level exec failure can follow it. */
	program = resolve_program(opt.argv[0]);
	if (abi < FULL_ENFORCEMENT_ABI)
		fputs("landlock-run: partial enforcement (older Landlock ABI)\n", stderr);
	execv(program, opt.argv);
	fatal("cannot execute %s: %s", opt.argv[0], strerror(errno));
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
	int ruleset_fd = create_ruleset(handled_access_for_abi(abi));

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

static void wait_for_probe(pid_t child)
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
	if (WEXITSTATUS(status) != PROBE_ENFORCED)
		fatal("probe failed: %s", WEXITSTATUS(status) < PROBE_STATUS_COUNT
		      ? probe_failures[WEXITSTATUS(status)] : "unexpected exit status");
}

static int probe(void)
{
	int abi = require_landlock_abi("probe failed: ");
	pid_t child = fork();

	if (child < 0)
		fatal("probe failed: fork: %s", strerror(errno));
	if (child == 0)
		_exit(probe_child(abi));
	wait_for_probe(child);
	if (printf("landlock-run: probe ok: abi=%d enforcement=%s\n", abi,
		   abi >= FULL_ENFORCEMENT_ABI ? "full" : "partial") < 0 ||
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
	run(argc, argv);
}

/*
 * Landlock: the running ABI, the ruleset the command restricts itself with (every
 * access the ABI can govern handled, the grants allowed, from ABI 6 scoped), the
 * network rules, and the probe's child that checks the kernel enforces.
 */
#include "landlock-run.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/* ---- The ABI ---- */

int landlock_abi(void)
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

int require_landlock_abi(const char *context)
{
	int abi = landlock_abi();

	if (abi <= 0)
		fatal("%s%s", context,
		      landlock_unavailable_reason(abi < 0 ? errno : ENOSYS));
	return abi;
}

TESTABLE uint64_t handled_access_for_abi(int abi)
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
TESTABLE size_t ruleset_attr_size(int abi)
{
	if (abi >= SCOPE_ABI)
		return sizeof(struct landlock_ruleset_attr);
	if (abi >= NET_ABI)
		return offsetof(struct landlock_ruleset_attr, scoped);
	return offsetof(struct landlock_ruleset_attr, handled_access_net);
}

/* ---- The ruleset ---- */

/*
 * From ABI 6 the domain is also scoped: no signal to, and no connection to an
 * abstract Unix socket of, a process outside it (the harness, host processes),
 * network on or off.  `no_network` (ABI >= 4): TCP bind and connect are handled
 * and no rule allows a port, behind the seccomp filter that already refuses
 * every socket family but AF_UNIX.
 */
int create_ruleset(int abi, int no_network)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = handled_access_for_abi(abi) };

	if (no_network && abi >= NET_ABI)
		attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP |
			LANDLOCK_ACCESS_NET_CONNECT_TCP;
	if (abi >= SCOPE_ABI)
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
	return (int)syscall(__NR_landlock_create_ruleset, &attr, ruleset_attr_size(abi), 0U);
}

int restrict_self(int ruleset_fd)
{
	return (int)syscall(__NR_landlock_restrict_self, ruleset_fd, 0U);
}

/*
 * Grants are opened without following any symlink: a component swapped for a link
 * (by a command whose root lies under a writable directory) must not redirect a
 * grant to wherever the link points.  openat2 predates Landlock; a container whose
 * seccomp policy hides it still gets O_NOFOLLOW on the last component.
 */
int open_grant(const char *path)
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
void add_connect_rule(int ruleset_fd, uint16_t port)
{
	struct landlock_net_port_attr rule = {
		.allowed_access = LANDLOCK_ACCESS_NET_CONNECT_TCP,
		.port = port,
	};

	if (syscall(__NR_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_NET_PORT, &rule, 0U) != 0)
		fatal("cannot allow connecting to port %u: %s", (unsigned)port, strerror(errno));
}

/* What a grant allows: --rw everything the ABI handles, --list listing, else reading. */
TESTABLE uint64_t grant_access(enum grant grant, int abi)
{
	return grant == GRANT_WRITE ? handled_access_for_abi(abi)
		: grant == GRANT_LIST ? ACCESS_READ_DIR
		: ACCESS_READ_ONLY;
}

/* A rule's access on a directory, or on anything else (the file rights alone). */
TESTABLE uint64_t rule_access(uint64_t access, int directory)
{
	return directory ? access : access & ACCESS_FILE_ONLY;
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
	rule.allowed_access = rule_access(access, S_ISDIR(st.st_mode));
	rule.parent_fd = fd;
	if (syscall(__NR_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH,
		    &rule, 0U) != 0)
		fatal("cannot add a rule for %s: %s", path, strerror(errno));
	close(fd);
}

int landlock_ruleset(const struct options *opt, int abi)
{
	int ruleset_fd;

	if (opt->network == NETWORK_PROXY && abi < NET_ABI)
		fatal("the proxy bridge without a network namespace needs Landlock's TCP rules "
		      "(ABI %d, this kernel has %d)", NET_ABI, abi);
	ruleset_fd = create_ruleset(abi, opt->network == NETWORK_OFF ||
				    opt->network == NETWORK_PROXY);
	if (ruleset_fd < 0)
		fatal("cannot create a Landlock ruleset: %s", strerror(errno));
	for (int i = 0; i < opt->npaths; i++)
		add_path_rule(ruleset_fd, opt->paths[i], grant_access(opt->writable[i], abi),
			      opt->writable[i] == GRANT_READ_TRY || opt->writable[i] == GRANT_LIST);
	return ruleset_fd;
}

/*
 * The covers (covers.c) live in a mount namespace of the command's own, but the
 * runner's processes (bwrap's pid 1) stay in the one without them, and /proc/PID/root
 * of a process of the same uid would lead the command there, past every cover.  A
 * Landlock domain that allows every file access keeps the files as the mount table
 * has them and refuses what Landlock always refuses a domain: ptrace access, and so
 * /proc/PID/root, /proc/PID/cwd and /proc/PID/fd, to any process outside it.  No
 * scope is asked (signals and abstract sockets stay as the runner has them).  On a
 * kernel without Landlock there is nothing to add (the claim says what that leaves).
 */
void seal_outside_processes(void)
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

/* ---- The probe's child ---- */

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
int landlock_probe_child(int abi)
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

/* What the probe child's exit `status` means: NULL when the kernel enforced. */
const char *landlock_probe_failure(int status)
{
	if (status == PROBE_ENFORCED)
		return NULL;
	return status > PROBE_ENFORCED && status < PROBE_STATUS_COUNT ? probe_failures[status]
		: "unexpected exit status";
}

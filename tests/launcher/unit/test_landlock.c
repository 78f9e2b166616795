/* landlock.c: the access each ABI handles, each grant's rule, the probe's verdicts, and
 * a ruleset built from options, enforced on a child. */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The kernel's own values (include/uapi/linux/landlock.h), written out again here. */
#define EXECUTE (1ULL << 0)
#define WRITE_FILE (1ULL << 1)
#define READ_FILE (1ULL << 2)
#define READ_DIR (1ULL << 3)
#define MAKE_SYM (1ULL << 12)
#define REFER (1ULL << 13)
#define TRUNCATE (1ULL << 14)
#define IOCTL_DEV (1ULL << 15)

static void access_per_abi(void)
{
	/* ABI 1: the thirteen rights from EXECUTE to MAKE_SYM. */
	CHECK_EQ(handled_access_for_abi(1), (MAKE_SYM << 1) - 1);
	CHECK_EQ(handled_access_for_abi(2), (MAKE_SYM << 1) - 1 + REFER);
	CHECK_EQ(handled_access_for_abi(3), (MAKE_SYM << 1) - 1 + REFER + TRUNCATE);
	/* ABI 4 adds network rights only, not file ones. */
	CHECK_EQ(handled_access_for_abi(4), handled_access_for_abi(3));
	CHECK_EQ(handled_access_for_abi(5), (IOCTL_DEV << 1) - 1);
	CHECK_EQ(handled_access_for_abi(6), handled_access_for_abi(5));
	CHECK_EQ(handled_access_for_abi(7), handled_access_for_abi(5));
	/* The attribute prefix each ABI knows: fs; + net (4); + scoped (6). */
	CHECK_EQ(ruleset_attr_size(1), 8);
	CHECK_EQ(ruleset_attr_size(3), 8);
	CHECK_EQ(ruleset_attr_size(4), 16);
	CHECK_EQ(ruleset_attr_size(5), 16);
	CHECK_EQ(ruleset_attr_size(6), 24);
	CHECK_EQ(ruleset_attr_size(7), 24);
	CHECK_EQ(FULL_ENFORCEMENT_ABI, 6);
}

static void grants(void)
{
	for (int abi = 1; abi <= 7; abi++) {
		CHECK_EQ(grant_access(GRANT_WRITE, abi), handled_access_for_abi(abi));
		CHECK_EQ(grant_access(GRANT_READ, abi), READ_FILE | READ_DIR | EXECUTE);
		CHECK_EQ(grant_access(GRANT_READ_TRY, abi), READ_FILE | READ_DIR | EXECUTE);
		CHECK_EQ(grant_access(GRANT_LIST, abi), READ_DIR);
	}
	/* On a directory the rule is the grant; on a file, only the rights a file has. */
	CHECK_EQ(rule_access(grant_access(GRANT_WRITE, 5), 1), handled_access_for_abi(5));
	CHECK_EQ(rule_access(grant_access(GRANT_WRITE, 5), 0),
		 EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV);
	CHECK_EQ(rule_access(grant_access(GRANT_WRITE, 1), 0), EXECUTE | WRITE_FILE | READ_FILE);
	CHECK_EQ(rule_access(grant_access(GRANT_READ, 7), 0), EXECUTE | READ_FILE);
	CHECK_EQ(rule_access(grant_access(GRANT_LIST, 7), 0), 0);
}

static void probe_verdicts(void)
{
	CHECK(landlock_probe_failure(0) == NULL);
	CHECK_STR(landlock_probe_failure(1), "cannot create a ruleset");
	CHECK_STR(landlock_probe_failure(2), "cannot set no_new_privs");
	CHECK_STR(landlock_probe_failure(3), "cannot enforce a ruleset");
	CHECK_STR(landlock_probe_failure(4), "a write was not refused");
	CHECK_STR(landlock_probe_failure(5), "a read was not refused");
	CHECK_STR(landlock_probe_failure(6), "unexpected exit status");
	CHECK_STR(landlock_probe_failure(125), "unexpected exit status");
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
}

/* Grants are opened without following a symlink, in any component. */
static void grants_follow_no_symlink(const char *tmp)
{
	const char *dir = unit_path(tmp, "real"), *link = unit_path(tmp, "link");
	int fd;

	CHECK(mkdir(dir, 0755) == 0);
	touch(unit_path(dir, "file"));
	CHECK(symlink(dir, link) == 0);
	fd = open_grant(dir);
	CHECK(fd >= 0);
	close(fd);
	fd = open_grant(unit_path(dir, "file"));
	CHECK(fd >= 0);
	close(fd);
	errno = 0;
	CHECK(open_grant(link) < 0 && errno == ELOOP);
	errno = 0;
	CHECK(open_grant(unit_path(link, "file")) < 0 && errno == ELOOP);
}

static struct options *ruleset_options;
static int ruleset_abi;

static void build_ruleset(void *unused)
{
	(void)unused;
	landlock_ruleset(ruleset_options, ruleset_abi);
}

static void refusals(const char *tmp)
{
	static const char *paths[] = { "/nonexistent-grant" };
	static int writable[] = { GRANT_READ };
	struct options opt = { .paths = paths, .writable = writable, .npaths = 1 };
	char message[256];

	ruleset_options = &opt;
	ruleset_abi = landlock_abi();
	EXPECT_FATAL(build_ruleset, NULL, "cannot open /nonexistent-grant without following a "
		     "symlink: No such file or directory");
	/* --ro-try and --list: a path gone since is skipped. */
	writable[0] = GRANT_READ_TRY;
	EXPECT_EXIT(build_ruleset, NULL, 0, "");
	writable[0] = GRANT_LIST;
	EXPECT_EXIT(build_ruleset, NULL, 0, "");
	paths[0] = unit_path(tmp, "link");
	writable[0] = GRANT_READ;
	snprintf(message, sizeof(message), "cannot open %s without following a symlink: %s",
		 paths[0], strerror(ELOOP));
	EXPECT_FATAL(build_ruleset, NULL, message);
	/* The plain tier's bridge needs TCP rules: refused before any ruleset is made. */
	opt.npaths = 0;
	opt.network = NETWORK_PROXY;
	ruleset_abi = 3;
	EXPECT_FATAL(build_ruleset, NULL, "the proxy bridge without a network namespace needs "
		     "Landlock's TCP rules (ABI 4, this kernel has 3)");
}

/* The ruleset from options, enforced in a child: what each grant allows, and no more. */
static void enforced(const char *tmp)
{
	const char *ro = unit_path(tmp, "ro"), *rw = unit_path(tmp, "rw");
	const char *paths[] = { "/", rw, unit_path(tmp, "listed"), unit_path(tmp, "gone") };
	int writable[] = { GRANT_READ, GRANT_WRITE, GRANT_LIST, GRANT_READ_TRY };
	struct options opt = { .paths = paths, .writable = writable, .npaths = 4 };
	int abi = landlock_abi(), pid;

	CHECK(abi >= 1);	/* Landlock on this kernel: the launcher needs it */
	if (abi < 1)
		return;
	CHECK(mkdir(ro, 0755) == 0 && mkdir(rw, 0755) == 0 && mkdir(paths[2], 0755) == 0);
	touch(unit_path(paths[2], "inside"));
	pid = unit_fork();
	if (pid == 0) {
		int fd = landlock_ruleset(&opt, abi), file;

		CHECK(fd >= 0);
		CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
		CHECK(restrict_self(fd) == 0);
		file = open(unit_path(rw, "new"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		CHECK(file >= 0);
		close(file);
		errno = 0;
		CHECK(open(unit_path(ro, "new"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644) < 0 &&
		      errno == EACCES);
		file = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
		CHECK(file >= 0);
		close(file);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
	/* Without "/" the listed directory's files are out of reach, its listing is not. */
	paths[0] = ro;
	pid = unit_fork();
	if (pid == 0) {
		int fd = landlock_ruleset(&opt, abi), dir;

		CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && restrict_self(fd) == 0);
		dir = open(paths[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		CHECK(dir >= 0);
		close(dir);
		errno = 0;
		CHECK(open(unit_path(paths[2], "inside"), O_RDONLY | O_CLOEXEC) < 0 &&
		      errno == EACCES);
		errno = 0;
		CHECK(open("/etc/hostname", O_RDONLY | O_CLOEXEC) < 0 && errno == EACCES);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
	/* The probe's child on this kernel: enforced. */
	pid = unit_fork();
	if (pid == 0)
		_exit(landlock_probe_child(abi));
	CHECK_EQ(unit_wait(pid), 0);
}

int main(void)
{
	const char *tmp = unit_tmpdir();

	access_per_abi();
	grants();
	probe_verdicts();
	grants_follow_no_symlink(tmp);
	refusals(tmp);
	enforced(tmp);
	return unit_done();
}

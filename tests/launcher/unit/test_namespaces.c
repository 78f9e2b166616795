/*
 * namespaces.c: namespaces of the call's own (directly, and inside a user namespace
 * mapping only the caller's ids), and the reaper that ends every process a call left.
 */
#include "unit.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void read_text(const char *path, char *out, size_t size)
{
	FILE *file = fopen(path, "re");
	size_t got = file ? fread(out, 1, size - 1, file) : 0;

	out[got] = '\0';
	if (file)
		fclose(file);
}

/* /proc/self/uid_map's one line, its runs of blanks made one space. */
static const char *map_line(const char *path)
{
	static char text[256];
	char raw[256], *out = text;
	int blank = 1;

	read_text(path, raw, sizeof(raw));
	for (const char *c = raw; *c; c++) {
		if (*c == ' ' || *c == '\t' || *c == '\n') {
			if (!blank)
				*out++ = ' ';
			blank = 1;
		} else {
			*out++ = *c;
			blank = 0;
		}
	}
	if (out > text && out[-1] == ' ')
		out--;
	*out = '\0';
	return text;
}

static void namespace_of(const char *name, char *out, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	n = readlink(path, out, size - 1);
	out[n < 0 ? 0 : n] = '\0';
}

/* The root mount's propagation in this mount namespace: never shared with the host. */
static int root_is_shared(void)
{
	char line[1024];
	FILE *file = fopen("/proc/self/mountinfo", "re");
	int shared = -1;

	while (file && fgets(line, sizeof(line), file) != NULL) {
		char mount_point[512];

		if (sscanf(line, "%*s %*s %*s %*s %511s", mount_point) == 1 &&
		    strcmp(mount_point, "/") == 0)
			shared = strstr(line, " shared:") != NULL;
	}
	if (file)
		fclose(file);
	return shared;
}

/* With CAP_SYS_ADMIN where the caller has it: the namespaces, and the root a slave. */
static void namespaces(void)
{
	char ipc[64], mnt[64], pid_ns[64];
	int pid;

	namespace_of("ipc", ipc, sizeof(ipc));
	namespace_of("mnt", mnt, sizeof(mnt));
	namespace_of("pid_for_children", pid_ns, sizeof(pid_ns));
	pid = unit_fork();
	if (pid == 0) {
		char now[64];

		CHECK_EQ(private_namespaces(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID), 0);
		namespace_of("ipc", now, sizeof(now));
		CHECK(strcmp(now, ipc) != 0);
		namespace_of("mnt", now, sizeof(now));
		CHECK(strcmp(now, mnt) != 0);
		namespace_of("pid_for_children", now, sizeof(now));
		CHECK(strcmp(now, pid_ns) != 0);
		CHECK_EQ(root_is_shared(), 0);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
}

/*
 * CAP_SYS_ADMIN out of the effective set, the rest kept: a caller without it.  (A
 * root caller keeps CAP_SETFCAP: the kernel maps uid 0 in a user namespace only for a
 * creator that had it.)
 */
static void lose_cap_sys_admin(void)
{
	struct {
		uint32_t version;
		int pid;
	} header = { 0x20080522, 0 };
	struct {
		uint32_t effective, permitted, inheritable;
	} data[2];

	CHECK(syscall(SYS_capget, &header, data) == 0);
	data[0].effective &= ~(1U << CAP_SYS_ADMIN);
	CHECK(syscall(SYS_capset, &header, data) == 0);
}

/* Without CAP_SYS_ADMIN: a user namespace that maps the caller's ids alone. */
static void user_namespace(void)
{
	int pid = unit_fork();

	if (pid == 0) {
		char user[64], expected[64];
		unsigned uid = (unsigned)geteuid(), gid = (unsigned)getegid();

		lose_cap_sys_admin();
		CHECK_EQ(has_capability(CAP_SYS_ADMIN), 0);
		namespace_of("user", user, sizeof(user));
		CHECK_EQ(private_namespaces(CLONE_NEWNS | CLONE_NEWIPC), 0);
		namespace_of("user", expected, sizeof(expected));
		CHECK(strcmp(user, expected) != 0);
		snprintf(expected, sizeof(expected), "%u %u 1", uid, uid);
		CHECK_STR(map_line("/proc/self/uid_map"), expected);
		snprintf(expected, sizeof(expected), "%u %u 1", gid, gid);
		CHECK_STR(map_line("/proc/self/gid_map"), expected);
		CHECK_STR(map_line("/proc/self/setgroups"), "deny");
		CHECK_EQ(geteuid(), uid);
		CHECK_EQ(root_is_shared(), 0);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
}

static int sorted_equal(pid_t *a, int n, pid_t *b, int m)
{
	if (n != m)
		return 0;
	for (int i = 0; i < n; i++) {
		int found = 0;

		for (int j = 0; j < m; j++)
			found |= a[i] == b[j];
		if (!found)
			return 0;
	}
	return 1;
}

static void sleeper(void)
{
	execl("/bin/sleep", "sleep", "60", (char *)NULL);
	_exit(99);
}

/*
 * The guardian's reaper: every child killed and reaped, and what they left (a daemon
 * that setsid'd away behind a double fork comes to this subreaper) too.
 */
static void reaper(void)
{
	int pid = unit_fork();

	if (pid == 0) {
		pid_t listed[16], scanned[16], orphan, parent;
		int report[2], n;

		CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0);
		for (int k = 0; k < 3; k++)
			if (unit_fork() == 0)
				sleeper();
		CHECK(pipe(report) == 0);
		parent = unit_fork();
		if (parent == 0) {
			if (unit_fork() == 0) {
				pid_t self;

				setsid();
				self = getpid();
				if (write(report[1], &self, sizeof(self)) != sizeof(self))
					_exit(98);
				sleeper();
			}
			_exit(0);	/* the daemon's parent: gone, the daemon is an orphan */
		}
		CHECK(read(report[0], &orphan, sizeof(orphan)) == sizeof(orphan));
		/* Its parent gone and reaped: the daemon is this subreaper's child now. */
		CHECK_EQ(unit_wait(parent), 0);
		n = children_of_self(listed, 16);
		CHECK_EQ(n, 4);
		CHECK(sorted_equal(listed, n, scanned, children_by_scan(scanned, 16)));
		CHECK_EQ(kill(orphan, 0), 0);
		end_every_process();
		errno = 0;
		CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
		CHECK_EQ(children_of_self(listed, 16), 0);
		CHECK_EQ(children_by_scan(scanned, 16), 0);
		errno = 0;
		CHECK(kill(orphan, 0) != 0 && errno == ESRCH);
		/* With nothing left, it returns at once. */
		end_every_process();
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
}

int main(void)
{
	namespaces();
	user_namespace();
	reaper();
	return unit_done();
}

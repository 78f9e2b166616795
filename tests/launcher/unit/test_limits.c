/*
 * limits.c: each rlimit's soft and hard values, set on a child; and every cgroup step
 * refusing what is not a cgroup (no command runs without the limits asked for).
 */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct limit_name cpu = { "cpu", RLIMIT_CPU }, nofile = { "nofile", RLIMIT_NOFILE };

static struct rlimit for_value(const struct limit_name *name, rlim_t value)
{
	struct rlimit_spec spec = { name, "", value };

	return rlimit_for(&spec);
}

static void values(void)
{
	struct rlimit r = for_value(&nofile, 64);

	CHECK(r.rlim_cur == 64 && r.rlim_max == 64);
	r = for_value(&nofile, RLIM_INFINITY);
	CHECK(r.rlim_cur == RLIM_INFINITY && r.rlim_max == RLIM_INFINITY);
	/* cpu: SIGXCPU at VALUE, SIGKILL five seconds later. */
	r = for_value(&cpu, 10);
	CHECK(r.rlim_cur == 10 && r.rlim_max == 15);
	r = for_value(&cpu, 0);
	CHECK(r.rlim_cur == 0 && r.rlim_max == 5);
	r = for_value(&cpu, RLIM_INFINITY);
	CHECK(r.rlim_cur == RLIM_INFINITY && r.rlim_max == RLIM_INFINITY);
	/* Near the top the hard limit saturates at unlimited, never wraps. */
	r = for_value(&cpu, RLIM_INFINITY - 6);
	CHECK(r.rlim_cur == RLIM_INFINITY - 6 && r.rlim_max == RLIM_INFINITY - 1);
	r = for_value(&cpu, RLIM_INFINITY - 5);
	CHECK(r.rlim_cur == RLIM_INFINITY - 5 && r.rlim_max == RLIM_INFINITY);
	r = for_value(&cpu, RLIM_INFINITY - 1);
	CHECK(r.rlim_cur == RLIM_INFINITY - 1 && r.rlim_max == RLIM_INFINITY);
}

static void applied(void)
{
	int pid = unit_fork();

	if (pid == 0) {
		struct limits l = { .nrlimits = 2, .rlimits = { { &nofile, "64", 64 },
								{ &cpu, "100", 100 } } };
		struct rlimit now;

		apply_rlimits(&l);
		CHECK(getrlimit(RLIMIT_NOFILE, &now) == 0);
		CHECK(now.rlim_cur == 64 && now.rlim_max == 64);
		CHECK(getrlimit(RLIMIT_CPU, &now) == 0);
		CHECK(now.rlim_cur == 100 && now.rlim_max == 105);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
}

static void above_the_hard_limit(void *unused)
{
	struct rlimit low = { 32, 32 };
	struct limits l = { .nrlimits = 1, .rlimits = { { &nofile, "64", 64 } } };

	(void)unused;
	setrlimit(RLIMIT_NOFILE, &low);
	drop_capabilities();
	apply_rlimits(&l);
}

static struct limits cgroups;

static void join(void *unused)
{
	(void)unused;
	join_cgroups(&cgroups);
}

static void refusals(const char *tmp)
{
	const char *dir = unit_path(tmp, "cg"), *file = unit_path(tmp, "cgroup.procs");
	char message[512];
	int fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	CHECK(fd >= 0);
	EXPECT_FATAL(above_the_hard_limit, NULL,
		     "cannot set the command's nofile limit to 64: Operation not permitted");
	/* A group made where no cgroup file system is: refused, and not left behind. */
	cgroups = (struct limits){ .ncgroup_makes = 1, .cgroup_makes = { dir } };
	snprintf(message, sizeof(message),
		 "cannot make the command's cgroup %s: not on a cgroup file system", dir);
	EXPECT_FATAL(join, NULL, message);
	CHECK(access(dir, F_OK) != 0);
	/* A group that exists already is never joined. */
	CHECK(mkdir(dir, 0755) == 0);
	snprintf(message, sizeof(message), "cannot make the command's cgroup %s: it exists already",
		 dir);
	EXPECT_FATAL(join, NULL, message);
	CHECK(rmdir(dir) == 0);
	cgroups = (struct limits){ .ncgroup_sets = 1, .cgroup_sets = { { file, "10", 0 } } };
	snprintf(message, sizeof(message),
		 "cannot limit the command's cgroup (%s): not a cgroup file", file);
	EXPECT_FATAL(join, NULL, message);
	cgroups.cgroup_sets[0].path = unit_path(tmp, "pids.max");
	snprintf(message, sizeof(message),
		 "cannot limit the command's cgroup (%s): No such file or directory",
		 cgroups.cgroup_sets[0].path);
	EXPECT_FATAL(join, NULL, message);
	/* -if-present: a setting the controller lacks is skipped. */
	cgroups.cgroup_sets[0].if_present = 1;
	EXPECT_EXIT(join, NULL, 0, "");
	cgroups = (struct limits){ .ncgroup_procs = 1, .cgroup_procs = { file } };
	snprintf(message, sizeof(message),
		 "cannot join the command's cgroup (%s): not a cgroup file", file);
	EXPECT_FATAL(join, NULL, message);
	cgroups = (struct limits){ .ncgroup_fds = 1, .cgroup_fds = { fd } };
	snprintf(message, sizeof(message),
		 "cannot join the command's cgroup (fd %d): not a cgroup file", fd);
	EXPECT_FATAL(join, NULL, message);
	close(fd);
	snprintf(message, sizeof(message),
		 "cannot join the command's cgroup (fd %d): Bad file descriptor", fd);
	EXPECT_FATAL(join, NULL, message);
	/* Nothing asked, nothing done. */
	cgroups = (struct limits){ 0 };
	EXPECT_EXIT(join, NULL, 0, "");
	/* The file was never written. */
	{
		struct stat st;

		CHECK(stat(file, &st) == 0 && st.st_size == 0);
	}
}

int main(void)
{
	values();
	applied();
	refusals(unit_tmpdir());
	return unit_done();
}

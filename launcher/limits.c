/*
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
 * The options are read by args.c into struct limits (landlock-run.h).
 */
#include "landlock-run.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define CGROUP_SUPER_MAGIC 0x27e0ebUL
#define CGROUP2_SUPER_MAGIC 0x63677270UL
/* RLIMIT_CPU: SIGXCPU at the soft limit (so the end says which limit it was), and
 * SIGKILL this many seconds later at the hard one, for a command that ignores it. */
#define CPU_GRACE_SECONDS 5

/* ---- cgroups ---- */

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
void join_cgroups(const struct limits *l)
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


/* ---- rlimits ---- */

/* A limit's soft and hard values: both VALUE (cpu: hard = VALUE + CPU_GRACE_SECONDS). */
TESTABLE struct rlimit rlimit_for(const struct rlimit_spec *spec)
{
	struct rlimit limit = { spec->value, spec->value };

	if (spec->limit->resource == RLIMIT_CPU && spec->value != RLIM_INFINITY)
		limit.rlim_max = spec->value > RLIM_INFINITY - 1 - CPU_GRACE_SECONDS
			? RLIM_INFINITY : spec->value + CPU_GRACE_SECONDS;
	return limit;
}

/* The command's rlimits. */
void apply_rlimits(const struct limits *l)
{
	for (int k = 0; k < l->nrlimits; k++) {
		const struct rlimit_spec *spec = &l->rlimits[k];
		struct rlimit limit = rlimit_for(spec);

		if (setrlimit(spec->limit->resource, &limit) != 0)
			fatal("cannot set the command's %s limit to %s: %s", spec->limit->name,
			      spec->text, strerror(errno));
	}
}

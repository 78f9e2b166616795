/*
 * The call's processes.  The child runs in a PID namespace of its own, under a small
 * init: when it ends (or the launcher is killed), every process it started ends too,
 * however it left its process group (see "One call's processes").  The namespace is
 * made directly with CAP_SYS_ADMIN, else inside a user namespace mapping only
 * the caller's ids; where neither works the launcher fails (and so does
 * --probe): no command runs whose processes could outlive it.  Where no namespace can
 * be made at all, the plain tier's guardian stands in for init (see "The plain tier").
 */
#include "landlock-run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* ---- Namespaces of the call's own, in a user namespace if need be ---- */

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

int private_namespaces(int flags)
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
 * bridge" in bridge.c), waits until it is ready, and the command is pid 3.
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

/* What init and the command need, in the memory the three share (the options too). */
static struct call {
	const struct options *opt;
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
	install_filters(call.opt->seal_metadata, !call.opt->private_ipc, call.opt->network,
			call.opt->unix_pairs_only);
	if (restrict_self(call.ruleset_fd) != 0)
		fatal("cannot enforce the Landlock ruleset: %s", strerror(errno));
	close(call.ruleset_fd);
	if (sigprocmask(SIG_SETMASK, &call.caller_mask, NULL) != 0)
		fatal("cannot unblock signals: %s", strerror(errno));
	program = resolve_program(call.opt->argv[0]);
	/*
	 * The rlimits after every step of the launcher's own (a low nofile or as must not
	 * break them), and after the lookup too (it opens the program).  The last
	 * fallible step before the notice; only a kernel-level exec failure can follow it.
	 */
	apply_rlimits(&call.opt->limits);
	if (call.abi < FULL_ENFORCEMENT_ABI)
		fputs("landlock-run: partial enforcement (older Landlock ABI)\n", stderr);
	announce_start(call.opt->started_fd);
	execv(program, call.opt->argv);
	exec_failed(call.opt->argv[0], errno);
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
	if (call.nlisteners > 0) {
		start_bridge_child(call.opt, call.listeners, call.nlisteners);
		call.nlisteners = 0;
	}
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

/* This process's children's pids (at most `max`), or -1 when they cannot be listed. */
TESTABLE int children_of_self(pid_t *out, int max)
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
TESTABLE int children_by_scan(pid_t *out, int max)
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
TESTABLE void end_every_process(void)
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
	if (call.nlisteners > 0) {
		start_bridge_child(call.opt, call.listeners, call.nlisteners);
		call.nlisteners = 0;
	}
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

/* ---- Starting the call ---- */

/* The call's memory, and the signals the first process waits for (`extra`, or 0). */
static void prepare_call(const struct options *opt, int abi, int ruleset_fd,
			 const struct listener *listeners, int nlisteners, int extra)
{
	call.opt = opt;
	call.abi = abi;
	call.ruleset_fd = ruleset_fd;
	for (int k = 0; k < nlisteners; k++)
		call.listeners[k] = listeners[k];
	call.nlisteners = nlisteners;
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
	if (extra != 0)
		sigaddset(&call.waited, extra);
	if (sigprocmask(SIG_BLOCK, &call.waited, &call.caller_mask) != 0)
		fatal("cannot block signals: %s", strerror(errno));
}

_Noreturn void run_under_guardian(const struct options *opt, int abi, int ruleset_fd,
				  const struct listener *listeners, int nlisteners)
{
	pid_t pid;

	prepare_call(opt, abi, ruleset_fd, listeners, nlisteners, LAUNCHER_GONE);
	pid = (pid_t)clone(plain_init, call.init_stack + STACK_SIZE, CLONE_VM | SIGCHLD, NULL);
	if (pid < 0)
		fatal("cannot start the call's guardian: %s", strerror(errno));
	for (int k = 0; k < call.nlisteners; k++)
		close(call.listeners[k].fd);
	monitor(pid);
}

_Noreturn void run_under_init(const struct options *opt, int abi, int ruleset_fd,
			      const struct listener *listeners, int nlisteners)
{
	pid_t pid;

	prepare_call(opt, abi, ruleset_fd, listeners, nlisteners, 0);
	pid = (pid_t)clone(init, call.init_stack + STACK_SIZE, CLONE_VM | SIGCHLD, NULL);
	if (pid < 0)
		fatal("cannot start the sandbox's init: %s", strerror(errno));
	/* Init has its own copies (its descriptor table is not shared): these go to the bridge. */
	for (int k = 0; k < call.nlisteners; k++)
		close(call.listeners[k].fd);
	monitor(pid);
}

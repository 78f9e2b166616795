/*
 * The launcher's four modes, each a sequence of the mechanisms' steps (landlock-run.h
 * says which file does what), and its failure reporting.
 *
 *  - Landlock mode (no mode option): confine files with Landlock, the call's
 *    processes in namespaces of their own under an init (or, --plain, under a
 *    guardian), then exec ARGV.
 *  - --filters-only: inside a runner that already confines files (bwrap).
 *  - --limits-only: the resource limits alone, for a command run unconfined.
 *  - --probe: whether the kernel enforces, and the strongest tier this caller has.
 */
#include "landlock-run.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROBE_TIMEOUT_SECONDS 5

/* ---- Failure reporting ---- */

_Noreturn void leave(int status)
{
	fflush(NULL);
	_exit(status);
}

_Noreturn void fatal(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "landlock-run: %s\n", msg);
	leave(LAUNCHER_FAILURE);
}

/* A unit-test build (tests/launcher/unit/) brings its own main, and none of the modes. */
#ifndef LAUNCHER_UNIT_TEST

/* ---- Landlock mode ---- */

static _Noreturn void run(int argc, char **argv)
{
	/* In the memory the launcher, init and the command share (namespaces.c). */
	static struct options opt;
	struct listener listeners[LISTENER_MAX];
	int abi, ruleset_fd, nlisteners = 0, err;

	parse_options(argc, argv, &opt);
	/* First: the monitor, init, the bridge and the command are all made in the cgroups. */
	join_cgroups(&opt.limits);
	/*
	 * --die-with-parent (bwrap's option of the same name): a caller that waits for us
	 * and is killed takes the call with it, as init dies with us.  The parent read
	 * before the death signal is set: one already gone by then is noticed after it.
	 */
	if (opt.die_with_parent) {
		pid_t parent = getppid();

		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
			fatal("cannot tie the call to its caller: %s", strerror(errno));
		if (getppid() != parent)
			fatal("the caller is gone");
	}
	abi = require_landlock_abi("");
	/* Paths are opened while we still hold the caller's privileges. */
	ruleset_fd = landlock_ruleset(&opt, abi);
	if (opt.plain) {
		if (opt.nbridges > 0) {
			nlisteners = open_plain_listener(&opt, listeners);
			add_connect_rule(ruleset_fd, opt.bridges[0].port);
			set_proxy_environment(opt.bridges[0].port);
		}
		run_under_guardian(&opt, abi, ruleset_fd, listeners, nlisteners);
	}
	/*
	 * Before the capabilities go: unsharing needs CAP_SYS_ADMIN (or a user
	 * namespace).  Always a PID namespace, and a mount namespace for its /proc;
	 * the IPC namespace when asked.  No PID namespace, no run: fail closed.
	 */
	err = private_namespaces(CLONE_NEWPID | CLONE_NEWNS |
				 (opt.private_ipc ? CLONE_NEWIPC : 0) |
				 (opt.private_network ? CLONE_NEWNET : 0));
	if (err != 0)
		fatal("cannot make the command's PID%s namespace%s: %s",
		      opt.private_ipc && opt.private_network ? ", IPC and network"
		      : opt.private_ipc ? " and IPC"
		      : opt.private_network ? " and network" : "",
		      opt.private_ipc || opt.private_network ? "s" : "", strerror(err));
	/* unshare() moved this process into the new network namespace already. */
	if (opt.private_network)
		loopback_up();
	if (opt.nbridges > 0)
		nlisteners = open_listeners(&opt, listeners);
	mount_covers(&opt);
	run_under_init(&opt, abi, ruleset_fd, listeners, nlisteners);
}

/* ---- --filters-only ---- */

/*
 * The terminal's ^C and ^\ are the command's: the caller blocks SIGINT and SIGQUIT
 * for the runner (bwrap) that shares the terminal's foreground group with the
 * command, so that neither the runner nor its sandbox ends of them; the command
 * gets them as a shell would give them (a disposition the caller left, such as
 * nohup's ignore, is kept: only the mask changes).
 */
static void unblock_terminal_signals(void)
{
	sigset_t terminal;

	sigemptyset(&terminal);
	sigaddset(&terminal, SIGINT);
	sigaddset(&terminal, SIGQUIT);
	sigprocmask(SIG_UNBLOCK, &terminal, NULL);
}

/*
 * --filters-only [--seal-metadata] [--started-fd N] [--no-network | --netns-only] [--unix-pairs-only]
 * [--proxy-bridge PORT:PATH]... [--bind-ro | --bind-pin | --empty-dir PATH]...
 * [--bind-file SOURCE PATH]... -- ARGV: inside a runner (bwrap) that already
 * confines files, holds no capability and gave the command an IPC namespace of its
 * own (and, with --netns-only, a network namespace); only the seccomp filters are
 * added, and the bridge (in the runner's namespaces, before any of the command's
 * own) is started.
 *
 * --filters-only installs the always-on filters (and the seal when asked) and
 * nothing else: for a runner that already confines files, drops capabilities
 * and makes IPC private (bwrap), run inside it.  With --hide-socket or
 * --deny-read it also puts the command in a Landlock domain that allows every
 * file access, for its ptrace rule alone: the runner's own processes stay in the
 * mount namespace without the covers, and /proc/PID/root would lead there.
 * It also unblocks SIGINT and SIGQUIT for the command: its caller holds them
 * blocked in the runner, whose outer process shares the terminal's foreground
 * group with the command and would die of the terminal's ^C or ^\ (and take
 * the sandbox with it) where the command should get it, as in a shell.
 */
static _Noreturn void filters_only(int argc, char **argv)
{
	struct options opt = { 0 };
	int command = parse_filters_only(argc, argv, &opt);
	char *program;

	/* First, as in Landlock mode: the bridge is made in the cgroups too. */
	join_cgroups(&opt.limits);
	/* Before any namespace of the command's own: the bridge stays in the runner's. */
	if (opt.nbridges > 0)
		start_detached_bridge(&opt);
	/*
	 * The runner left CAP_SYS_ADMIN (and CAP_SETPCAP) for these only, then every
	 * capability goes.  The protected paths are bound in the runner's own mount
	 * namespace (bwrap's, made for this call), where its processes see them too,
	 * with the read-only /proc binds and fresh views bwrap leaves to this stage for a
	 * root caller: bwrap's own read-only mounts cost a pass over the mount table
	 * each, these none.
	 * The sockets and unreadable paths are covered in a mount namespace of the
	 * command's own (never the one this was started in, whatever that is).
	 */
	mount_protections(&opt);
	if (opt.nhidden > 0 || opt.nunreadable > 0) {
		struct options covers = opt;
		int err = private_namespaces(CLONE_NEWNS);

		if (err != 0)
			fatal("cannot make a mount namespace to hide paths in: %s", strerror(err));
		covers.nmounts = 0;
		mount_covers(&covers);
	}
	if (opt.nmounts > 0 || opt.nhidden > 0 || opt.nunreadable > 0)
		drop_capabilities();
	install_filters(opt.seal_metadata, 0, opt.network, opt.unix_pairs_only);
	if (opt.nhidden > 0 || opt.nunreadable > 0)
		seal_outside_processes();
	program = resolve_program(argv[command]);
	apply_rlimits(&opt.limits);
	unblock_terminal_signals();
	announce_start(opt.started_fd);
	execv(program, argv + command);
	exec_failed(argv[command], errno);
}

/* ---- --limits-only ---- */

/*
 * --limits-only [--cgroup-*]... [--rlimit NAME=VALUE]... -- ARGV: for a command
 * its caller runs unconfined: the limits alone, then ARGV (no Landlock, no filters,
 * no namespace).
 */
static _Noreturn void limits_only(int argc, char **argv)
{
	struct limits limits = { 0 };
	int command = parse_limits_only(argc, argv, &limits);
	char *program;

	join_cgroups(&limits);
	program = resolve_program(argv[command]);
	apply_rlimits(&limits);
	execv(program, argv + command);
	exec_failed(argv[command], errno);
}

/* ---- --probe ---- */

/* Interrupts waitpid() so that a hanging probe counts as a failure. */
static void on_alarm(int sig)
{
	(void)sig;
}

/* The child's exit status; a hang, a signal or a failed wait is fatal. */
static int wait_for_child(pid_t child)
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
	return WEXITSTATUS(status);
}

static void wait_for_probe(pid_t child)
{
	const char *failure = landlock_probe_failure(wait_for_child(child));

	if (failure != NULL)
		fatal("probe failed: %s", failure);
}

/*
 * 0 when this caller can make the namespaces `flags` names (tried in a
 * throwaway child), else the errno.
 */
static int namespaces_error(int flags)
{
	pid_t child = fork();

	if (child < 0)
		fatal("probe failed: fork: %s", strerror(errno));
	if (child == 0)
		_exit(private_namespaces(flags) & 0xff);
	return wait_for_child(child);
}

static int probe(void)
{
	int abi = require_landlock_abi("probe failed: "), err;
	pid_t child = fork();

	if (child < 0)
		fatal("probe failed: fork: %s", strerror(errno));
	if (child == 0)
		_exit(landlock_probe_child(abi));
	wait_for_probe(child);
	/*
	 * The strongest tier this caller can have: namespaced (PID, mount and network
	 * namespaces of the call's own, IPC too where possible), else plain (none; the
	 * guardian ends the call's processes), with why not the stronger.
	 */
	err = namespaces_error(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET);
	/* started=yes: it takes --started-fd (its caller passes it on every call). */
	if (printf("landlock-run: probe ok: abi=%d enforcement=%s tier=%s ipc=%s started=yes"
		   "%s%s\n", abi,
		   abi >= FULL_ENFORCEMENT_ABI ? "full" : "partial",
		   err == 0 ? "namespaced" : "plain",
		   err == 0 && namespaces_error(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET |
						CLONE_NEWIPC) == 0 ? "private" : "filtered",
		   err == 0 ? "" : " why=", err == 0 ? "" : strerror(err)) < 0 ||
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
	if (argc >= 2 && strcmp(argv[1], "--filters-only") == 0)
		filters_only(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "--limits-only") == 0)
		limits_only(argc, argv);
	run(argc, argv);
}

#endif

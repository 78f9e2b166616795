/* args.c: the command line of each mode into the option record, and its refusals. */
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct options parsed(const char *line)
{
	struct options opt = { 0 };
	int argc;
	char **argv = unit_argv(line, &argc);

	parse_options(argc, argv, &opt);
	return opt;
}

static void parse_line(void *line)
{
	parsed(line);
}

static void parse_filters_line(void *line)
{
	struct options opt = { 0 };
	int argc;
	char **argv = unit_argv(line, &argc);

	parse_filters_only(argc, argv, &opt);
}

static void parse_limits_line(void *line)
{
	struct limits limits = { 0 };
	int argc;
	char **argv = unit_argv(line, &argc);

	parse_limits_only(argc, argv, &limits);
}

static void grants_in_order(void)
{
	struct options opt = parsed("--ro / --rw /w --list /l --ro-try /t -- cmd --ro x");

	CHECK_EQ(opt.npaths, 4);
	CHECK_STR(opt.paths[0], "/");
	CHECK_EQ(opt.writable[0], GRANT_READ);
	CHECK_STR(opt.paths[1], "/w");
	CHECK_EQ(opt.writable[1], GRANT_WRITE);
	CHECK_STR(opt.paths[2], "/l");
	CHECK_EQ(opt.writable[2], GRANT_LIST);
	CHECK_STR(opt.paths[3], "/t");
	CHECK_EQ(opt.writable[3], GRANT_READ_TRY);
	/* Everything after "--" is the command's, options included. */
	CHECK_STR(opt.argv[0], "cmd");
	CHECK_STR(opt.argv[1], "--ro");
	CHECK_STR(opt.argv[2], "x");
	CHECK(opt.argv[3] == NULL);
	CHECK_EQ(opt.network, NETWORK_ON);
	CHECK(!opt.plain && !opt.private_ipc && !opt.seal_metadata && !opt.read_only_host);
}

static void flags(void)
{
	struct options opt = parsed("--seal-metadata --private-ipc --die-with-parent "
				    "--read-only-host -- cmd");

	CHECK(opt.seal_metadata && opt.private_ipc && opt.die_with_parent && opt.read_only_host);
	opt = parsed("--plain -- cmd");
	CHECK(opt.plain);
}

static void network(void)
{
	struct options opt = parsed("--no-network --unix-pairs-only -- cmd");

	CHECK_EQ(opt.network, NETWORK_OFF);
	CHECK(opt.unix_pairs_only);
	/* --private-network: the families --netns-only keeps, in the call's own namespace. */
	opt = parsed("--private-network --proxy-bridge 8080:/run/p.sock "
		     "--proxy-bridge 65535:/run/q.sock -- cmd");
	CHECK(opt.private_network);
	CHECK_EQ(opt.network, NETWORK_NETNS);
	CHECK_EQ(opt.nbridges, 2);
	CHECK_EQ(opt.bridges[0].port, 8080);
	CHECK_STR(opt.bridges[0].path, "/run/p.sock");
	CHECK_EQ(opt.bridges[1].port, 65535);
	/* --plain with a bridge: TCP to the bridge's port alone. */
	opt = parsed("--plain --proxy-bridge 0:/run/p.sock -- cmd");
	CHECK_EQ(opt.network, NETWORK_PROXY);
	CHECK_EQ(opt.bridges[0].port, 0);
}

static void covers(void)
{
	struct options opt = parsed("--empty /e --hide-socket /s1 --hide-socket /s2 "
				    "--deny-read /d --bind-file /src /dst --empty-dir /ed "
				    "--bind-pin /p --bind-ro /r --fresh-dir /run --keep /run/k "
				    "--bind-socket /sock /run/v -- cmd");

	CHECK_STR(opt.empty, "/e");
	CHECK_EQ(opt.nhidden, 2);
	CHECK_STR(opt.hidden[1], "/s2");
	CHECK_EQ(opt.nunreadable, 1);
	CHECK_STR(opt.unreadable[0], "/d");
	CHECK_EQ(opt.nmounts, 4);
	CHECK_EQ(opt.mounts[0].kind, MOUNT_FILE);
	CHECK_STR(opt.mounts[0].source, "/src");
	CHECK_STR(opt.mounts[0].path, "/dst");
	CHECK_EQ(opt.mounts[1].kind, MOUNT_EMPTY_DIR);
	CHECK(opt.mounts[1].source == NULL);
	CHECK_EQ(opt.mounts[2].kind, MOUNT_PIN);
	CHECK_EQ(opt.mounts[3].kind, MOUNT_READ_ONLY);
	CHECK_STR(opt.mounts[3].path, "/r");
	CHECK_EQ(opt.fresh.ndirs, 1);
	CHECK_STR(opt.fresh.dirs[0], "/run");
	CHECK_EQ(opt.fresh.nkeeps, 1);
	CHECK_STR(opt.fresh.keeps[0], "/run/k");
	CHECK_EQ(opt.fresh.nsockets, 1);
	CHECK_STR(opt.fresh.sockets[0], "/sock");
	CHECK_STR(opt.fresh.sockets[1], "/run/v");
	/* A --bind-socket VIEW beneath no fresh directory is allowed (bound over a socket). */
	opt = parsed("--keep /run --bind-socket /a /run/b -- cmd");
	CHECK_EQ(opt.fresh.nsockets, 1);
}

static void limits(void)
{
	struct options opt = parsed("--rlimit cpu=10 --rlimit nofile=unlimited --cgroup-fd 5 "
				    "--cgroup-set /g/pids.max=7 --cgroup-set-if-present /g/x=a=b "
				    "--cgroup-make /g --cgroup-procs /g/cgroup.procs -- cmd");
	const struct limits *l = &opt.limits;

	CHECK_EQ(l->nrlimits, 2);
	CHECK_STR(l->rlimits[0].limit->name, "cpu");
	CHECK_EQ(l->rlimits[0].limit->resource, RLIMIT_CPU);
	CHECK_EQ(l->rlimits[0].value, 10);
	CHECK_STR(l->rlimits[0].text, "10");
	CHECK_EQ(l->rlimits[1].limit->resource, RLIMIT_NOFILE);
	CHECK_EQ(l->rlimits[1].value, RLIM_INFINITY);
	CHECK_STR(l->rlimits[1].text, "unlimited");
	CHECK_EQ(l->ncgroup_fds, 1);
	CHECK_EQ(l->cgroup_fds[0], 5);
	CHECK_EQ(l->ncgroup_sets, 2);
	CHECK_STR(l->cgroup_sets[0].path, "/g/pids.max");
	CHECK_STR(l->cgroup_sets[0].value, "7");
	CHECK(!l->cgroup_sets[0].if_present);
	/* The first "=" splits: the value may hold more. */
	CHECK_STR(l->cgroup_sets[1].path, "/g/x");
	CHECK_STR(l->cgroup_sets[1].value, "a=b");
	CHECK(l->cgroup_sets[1].if_present);
	CHECK_EQ(l->ncgroup_makes, 1);
	CHECK_STR(l->cgroup_makes[0], "/g");
	CHECK_EQ(l->ncgroup_procs, 1);
	CHECK_STR(l->cgroup_procs[0], "/g/cgroup.procs");
	/* Each name once, all six. */
	opt = parsed("--rlimit nproc=1 --rlimit as=2 --rlimit data=3 --rlimit cpu=4 "
		     "--rlimit fsize=5 --rlimit nofile=18446744073709551615 -- cmd");
	CHECK_EQ(opt.limits.nrlimits, LIMIT_NAME_COUNT);
	CHECK_EQ(opt.limits.rlimits[0].limit->resource, RLIMIT_NPROC);
	CHECK_EQ(opt.limits.rlimits[1].limit->resource, RLIMIT_AS);
	CHECK_EQ(opt.limits.rlimits[2].limit->resource, RLIMIT_DATA);
	CHECK_EQ(opt.limits.rlimits[4].limit->resource, RLIMIT_FSIZE);
	CHECK_EQ(opt.limits.rlimits[5].value, 18446744073709551615ULL);
}

static void other_modes(void)
{
	struct options opt = { 0 };
	struct limits limits = { 0 };
	int argc;
	char **argv = unit_argv("--filters-only --seal-metadata --netns-only --unix-pairs-only "
				"--proxy-bridge 80:/s --empty /e --hide-socket /h --deny-read /d "
				"--cgroup-fd 4 --rlimit as=1 --bind-ro /r --bind-pin /p "
				"--bind-file /s /f --empty-dir /d --bind-ro-try /proc/sys "
				"--remount-ro /run -- cmd x", &argc);

	CHECK_STR(argv[parse_filters_only(argc, argv, &opt)], "cmd");
	CHECK(opt.seal_metadata && opt.unix_pairs_only);
	CHECK_EQ(opt.network, NETWORK_NETNS);
	CHECK_EQ(opt.nbridges, 1);
	CHECK_EQ(opt.nhidden, 1);
	CHECK_EQ(opt.nunreadable, 1);
	CHECK_EQ(opt.limits.cgroup_fds[0], 4);
	CHECK_EQ(opt.nmounts, 6);
	CHECK_EQ(opt.mounts[0].kind, MOUNT_READ_ONLY);
	CHECK_EQ(opt.mounts[1].kind, MOUNT_PIN);
	CHECK_EQ(opt.mounts[2].kind, MOUNT_FILE);
	CHECK_STR(opt.mounts[2].source, "/s");
	CHECK_STR(opt.mounts[2].path, "/f");
	CHECK_EQ(opt.mounts[3].kind, MOUNT_EMPTY_DIR);
	/* bwrap's read-only /proc binds and fresh views' remounts, the stage's to make. */
	CHECK_EQ(opt.mounts[4].kind, MOUNT_READ_ONLY_TRY);
	CHECK_STR(opt.mounts[4].path, "/proc/sys");
	CHECK_EQ(opt.mounts[5].kind, MOUNT_REMOUNT_RO);
	CHECK_STR(opt.mounts[5].path, "/run");
	argv = unit_argv("--limits-only --rlimit nproc=5 --cgroup-make /g -- cmd -- y", &argc);
	CHECK_STR(argv[parse_limits_only(argc, argv, &limits)], "cmd");
	CHECK_EQ(limits.nrlimits, 1);
	CHECK_EQ(limits.ncgroup_makes, 1);
}

/* Each refusal: one line, exit 125, the text as the launcher has always printed it. */
static const struct refusal {
	void (*parse)(void *);
	const char *line;
	const char *message;
} refusals[] = {
	{ parse_line, "", "missing -- before the command" },
	{ parse_line, "--ro /", "missing -- before the command" },
	{ parse_line, "--", "no command given after --" },
	{ parse_line, "--help", "unknown option: --help" },
	{ parse_line, "--started-fd 2 -- cmd", "--started-fd needs a descriptor number above 2, not 2" },
	{ parse_line, "--started-fd 3x -- cmd",
	  "--started-fd needs a descriptor number above 2, not 3x" },
	{ parse_line, "--started-fd 999 -- cmd", "--started-fd 999: Bad file descriptor" },
	{ parse_line, "--started-fd", "--started-fd needs a descriptor number" },
	{ parse_line, "--netns-only --filters-only -- x", "unknown option: --filters-only" },
	{ parse_line, "--ro", "--ro needs a path" },
	{ parse_line, "--list", "--list needs a path" },
	{ parse_line, "--empty", "--empty needs a path" },
	{ parse_line, "--deny-read", "--deny-read needs a path" },
	{ parse_line, "--no-network --netns-only -- x",
	  "--no-network and --netns-only exclude each other" },
	{ parse_line, "--netns-only --no-network -- x",
	  "--no-network and --netns-only exclude each other" },
	{ parse_line, "--netns-only -- x",
	  "--netns-only needs --filters-only inside a private network namespace" },
	{ parse_line, "--unix-pairs-only -- x",
	  "--unix-pairs-only needs --no-network or --netns-only" },
	{ parse_line, "--hide-socket /s -- x", "--hide-socket needs --empty FILE" },
	{ parse_line, "--private-network --no-network -- x",
	  "--no-network and --private-network exclude each other" },
	{ parse_line, "--proxy-bridge", "--proxy-bridge needs PORT:PATH" },
	{ parse_line, "--proxy-bridge 80:/s -- x",
	  "--proxy-bridge needs --private-network (a network namespace of the call's own)" },
	{ parse_line, "--proxy-bridge x:/s -- x",
	  "--proxy-bridge needs PORT:PATH (a port from 0 to 65535), not x:/s" },
	{ parse_line, "--proxy-bridge -1:/s -- x",
	  "--proxy-bridge needs PORT:PATH (a port from 0 to 65535), not -1:/s" },
	{ parse_line, "--proxy-bridge 65536:/s -- x",
	  "--proxy-bridge needs PORT:PATH (a port from 0 to 65535), not 65536:/s" },
	{ parse_line, "--proxy-bridge 80 -- x",
	  "--proxy-bridge needs PORT:PATH (a port from 0 to 65535), not 80" },
	{ parse_line, "--proxy-bridge 80: -- x",
	  "--proxy-bridge needs PORT:PATH (a socket path), not 80:" },
	{ parse_line, "--private-network --proxy-bridge 80:/s --proxy-bridge 80:/t -- x",
	  "--proxy-bridge: port 80 given twice" },
	{ parse_line, "--private-network --proxy-bridge 1:/s --proxy-bridge 2:/s "
	  "--proxy-bridge 3:/s --proxy-bridge 4:/s --proxy-bridge 5:/s --proxy-bridge 6:/s "
	  "--proxy-bridge 7:/s --proxy-bridge 8:/s --proxy-bridge 9:/s -- x",
	  "--proxy-bridge: at most 8 bridges" },
	{ parse_line, "--private-network --proxy-bridge 0:/s -- x",
	  "--proxy-bridge: port 0 (any) only with --plain" },
	{ parse_line, "--private-network --proxy-bridge 80:/s --empty /e --hide-socket /s -- x",
	  "--proxy-bridge: /s is also a --hide-socket path: the bridge could not reach it" },
	{ parse_line, "--private-network --proxy-bridge 80:/run/a/s --deny-read /run/ -- x",
	  "--proxy-bridge: /run/a/s is under --deny-read /run/: the bridge could not reach it" },
	{ parse_line, "--plain --private-ipc -- x",
	  "--plain makes no namespace: not with --private-ipc, --private-network or --netns-only" },
	{ parse_line, "--plain --keep /k -- x",
	  "--plain makes no mount namespace: nothing can be hidden or bound (--hide-socket, "
	  "--deny-read, --bind-*, --empty-dir, --read-only-host, --fresh-dir, --keep, "
	  "--bind-socket)" },
	{ parse_line, "--plain --proxy-bridge 0:/s --proxy-bridge 1:/t -- x",
	  "--plain takes one --proxy-bridge at most" },
	{ parse_line, "--plain --no-network --proxy-bridge 0:/s -- x",
	  "--no-network and --proxy-bridge exclude each other" },
	{ parse_line, "--bind-ro", "--bind-ro needs a path" },
	{ parse_line, "--remount-ro run -- cmd", "--remount-ro needs absolute paths" },
	{ parse_line, "--bind-file /a", "--bind-file needs SOURCE PATH" },
	{ parse_line, "--bind-file /a rel -- x", "--bind-file needs absolute paths" },
	{ parse_line, "--bind-file rel /a -- x", "--bind-file needs absolute paths" },
	{ parse_line, "--empty-dir rel -- x", "--empty-dir needs absolute paths" },
	{ parse_line, "--fresh-dir", "--fresh-dir needs a path" },
	{ parse_line, "--bind-socket /a", "--bind-socket needs SOCKET VIEW" },
	{ parse_line, "--bind-socket /a rel -- x", "--bind-socket needs absolute paths" },
	{ parse_line, "--keep rel -- x", "--keep needs absolute paths" },
	{ parse_line, "--fresh-dir /tmp --fresh-dir /tmp/x -- x",
	  "--fresh-dir: /tmp/x lies beneath --fresh-dir /tmp" },
	{ parse_line, "--fresh-dir /tmp/x --keep /tmp -- x",
	  "--fresh-dir: /tmp/x lies at or beneath --keep /tmp" },
	{ parse_line, "--fresh-dir /run --keep /run/a --bind-socket /s /run/a/b -- x",
	  "--bind-socket: /run/a/b lies beneath --keep /run/a" },
	{ parse_line, "--rlimit", "--rlimit needs NAME=VALUE" },
	{ parse_line, "--rlimit nofile -- x", "--rlimit needs NAME=VALUE, not nofile" },
	{ parse_line, "--rlimit files=1 -- x",
	  "--rlimit: unknown limit files (one of nproc, as, data, cpu, fsize, nofile)" },
	{ parse_line, "--rlimit nofile=1 --rlimit nofile=2 -- x", "--rlimit: nofile given twice" },
	{ parse_line, "--rlimit as=-1 -- x",
	  "--rlimit as: the value must be a decimal number or unlimited, not -1" },
	{ parse_line, "--rlimit as=1k -- x",
	  "--rlimit as: the value must be a decimal number or unlimited, not 1k" },
	{ parse_line, "--rlimit as= -- x",
	  "--rlimit as: the value must be a decimal number or unlimited, not " },
	{ parse_line, "--rlimit as=18446744073709551616 -- x",
	  "--rlimit as: the value must be a decimal number or unlimited, not 18446744073709551616" },
	{ parse_line, "--cgroup-fd", "--cgroup-fd needs a descriptor number" },
	{ parse_line, "--cgroup-fd 2 -- x", "--cgroup-fd needs a descriptor number above 2, not 2" },
	{ parse_line, "--cgroup-fd +5 -- x", "--cgroup-fd needs a descriptor number above 2, not +5" },
	{ parse_line, "--cgroup-fd 2147483648 -- x",
	  "--cgroup-fd needs a descriptor number above 2, not 2147483648" },
	{ parse_line, "--cgroup-fd 7 --cgroup-fd 7 -- x", "--cgroup-fd: descriptor 7 given twice" },
	{ parse_line, "--cgroup-fd 3 --cgroup-fd 4 --cgroup-fd 5 --cgroup-fd 6 --cgroup-fd 7 "
	  "--cgroup-fd 8 --cgroup-fd 9 --cgroup-fd 10 --cgroup-fd 11 -- x",
	  "--cgroup-fd: at most 8 cgroups" },
	{ parse_line, "--cgroup-procs", "--cgroup-procs needs a path" },
	{ parse_line, "--cgroup-make", "--cgroup-make needs a path" },
	{ parse_line, "--cgroup-make /1 --cgroup-make /2 --cgroup-make /3 --cgroup-make /4 "
	  "--cgroup-make /5 --cgroup-make /6 --cgroup-make /7 --cgroup-make /8 "
	  "--cgroup-make /9 -- x", "--cgroup-make: at most 8 cgroups" },
	{ parse_line, "--cgroup-set", "--cgroup-set needs PATH=VALUE" },
	{ parse_line, "--cgroup-set x -- x", "--cgroup-set needs PATH=VALUE, not x" },
	{ parse_line, "--cgroup-set-if-present =1 -- x",
	  "--cgroup-set-if-present needs PATH=VALUE, not =1" },
	{ parse_filters_line, "--filters-only", "missing -- before the command" },
	{ parse_filters_line, "--filters-only --", "no command given after --" },
	{ parse_filters_line, "--filters-only --ro / -- x",
	  "--filters-only takes only --seal-metadata, --started-fd, the network options, --proxy-bridge, "
	  "--empty, --hide-socket, --deny-read, --bind-*, --empty-dir, --cgroup-fd, "
	  "--cgroup-procs and --rlimit, not --ro" },
	{ parse_filters_line, "--filters-only --bind-file /s -- x",
	  "--bind-file needs absolute paths" },
	{ parse_filters_line, "--filters-only --proxy-bridge 80:/s -- x",
	  "--proxy-bridge needs --netns-only with --filters-only (the runner's network "
	  "namespace)" },
	{ parse_filters_line, "--filters-only --unix-pairs-only -- x",
	  "--unix-pairs-only needs --no-network or --netns-only" },
	{ parse_filters_line, "--filters-only --hide-socket /s -- x",
	  "--hide-socket needs --empty FILE" },
	{ parse_limits_line, "--limits-only", "missing -- before the command" },
	{ parse_limits_line, "--limits-only --", "no command given after --" },
	{ parse_limits_line, "--limits-only --seal-metadata -- x",
	  "--limits-only takes only --cgroup-make, --cgroup-set, --cgroup-fd, --cgroup-procs "
	  "and --rlimit, not --seal-metadata" },
	{ parse_limits_line, "--limits-only --rlimit cpu=x -- x",
	  "--rlimit cpu: the value must be a decimal number or unlimited, not x" },
};

/* A socket path must fit struct sockaddr_un (107 bytes and its NUL). */
/* --started-fd in both modes that exec the command: checked, made close-on-exec. */
static void started_fd(void)
{
	struct options opt = { 0 }, filters = { 0 };
	int argc, fd = dup(2), flags;
	char line[128];
	char **argv;

	CHECK(fd > 2);
	snprintf(line, sizeof(line), "--started-fd %d --ro / -- cmd", fd);
	opt = parsed(line);
	CHECK_EQ(opt.started_fd, fd);
	flags = fcntl(fd, F_GETFD);
	CHECK(flags >= 0 && (flags & FD_CLOEXEC));
	snprintf(line, sizeof(line), "--filters-only --started-fd %d -- cmd", fd);
	argv = unit_argv(line, &argc);
	CHECK_STR(argv[parse_filters_only(argc, argv, &filters)], "cmd");
	CHECK_EQ(filters.started_fd, fd);
	close(fd);
	/* Not given: 0, which announces nothing. */
	CHECK_EQ(parsed("--ro / -- cmd").started_fd, 0);
}

static void bridge_path_length(void)
{
	char line[256], message[256], path[200];

	memset(path, 'a', sizeof(path));
	path[0] = '/';
	path[107] = '\0';	/* 107 bytes: the longest that fits */
	snprintf(line, sizeof(line), "--private-network --proxy-bridge 80:%s -- x", path);
	CHECK_STR(parsed(line).bridges[0].path, path);
	path[107] = 'a';
	path[108] = '\0';
	snprintf(line, sizeof(line), "--private-network --proxy-bridge 80:%s -- x", path);
	snprintf(message, sizeof(message),
		 "--proxy-bridge: the socket path is too long (at most 107 bytes): %s", path);
	EXPECT_FATAL(parse_line, line, message);
}

int main(void)
{
	grants_in_order();
	flags();
	network();
	covers();
	limits();
	other_modes();
	bridge_path_length();
	started_fd();
	for (size_t k = 0; k < sizeof(refusals) / sizeof(refusals[0]); k++)
		EXPECT_FATAL(refusals[k].parse, (void *)refusals[k].line, refusals[k].message);
	return unit_done();
}

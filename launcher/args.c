/*
 * The command line: every option of every mode into the option record
 * (landlock-run.h), and the rules between options.  A bad command line is a launcher
 * failure like any other: one "landlock-run: " line, exit 125, nothing run.
 */
#include "landlock-run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

/* --rlimit NAME: the resources a caller may limit (limits.c sets them). */
static const struct limit_name limit_names[] = {
	{ "nproc", RLIMIT_NPROC }, { "as", RLIMIT_AS }, { "data", RLIMIT_DATA },
	{ "cpu", RLIMIT_CPU }, { "fsize", RLIMIT_FSIZE }, { "nofile", RLIMIT_NOFILE },
};

_Static_assert(sizeof(limit_names) / sizeof(limit_names[0]) == LIMIT_NAME_COUNT,
	       "struct limits holds one rlimit per name");

/* ---- Resource limits (--cgroup-*, --rlimit) ---- */

/* --cgroup-fd N: a descriptor above 2 (stdio is the command's), given once. */
/* The descriptor number `option` was given: decimal, above 2 (not stdio). */
static int descriptor_number(const char *option, const char *value)
{
	char *end;
	long fd;

	errno = 0;
	fd = strtol(value, &end, 10);
	if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 || fd < 3 ||
	    fd > INT32_MAX)
		fatal("%s needs a descriptor number above 2, not %s", option, value);
	return (int)fd;
}

/* --started-fd N: an open descriptor, closed on the command's exec (exec.c says why). */
int started_fd_option(const char *value)
{
	int fd = descriptor_number("--started-fd", value);

	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
		fatal("--started-fd %d: %s", fd, strerror(errno));
	return fd;
}

static void cgroup_fd_option(const char *value, struct limits *l)
{
	int fd = descriptor_number("--cgroup-fd", value);

	for (int k = 0; k < l->ncgroup_fds; k++)
		if (l->cgroup_fds[k] == fd)
			fatal("--cgroup-fd: descriptor %d given twice", fd);
	if (l->ncgroup_fds == CGROUP_FD_MAX)
		fatal("--cgroup-fd: at most %d cgroups", CGROUP_FD_MAX);
	l->cgroup_fds[l->ncgroup_fds++] = fd;
}

/* --rlimit NAME=VALUE: VALUE a decimal number or "unlimited", each NAME once. */
static void rlimit_option(const char *arg, struct limits *l)
{
	const char *equals = strchr(arg, '='), *value;
	const struct limit_name *limit = NULL;
	unsigned long long number;
	char *end;

	if (equals == NULL)
		fatal("--rlimit needs NAME=VALUE, not %s", arg);
	for (size_t k = 0; k < LIMIT_NAME_COUNT; k++)
		if (strlen(limit_names[k].name) == (size_t)(equals - arg) &&
		    strncmp(limit_names[k].name, arg, (size_t)(equals - arg)) == 0)
			limit = &limit_names[k];
	if (limit == NULL)
		fatal("--rlimit: unknown limit %.*s (one of nproc, as, data, cpu, fsize, nofile)",
		      (int)(equals - arg), arg);
	for (int k = 0; k < l->nrlimits; k++)
		if (l->rlimits[k].limit == limit)
			fatal("--rlimit: %s given twice", limit->name);
	value = equals + 1;
	if (strcmp(value, "unlimited") == 0) {
		number = RLIM_INFINITY;
	} else {
		errno = 0;
		number = strtoull(value, &end, 10);
		if (value[0] < '0' || value[0] > '9' || *end != '\0' || errno != 0 ||
		    number > (unsigned long long)RLIM_INFINITY)
			fatal("--rlimit %s: the value must be a decimal number or unlimited, "
			      "not %s", limit->name, value);
	}
	l->rlimits[l->nrlimits].limit = limit;
	l->rlimits[l->nrlimits].text = value;
	l->rlimits[l->nrlimits++].value = (rlim_t)number;
}

/* --cgroup-set[-if-present] PATH=VALUE: VALUE what is written to PATH, as given. */
static void cgroup_set_option(const char *option, char *arg, struct limits *l)
{
	char *equals = strchr(arg, '=');

	if (equals == NULL || equals == arg)
		fatal("%s needs PATH=VALUE, not %s", option, arg);
	if (l->ncgroup_sets == CGROUP_SET_MAX)
		fatal("%s: at most %d settings", option, CGROUP_SET_MAX);
	*equals = '\0';
	l->cgroup_sets[l->ncgroup_sets].path = arg;
	l->cgroup_sets[l->ncgroup_sets].value = equals + 1;
	l->cgroup_sets[l->ncgroup_sets++].if_present = strcmp(option, "--cgroup-set") != 0;
}

static int is_limits_option(const char *arg)
{
	static const char *const names[] = {
		"--cgroup-fd", "--rlimit", "--cgroup-procs", "--cgroup-make", "--cgroup-set",
		"--cgroup-set-if-present",
	};

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (strcmp(arg, names[k]) == 0)
			return 1;
	return 0;
}

/* The --cgroup-* options and --rlimit NAME=VALUE; 1 when argv[*i] was one. */
static int limits_option(int argc, char **argv, int *i, struct limits *l)
{
	const char *arg = argv[*i];

	if (!is_limits_option(arg))
		return 0;
	if (*i + 1 == argc)
		fatal("%s needs %s", arg,
		      strcmp(arg, "--rlimit") == 0 ? "NAME=VALUE" :
		      strcmp(arg, "--cgroup-fd") == 0 ? "a descriptor number" :
		      strncmp(arg, "--cgroup-set", 12) == 0 ? "PATH=VALUE" : "a path");
	if (strcmp(arg, "--cgroup-fd") == 0) {
		cgroup_fd_option(argv[++*i], l);
	} else if (strcmp(arg, "--cgroup-procs") == 0) {
		if (l->ncgroup_procs == CGROUP_FD_MAX)
			fatal("--cgroup-procs: at most %d cgroups", CGROUP_FD_MAX);
		l->cgroup_procs[l->ncgroup_procs++] = argv[++*i];
	} else if (strcmp(arg, "--cgroup-make") == 0) {
		if (l->ncgroup_makes == CGROUP_FD_MAX)
			fatal("--cgroup-make: at most %d cgroups", CGROUP_FD_MAX);
		l->cgroup_makes[l->ncgroup_makes++] = argv[++*i];
	} else if (strncmp(arg, "--cgroup-set", 12) == 0) {
		cgroup_set_option(arg, argv[++*i], l);
	} else {
		rlimit_option(argv[++*i], l);
	}
	return 1;
}

/* ---- Network, hiding, the bridge ---- */

/* The network options both modes take; 1 when `arg` was one of them. */
static int network_option(const char *arg, struct options *opt)
{
	if (strcmp(arg, "--no-network") == 0) {
		if (opt->network == NETWORK_NETNS)
			fatal("--no-network and --netns-only exclude each other");
		opt->network = NETWORK_OFF;
	} else if (strcmp(arg, "--netns-only") == 0) {
		if (opt->network == NETWORK_OFF)
			fatal("--no-network and --netns-only exclude each other");
		opt->network = NETWORK_NETNS;
	} else if (strcmp(arg, "--unix-pairs-only") == 0) {
		opt->unix_pairs_only = 1;
	} else {
		return 0;
	}
	return 1;
}

/* --empty FILE, --hide-socket PATH and --deny-read PATH; 1 when argv[*i] was one
 * (its value taken). */
static int hiding_option(int argc, char **argv, int *i, struct options *opt)
{
	const char *arg = argv[*i];

	if (strcmp(arg, "--empty") != 0 && strcmp(arg, "--hide-socket") != 0 &&
	    strcmp(arg, "--deny-read") != 0)
		return 0;
	if (*i + 1 == argc)
		fatal("%s needs a path", arg);
	if (strcmp(arg, "--empty") == 0) {
		opt->empty = argv[++*i];
	} else if (strcmp(arg, "--deny-read") == 0) {
		if (opt->unreadable == NULL &&
		    (opt->unreadable = calloc((size_t)argc, sizeof(char *))) == NULL)
			fatal("out of memory");
		opt->unreadable[opt->nunreadable++] = argv[++*i];
	} else {
		if (opt->hidden == NULL && (opt->hidden = calloc((size_t)argc, sizeof(char *))) == NULL)
			fatal("out of memory");
		opt->hidden[opt->nhidden++] = argv[++*i];
	}
	return 1;
}

/* --proxy-bridge PORT:PATH; 1 when argv[*i] was it (its value taken). */
static int bridge_option(int argc, char **argv, int *i, struct options *opt)
{
	struct sockaddr_un addr;
	const char *value, *path;
	char *end;
	unsigned long port;

	if (strcmp(argv[*i], "--proxy-bridge") != 0)
		return 0;
	if (*i + 1 == argc)
		fatal("--proxy-bridge needs PORT:PATH");
	value = argv[++*i];
	errno = 0;
	port = strtoul(value, &end, 10);
	if (end == value || *end != ':' || errno != 0 || port > 65535 ||
	    value[0] < '0' || value[0] > '9')
		fatal("--proxy-bridge needs PORT:PATH (a port from 0 to 65535), not %s", value);
	path = end + 1;
	if (*path == '\0')
		fatal("--proxy-bridge needs PORT:PATH (a socket path), not %s", value);
	if (strlen(path) >= sizeof(addr.sun_path))
		fatal("--proxy-bridge: the socket path is too long (at most %zu bytes): %s",
		      sizeof(addr.sun_path) - 1, path);
	for (int k = 0; k < opt->nbridges; k++)
		if (opt->bridges[k].port == port)
			fatal("--proxy-bridge: port %lu given twice", port);
	if (opt->nbridges == BRIDGE_MAX)
		fatal("--proxy-bridge: at most %d bridges", BRIDGE_MAX);
	opt->bridges[opt->nbridges].port = (uint16_t)port;
	opt->bridges[opt->nbridges++].path = path;
	return 1;
}

/*
 * In Landlock mode the bridge runs in the call's mount namespace, after the covers:
 * a PATH hidden or made unreadable there could never be reached.  (Under a runner
 * the bridge starts before them, in the runner's namespace: no conflict.)
 */
static void check_bridge_paths(const struct options *opt)
{
	for (int k = 0; k < opt->nbridges; k++) {
		const char *path = opt->bridges[k].path;

		for (int i = 0; i < opt->nhidden; i++)
			if (strcmp(opt->hidden[i], path) == 0)
				fatal("--proxy-bridge: %s is also a --hide-socket path: the bridge "
				      "could not reach it", path);
		for (int i = 0; i < opt->nunreadable; i++)
			if (covered_by(opt->unreadable[i], path))
				fatal("--proxy-bridge: %s is under --deny-read %s: the bridge could "
				      "not reach it", path, opt->unreadable[i]);
	}
}

/* ---- Protected paths and fresh views (covers.c) ---- */

/* --bind-ro, --bind-pin, --bind-file SOURCE, --empty-dir, --bind-ro-try, --remount-ro;
 * 1 when argv[*i] was one. */
static int mount_option(int argc, char **argv, int *i, struct options *opt)
{
	const char *arg = argv[*i];
	struct mount_spec spec = { 0 };
	int values;

	if (strcmp(arg, "--bind-ro") == 0)
		spec.kind = MOUNT_READ_ONLY;
	else if (strcmp(arg, "--bind-pin") == 0)
		spec.kind = MOUNT_PIN;
	else if (strcmp(arg, "--bind-file") == 0)
		spec.kind = MOUNT_FILE;
	else if (strcmp(arg, "--empty-dir") == 0)
		spec.kind = MOUNT_EMPTY_DIR;
	else if (strcmp(arg, "--bind-ro-try") == 0)
		spec.kind = MOUNT_READ_ONLY_TRY;
	else if (strcmp(arg, "--remount-ro") == 0)
		spec.kind = MOUNT_REMOUNT_RO;
	else
		return 0;
	values = spec.kind == MOUNT_FILE ? 2 : 1;
	if (*i + values >= argc)
		fatal("%s needs %s", arg, values == 2 ? "SOURCE PATH" : "a path");
	if (spec.kind == MOUNT_FILE)
		spec.source = argv[++*i];
	spec.path = argv[++*i];
	if (spec.path[0] != '/' || (spec.source != NULL && spec.source[0] != '/'))
		fatal("%s needs absolute paths", arg);
	if (opt->mounts == NULL && (opt->mounts = calloc((size_t)argc, sizeof(*opt->mounts))) == NULL)
		fatal("out of memory");
	opt->mounts[opt->nmounts++] = spec;
	return 1;
}

/* --fresh-dir DIR, --keep PATH, --bind-socket SOCKET VIEW; 1 when argv[*i] was one. */
static int fresh_option(int argc, char **argv, int *i, struct options *opt)
{
	struct fresh_spec *fresh = &opt->fresh;
	const char *arg = argv[*i];
	int values = strcmp(arg, "--bind-socket") == 0 ? 2 : 1;

	if (strcmp(arg, "--fresh-dir") != 0 && strcmp(arg, "--keep") != 0 && values != 2)
		return 0;
	if (*i + values >= argc)
		fatal("%s needs %s", arg, values == 2 ? "SOCKET VIEW" : "a path");
	for (int k = 1; k <= values; k++)
		if (argv[*i + k][0] != '/')
			fatal("%s needs absolute paths", arg);
	if (fresh->dirs == NULL &&
	    ((fresh->dirs = calloc((size_t)argc, sizeof(char *))) == NULL ||
	     (fresh->keeps = calloc((size_t)argc, sizeof(char *))) == NULL ||
	     (fresh->sockets = calloc((size_t)argc, sizeof(char *))) == NULL))
		fatal("out of memory");
	if (strcmp(arg, "--fresh-dir") == 0) {
		fresh->dirs[fresh->ndirs++] = argv[++*i];
	} else if (strcmp(arg, "--keep") == 0) {
		fresh->keeps[fresh->nkeeps++] = argv[++*i];
	} else {
		fresh->sockets[2 * fresh->nsockets] = argv[++*i];
		fresh->sockets[2 * fresh->nsockets++ + 1] = argv[++*i];
	}
	return 1;
}

/* Fresh directories neither nest nor lie at or beneath a kept path (which they would hide). */
static void check_fresh_options(const struct fresh_spec *fresh)
{
	for (int d = 0; d < fresh->ndirs; d++) {
		for (int e = 0; e < fresh->ndirs; e++)
			if (e != d && covered_by(fresh->dirs[e], fresh->dirs[d]))
				fatal("--fresh-dir: %s lies beneath --fresh-dir %s", fresh->dirs[d],
				      fresh->dirs[e]);
		for (int k = 0; k < fresh->nkeeps; k++)
			if (covered_by(fresh->keeps[k], fresh->dirs[d]))
				fatal("--fresh-dir: %s lies at or beneath --keep %s", fresh->dirs[d],
				      fresh->keeps[k]);
	}
	for (int s = 0; s < fresh->nsockets; s++) {
		const char *view = fresh->sockets[2 * s + 1];

		/* Beneath no fresh view: bound over the socket already at VIEW (fresh_views). */
		if (fresh_dir_of(fresh, view) < 0)
			continue;
		for (int k = 0; k < fresh->nkeeps; k++)
			if (covered_by(fresh->keeps[k], view))
				fatal("--bind-socket: %s lies beneath --keep %s", view, fresh->keeps[k]);
	}
}

/* ---- The rules between options ---- */

/*
 * --plain makes no namespace: nothing can be covered or bound, IPC stays the host's
 * (filtered), and a bridge listens on the host's loopback, on any free port.
 */
static void check_plain_options(struct options *opt)
{
	if (opt->private_ipc || opt->private_network || opt->network == NETWORK_NETNS)
		fatal("--plain makes no namespace: not with --private-ipc, --private-network "
		      "or --netns-only");
	if (opt->nhidden > 0 || opt->nunreadable > 0 || opt->nmounts > 0 || opt->read_only_host ||
	    opt->fresh.ndirs > 0 || opt->fresh.nkeeps > 0 || opt->fresh.nsockets > 0)
		fatal("--plain makes no mount namespace: nothing can be hidden or bound "
		      "(--hide-socket, --deny-read, --bind-*, --empty-dir, --read-only-host, "
		      "--fresh-dir, --keep, --bind-socket)");
	if (opt->nbridges > 1)
		fatal("--plain takes one --proxy-bridge at most");
	if (opt->nbridges == 1) {
		if (opt->network == NETWORK_OFF)
			fatal("--no-network and --proxy-bridge exclude each other");
		opt->network = NETWORK_PROXY;
	}
}

static void check_network_options(const struct options *opt)
{
	if (opt->unix_pairs_only && opt->network == NETWORK_ON)
		fatal("--unix-pairs-only needs --no-network or --netns-only");
	if (opt->nhidden > 0 && opt->empty == NULL)
		fatal("--hide-socket needs --empty FILE");
}

/* ---- The modes' command lines ---- */

void parse_options(int argc, char **argv, struct options *opt)
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
			if (opt->plain)
				check_plain_options(opt);
			else
				for (int k = 0; k < opt->nbridges; k++)
					if (opt->bridges[k].port == 0)
						fatal("--proxy-bridge: port 0 (any) only with --plain");
			if (opt->private_network) {
				if (opt->network == NETWORK_OFF)
					fatal("--no-network and --private-network exclude each other");
				/* A namespace of the call's own: the families --netns-only keeps. */
				opt->network = NETWORK_NETNS;
			}
			/* Only --private-network makes one here; else only --filters-only may say there is one. */
			if (opt->network == NETWORK_NETNS && !opt->private_network)
				fatal("--netns-only needs --filters-only inside a private network namespace");
			if (opt->nbridges > 0 && !opt->private_network && !opt->plain)
				fatal("--proxy-bridge needs --private-network (a network namespace of the call's own)");
			check_network_options(opt);
			check_bridge_paths(opt);
			check_fresh_options(&opt->fresh);
			opt->argv = argv + i + 1;
			return;
		}
		if (network_option(arg, opt) || hiding_option(argc, argv, &i, opt) ||
		    bridge_option(argc, argv, &i, opt) ||
		    limits_option(argc, argv, &i, &opt->limits)) {
			continue;
		} else if (strcmp(arg, "--private-network") == 0) {
			opt->private_network = 1;
		} else if (strcmp(arg, "--seal-metadata") == 0) {
			opt->seal_metadata = 1;
		} else if (strcmp(arg, "--started-fd") == 0) {
			if (i + 1 == argc)
				fatal("--started-fd needs a descriptor number");
			opt->started_fd = started_fd_option(argv[++i]);
		} else if (strcmp(arg, "--private-ipc") == 0) {
			opt->private_ipc = 1;
		} else if (strcmp(arg, "--die-with-parent") == 0) {
			opt->die_with_parent = 1;
		} else if (strcmp(arg, "--plain") == 0) {
			opt->plain = 1;
		} else if (strcmp(arg, "--read-only-host") == 0) {
			opt->read_only_host = 1;
		} else if (strcmp(arg, "--ro") == 0 || strcmp(arg, "--rw") == 0 ||
			   strcmp(arg, "--list") == 0 || strcmp(arg, "--ro-try") == 0) {
			if (i + 1 == argc)
				fatal("%s needs a path", arg);
			opt->writable[opt->npaths] = strcmp(arg, "--rw") == 0 ? GRANT_WRITE
				: strcmp(arg, "--list") == 0 ? GRANT_LIST
				: strcmp(arg, "--ro-try") == 0 ? GRANT_READ_TRY : GRANT_READ;
			opt->paths[opt->npaths++] = argv[++i];
		} else if (mount_option(argc, argv, &i, opt) || fresh_option(argc, argv, &i, opt)) {
			continue;
		} else {
			fatal("unknown option: %s", arg);
		}
	}
	fatal("missing -- before the command");
}

int parse_filters_only(int argc, char **argv, struct options *opt)
{
	int i = 2;

	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--seal-metadata") == 0)
			opt->seal_metadata = 1;
		else if (strcmp(argv[i], "--started-fd") == 0 && i + 1 < argc)
			opt->started_fd = started_fd_option(argv[++i]);
		else if (!network_option(argv[i], opt) && !hiding_option(argc, argv, &i, opt) &&
			 !mount_option(argc, argv, &i, opt) &&
			 !bridge_option(argc, argv, &i, opt) &&
			 !limits_option(argc, argv, &i, &opt->limits))
			fatal("--filters-only takes only --seal-metadata, --started-fd, the network options, "
			      "--proxy-bridge, --empty, --hide-socket, --deny-read, --bind-*, "
			      "--empty-dir, --cgroup-fd, --cgroup-procs and "
			      "--rlimit, not %s", argv[i]);
	}
	if (i == argc)
		fatal("missing -- before the command");
	if (i + 1 == argc)
		fatal("no command given after --");
	if (opt->nbridges > 0 && opt->network != NETWORK_NETNS)
		fatal("--proxy-bridge needs --netns-only with --filters-only (the runner's network "
		      "namespace)");
	check_network_options(opt);
	return i + 1;
}

int parse_limits_only(int argc, char **argv, struct limits *limits)
{
	int i = 2;

	for (; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (!limits_option(argc, argv, &i, limits))
			fatal("--limits-only takes only --cgroup-make, --cgroup-set, --cgroup-fd, "
			      "--cgroup-procs and --rlimit, not %s", argv[i]);
	if (i == argc)
		fatal("missing -- before the command");
	if (i + 1 == argc)
		fatal("no command given after --");
	return i + 1;
}

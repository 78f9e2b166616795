/*
 * landlock-run: run a command under a Landlock filesystem sandbox.
 *
 *   landlock-run [--ro PATH]... [--rw PATH]... [--seal-metadata] [--private-ipc]
 *                [--no-network | --private-network [--proxy-bridge PORT:PATH]...]
 *                [--unix-pairs-only]
 *                [--empty FILE --hide-socket PATH...] [--deny-read PATH...]
 *                [--read-only-host] [--bind-ro P | --bind-pin P | --bind-file SRC P |
 *                 --empty-dir P]... [--fresh-dir DIR]... [--keep PATH]...
 *                [--bind-socket SOCKET VIEW]...
 *                [--cgroup-make DIR]... [--cgroup-set[-if-present] PATH=VALUE]...
 *                [--cgroup-fd N | --cgroup-procs PATH]... [--rlimit NAME=VALUE]...
 *                [--started-fd N] -- ARGV...
 *   landlock-run --filters-only [--seal-metadata] [--started-fd N]
 *                [--no-network | --netns-only [--proxy-bridge PORT:PATH]...]
 *                [--unix-pairs-only]
 *                [--empty FILE --hide-socket PATH...] [--deny-read PATH...]
 *                [--cgroup-fd N]... [--rlimit NAME=VALUE]... -- ARGV...
 *   landlock-run --limits-only [--cgroup-make DIR] [--cgroup-set[-if-present] PATH=VALUE]...
 *                [--cgroup-fd N | --cgroup-procs PATH]...
 *                [--rlimit NAME=VALUE]... -- ARGV...
 *   landlock-run --probe
 *
 * The child may read and execute beneath --ro paths, do anything the running
 * Landlock ABI can govern beneath --rw paths, and nothing else on the
 * filesystem.  On ABI >= 6 it may neither signal nor connect to an abstract
 * Unix socket of a process outside its Landlock domain.  Before exec, every
 * capability is dropped and no_new_privs is set, so a root caller is confined
 * just like anyone else.
 *
 * Any failure of the launcher itself exits 125 without running the child and
 * prints exactly one line, starting "landlock-run: ", on stderr.  Otherwise
 * the launcher ends as the child did: its exit status, or its death by a signal.  A command it
 * cannot execute is the command's result, as in a shell: 127 (not found) or 126,
 * with the shell's line ("CMD: command not found", "CMD: Permission denied").
 * With --started-fd N (a socket), one byte is sent there just before the exec: the
 * caller's out-of-band word that the command started, so that a line of the command's
 * own that reads like the launcher's failure is never taken for one.
 *
 * One C file per mechanism, each opening with what it does and why, and this header
 * between them (their interfaces, the option record):
 *
 *   main.c        the four modes, each a sequence of the mechanisms' steps; failures
 *   args.c        the command line: every option, and the rules between them
 *   landlock.c    Landlock: the ABI, the ruleset and its grants, the probe's child
 *   seccomp.c     the seccomp filters (setuid guard, IPC, seal, terminal, network, bridge)
 *   caps.c        capabilities and securebits, all dropped before exec
 *   namespaces.c  the call's namespaces (user namespace maps), its init (the PID-1
 *                 reaper), the plain tier's guardian, and the command's last steps
 *   covers.c      the mount namespace's covers: hidden sockets, unreadable paths,
 *                 protected binds, the read-only host, fresh views, the working directory
 *   bridge.c      the proxy bridge into the call's network namespace
 *   limits.c      resource limits: cgroups and rlimits
 *   exec.c        the program looked up as a shell would, and the shell's 126 and 127
 *
 * Built as a static binary with glibc or musl, so it includes no <linux/...>
 * header: the few kernel UAPI definitions it needs are declared in the file that
 * uses them (or here, when two files share them).
 */
#ifndef LANDLOCK_RUN_H
#define LANDLOCK_RUN_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#define LAUNCHER_FAILURE 125

/*
 * A helper only its own file calls is static.  TESTABLE marks the few the unit tests
 * (tests/launcher/unit/) call directly: static in the launcher, external in a build
 * with -DLAUNCHER_UNIT_TEST, which declares them at the end of this header.
 */
#ifdef LAUNCHER_UNIT_TEST
#define TESTABLE
#else
#define TESTABLE static
#endif

/* ---- The option record (args.c fills it; the mechanisms read it) ---- */

/*
 * A grant's access: --ro, --rw, --list (list a directory, nothing beneath it read),
 * or --ro-try (--ro, skipped when the path is gone or out of the caller's reach).
 */
enum grant { GRANT_READ, GRANT_WRITE, GRANT_LIST, GRANT_READ_TRY };

/*
 * NETWORK_PROXY (--plain with --proxy-bridge): no namespace of the call's own, so the
 * host's network is the command's: only TCP over IPv4 or IPv6 (SOCK_STREAM, protocol 0
 * or IPPROTO_TCP: not SCTP or MPTCP, which Landlock's TCP rules do not govern) besides
 * AF_UNIX, and Landlock allows one TCP connect port, the bridge's.
 */
enum network { NETWORK_ON, NETWORK_OFF, NETWORK_NETNS, NETWORK_PROXY };

/*
 * What a protected path becomes in the call's mount namespace (the namespaced tier,
 * as bwrap's binds): --bind-ro PATH, PATH bound read-only onto itself; --bind-pin
 * PATH, bound onto itself (a mount point: it cannot be renamed or removed);
 * --bind-file SOURCE PATH, SOURCE bound read-only onto PATH (a placeholder file);
 * --empty-dir PATH, an empty read-only directory onto PATH (a placeholder directory).
 * And two that bwrap's filter stage does for it (its own take a pass over the mount
 * table each): --bind-ro-try PATH, --bind-ro where PATH exists (/proc/sys and its
 * neighbours, over bwrap's /proc); --remount-ro PATH, the mount whose root PATH is
 * made read-only, not those beneath it (bwrap's fresh tmpfs over /run, /tmp).
 */
enum mount_kind {
	MOUNT_READ_ONLY,
	MOUNT_PIN,
	MOUNT_FILE,
	MOUNT_EMPTY_DIR,
	MOUNT_READ_ONLY_TRY,
	MOUNT_REMOUNT_RO,
};

struct mount_spec {
	enum mount_kind kind;
	const char *source;	/* MOUNT_FILE only */
	const char *path;
};

/* --fresh-dir DIR, --keep PATH, --bind-socket SOCKET VIEW (covers.c, fresh_views). */
struct fresh_spec {
	const char **dirs;
	int ndirs;
	const char **keeps;
	int nkeeps;
	const char **sockets;	/* --bind-socket SOCKET VIEW: sockets[2k], sockets[2k+1] */
	int nsockets;
};

#define BRIDGE_MAX 8			/* --proxy-bridge options */

struct bridge_spec {
	uint16_t port;			/* on the namespace's loopback */
	const char *path;		/* the Unix socket each connection is relayed to */
};

#define CGROUP_FD_MAX 8			/* --cgroup-fd options: one per v1 hierarchy, say */
#define CGROUP_SET_MAX 16		/* --cgroup-set options: pids.max, memory's two, ... */
#define LIMIT_NAME_COUNT 6		/* --rlimit names: nproc, as, data, cpu, fsize, nofile */

struct limit_name {
	const char *name;
	int resource;
};

struct limits {
	const char *cgroup_makes[CGROUP_FD_MAX];	/* --cgroup-make DIR */
	int ncgroup_makes;
	struct cgroup_set {
		const char *path;
		const char *value;
		int if_present;
	} cgroup_sets[CGROUP_SET_MAX];
	int ncgroup_sets;
	int cgroup_fds[CGROUP_FD_MAX];
	int ncgroup_fds;
	const char *cgroup_procs[CGROUP_FD_MAX];	/* --cgroup-procs PATH: opened here */
	int ncgroup_procs;
	struct rlimit_spec {
		const struct limit_name *limit;
		const char *text;	/* VALUE as given, for messages */
		rlim_t value;
	} rlimits[LIMIT_NAME_COUNT];
	int nrlimits;
};

struct options {
	const char **paths;	/* in command-line order */
	int *writable;		/* each path's enum grant */
	int npaths;
	int plain;		/* --plain: no namespace at all */
	int read_only_host;	/* --read-only-host: every mount read-only but the --rw grants */
	struct mount_spec *mounts;
	int nmounts;
	struct fresh_spec fresh;	/* --fresh-dir, --keep, --bind-socket */
	int seal_metadata;
	int private_ipc;
	int die_with_parent;
	enum network network;
	int unix_pairs_only;
	const char *empty;
	const char **hidden;	/* --hide-socket paths */
	int nhidden;
	const char **unreadable;	/* --deny-read paths */
	int nunreadable;
	int private_network;
	struct bridge_spec bridges[BRIDGE_MAX];
	int nbridges;
	struct limits limits;	/* --cgroup-fd, --rlimit */
	int started_fd;		/* --started-fd: 0 when not given */
	char **argv;
};

/* A listening socket of the proxy bridge (bridge.c). */
#define LISTENER_MAX (2 * BRIDGE_MAX)

struct listener {
	int fd;
	int bridge;			/* index in options.bridges */
};

/* ---- main.c: the modes; failure reporting ---- */

/*
 * Every exit but init's: stdio flushed, no exit handlers.  The command's
 * process runs on init's memory until it execs (a vfork-style clone), where
 * exit() would run them on memory it does not own.
 */
_Noreturn void leave(int status);
/* The one "landlock-run: ..." line on stderr, and exit 125. */
_Noreturn void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- args.c: the command line ---- */

/* --started-fd N: checked, and closed on the command's exec. */
int started_fd_option(const char *value);
/* Landlock mode: argv[1..] up to and including "--"; opt->argv is the command. */
void parse_options(int argc, char **argv, struct options *opt);
/* --filters-only and --limits-only (argv[1]): the index of the command in argv. */
int parse_filters_only(int argc, char **argv, struct options *opt);
int parse_limits_only(int argc, char **argv, struct limits *limits);

/* ---- landlock.c: Landlock ---- */

#define NET_ABI 4			/* TCP bind and connect rules */
#define SCOPE_ABI 6			/* signals and abstract Unix sockets scoped */
/* Below this ABI, truncate(2) (3), device ioctls (5), or signals and abstract Unix
 * sockets reaching host processes (6) escape the sandbox. */
#define FULL_ENFORCEMENT_ABI SCOPE_ABI

int landlock_abi(void);
/* The running ABI, or a fatal line that starts with `context` and says why none. */
int require_landlock_abi(const char *context);
/* A ruleset for `abi` (TCP handled when `no_network`, scoped from ABI 6), or -1. */
int create_ruleset(int abi, int no_network);
int restrict_self(int ruleset_fd);
/* Landlock mode's ruleset: the network rule the options ask for, and every grant. */
int landlock_ruleset(const struct options *opt, int abi);
void add_connect_rule(int ruleset_fd, uint16_t port);
/* A path opened O_PATH without following any symlink, or -1 with errno. */
int open_grant(const char *path);
/* --filters-only with covers: no ptrace reach to the runner's processes. */
void seal_outside_processes(void);
/* The probe: run in a throwaway child (its exit status); the failure it means, or NULL. */
int landlock_probe_child(int abi);
const char *landlock_probe_failure(int status);

/* ---- seccomp.c: the filters ---- */

/* A classic BPF instruction (include/uapi/linux/filter.h). */
struct sock_filter {
	uint16_t code;
	uint8_t jt;
	uint8_t jf;
	uint32_t k;
};

/* One filter to install: its program and what a failure to install it names. */
struct filter_program {
	const struct sock_filter *insn;
	size_t len;
	const char *what;
};

#define FILTERS_MAX 5			/* installed for one command: seal, IPC, network, two guards */
#define NET_FILTER_MAX 40		/* the network filter's instructions, built at run time */

struct filter_buffer {
	struct sock_filter insn[NET_FILTER_MAX];
	size_t len;
};

/* no_new_privs, then every filter a confined command gets. */
void install_filters(int seal_metadata, int filter_ipc, enum network network,
		     int unix_pairs_only);
/* The proxy bridge's allowlist. */
void install_bridge_filter(void);

/* ---- caps.c: capabilities ---- */

#define CAP_SYS_ADMIN 21

/* Whether an effective capability below 32 is held. */
int has_capability(int cap);
/* Every capability gone (bounding set too, securebits locked, where allowed). */
void drop_capabilities(void);

/* ---- namespaces.c: the call's processes ---- */

/* Namespaces `flags` (CLONE_NEW*) for this process, in a user namespace if need be:
 * 0 or an errno. */
int private_namespaces(int flags);
/* The namespaced tier: init (pid 1) and the command under it; ends as the command. */
_Noreturn void run_under_init(const struct options *opt, int abi, int ruleset_fd,
			      const struct listener *listeners, int nlisteners);
/* The plain tier: the guardian (a subreaper) and the command under it. */
_Noreturn void run_under_guardian(const struct options *opt, int abi, int ruleset_fd,
				  const struct listener *listeners, int nlisteners);

/* ---- covers.c: the mount namespace's covers ---- */

/* Every cover the options ask for, in order, and the working directory entered again. */
void mount_covers(const struct options *opt);
void mount_protections(const struct options *opt);
/* Whether `path` is `cover` or lies beneath it (as strings: both real paths). */
int covered_by(const char *cover, const char *path);
/* The fresh directory `path` lies strictly beneath (its index), or -1. */
int fresh_dir_of(const struct fresh_spec *fresh, const char *path);

/* ---- bridge.c: the proxy bridge ---- */

void loopback_up(void);
/* Every bridge's listening sockets in this network namespace; how many. */
int open_listeners(const struct options *opt, struct listener *out);
/* --plain: on the host's loopback, one free port (written to opt->bridges[0].port). */
int open_plain_listener(struct options *opt, struct listener *out);
void set_proxy_environment(uint16_t port);
/* The bridge as a child of this process (init, the guardian); the listeners closed here. */
void start_bridge_child(const struct options *opt, const struct listener *listeners, int n);
/* --filters-only: the bridge forked twice, watching this process (the command to be). */
void start_detached_bridge(const struct options *opt);

/* ---- limits.c: cgroups and rlimits ---- */

/* First: made, limited and joined (or a fatal line). */
void join_cgroups(const struct limits *l);
/* Last, just before exec. */
void apply_rlimits(const struct limits *l);

/* ---- exec.c: the program ---- */

/* ARGV[0] as execvp would find it; else the shell's line and 127 or 126. */
char *resolve_program(char *name);
_Noreturn void exec_failed(const char *name, int err);
/* Just before the command's exec: one byte on --started-fd (when given). */
void announce_start(int fd);

#ifdef LAUNCHER_UNIT_TEST
/* ---- Internal to their files: declared for the unit tests only ---- */

/* landlock.c */
uint64_t handled_access_for_abi(int abi);
size_t ruleset_attr_size(int abi);
uint64_t grant_access(enum grant grant, int abi);
uint64_t rule_access(uint64_t access, int directory);
/* seccomp.c */
size_t build_net_filter(struct filter_buffer *buf, enum network network, int unix_pairs_only);
size_t plan_filters(int seal_metadata, int filter_ipc, enum network network,
		    int unix_pairs_only, struct filter_buffer *net,
		    struct filter_program out[FILTERS_MAX]);
extern const struct filter_program bridge_program;
/* covers.c */
int has_covers(const struct options *opt);
int clear_of_covers(const char *cwd, const struct options *opt);
int make_placeholder(const char *path, int directory);
const char *fresh_relative(const char *dir, const char *path);
int kept_beneath_another(const struct fresh_spec *fresh, int k);
/* namespaces.c */
int children_of_self(pid_t *out, int max);
int children_by_scan(pid_t *out, int max);
void end_every_process(void);
/* bridge.c */
void close_other_fds(int *keep, int count);
int relay_limit(int listeners);
/* limits.c */
struct rlimit rlimit_for(const struct rlimit_spec *spec);
/* exec.c */
int check_executable(const char *path);
#endif

#endif

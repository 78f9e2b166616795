/*
 * The call's network: its own namespace's loopback, and the proxy bridge that is the
 * command's only way out of it.
 *
 * --private-network (Landlock mode): the call gets a network namespace of its own,
 * made with its PID namespace (as --private-ipc's), with only a loopback, which
 * the launcher brings up; the command keeps the families --netns-only keeps
 * (AF_INET, AF_INET6 and AF_NETLINK reach only that namespace: a TCP or UDP
 * socket, a route or a raw netlink query there changes nothing outside; vsock and
 * packet sockets stay refused), and no TCP rule is needed.  Abstract Unix sockets
 * are per network namespace too: the host's are out of reach.  A named Unix socket
 * is not (see --hide-socket, --unix-pairs-only), nor is a descriptor the caller
 * passes in (it keeps the namespace it was made in).
 *
 * --proxy-bridge PORT:PATH (with --private-network, or --filters-only
 * --netns-only; repeatable, one PORT each): a bridge process listens on
 * 127.0.0.1:PORT (and [::1]:PORT where the namespace has IPv6) before the command
 * starts, and relays each connection to the Unix socket PATH and back (see "The
 * proxy bridge" below for what it holds and how it ends).  The command is then
 * told HTTP_PROXY=http://127.0.0.1:PORT by its caller: the namespace's loopback,
 * and through it PATH, is all the network it has.  In Landlock mode the bridge is
 * behind the call's covers: a PATH also given to --hide-socket, or beneath a
 * --deny-read path, is refused.  Under a runner it starts before them: PATH may be
 * hidden from the command and still be the bridge's.
 *
 * With --plain (no namespace) the bridge listens on the host's loopback instead (see
 * open_plain_listener), and the command's proxy variables are set here.
 */
#include "landlock-run.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- The proxy bridge (--proxy-bridge PORT:PATH) ---- */

/*
 * The command's only way out of a network namespace of its own (--private-network,
 * or bwrap --unshare-net with --filters-only --netns-only): a relay listening on
 * the namespace's loopback, 127.0.0.1:PORT (and [::1]:PORT where the namespace has
 * IPv6), that carries each connection it accepts to the Unix socket PATH (the
 * harness's proxy, whose socket the runner leaves in sight) and back, half-closes
 * included.  The listening sockets are bound and listening before the command
 * starts, so its first connection waits in the backlog however fast it is.
 *
 * The bridge is a process of its own, forked by the launcher before the command's
 * filters are installed (so it is under none of them: it needs AF_UNIX where the
 * command may be refused it), and it holds no more than it needs: no capability,
 * no_new_privs, not dumpable (the command cannot trace or read it), a session of
 * its own (a ^C or a hangup for the command's terminal does not reach it), stdin
 * and stdout and stderr on /dev/null, no descriptor but its sockets, a Landlock
 * domain of its own with no file access and no TCP bind or connect (where Landlock
 * is there), and a seccomp allowlist of the calls a relay makes, socket() only for
 * AF_UNIX.  It ends with the call:
 *  - Landlock mode: it is a child of init, in the call's PID namespace (pid 2: the
 *    command is then pid 3), with PR_SET_PDEATHSIG; when the command ends, init
 *    ends, and the kernel kills it with the namespace.
 *  - --filters-only: the launcher forks twice, so the bridge is no child of the
 *    command (which would see it in wait()); it is reparented to the runner's pid 1
 *    (bwrap's init), and watches the command through a pidfd of the launcher's own
 *    process (the command execs in it): the command gone, the bridge exits; the
 *    runner's PID namespace (--unshare-pid) kills it too when the command ends.
 * A bridge that cannot be set up reports its one line through a pipe the launcher
 * waits on, and the launcher fails (125) before the command runs.
 *
 * Bounded: at most RELAY_MAX connections at once (one more is accepted and reset),
 * RELAY_BUFFER bytes in flight per direction, and a connect to PATH that blocks
 * (the proxy's backlog full) gives up after UNIX_CONNECT_TIMEOUT_SECONDS and resets
 * that connection.  A connection that fails midway (a reset, a write to a closed
 * peer) is reset on the TCP side, so the client sees a broken transfer, not a
 * short one.
 */
#define RELAY_MAX 256
#define RELAY_BUFFER (64 * 1024)
#define ACCEPTS_PER_ROUND 16
#define UNIX_CONNECT_TIMEOUT_SECONDS 5
#define BRIDGE_READY '+'
#define BRIDGE_PAUSE_MS 100

#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* <net/if.h>, <linux/sockios.h>: enough of struct ifreq to set an interface's flags. */
#define GET_INTERFACE_FLAGS 0x8913	/* SIOCGIFFLAGS */
#define SET_INTERFACE_FLAGS 0x8914	/* SIOCSIFFLAGS */
#define INTERFACE_UP 0x1		/* IFF_UP */

struct interface_request {
	char name[16];
	union {
		short flags;
		char size[24];
	} u;
};

/* A fresh network namespace has a loopback that is down: bring it up. */
void loopback_up(void)
{
	struct interface_request request = { .name = "lo" };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	/* syscall(): <sys/ioctl.h> would bring the kernel's terminal constants in. */
	if (fd < 0 || syscall(SYS_ioctl, fd, GET_INTERFACE_FLAGS, &request) != 0)
		fatal("cannot bring up the call's loopback: %s", strerror(errno));
	request.u.flags |= INTERFACE_UP;
	if (syscall(SYS_ioctl, fd, SET_INTERFACE_FLAGS, &request) != 0)
		fatal("cannot bring up the call's loopback: %s", strerror(errno));
	close(fd);
}

/* A listening socket on the loopback of `family`, or -1 with errno. */
static int listen_on(int family, uint16_t port)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				    .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, err;

	if (fd < 0)
		return -1;
	if ((family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) ||
	    (family == AF_INET ? bind(fd, (struct sockaddr *)&in4, sizeof(in4))
	     : bind(fd, (struct sockaddr *)&in6, sizeof(in6))) != 0 ||
	    listen(fd, SOMAXCONN) != 0) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* Every bridge's listening sockets, in the namespace this process is in now. */
int open_listeners(const struct options *opt, struct listener *out)
{
	int n = 0;

	for (int k = 0; k < opt->nbridges; k++) {
		int fd = listen_on(AF_INET, opt->bridges[k].port);

		if (fd < 0)
			fatal("--proxy-bridge: cannot listen on 127.0.0.1:%u: %s",
			      (unsigned)opt->bridges[k].port, strerror(errno));
		out[n++] = (struct listener){ fd, k };
		/* IPv6 is optional: a namespace without ::1 (or a kernel without IPv6) has none. */
		fd = listen_on(AF_INET6, opt->bridges[k].port);
		if (fd >= 0)
			out[n++] = (struct listener){ fd, k };
		else if (errno != EADDRNOTAVAIL && errno != EAFNOSUPPORT)
			fatal("--proxy-bridge: cannot listen on [::1]:%u: %s",
			      (unsigned)opt->bridges[k].port, strerror(errno));
	}
	return n;
}

/* flow[i] carries what fd[i] sends to fd[1 - i]. */
struct flow {
	size_t len, off;		/* bytes in its buffer; how many of them are sent */
	int eof;			/* its source sent EOF */
	int shut;			/* so the destination was shut down for writing */
	int reading, writing;		/* what it asked poll() for this round */
};

struct relay {
	int fd[2];			/* [0] the accepted TCP connection, [1] the Unix socket */
	struct flow flow[2];
	short revents[2];
	char *buffer;			/* flow[i]'s is buffer + i * RELAY_BUFFER; NULL: slot free */
};

static struct relay relays[RELAY_MAX];
static int relays_active;

/* Close without a FIN: the client sees its connection reset, not a clean end. */
static void reset(int tcp)
{
	struct linger now = { 1, 0 };

	setsockopt(tcp, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
	close(tcp);
}

static void relay_close(struct relay *r, int broken)
{
	if (broken)
		reset(r->fd[0]);
	else
		close(r->fd[0]);
	close(r->fd[1]);
	free(r->buffer);
	r->buffer = NULL;
	relays_active--;
}

/* A connection to the Unix socket `path`, non-blocking, or -1. */
static int connect_unix(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval limit = { UNIX_CONNECT_TIMEOUT_SECONDS, 0 };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memcpy(addr.sun_path, path, strlen(path));	/* its length checked when parsed */
	/* A blocking connect() to a Unix socket waits for its backlog at most this long. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit)) != 0 ||
	    connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* 1 when accept() must wait: no descriptor or memory left for now. */
static int accept_some(const struct listener *l, const struct options *opt, int max)
{
	for (int k = 0; k < ACCEPTS_PER_ROUND; k++) {
		int tcp = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), other;
		struct relay *r = NULL;

		if (tcp < 0)
			return errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
				errno == ENOMEM;
		/* The relay writes what it reads as it reads it: with Nagle on, a second
		 * small write (a TLS record after another) waited for the client's delayed
		 * ACK, 40 ms on most HTTPS connections. Best effort: a relay works without. */
		setsockopt(tcp, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
		for (int i = 0; i < RELAY_MAX && relays_active < max; i++)
			if (relays[i].buffer == NULL) {
				r = &relays[i];
				break;
			}
		if (r == NULL || (other = connect_unix(opt->bridges[l->bridge].path)) < 0) {
			reset(tcp);
			continue;
		}
		memset(r, 0, sizeof(*r));
		if ((r->buffer = malloc(2 * RELAY_BUFFER)) == NULL) {
			close(other);
			reset(tcp);
			continue;
		}
		r->fd[0] = tcp;
		r->fd[1] = other;
		relays_active++;
	}
	return 0;
}

static int would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* Send what flow i holds; 0 when the relay broke. */
static int relay_send(struct relay *r, int i)
{
	struct flow *f = &r->flow[i];
	ssize_t sent = send(r->fd[1 - i], r->buffer + i * RELAY_BUFFER + f->off, f->len - f->off,
			    MSG_NOSIGNAL);

	if (sent < 0)
		return would_block();
	f->off += (size_t)sent;
	if (f->off == f->len)
		f->len = f->off = 0;
	return 1;
}

/* Move what poll() said can move; close the relay when both ways are done. */
static void relay_step(struct relay *r)
{
	for (int i = 0; i < 2; i++) {
		struct flow *f = &r->flow[i];

		if (f->reading && r->revents[i]) {
			ssize_t got = recv(r->fd[i], r->buffer + i * RELAY_BUFFER, RELAY_BUFFER, 0);

			if (got > 0) {
				f->len = (size_t)got;
				f->off = 0;
				f->writing = 1;	/* try at once: the peer is usually ready */
				r->revents[1 - i] |= POLLOUT;
			} else if (got == 0) {
				f->eof = 1;
			} else if (!would_block()) {
				relay_close(r, 1);
				return;
			}
		}
		if (f->writing && f->len > f->off && r->revents[1 - i] && !relay_send(r, i)) {
			relay_close(r, 1);
			return;
		}
	}
	for (int i = 0; i < 2; i++) {
		struct flow *f = &r->flow[i];

		if (f->eof && f->len == 0 && !f->shut) {
			/* Half-close: the other side reads EOF and may still answer. */
			if (shutdown(r->fd[1 - i], SHUT_WR) != 0 && errno != ENOTCONN) {
				relay_close(r, 1);
				return;
			}
			f->shut = 1;
		}
	}
	if (r->flow[0].shut && r->flow[1].shut)
		relay_close(r, 0);
}

static _Noreturn void bridge_loop(const struct options *opt, const struct listener *ls, int n,
				  int watch_fd, int max)
{
	static struct pollfd fds[1 + LISTENER_MAX + 2 * RELAY_MAX];
	static struct relay *owner[2 * RELAY_MAX];
	int paused = 0;

	for (;;) {
		nfds_t count = 0, first;

		if (watch_fd >= 0)
			fds[count++] = (struct pollfd){ .fd = watch_fd, .events = POLLIN };
		for (int k = 0; k < n; k++)
			fds[count++] = (struct pollfd){ .fd = paused ? -1 : ls[k].fd, .events = POLLIN };
		first = count;
		for (int i = 0; i < RELAY_MAX; i++) {
			struct relay *r = &relays[i];
			short events[2] = { 0, 0 };

			if (r->buffer == NULL)
				continue;
			for (int s = 0; s < 2; s++) {
				struct flow *f = &r->flow[s];

				f->reading = !f->eof && f->len == 0;
				f->writing = f->len > f->off;
				if (f->reading)
					events[s] |= POLLIN;
				if (f->writing)
					events[1 - s] |= POLLOUT;
				r->revents[s] = 0;
			}
			for (int s = 0; s < 2; s++) {
				/* An fd asked for nothing is left out: its POLLHUP would spin the loop. */
				fds[count] = (struct pollfd){ .fd = events[s] ? r->fd[s] : -1,
							      .events = events[s] };
				owner[count - first] = r;
				count++;
			}
		}
		if (poll(fds, count, paused ? BRIDGE_PAUSE_MS : -1) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			_exit(1);
		}
		if (watch_fd >= 0 && fds[0].revents)
			_exit(0);	/* the command is gone */
		for (nfds_t j = first; j < count; j++)
			owner[j - first]->revents[(j - first) % 2] = fds[j].revents;
		for (nfds_t j = first; j < count; j += 2)
			if (owner[j - first]->buffer != NULL &&
			    (owner[j - first]->revents[0] || owner[j - first]->revents[1]))
				relay_step(owner[j - first]);
		if (paused) {
			paused = 0;
			continue;
		}
		for (int k = 0; k < n; k++)
			if (fds[first - (nfds_t)n + (nfds_t)k].revents & POLLIN)
				paused |= accept_some(&ls[k], opt, max);
	}
}

/* Close every descriptor from 3 up but `keep`. */
TESTABLE void close_other_fds(int *keep, int count)
{
	unsigned low = 3;

	for (int i = 1; i < count; i++)		/* a handful: insertion sort */
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (int i = 0; i <= count; i++) {
		unsigned high = i < count ? (unsigned)keep[i] : ~0U;

		if (high < low)
			continue;
		if (high > low &&
		    syscall(__NR_close_range, low, high == ~0U ? ~0U : high - 1, 0U) != 0) {
			long limit = sysconf(_SC_OPEN_MAX);

			if (errno != ENOSYS)
				fatal("cannot close the bridge's descriptors: %s", strerror(errno));
			for (long fd = low; fd < (high == ~0U ? limit : (long)high) && fd < 65536; fd++)
				close((int)fd);
		}
		if (high != ~0U)
			low = high + 1;
	}
}

/* Enough descriptors for every relay where the hard limit allows; the relays it allows. */
TESTABLE int relay_limit(int listeners)
{
	const rlim_t spare = 16;	/* 0-2, the listeners' slack, the pidfd, a connect in progress */
	rlim_t wanted = spare + (rlim_t)listeners + 2 * RELAY_MAX;
	struct rlimit limit;

	if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
		fatal("cannot read the bridge's descriptor limit: %s", strerror(errno));
	if (limit.rlim_cur < wanted) {
		limit.rlim_cur = limit.rlim_max < wanted ? limit.rlim_max : wanted;
		if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
			fatal("cannot raise the bridge's descriptor limit: %s", strerror(errno));
	}
	if (limit.rlim_cur >= wanted)
		return RELAY_MAX;
	if (limit.rlim_cur < spare + (rlim_t)listeners + 2)
		fatal("the descriptor limit (%lu) leaves the bridge no connection",
		      (unsigned long)limit.rlim_cur);
	return (int)((limit.rlim_cur - spare - (rlim_t)listeners) / 2);
}

/*
 * The bridge process: shed everything, tell `report_fd` it is ready (or fail there
 * with its one line), and relay.  `watch_fd`: a pidfd whose process's end ends the
 * bridge, or -1; `tied_to_parent`: die with the parent (init) instead.
 */
static _Noreturn void bridge_main(const struct options *opt, const struct listener *ls, int n,
				  int report_fd, int watch_fd, int tied_to_parent)
{
	int keep[LISTENER_MAX + 2], nkeep = 0, null_fd, abi, max;
	const char ready = BRIDGE_READY;
	sigset_t none;

	/* Until it is ready, its failure line (fatal) goes to the one waiting for it. */
	if (dup2(report_fd, STDERR_FILENO) < 0)
		_exit(LAUNCHER_FAILURE);
	if (tied_to_parent && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
		fatal("cannot tie the proxy bridge to the call: %s", strerror(errno));
	if (setsid() < 0)
		fatal("cannot give the proxy bridge a session of its own: %s", strerror(errno));
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0)
		fatal("cannot open /dev/null for the proxy bridge: %s", strerror(errno));
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (int k = 0; k < n; k++)
		keep[nkeep++] = ls[k].fd;
	if (watch_fd >= 0)
		keep[nkeep++] = watch_fd;
	keep[nkeep++] = null_fd;
	close_other_fds(keep, nkeep);
	max = relay_limit(n);
	drop_capabilities();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fatal("cannot set no_new_privs for the proxy bridge: %s", strerror(errno));
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* Landlock where there is one: no file, no TCP bind or connect (accept needs neither). */
	abi = landlock_abi();
	if (abi > 0) {
		int ruleset_fd = create_ruleset(abi, 1);

		if (ruleset_fd < 0 || restrict_self(ruleset_fd) != 0)
			fatal("cannot confine the proxy bridge: %s", strerror(errno));
		close(ruleset_fd);
	}
	install_bridge_filter();
	if (write(STDERR_FILENO, &ready, 1) != 1)
		_exit(LAUNCHER_FAILURE);
	if (dup2(null_fd, STDERR_FILENO) < 0)
		_exit(LAUNCHER_FAILURE);
	close(null_fd);
	bridge_loop(opt, ls, n, watch_fd, max);
}

/* Wait for the bridge on `fd`: ready, or fail with its line. */
static void await_bridge(int fd)
{
	char report[1024];
	size_t got = 0;

	while (got < sizeof(report) - 1) {
		ssize_t n = read(fd, report + got, sizeof(report) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fatal("cannot hear from the proxy bridge: %s", strerror(errno));
		if (n == 0)
			break;
		got += (size_t)n;
		if (report[0] == BRIDGE_READY)
			break;
	}
	close(fd);
	if (got > 0 && report[0] == BRIDGE_READY)
		return;
	if (got == 0)
		fatal("the proxy bridge did not start");
	/* The bridge's own "landlock-run: ..." line. */
	report[got] = '\0';
	fputs(report, stderr);
	if (report[got - 1] != '\n')
		fputc('\n', stderr);
	leave(LAUNCHER_FAILURE);
}

static void close_listeners(const struct listener *ls, int n)
{
	for (int k = 0; k < n; k++)
		close(ls[k].fd);
}

/*
 * Init (or the guardian) forks the bridge (pid 2) before the command, and the command
 * starts only once the bridge is ready.  A plain clone, not libc's fork(): init runs on
 * the launcher's memory, and the bridge gets a copy of it with no libc bookkeeping.
 */
void start_bridge_child(const struct options *opt, const struct listener *listeners, int n)
{
	int ready[2];
	pid_t pid;

	if (pipe2(ready, O_CLOEXEC) != 0)
		fatal("cannot start the proxy bridge: %s", strerror(errno));
	pid = (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, NULL, NULL, NULL, 0UL);
	if (pid < 0)
		fatal("cannot start the proxy bridge: %s", strerror(errno));
	if (pid == 0) {
		close(ready[0]);
		bridge_main(opt, listeners, n, ready[1], -1, 1);
	}
	close(ready[1]);
	await_bridge(ready[0]);
	close_listeners(listeners, n);
}

/*
 * --filters-only: listen in the runner's network namespace, then fork twice (the
 * bridge is no child of the command) and wait until it is ready.
 */
void start_detached_bridge(const struct options *opt)
{
	struct listener ls[LISTENER_MAX];
	int n = open_listeners(opt, ls), ready[2], watch;
	pid_t first;

	/* This process becomes the command (exec keeps the pid): the bridge watches it. */
	watch = (int)syscall(__NR_pidfd_open, getpid(), 0U);
	if (watch < 0)
		fatal("--proxy-bridge: cannot watch the command (pidfd_open): %s", strerror(errno));
	if (pipe2(ready, O_CLOEXEC) != 0)
		fatal("cannot start the proxy bridge: %s", strerror(errno));
	first = fork();
	if (first < 0)
		fatal("cannot start the proxy bridge: %s", strerror(errno));
	if (first == 0) {
		pid_t bridge;

		close(ready[0]);
		if (dup2(ready[1], STDERR_FILENO) < 0)
			_exit(LAUNCHER_FAILURE);
		bridge = fork();
		if (bridge < 0)
			fatal("cannot start the proxy bridge: %s", strerror(errno));
		if (bridge == 0)
			bridge_main(opt, ls, n, ready[1], watch, 0);
		_exit(0);
	}
	close(ready[1]);
	waitpid(first, NULL, 0);
	await_bridge(ready[0]);
	close_listeners(ls, n);
	close(watch);
}

/* ---- The plain tier's bridge (--plain --proxy-bridge 0:PATH) ---- */

/* The bridge's listening sockets on the host's loopback, on one free port for both. */
int open_plain_listener(struct options *opt, struct listener *out)
{
	struct sockaddr_in bound;
	socklen_t size = sizeof(bound);
	int n = 0, fd = listen_on(AF_INET, opt->bridges[0].port);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&bound, &size) != 0)
		fatal("--proxy-bridge: cannot listen on the host's loopback: %s", strerror(errno));
	opt->bridges[0].port = ntohs(bound.sin_port);
	out[n++] = (struct listener){ fd, 0 };
	/* [::1] on the same port where it is free; IPv4 alone otherwise. */
	fd = listen_on(AF_INET6, opt->bridges[0].port);
	if (fd >= 0)
		out[n++] = (struct listener){ fd, 0 };
	return n;
}

/* The variables that point the command's clients at the bridge (network/bridge.py's). */
void set_proxy_environment(uint16_t port)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
					     "https_proxy" };
	static const char *const socks[] = { "ALL_PROXY", "all_proxy" };
	char http[64], socks5[64];

	snprintf(http, sizeof(http), "http://127.0.0.1:%u", (unsigned)port);
	snprintf(socks5, sizeof(socks5), "socks5h://127.0.0.1:%u", (unsigned)port);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (setenv(names[i], http, 1) != 0)
			fatal("cannot set %s: %s", names[i], strerror(errno));
	for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++)
		if (setenv(socks[i], socks5, 1) != 0)
			fatal("cannot set %s: %s", socks[i], strerror(errno));
	if (setenv("NO_PROXY", "", 1) != 0 || setenv("no_proxy", "", 1) != 0)
		fatal("cannot set NO_PROXY: %s", strerror(errno));
}

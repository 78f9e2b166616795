/*
 * bridge.c: the proxy variables, the listeners (the host's loopback for --plain, a
 * fresh network namespace's otherwise), the bridge's descriptor budget and cleanup,
 * and a connection relayed to a Unix socket and back.
 */
#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void environment(void)
{
	set_proxy_environment(18080);
	CHECK_STR(getenv("HTTP_PROXY"), "http://127.0.0.1:18080");
	CHECK_STR(getenv("HTTPS_PROXY"), "http://127.0.0.1:18080");
	CHECK_STR(getenv("http_proxy"), "http://127.0.0.1:18080");
	CHECK_STR(getenv("https_proxy"), "http://127.0.0.1:18080");
	CHECK_STR(getenv("ALL_PROXY"), "socks5h://127.0.0.1:18080");
	CHECK_STR(getenv("all_proxy"), "socks5h://127.0.0.1:18080");
	CHECK_STR(getenv("NO_PROXY"), "");
	CHECK_STR(getenv("no_proxy"), "");
}

static unsigned port_of(int fd, int *family)
{
	struct sockaddr_in6 addr;
	socklen_t size = sizeof(addr);

	if (getsockname(fd, (struct sockaddr *)&addr, &size) != 0)
		return 0;
	*family = addr.sin6_family;
	return ntohs(addr.sin6_port);	/* sin_port and sin6_port share their place */
}

/* --plain: one free port on the host's loopback, for IPv4 and (where it can) IPv6. */
static void plain_listener(void)
{
	struct options opt = { .nbridges = 1, .bridges = { { 0, "/s" } } };
	struct listener ls[LISTENER_MAX];
	struct sockaddr_in addr;
	socklen_t size = sizeof(addr);
	int n = open_plain_listener(&opt, ls), family = 0;

	CHECK(n == 1 || n == 2);
	CHECK(opt.bridges[0].port != 0);
	CHECK_EQ(port_of(ls[0].fd, &family), opt.bridges[0].port);
	CHECK_EQ(family, AF_INET);
	CHECK(getsockname(ls[0].fd, (struct sockaddr *)&addr, &size) == 0 &&
	      addr.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	CHECK_EQ(ls[0].bridge, 0);
	if (n == 2) {
		CHECK_EQ(port_of(ls[1].fd, &family), opt.bridges[0].port);
		CHECK_EQ(family, AF_INET6);
	}
	/* Non-blocking and listening already: a connection waits in the backlog. */
	CHECK(fcntl(ls[0].fd, F_GETFL) & O_NONBLOCK);
	for (int k = 0; k < n; k++)
		close(ls[k].fd);
}

/* In a network namespace of its own: its loopback brought up, every bridge listening. */
static void namespace_listeners(void)
{
	int pid = unit_fork();

	if (pid == 0) {
		struct options opt = { .nbridges = 2, .bridges = { { 18080, "/a" }, { 18081, "/b" } } };
		struct listener ls[LISTENER_MAX];
		int n, family = 0, v4 = 0;

		CHECK_EQ(private_namespaces(CLONE_NEWNET), 0);
		loopback_up();
		n = open_listeners(&opt, ls);
		CHECK(n >= 2 && n <= 4);
		for (int k = 0; k < n; k++) {
			unsigned port = port_of(ls[k].fd, &family);

			CHECK_EQ(port, opt.bridges[ls[k].bridge].port);
			v4 += family == AF_INET;
		}
		CHECK_EQ(v4, 2);
		CHECK_EQ(ls[0].bridge, 0);
		CHECK_EQ(ls[n - 1].bridge, 1);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
}

static void descriptors(void)
{
	int pid = unit_fork();

	if (pid == 0) {
		int fds[8], keep[2];

		for (int k = 0; k < 8; k++)
			fds[k] = open("/dev/null", O_RDONLY);
		/* Unsorted, as the bridge passes them. */
		keep[0] = fds[6];
		keep[1] = fds[1];
		close_other_fds(keep, 2);
		for (int k = 0; k < 8; k++)
			CHECK_EQ(fcntl(fds[k], F_GETFD) >= 0, k == 1 || k == 6);
		CHECK(fcntl(0, F_GETFD) >= 0 && fcntl(2, F_GETFD) >= 0);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
}

static void set_nofile(rlim_t soft, rlim_t hard)
{
	struct rlimit limit = { soft, hard };

	CHECK(setrlimit(RLIMIT_NOFILE, &limit) == 0);
}

static void no_room(void *unused)
{
	(void)unused;
	set_nofile(19, 19);
	relay_limit(2);
}

/* 16 spare, the listeners, two per relay: as many relays as the hard limit allows. */
static void budget(void)
{
	int pid = unit_fork();

	if (pid == 0) {
		struct rlimit now;

		/* Hard limits lowered only: raising one takes a capability. */
		set_nofile(100, 2000);
		CHECK_EQ(relay_limit(4), 256);
		CHECK(getrlimit(RLIMIT_NOFILE, &now) == 0 && now.rlim_cur == 16 + 4 + 512);
		set_nofile(1024, 1024);
		CHECK_EQ(relay_limit(2), 256);
		CHECK(getrlimit(RLIMIT_NOFILE, &now) == 0 && now.rlim_cur == 1024);
		set_nofile(100, 200);
		CHECK_EQ(relay_limit(2), (200 - 16 - 2) / 2);
		CHECK(getrlimit(RLIMIT_NOFILE, &now) == 0 && now.rlim_cur == 200);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
	EXPECT_FATAL(no_room, NULL, "the descriptor limit (19) leaves the bridge no connection");
}

/* An echo server on a Unix socket: one connection, everything sent back, then EOF. */
static int echo_server(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int listener = socket(AF_UNIX, SOCK_STREAM, 0), pid;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	CHECK(bind(listener, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	CHECK(listen(listener, 4) == 0);
	pid = unit_fork();
	if (pid == 0) {
		char buffer[4096];
		int conn = accept(listener, NULL, NULL);
		ssize_t n;

		while ((n = read(conn, buffer, sizeof(buffer))) > 0)
			if (write(conn, buffer, (size_t)n) != n)
				_exit(1);
		shutdown(conn, SHUT_WR);
		_exit(0);
	}
	close(listener);
	return pid;
}

/* The bridge as init starts it: ready before the call goes on, then a relay. */
static void relayed(void)
{
	const char *path = unit_path(unit_tmpdir(), "proxy.sock");
	int server = echo_server(path), pid = unit_fork();

	if (pid == 0) {
		struct options opt = { .nbridges = 1, .bridges = { { 0, path } } };
		struct listener ls[LISTENER_MAX];
		struct sockaddr_in addr = { .sin_family = AF_INET };
		char reply[64] = { 0 };
		size_t got = 0;
		int n = open_plain_listener(&opt, ls), tcp;
		ssize_t r;

		start_bridge_child(&opt, ls, n);
		/* Its listeners are the bridge's now, closed here. */
		CHECK(fcntl(ls[0].fd, F_GETFD) < 0);
		tcp = socket(AF_INET, SOCK_STREAM, 0);
		addr.sin_port = htons(opt.bridges[0].port);
		addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		CHECK(connect(tcp, (struct sockaddr *)&addr, sizeof(addr)) == 0);
		CHECK(write(tcp, "ping through the bridge", 23) == 23);
		/* A half-close travels too: the echo server sees EOF, answers, and ends. */
		CHECK(shutdown(tcp, SHUT_WR) == 0);
		while (got < sizeof(reply) - 1 &&
		       (r = read(tcp, reply + got, sizeof(reply) - 1 - got)) > 0)
			got += (size_t)r;
		CHECK_STR(reply, "ping through the bridge");
		close(tcp);
		unit_child_exit();	/* the bridge dies with its parent (PR_SET_PDEATHSIG) */
	}
	CHECK_EQ(unit_wait(pid), 0);
	CHECK_EQ(unit_wait(server), 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	environment();
	plain_listener();
	namespace_listeners();
	descriptors();
	budget();
	relayed();
	return unit_done();
}

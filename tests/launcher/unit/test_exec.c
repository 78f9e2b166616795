/*
 * exec.c: the program found as execvp would find it, and one that cannot be run
 * reported as a shell reports it (127 not found, 126 not executable; no
 * "landlock-run:" prefix: that is the command's result, not the launcher's failure);
 * and --started-fd, the word that the command starts.
 */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static void make_file(const char *path, mode_t mode)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, mode);

	CHECK(fd >= 0 && write(fd, "#!/bin/sh\n", 10) == 10);
	close(fd);
	CHECK(chmod(path, mode) == 0);
}

static void resolve(void *name)
{
	resolve_program(name);
}

/* --started-fd: one byte announced, none without it, no failure with the caller gone. */
static void check_announce_start(void)
{
	int ends[2];
	char got[4];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
	announce_start(0);	/* not given: nothing anywhere */
	announce_start(ends[1]);
	CHECK_EQ(read(ends[0], got, sizeof(got)), 1);
	CHECK_EQ(got[0], '1');
	close(ends[0]);
	announce_start(ends[1]);	/* the caller gone: no SIGPIPE, no failure */
	close(ends[1]);
}

int main(void)
{
	const char *tmp = unit_tmpdir();
	const char *a = unit_path(tmp, "a"), *b = unit_path(tmp, "b"), *c = unit_path(tmp, "c");
	char path[512], message[512];

	CHECK(mkdir(a, 0755) == 0 && mkdir(b, 0755) == 0 && mkdir(c, 0755) == 0);
	make_file(unit_path(a, "prog"), 0644);		/* found first, not executable */
	make_file(unit_path(b, "prog"), 0755);
	make_file(unit_path(a, "only-readable"), 0644);
	make_file(unit_path(c, "tool"), 0755);
	CHECK_EQ(check_executable(unit_path(b, "prog")), 0);
	CHECK_EQ(check_executable(unit_path(a, "prog")), EACCES);
	CHECK_EQ(check_executable(a), EACCES);		/* a directory */
	CHECK_EQ(check_executable(unit_path(a, "gone")), ENOENT);
	CHECK_EQ(check_executable(unit_path(unit_path(a, "prog"), "x")), ENOTDIR);

	snprintf(path, sizeof(path), "%s:%s", a, b);
	CHECK(setenv("PATH", path, 1) == 0);
	/* Skipped where it cannot be executed, found where it can. */
	CHECK_STR(resolve_program("prog"), unit_path(b, "prog"));
	/* A name with a slash is not looked up. */
	CHECK_STR(resolve_program((char *)unit_path(b, "prog")), unit_path(b, "prog"));
	EXPECT_EXIT(resolve, "nope", 127, "nope: command not found\n");
	/* Found, but nowhere executable: 126, as a shell says it. */
	EXPECT_EXIT(resolve, "only-readable", 126, "only-readable: Permission denied\n");
	snprintf(message, sizeof(message), "%s: Permission denied\n", unit_path(a, "prog"));
	EXPECT_EXIT(resolve, (void *)unit_path(a, "prog"), 126, message);
	EXPECT_EXIT(resolve, "/nonexistent/x", 127, "/nonexistent/x: No such file or directory\n");
	EXPECT_EXIT(resolve, "", 127, ": No such file or directory\n");
	snprintf(message, sizeof(message), "%s: Permission denied\n", a);
	EXPECT_EXIT(resolve, (void *)a, 126, message);
	/* An empty PATH entry is the working directory. */
	snprintf(path, sizeof(path), "%s::%s", a, b);
	CHECK(setenv("PATH", path, 1) == 0);
	CHECK(chdir(c) == 0);
	CHECK_STR(resolve_program("tool"), "tool");
	/* No PATH at all: the shell's default one. */
	CHECK(unsetenv("PATH") == 0);
	{
		const char *sh = resolve_program("sh");

		CHECK(strcmp(sh, "/usr/local/bin/sh") == 0 || strcmp(sh, "/usr/bin/sh") == 0 ||
		      strcmp(sh, "/bin/sh") == 0);
	}
	EXPECT_EXIT(resolve, "tool", 127, "tool: command not found\n");
	check_announce_start();
	return unit_done();
}

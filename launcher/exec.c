/*
 * The program: ARGV[0] looked up as execvp would, before the partial-enforcement
 * notice, and a command that cannot be executed reported as a shell reports it; and
 * the word to the caller that the command starts (--started-fd).
 */
#include "landlock-run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

TESTABLE int check_executable(const char *path)
{
	struct stat st;
	int fd;

	if (stat(path, &st) != 0)
		return errno;
	if (!S_ISREG(st.st_mode))
		return EACCES;
	if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) != 0)
		return errno;
	/*
	 * access(2) does not consult Landlock.  Every rule we add grants
	 * READ_FILE together with EXECUTE, so a refused read predicts a
	 * refused exec whenever ordinary permissions allow the read.
	 */
	if (faccessat(AT_FDCWD, path, R_OK, AT_EACCESS) == 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return errno;
		close(fd);
	}
	return 0;
}

/*
 * The command could not be executed: that is the command's result, as in a
 * shell (127 not found, 126 found but not executable), not a launcher failure,
 * so the line says it as a shell does, without the "landlock-run:" prefix.
 */
#define EXIT_NOT_FOUND 127
#define EXIT_NOT_EXECUTABLE 126

_Noreturn void exec_failed(const char *name, int err)
{
	if (err == ENOENT && *name != '\0' && strchr(name, '/') == NULL)
		fprintf(stderr, "%s: command not found\n", name);
	else
		fprintf(stderr, "%s: %s\n", name, strerror(err));
	leave(err == ENOENT ? EXIT_NOT_FOUND : EXIT_NOT_EXECUTABLE);
}

/*
 * Resolve NAME as execvp would, so that a missing or forbidden program is
 * reported before the partial-enforcement notice, never after it.
 */
char *resolve_program(char *name)
{
	const char *dirs = getenv("PATH");
	int err, saw_eacces = 0;

	if (*name == '\0' || strchr(name, '/') != NULL) {
		err = check_executable(name);
		if (err != 0)
			exec_failed(name, err);
		return name;
	}
	if (dirs == NULL)
		dirs = "/usr/local/bin:/usr/bin:/bin";
	for (const char *dir = dirs;; dir++) {
		size_t len = strcspn(dir, ":");
		char *candidate;

		/* An empty PATH entry means the current directory. */
		if (asprintf(&candidate, "%.*s%s%s", (int)len, dir,
			     len ? "/" : "", name) < 0)
			fatal("out of memory");
		err = check_executable(candidate);
		if (err == 0)
			return candidate;
		saw_eacces |= err == EACCES;
		free(candidate);
		dir += len;
		if (*dir == '\0')
			break;
	}
	exec_failed(name, saw_eacces ? EACCES : ENOENT);
}

/*
 * --started-fd N: a socket (one end of the caller's socketpair, made close-on-exec by
 * `started_fd_option`) on which the launcher says the command starts, out of band:
 * the command's own stderr may hold any line, one that reads like the launcher's fatal
 * line too, and the caller tells a launcher that failed from a command that ran by
 * this alone.  Closed on exec, so the command never holds it; a socket, so no process
 * can reopen the caller's end through /proc.
 *
 * Sent after every fallible step of the launcher's own, just before the exec: what
 * fails from here on (the exec itself: 127 or 126, as a shell says it) is the
 * command's.  A caller gone (EPIPE) or a full buffer is no reason to stop the command.
 */
void announce_start(int fd)
{
	if (fd > 2)
		(void)!send(fd, "1", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

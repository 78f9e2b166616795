/* The unit tests' checks and helpers (unit.h). */
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Shared with every child of unit_fork(): their checks count too. */
static struct counts {
	int checks, failures;
} *counts;
static int failures_at_fork;
static char tmpdir[64];

static struct counts *shared(void)
{
	if (counts == NULL) {
		counts = mmap(NULL, sizeof(*counts), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (counts == MAP_FAILED) {
			perror("mmap");
			exit(2);
		}
	}
	return counts;
}

void unit_check(int ok, const char *what, const char *file, int line)
{
	__atomic_add_fetch(&shared()->checks, 1, __ATOMIC_SEQ_CST);
	if (!ok) {
		__atomic_add_fetch(&shared()->failures, 1, __ATOMIC_SEQ_CST);
		printf("FAIL %s:%d: %s\n", file, line, what);
	}
}

void unit_check_eq(unsigned long long actual, unsigned long long expected, const char *what,
		   const char *file, int line)
{
	unit_check(actual == expected, what, file, line);
	if (actual != expected)
		printf("     got %llu (%#llx), expected %llu (%#llx)\n", actual, actual, expected,
		       expected);
}

void unit_check_str(const char *actual, const char *expected, const char *what,
		    const char *file, int line)
{
	int same = actual == expected ||
		(actual != NULL && expected != NULL && strcmp(actual, expected) == 0);

	unit_check(same, what, file, line);
	if (!same)
		printf("     got \"%s\", expected \"%s\"\n", actual ? actual : "(null)",
		       expected ? expected : "(null)");
}

int unit_fork(void)
{
	int pid;

	shared();
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0)
		failures_at_fork = shared()->failures;
	return pid;
}

_Noreturn void unit_child_exit(void)
{
	fflush(NULL);
	_exit(shared()->failures > failures_at_fork ? 1 : 0);
}

int unit_wait(int pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void unit_expect_exit(void (*fn)(void *), void *arg, int status, const char *err,
		      const char *what, const char *file, int line)
{
	char output[4096];
	size_t got = 0;
	int pipefd[2], pid, ended;

	if (pipe(pipefd) != 0) {
		perror("pipe");
		exit(2);
	}
	pid = unit_fork();
	if (pid == 0) {
		close(pipefd[0]);
		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[1]);
		fn(arg);
		fflush(NULL);
		_exit(0);
	}
	close(pipefd[1]);
	for (;;) {
		ssize_t n = read(pipefd[0], output + got, sizeof(output) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(pipefd[0]);
	output[got] = '\0';
	ended = unit_wait(pid);
	unit_check(ended == status, what, file, line);
	if (ended != status)
		printf("     exited %d, expected %d (stderr: \"%s\")\n", ended, status, output);
	if (err != NULL)
		unit_check_str(output, err, what, file, line);
}

void unit_expect_fatal(void (*fn)(void *), void *arg, const char *message,
		       const char *what, const char *file, int line)
{
	char line_text[1024];

	snprintf(line_text, sizeof(line_text), "landlock-run: %s\n", message);
	unit_expect_exit(fn, arg, LAUNCHER_FAILURE, line_text, what, file, line);
}

char **unit_argv(const char *line, int *argc)
{
	char *text = strdup(line), **argv = calloc(strlen(line) + 2, sizeof(char *));
	int n = 0;

	if (text == NULL || argv == NULL) {
		perror("unit_argv");
		exit(2);
	}
	argv[n++] = "landlock-run";
	for (char *word = strtok(text, " "); word != NULL; word = strtok(NULL, " "))
		argv[n++] = word;
	argv[n] = NULL;
	*argc = n;
	return argv;
}

const char *unit_tmpdir(void)
{
	if (tmpdir[0] == '\0') {
		strcpy(tmpdir, "/tmp/launcher-unit-XXXXXX");
		if (mkdtemp(tmpdir) == NULL) {
			perror("mkdtemp");
			exit(2);
		}
	}
	return tmpdir;
}

const char *unit_path(const char *dir, const char *name)
{
	char *path = malloc(strlen(dir) + strlen(name) + 2);

	if (path == NULL) {
		perror("unit_path");
		exit(2);
	}
	sprintf(path, "%s/%s", dir, name);
	return path;
}

const char *unit_status(const char *field)
{
	static char value[256];
	char line[512];
	size_t len = strlen(field);
	FILE *file = fopen("/proc/self/status", "re");

	value[0] = '\0';
	if (file == NULL)
		return value;
	while (fgets(line, sizeof(line), file) != NULL)
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			char *start = line + len + 1;

			start += strspn(start, " \t");
			start[strcspn(start, "\n")] = '\0';
			snprintf(value, sizeof(value), "%s", start);
			break;
		}
	fclose(file);
	return value;
}

int unit_done(void)
{
	if (tmpdir[0] != '\0') {
		char command[200];

		/* Mode-000 leftovers included: rm -rf as the test's own user. */
		snprintf(command, sizeof(command), "chmod -R u+rwx %s 2>/dev/null; rm -rf %s",
			 tmpdir, tmpdir);
		if (system(command) != 0)
			printf("could not remove %s\n", tmpdir);
	}
	printf("%d checks, %d failed\n", shared()->checks, shared()->failures);
	return shared()->failures == 0 ? 0 : 1;
}

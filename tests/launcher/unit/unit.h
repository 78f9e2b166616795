/*
 * The launcher's unit tests (tests/launcher/test_units.py builds and runs them): each
 * test_<mechanism>.c links with every launcher C file, built with -DLAUNCHER_UNIT_TEST
 * (no main there; the TESTABLE helpers external), with the launcher's own compiler
 * and flags.  A test program prints one line per failed check and, last,
 * "<n> checks, <m> failed"; it exits 0 only when none failed.
 */
#ifndef UNIT_H
#define UNIT_H

#include "landlock-run.h"

#include <stddef.h>
#include <stdint.h>

#define CHECK(cond) unit_check((cond) != 0, #cond, __FILE__, __LINE__)
#define CHECK_EQ(actual, expected) \
	unit_check_eq((unsigned long long)(actual), (unsigned long long)(expected), \
		      #actual " == " #expected, __FILE__, __LINE__)
#define CHECK_STR(actual, expected) \
	unit_check_str((actual), (expected), #actual, __FILE__, __LINE__)

/*
 * fn(arg) in a child with its stderr captured: it must exit with `status` (a
 * function that returns exits 0) and write exactly `err` to stderr (NULL: anything).
 */
#define EXPECT_EXIT(fn, arg, status, err) \
	unit_expect_exit((fn), (arg), (status), (err), #fn, __FILE__, __LINE__)
/* A launcher failure: exit 125 and the one line "landlock-run: <message>". */
#define EXPECT_FATAL(fn, arg, message) \
	unit_expect_fatal((fn), (arg), (message), #fn, __FILE__, __LINE__)

void unit_check(int ok, const char *what, const char *file, int line);
void unit_check_eq(unsigned long long actual, unsigned long long expected, const char *what,
		   const char *file, int line);
void unit_check_str(const char *actual, const char *expected, const char *what,
		    const char *file, int line);
void unit_expect_exit(void (*fn)(void *), void *arg, int status, const char *err,
		      const char *what, const char *file, int line);
void unit_expect_fatal(void (*fn)(void *), void *arg, const char *message,
		       const char *what, const char *file, int line);

/* A writable argv from `line`, split on single spaces, argv[0] "landlock-run". */
char **unit_argv(const char *line, int *argc);
/* A fresh directory of the test's own (under /tmp), removed by unit_done(). */
const char *unit_tmpdir(void);
/* `dir`/`name`, in a buffer that lives as long as the test. */
const char *unit_path(const char *dir, const char *name);
/* The first line of /proc/self/status that starts with `field`, value only ("" if none). */
const char *unit_status(const char *field);
/* fork(), stdout flushed first: the child's exit never repeats the parent's output. */
int unit_fork(void);
/* In a child of unit_fork(): exit 0 when none of its own checks failed, else 1. */
_Noreturn void unit_child_exit(void);
/* The child `pid`'s exit status (-1: it did not exit normally). */
int unit_wait(int pid);
/* The summary line; the exit status of the test program. */
int unit_done(void);

#endif

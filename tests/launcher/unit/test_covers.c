/*
 * covers.c: the path rules the covers are planned by (what lies beneath what, which
 * kept path is cloned, where a kept path lands in a fresh view, whether the working
 * directory is clear of every cover), placeholders, and the covers mounted for real
 * in a mount namespace of a child's own, as bwrap's filter stage's read-only mounts.
 */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void beneath(void)
{
	CHECK(covered_by("/a", "/a"));
	CHECK(covered_by("/a", "/a/b"));
	CHECK(covered_by("/a", "/a/"));
	CHECK(covered_by("/a/", "/a/b"));
	CHECK(covered_by("/a//", "/a"));
	CHECK(!covered_by("/a", "/ab"));
	CHECK(!covered_by("/a/b", "/a"));
	CHECK(!covered_by("/a/b", "/a/bc/d"));
	CHECK(covered_by("/", "/"));
	CHECK(covered_by("/", "/etc/passwd"));
	CHECK(covered_by("//", "/etc"));
}

static void fresh_planning(void)
{
	const char *dirs[] = { "/run", "/tmp", "/" };
	const char *keeps[] = { "/run/a", "/run/a/b", "/run/c", "/run/a", "/run/ab" };
	struct fresh_spec fresh = { .dirs = dirs, .ndirs = 2, .keeps = keeps, .nkeeps = 5 };

	/* Strictly beneath a fresh directory: the directory itself is not in its view. */
	CHECK_EQ(fresh_dir_of(&fresh, "/run/user/1"), 0);
	CHECK_EQ(fresh_dir_of(&fresh, "/tmp/x"), 1);
	CHECK_EQ(fresh_dir_of(&fresh, "/run"), -1);
	CHECK_EQ(fresh_dir_of(&fresh, "/runx/y"), -1);
	CHECK_EQ(fresh_dir_of(&fresh, "/var/run"), -1);
	CHECK_STR(fresh_relative("/run", "/run/user/1"), "user/1");
	CHECK_STR(fresh_relative("/", "/tmp/x"), "tmp/x");
	/* One clone per tree: a kept path beneath another, or a repeat, comes with it. */
	CHECK(!kept_beneath_another(&fresh, 0));
	CHECK(kept_beneath_another(&fresh, 1));
	CHECK(!kept_beneath_another(&fresh, 2));
	CHECK(kept_beneath_another(&fresh, 3));
	CHECK(!kept_beneath_another(&fresh, 4));
}

static void any_cover(void)
{
	const char *one[] = { "/x" };
	struct mount_spec mount = { MOUNT_PIN, NULL, "/x" };
	struct options opt = { 0 };

	CHECK(!has_covers(&opt));
	opt.npaths = 1;
	opt.private_network = 1;
	opt.fresh.keeps = one;
	opt.fresh.nkeeps = 1;	/* kept paths alone cover nothing */
	CHECK(!has_covers(&opt));
	opt = (struct options){ .hidden = one, .nhidden = 1 };
	CHECK(has_covers(&opt));
	opt = (struct options){ .unreadable = one, .nunreadable = 1 };
	CHECK(has_covers(&opt));
	opt = (struct options){ .mounts = &mount, .nmounts = 1 };
	CHECK(has_covers(&opt));
	opt = (struct options){ .read_only_host = 1 };
	CHECK(has_covers(&opt));
	opt = (struct options){ .fresh = { .dirs = one, .ndirs = 1 } };
	CHECK(has_covers(&opt));
	opt = (struct options){ .fresh = { .sockets = one, .nsockets = 1 } };
	CHECK(has_covers(&opt));
}

/* Whether the working directory may be kept when it cannot be entered again by name. */
static void workdir_clear(const char *tmp)
{
	const char *a = unit_path(tmp, "a"), *inner = unit_path(a, "b");
	const char *other = unit_path(tmp, "c"), *link = unit_path(tmp, "link");
	const char *cover[1];
	struct mount_spec mount = { MOUNT_READ_ONLY, NULL, NULL };
	struct options opt = { .unreadable = cover, .nunreadable = 1 };

	CHECK(mkdir(a, 0755) == 0 && mkdir(inner, 0755) == 0 && mkdir(other, 0755) == 0);
	CHECK(symlink(a, link) == 0);
	cover[0] = a;
	CHECK(!clear_of_covers(inner, &opt));
	cover[0] = other;
	CHECK(clear_of_covers(inner, &opt));
	/* A cover is judged where it really leads. */
	cover[0] = link;
	CHECK(!clear_of_covers(inner, &opt));
	/* One that does not exist yet covers what its name is above. */
	cover[0] = unit_path(tmp, "a");
	CHECK(!clear_of_covers(unit_path(inner, "gone"), &opt));
	cover[0] = unit_path(tmp, "nothing");
	CHECK(clear_of_covers(inner, &opt));
	CHECK(!clear_of_covers(unit_path(cover[0], "x"), &opt));
	/* Every kind of cover counts: hidden, protected, fresh. */
	opt = (struct options){ .hidden = cover, .nhidden = 1 };
	cover[0] = a;
	CHECK(!clear_of_covers(inner, &opt));
	mount.path = tmp;
	opt = (struct options){ .mounts = &mount, .nmounts = 1 };
	CHECK(!clear_of_covers(inner, &opt));
	opt = (struct options){ .fresh = { .dirs = cover, .ndirs = 1 } };
	CHECK(!clear_of_covers(inner, &opt));
	CHECK(clear_of_covers(other, &opt));
}

static int is_directory(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void placeholders(const char *tmp)
{
	const char *dir = unit_path(tmp, "place"), *link = unit_path(tmp, "place-link");
	const char *existing = unit_path(dir, "existing");
	int fd;

	CHECK(mkdir(dir, 0755) == 0 && symlink(dir, link) == 0);
	fd = make_placeholder(unit_path(dir, "d"), 1);
	CHECK(fd >= 0 && is_directory(unit_path(dir, "d")));
	close(fd);
	fd = make_placeholder(unit_path(dir, "f"), 0);
	CHECK(fd >= 0 && is_file(unit_path(dir, "f")));
	close(fd);
	/* Never replacing anything. */
	fd = open(existing, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, "kept", 4) == 4);
	close(fd);
	fd = make_placeholder(existing, 0);
	CHECK(fd >= 0);
	close(fd);
	fd = open(existing, O_RDONLY | O_CLOEXEC);
	{
		char text[8] = { 0 };

		CHECK(read(fd, text, sizeof(text)) == 4 && strcmp(text, "kept") == 0);
	}
	close(fd);
	/* Nothing made through a symlink in the parent, nor for a relative path. */
	errno = 0;
	CHECK(make_placeholder(unit_path(link, "x"), 0) < 0 && errno == ELOOP);
	CHECK(access(unit_path(dir, "x"), F_OK) != 0);
	errno = 0;
	CHECK(make_placeholder("relative", 1) < 0 && errno == ENOENT);
	errno = 0;
	CHECK(make_placeholder(unit_path(tmp, "missing/x"), 1) < 0 && errno == ENOENT);
}

static void remount_a_directory(void *path)
{
	struct mount_spec mount = { MOUNT_REMOUNT_RO, NULL, path };
	struct options opt = { .mounts = &mount, .nmounts = 1 };

	if (private_namespaces(CLONE_NEWNS) != 0)
		_exit(3);
	mount_protections(&opt);
}

/*
 * bwrap's filter stage's own read-only mounts, in a child's own mount namespace:
 * --bind-ro-try binds an existing path read-only and passes over a missing one (no
 * placeholder made), --remount-ro makes that one mount read-only and leaves what is
 * bound beneath it as it was; a path that is no mount's root is refused.
 */
static void read_only_mounts(const char *tmp)
{
	const char *ro = unit_path(tmp, "ro-try"), *gone = unit_path(tmp, "ro-gone");
	const char *view = unit_path(tmp, "view"), *writable = unit_path(tmp, "view-rw");
	char message[512];
	int pid;

	CHECK(mkdir(ro, 0755) == 0 && mkdir(view, 0755) == 0 && mkdir(writable, 0755) == 0);
	pid = unit_fork();
	if (pid == 0) {
		struct mount_spec mounts[] = { { MOUNT_READ_ONLY_TRY, NULL, ro },
					       { MOUNT_READ_ONLY_TRY, NULL, gone },
					       { MOUNT_REMOUNT_RO, NULL, view } };
		struct options opt = { .mounts = mounts, .nmounts = 3 };

		CHECK_EQ(private_namespaces(CLONE_NEWNS), 0);
		CHECK(mount("tmpfs", view, "tmpfs", 0, "mode=0755") == 0);
		CHECK(mkdir(unit_path(view, "rw"), 0755) == 0);
		CHECK(mount(writable, unit_path(view, "rw"), NULL, MS_BIND, NULL) == 0);
		mount_protections(&opt);
		errno = 0;
		CHECK(mkdir(unit_path(ro, "x"), 0755) != 0 && errno == EROFS);
		CHECK(access(gone, F_OK) != 0);
		errno = 0;
		CHECK(mkdir(unit_path(view, "x"), 0755) != 0 && errno == EROFS);
		CHECK(mkdir(unit_path(unit_path(view, "rw"), "y"), 0755) == 0);
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
	/* On the host: the writable directory got the write made through the view. */
	CHECK(is_directory(unit_path(writable, "y")));
	CHECK(access(unit_path(ro, "."), W_OK) == 0);
	snprintf(message, sizeof(message), "cannot make %s read-only: Invalid argument", ro);
	EXPECT_FATAL(remount_a_directory, (void *)ro, message);
}

static void covers_hide_the_workdir(void *cwd)
{
	const char *cover[1] = { unit_path(unit_tmpdir(), "secret") };
	struct options opt = { .unreadable = cover, .nunreadable = 1 };

	if (private_namespaces(CLONE_NEWNS) != 0 || chdir(cwd) != 0)
		_exit(3);
	mount_covers(&opt);
}

/* The covers, mounted in a child's own mount namespace, then every capability gone. */
static void mounted(const char *tmp)
{
	const char *secret = unit_path(tmp, "secret"), *sock = unit_path(tmp, "sock");
	const char *empty = unit_path(tmp, "empty"), *kept = unit_path(tmp, "kept");
	const char *protected_dir = unit_path(tmp, "protected");
	int listener = socket(AF_UNIX, SOCK_STREAM, 0), fd, pid;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char message[512];

	CHECK(mkdir(secret, 0755) == 0 && mkdir(kept, 0755) == 0 &&
	      mkdir(protected_dir, 0755) == 0 && mkdir(unit_path(secret, "inner"), 0755) == 0);
	fd = open(unit_path(secret, "key"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	close(fd);
	fd = open(empty, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	close(fd);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock);
	CHECK(bind(listener, (struct sockaddr *)&addr, sizeof(addr)) == 0 && listen(listener, 4) == 0);
	pid = unit_fork();
	if (pid == 0) {
		const char *hidden[] = { sock }, *unreadable[] = { secret };
		struct mount_spec mounts[] = { { MOUNT_READ_ONLY, NULL, protected_dir },
					       { MOUNT_EMPTY_DIR, NULL, unit_path(tmp, "new-dir") } };
		struct options opt = { .empty = empty, .hidden = hidden, .nhidden = 1,
				       .unreadable = unreadable, .nunreadable = 1,
				       .mounts = mounts, .nmounts = 2 };
		int client = socket(AF_UNIX, SOCK_STREAM, 0);

		CHECK_EQ(private_namespaces(CLONE_NEWNS), 0);
		CHECK(chdir(kept) == 0);
		mount_covers(&opt);
		drop_capabilities();
		errno = 0;
		CHECK(open(unit_path(secret, "key"), O_RDONLY | O_CLOEXEC) < 0 && errno == EACCES);
		errno = 0;
		CHECK(open(secret, O_RDONLY | O_DIRECTORY | O_CLOEXEC) < 0 && errno == EACCES);
		errno = 0;
		CHECK(connect(client, (struct sockaddr *)&addr, sizeof(addr)) != 0 &&
		      errno == ECONNREFUSED);
		errno = 0;
		CHECK(mkdir(unit_path(protected_dir, "x"), 0755) != 0 && errno == EROFS);
		/* A placeholder made for a missing protected path, and bound read-only. */
		CHECK(is_directory(unit_path(tmp, "new-dir")));
		errno = 0;
		CHECK(mkdir(unit_path(unit_path(tmp, "new-dir"), "x"), 0755) != 0 && errno == EROFS);
		/* Still in the directory it started in. */
		{
			char cwd[4096];

			CHECK(getcwd(cwd, sizeof(cwd)) != NULL && strcmp(cwd, kept) == 0);
		}
		unit_child_exit();
	}
	CHECK_EQ(unit_wait(pid), 0);
	/* On the host, nothing changed. */
	fd = open(unit_path(secret, "key"), O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	close(fd);
	CHECK(access(unit_path(protected_dir, "."), W_OK) == 0);
	close(listener);
	/* A working directory beneath a cover is refused: its name leads elsewhere now. */
	snprintf(message, sizeof(message),
		 "the working directory %s/inner is hidden from the command: run it elsewhere",
		 secret);
	EXPECT_FATAL(covers_hide_the_workdir, (void *)unit_path(secret, "inner"), message);
}

int main(void)
{
	const char *tmp = unit_tmpdir();

	beneath();
	fresh_planning();
	any_cover();
	workdir_clear(tmp);
	placeholders(tmp);
	mounted(tmp);
	read_only_mounts(tmp);
	return unit_done();
}

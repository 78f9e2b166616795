/*
 * The covers: what the call's mount namespace changes, so the command cannot reach
 * what it must not, whatever its Landlock rules say (the namespaced tier, and
 * --filters-only's --hide-socket and --deny-read).  In order: the read-only host,
 * hidden sockets, unreadable paths, protected binds, then the fresh views over them
 * all; the working directory is entered again through them at the end.
 *
 * --hide-socket PATH (with --empty FILE, an empty file): a network namespace
 * does not cover named Unix sockets, which connect() finds through the file
 * system.  Each PATH that is still a socket is covered with a read-only bind of
 * FILE in a mount namespace of the command's own (connect() then meets a
 * regular file: ECONNREFUSED); one that is gone is skipped.  The namespace is
 * made as for --private-ipc; inside a runner (--filters-only) that takes
 * CAP_SYS_ADMIN, which the runner leaves the launcher for this (bwrap
 * --cap-add) and the launcher drops before exec like every other capability.
 *
 * --fresh-dir DIR, --keep PATH, --bind-socket SOCKET VIEW (not --plain): DIR, a
 * runtime directory where daemons bind sockets (/run, /tmp), becomes an empty
 * read-only tmpfs in the call's mount namespace, after every other mount, so a
 * socket bound there after the call started is out of reach too; each --keep PATH
 * beneath it is bound back as it was, and each SOCKET at VIEW (see fresh_views).
 *
 * --deny-read PATH: each PATH (a real path; one that is gone is skipped) is covered,
 * in the same mount namespace, by an empty file or directory of mode 000 on a
 * read-only tmpfs of the launcher's own: with every capability dropped, reading,
 * listing, writing or changing it fails (EACCES, or EROFS for a write), for root
 * too, and the mount cannot be undone by the command (its namespace's mounts are
 * locked in any namespace it makes).
 *
 * Every target is opened without following a symlink (open_grant) and the mount is
 * attached to that very dentry: nothing can be swapped in between.
 */
#include "landlock-run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- The new mount API (include/uapi/linux/mount.h) ---- */

#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#define TREE_CLONE 1U			/* OPEN_TREE_CLONE */
#define FROM_EMPTY_PATH 0x04U		/* MOVE_MOUNT_F_EMPTY_PATH */
#define TO_EMPTY_PATH 0x40U		/* MOVE_MOUNT_T_EMPTY_PATH */
#define ATTR_RDONLY 0x01ULL		/* MOUNT_ATTR_RDONLY */

struct mount_attributes {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};

/* ---- Paths ---- */

/*
 * Whether `path` is `cover` or lies beneath it, component-wise (as strings: the caller
 * passes real paths).
 */
int covered_by(const char *cover, const char *path)
{
	size_t len = strlen(cover);

	while (len > 1 && cover[len - 1] == '/')
		len--;
	return strncmp(cover, path, len) == 0 &&
		(path[len] == '\0' || path[len] == '/' || (len == 1 && cover[0] == '/'));
}

/* ---- Hiding named Unix sockets (--hide-socket) ---- */

/*
 * A detached, read-only bind of `empty`; each hidden socket gets a clone of it.
 * mount_setattr needs Linux 5.12 (Landlock needs 5.13); where it is missing the
 * clone must be read-only already (under bwrap, whose tree is).
 */
static int empty_mount(const char *empty)
{
	struct mount_attributes attr = { .attr_set = ATTR_RDONLY };
	struct statvfs info;
	int fd = (int)syscall(__NR_open_tree, AT_FDCWD, empty, TREE_CLONE | O_CLOEXEC);

	if (fd < 0)
		fatal("cannot hide sockets: cannot bind %s: %s", empty, strerror(errno));
	if (syscall(__NR_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0) {
		if (errno != ENOSYS || fstatvfs(fd, &info) != 0 || !(info.f_flag & ST_RDONLY))
			fatal("cannot hide sockets: cannot make %s read-only: %s", empty,
			      strerror(errno));
	}
	return fd;
}

/*
 * Cover each path that is still a socket with a clone of `empty`.  The socket is
 * opened without following a symlink (the caller resolved its real path) and the
 * bind is attached to that very dentry: nothing can swap it in between.  One
 * that is gone, or that this process cannot reach (then neither can the
 * command, which has the same credentials and no capability), is skipped.
 */
static void hide_sockets(const char *empty, const char **paths, int count)
{
	int source = empty_mount(empty);

	for (int i = 0; i < count; i++) {
		struct stat st;
		int target = open_grant(paths[i]), clone;

		if (target < 0) {
			if (errno == ENOENT || errno == EACCES || errno == ENOTDIR)
				continue;
			fatal("cannot hide the socket %s: %s", paths[i], strerror(errno));
		}
		if (fstat(target, &st) != 0)
			fatal("cannot hide the socket %s: %s", paths[i], strerror(errno));
		if (!S_ISSOCK(st.st_mode)) {
			close(target);
			continue;
		}
		clone = (int)syscall(__NR_open_tree, source, "",
				     TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH);
		if (clone < 0)
			fatal("cannot hide the socket %s: %s", paths[i], strerror(errno));
		/* ENOENT: the socket was being removed meanwhile (nothing to cover). */
		if (syscall(__NR_move_mount, clone, "", target, "",
			    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0 && errno != ENOENT)
			fatal("cannot hide the socket %s: %s", paths[i], strerror(errno));
		close(clone);
		close(target);
	}
	close(source);
}

/* ---- Hiding what no command may read (--deny-read) ---- */

#ifndef __NR_fsopen
#define __NR_fsopen 430
#endif
#ifndef __NR_fsconfig
#define __NR_fsconfig 431
#endif
#ifndef __NR_fsmount
#define __NR_fsmount 432
#endif
#define FS_CLOEXEC 1U			/* FSOPEN_CLOEXEC, FSMOUNT_CLOEXEC */
#define CONFIG_SET_STRING 1U		/* FSCONFIG_SET_STRING */
#define CONFIG_CMD_CREATE 6U		/* FSCONFIG_CMD_CREATE */
#define TREE_RECURSIVE 0x8000U		/* AT_RECURSIVE, for open_tree and mount_setattr */
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

static void set_read_only(int mount_fd, const char *what)
{
	struct mount_attributes attr = { .attr_set = ATTR_RDONLY };

	if (syscall(__NR_mount_setattr, mount_fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) != 0)
		fatal("cannot hide %s: cannot make its cover read-only: %s", what, strerror(errno));
}

/*
 * A detached tmpfs of the launcher's own holding an empty file "f" and an empty
 * directory "d", both mode 000, the mount read-only: with no capability left,
 * opening either (or searching "d") fails with EACCES, for root too, and neither
 * can be chmod'ed back or written.
 */
static int unreadable_mount(void)
{
	int fs = (int)syscall(__NR_fsopen, "tmpfs", FS_CLOEXEC), mnt, file;

	if (fs < 0)
		fatal("cannot hide unreadable paths: cannot make a tmpfs: %s", strerror(errno));
	if (syscall(__NR_fsconfig, fs, CONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		fatal("cannot hide unreadable paths: cannot make a tmpfs: %s", strerror(errno));
	mnt = (int)syscall(__NR_fsmount, fs, FS_CLOEXEC, 0U);
	if (mnt < 0)
		fatal("cannot hide unreadable paths: cannot mount a tmpfs: %s", strerror(errno));
	close(fs);
	if (mkdirat(mnt, "d", 0) != 0 || fchmodat(mnt, "d", 0, 0) != 0)
		fatal("cannot hide unreadable paths: %s", strerror(errno));
	file = openat(mnt, "f", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
	if (file < 0 || fchmod(file, 0) != 0)
		fatal("cannot hide unreadable paths: %s", strerror(errno));
	close(file);
	set_read_only(mnt, "unreadable paths");
	return mnt;
}

/*
 * Cover each path with a clone of the unreadable file or directory (as it is a
 * file or a directory), attached to the very dentry opened without following a
 * symlink (the caller resolved the real path: one that became a link since fails
 * the call).  One that is gone is skipped: there is nothing left to read; so is one
 * this process cannot reach (a caller of less privilege than the one who listed
 * it): neither can the command, which has the same credentials and no capability.
 */
static void hide_unreadable(const char **paths, int count)
{
	int source = unreadable_mount();

	for (int i = 0; i < count; i++) {
		struct stat st;
		int target = open_grant(paths[i]), clone;

		if (target < 0) {
			if (errno == ENOENT || errno == EACCES || errno == ENOTDIR)
				continue;
			fatal("cannot hide %s: %s", paths[i], strerror(errno));
		}
		if (fstat(target, &st) != 0)
			fatal("cannot hide %s: %s", paths[i], strerror(errno));
		clone = (int)syscall(__NR_open_tree, source, S_ISDIR(st.st_mode) ? "d" : "f",
				     TREE_CLONE | O_CLOEXEC);
		if (clone < 0)
			fatal("cannot hide %s: %s", paths[i], strerror(errno));
		set_read_only(clone, paths[i]);
		if (syscall(__NR_move_mount, clone, "", target, "",
			    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
			fatal("cannot hide %s: %s", paths[i], strerror(errno));
		close(clone);
		close(target);
	}
	close(source);
}

/* ---- The read-only host (--read-only-host) ---- */

/*
 * --read-only-host (the namespaced tier): in the call's mount namespace every mount is
 * made read-only but the writable grants, which are bound back writable, as bwrap's
 * --ro-bind / / with its --bind grants.  Landlock refuses writing outside the grants
 * but not changing metadata there (chmod, chown, utimes, xattrs: FACTS.md); a
 * read-only mount refuses those too (EROFS), so the namespaced tier governs them as
 * bwrap does.  The grants are cloned before the tree goes read-only (their clones
 * stay writable) and attached over themselves after; covers and protected binds come
 * after, on top of both.  Devices (/dev/null, a terminal) are written through a
 * read-only mount as before.  Only this namespace's copies change: the host's
 * mounts are untouched.
 */
static void read_only_host(const char **paths, const int *grants, int count)
{
	struct mount_attributes attr = { .attr_set = ATTR_RDONLY };
	int *clones = calloc((size_t)count + 1, sizeof(int)), root;

	if (clones == NULL)
		fatal("out of memory");
	for (int i = 0; i < count; i++) {
		int at;

		clones[i] = -1;
		if (grants[i] != GRANT_WRITE || strcmp(paths[i], "/dev/null") == 0)
			continue;
		if ((at = open_grant(paths[i])) < 0)
			fatal("cannot keep %s writable: %s", paths[i], strerror(errno));
		clones[i] = (int)syscall(__NR_open_tree, at, "",
					 TREE_CLONE | TREE_RECURSIVE | O_CLOEXEC | AT_EMPTY_PATH);
		if (clones[i] < 0)
			fatal("cannot keep %s writable: %s", paths[i], strerror(errno));
		close(at);
	}
	if ((root = open_grant("/")) < 0 ||
	    syscall(__NR_mount_setattr, root, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
		    sizeof(attr)) != 0)
		fatal("cannot make the host read-only for the command: %s", strerror(errno));
	close(root);
	for (int i = 0; i < count; i++) {
		int at;

		if (clones[i] < 0)
			continue;
		if ((at = open_grant(paths[i])) < 0 ||
		    syscall(__NR_move_mount, clones[i], "", at, "",
			    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
			fatal("cannot keep %s writable: %s", paths[i], strerror(errno));
		close(at);
		close(clones[i]);
	}
	free(clones);
}

/* ---- Protected paths (--bind-ro, --bind-pin, --bind-file, --empty-dir) ---- */

/*
 * The empty file or directory a missing protected path is bound over, made here when
 * its caller did not (as bwrap makes its mount points): beside the path's parent,
 * opened without following a symlink, never replacing anything (O_EXCL, mkdirat).
 * Returns it opened as open_grant does, or -1 with errno.
 */
TESTABLE int make_placeholder(const char *path, int directory)
{
	char parent[4096];
	const char *name = strrchr(path, '/');
	int at, made;

	if (name == NULL || name == path || (size_t)(name - path) >= sizeof(parent)) {
		errno = ENOENT;
		return -1;
	}
	memcpy(parent, path, (size_t)(name - path));
	parent[name - path] = '\0';
	if ((at = open_grant(parent)) < 0)
		return -1;
	if (directory)
		made = mkdirat(at, name + 1, 0755);
	else {
		made = openat(at, name + 1, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (made >= 0)
			made = close(made);
	}
	close(at);
	if (made != 0 && errno != EEXIST)
		return -1;
	return open_grant(path);
}

/* An empty directory, mode 0755, on a read-only tmpfs of the launcher's own. */
static int empty_directory_mount(void)
{
	int fs = (int)syscall(__NR_fsopen, "tmpfs", FS_CLOEXEC), mnt;

	if (fs < 0 ||
	    syscall(__NR_fsconfig, fs, CONFIG_SET_STRING, "mode", "0755", 0) != 0 ||
	    syscall(__NR_fsconfig, fs, CONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		fatal("cannot protect paths: cannot make a tmpfs: %s", strerror(errno));
	mnt = (int)syscall(__NR_fsmount, fs, FS_CLOEXEC, 0U);
	if (mnt < 0)
		fatal("cannot protect paths: cannot mount a tmpfs: %s", strerror(errno));
	close(fs);
	set_read_only(mnt, "an empty directory");
	return mnt;
}

/*
 * The trust base's protected paths (the namespaced tier; bwrap binds the same): each
 * one bound in the call's mount namespace as its kind says, attached to the very
 * dentry opened without following a symlink (a link swapped in since the caller
 * resolved it fails the call).  A read-only bind cannot be undone by the command: it
 * holds no capability, and a mount namespace it makes locks these with the rest.
 */
static void bind_protected(const struct mount_spec *mounts, int count)
{
	struct mount_attributes attr = { .attr_set = ATTR_RDONLY };
	int empty = -1;

	for (int i = 0; i < count; i++) {
		const struct mount_spec *m = &mounts[i];
		int target = open_grant(m->path), from = target, clone;

		if (m->kind == MOUNT_REMOUNT_RO) {
			/* That mount alone (no AT_RECURSIVE): what is bound beneath it stays
			 * as it is.  A PATH that is no mount's root fails (EINVAL). */
			if (target < 0 ||
			    syscall(__NR_mount_setattr, target, "", AT_EMPTY_PATH, &attr,
				    sizeof(attr)) != 0)
				fatal("cannot make %s read-only: %s", m->path, strerror(errno));
			close(target);
			continue;
		}
		if (target < 0 && errno == ENOENT && m->kind == MOUNT_READ_ONLY_TRY)
			continue;
		if (target < 0 && errno == ENOENT &&
		    (m->kind == MOUNT_EMPTY_DIR || m->kind == MOUNT_FILE))
			target = make_placeholder(m->path, m->kind == MOUNT_EMPTY_DIR);
		if (target < 0)
			fatal("cannot protect %s: %s", m->path, strerror(errno));
		if (m->kind == MOUNT_FILE && (from = open_grant(m->source)) < 0)
			fatal("cannot protect %s: cannot open %s: %s", m->path, m->source,
			      strerror(errno));
		if (m->kind == MOUNT_EMPTY_DIR)
			from = empty >= 0 ? empty : (empty = empty_directory_mount());
		clone = (int)syscall(__NR_open_tree, from, "",
				     TREE_CLONE | TREE_RECURSIVE | O_CLOEXEC | AT_EMPTY_PATH);
		if (clone < 0)
			fatal("cannot protect %s: %s", m->path, strerror(errno));
		if (m->kind != MOUNT_PIN &&
		    syscall(__NR_mount_setattr, clone, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
			    sizeof(attr)) != 0)
			fatal("cannot protect %s: cannot make it read-only: %s", m->path,
			      strerror(errno));
		if (syscall(__NR_move_mount, clone, "", target, "",
			    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
			fatal("cannot protect %s: %s", m->path, strerror(errno));
		close(clone);
		if (from != target && from != empty)
			close(from);
		close(target);
	}
	if (empty >= 0)
		close(empty);
}

/* ---- Fresh views (--fresh-dir, --keep, --bind-socket) ---- */

/*
 * --fresh-dir DIR (the namespaced tier): a runtime directory where host daemons put
 * their sockets (/run, /tmp, $XDG_RUNTIME_DIR) becomes an empty read-only tmpfs in the
 * call's mount namespace, so a socket bound there after the call started is out of
 * the command's sight (the per-socket covers only reach the ones that existed).  Done
 * last, over every other mount: each --keep PATH beneath DIR (the call's roots, temp
 * directory, working directory, proxy socket) is cloned first, with every mount
 * beneath it (its grants' writability, covers and protected binds as they are), and
 * attached back at PATH inside the fresh view; each --bind-socket SOCKET VIEW (VIEW
 * beneath DIR, beneath no --keep) binds the host's SOCKET, read-only, at VIEW (a VIEW
 * beneath no DIR must be a socket already, and SOCKET is bound over it).  Their
 * mount points are made in the new tmpfs before it goes read-only; nothing is made
 * on the host.  A DIR that is gone is skipped; a kept path that is gone fails the call.
 */

/* The mount point for `relative` (beneath the tmpfs `root`): its directories, then a
 * directory or an empty file; opened as open_grant does. */
static int fresh_mount_point(int root, const char *relative, int directory, const char *path)
{
	char part[4096];
	int at = root, next;
	const char *start = relative;

	if (strlen(relative) >= sizeof(part))
		fatal("cannot keep %s in sight: the path is too long", path);
	for (;;) {
		const char *slash = strchr(start, '/');
		size_t len = slash ? (size_t)(slash - start) : strlen(start);

		memcpy(part, start, len);
		part[len] = '\0';
		if (len == 0 || strcmp(part, ".") == 0 || strcmp(part, "..") == 0)
			fatal("cannot keep %s in sight: not a plain absolute path", path);
		if (slash == NULL && !directory) {
			next = openat(at, part, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (next < 0 && errno != EEXIST)
				fatal("cannot keep %s in sight: %s", path, strerror(errno));
			if (next >= 0)
				close(next);
		} else if (mkdirat(at, part, 0755) != 0 && errno != EEXIST) {
			fatal("cannot keep %s in sight: %s", path, strerror(errno));
		}
		next = openat(at, part, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			fatal("cannot keep %s in sight: %s", path, strerror(errno));
		if (at != root)
			close(at);
		at = next;
		if (slash == NULL)
			return at;
		start = slash + 1;
	}
}

/* The fresh directory `path` lies beneath (-1: none). */
int fresh_dir_of(const struct fresh_spec *fresh, const char *path)
{
	for (int d = 0; d < fresh->ndirs; d++)
		if (covered_by(fresh->dirs[d], path) && strcmp(fresh->dirs[d], path) != 0)
			return d;
	return -1;
}

/* Where `path`, beneath the fresh directory `dir`, lies inside its tmpfs. */
TESTABLE const char *fresh_relative(const char *dir, const char *path)
{
	return path + strlen(dir) + (strcmp(dir, "/") != 0);
}

/* Whether --keep k lies beneath another --keep (or repeats an earlier one): the
 * other's clone brings it along, with every mount beneath it. */
TESTABLE int kept_beneath_another(const struct fresh_spec *fresh, int k)
{
	for (int j = 0; j < fresh->nkeeps; j++)
		if (j != k && covered_by(fresh->keeps[j], fresh->keeps[k]) &&
		    (strcmp(fresh->keeps[j], fresh->keeps[k]) != 0 || j < k))
			return 1;
	return 0;
}

/* A detached clone of `path` (its mounts beneath it too); *directory says what it is. */
static int clone_kept(const char *path, int recursive, int *directory)
{
	struct stat st;
	int at = open_grant(path), clone;

	if (at < 0 || fstat(at, &st) != 0)
		fatal("cannot keep %s in sight: %s", path, strerror(errno));
	*directory = S_ISDIR(st.st_mode);
	clone = (int)syscall(__NR_open_tree, at, "", TREE_CLONE | O_CLOEXEC | AT_EMPTY_PATH |
			     (recursive ? TREE_RECURSIVE : 0U));
	if (clone < 0)
		fatal("cannot keep %s in sight: %s", path, strerror(errno));
	close(at);
	return clone;
}

/* The detached clone *socket attached at the mount point `at` (VIEW); both closed. */
static void attach_socket(int *socket, int at, const char *view)
{
	if (syscall(__NR_move_mount, *socket, "", at, "", FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
		fatal("--bind-socket: cannot bind %s: %s", view, strerror(errno));
	close(at);
	close(*socket);
	*socket = -1;
}

static void fresh_views(const struct fresh_spec *fresh)
{
	int *keeps = calloc((size_t)fresh->nkeeps + 1, sizeof(int));
	int *keep_dir = calloc((size_t)fresh->nkeeps + 1, sizeof(int));
	int *sockets = calloc((size_t)fresh->nsockets + 1, sizeof(int));
	int unused;

	if (keeps == NULL || keep_dir == NULL || sockets == NULL)
		fatal("out of memory");
	/* Clones first: once a fresh view is up, what it covers is out of reach. */
	for (int k = 0; k < fresh->nkeeps; k++) {
		keeps[k] = -1;
		if (fresh_dir_of(fresh, fresh->keeps[k]) < 0 || kept_beneath_another(fresh, k))
			continue;
		keeps[k] = clone_kept(fresh->keeps[k], 1, &keep_dir[k]);
	}
	for (int s = 0; s < fresh->nsockets; s++) {
		const char *source = fresh->sockets[2 * s];
		struct stat st;

		if (stat(source, &st) != 0 || !S_ISSOCK(st.st_mode))
			fatal("--bind-socket: %s is no socket", source);
		sockets[s] = clone_kept(source, 0, &unused);
		set_read_only(sockets[s], source);
	}
	/* A VIEW beneath no fresh view is a socket in sight already (a granted agent's
	 * restricted socket put where its clients look for the full one): bound over it,
	 * never over anything else, and nothing is made on the host. */
	for (int s = 0; s < fresh->nsockets; s++) {
		const char *view = fresh->sockets[2 * s + 1];
		struct stat st;
		int at;

		if (fresh_dir_of(fresh, view) >= 0)
			continue;
		at = open_grant(view);
		if (at < 0 || fstat(at, &st) != 0 || !S_ISSOCK(st.st_mode))
			fatal("--bind-socket: %s is no socket to bind over", view);
		attach_socket(&sockets[s], at, view);
	}
	for (int d = 0; d < fresh->ndirs; d++) {
		struct stat st;
		int target = open_grant(fresh->dirs[d]), fs, root;

		if (target < 0) {
			if (errno == ENOENT)
				continue;
			fatal("cannot make %s fresh: %s", fresh->dirs[d], strerror(errno));
		}
		if (fstat(target, &st) != 0 || !S_ISDIR(st.st_mode))
			fatal("cannot make %s fresh: not a directory", fresh->dirs[d]);
		fs = (int)syscall(__NR_fsopen, "tmpfs", FS_CLOEXEC);
		if (fs < 0 ||
		    syscall(__NR_fsconfig, fs, CONFIG_SET_STRING, "mode", "0755", 0) != 0 ||
		    syscall(__NR_fsconfig, fs, CONFIG_CMD_CREATE, NULL, NULL, 0) != 0 ||
		    (root = (int)syscall(__NR_fsmount, fs, FS_CLOEXEC, 0U)) < 0)
			fatal("cannot make %s fresh: %s", fresh->dirs[d], strerror(errno));
		close(fs);
		if (syscall(__NR_move_mount, root, "", target, "", FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
			fatal("cannot make %s fresh: %s", fresh->dirs[d], strerror(errno));
		close(target);
		for (int k = 0; k < fresh->nkeeps; k++) {
			const char *path = fresh->keeps[k];
			int at;

			if (keeps[k] < 0 || fresh_dir_of(fresh, path) != d)
				continue;
			at = fresh_mount_point(root, fresh_relative(fresh->dirs[d], path),
					       keep_dir[k], path);
			if (syscall(__NR_move_mount, keeps[k], "", at, "",
				    FROM_EMPTY_PATH | TO_EMPTY_PATH) != 0)
				fatal("cannot keep %s in sight: %s", path, strerror(errno));
			close(at);
			close(keeps[k]);
			keeps[k] = -1;
		}
		for (int s = 0; s < fresh->nsockets; s++) {
			const char *view = fresh->sockets[2 * s + 1];
			int at;

			if (sockets[s] < 0 || fresh_dir_of(fresh, view) != d)
				continue;
			at = fresh_mount_point(root, fresh_relative(fresh->dirs[d], view), 0, view);
			attach_socket(&sockets[s], at, view);
		}
		/* Only the tmpfs itself: what was attached on it keeps its own flags. */
		set_read_only(root, fresh->dirs[d]);
		close(root);
	}
	for (int k = 0; k < fresh->nkeeps; k++)
		if (keeps[k] >= 0)
			close(keeps[k]);
	for (int s = 0; s < fresh->nsockets; s++)
		if (sockets[s] >= 0)
			fatal("--bind-socket: %s was not bound (its --fresh-dir is gone)",
			      fresh->sockets[2 * s + 1]);
	free(keeps);
	free(keep_dir);
	free(sockets);
}

/* ---- The working directory, through the covers ---- */

/* 0 when the canonical `cwd` is at or beneath `cover`, or its real place cannot be told. */
static int clear_of(const char *cwd, const char *cover)
{
	char real[4096];

	if (realpath(cover, real) != NULL)
		return !covered_by(real, cwd);
	/* A cover made where nothing was yet is above cwd only if named so. */
	return errno == ENOENT && cover[0] == '/' && !covered_by(cover, cwd);
}

/* 1 when the canonical `cwd` is clear of every cover the options mount. */
TESTABLE int clear_of_covers(const char *cwd, const struct options *opt)
{
	for (int i = 0; i < opt->nhidden; i++)
		if (!clear_of(cwd, opt->hidden[i]))
			return 0;
	for (int i = 0; i < opt->nunreadable; i++)
		if (!clear_of(cwd, opt->unreadable[i]))
			return 0;
	for (int i = 0; i < opt->nmounts; i++)
		if (!clear_of(cwd, opt->mounts[i].path))
			return 0;
	for (int i = 0; i < opt->fresh.ndirs; i++)
		if (!clear_of(cwd, opt->fresh.dirs[i]))
			return 0;
	return 1;
}

/*
 * The launcher was started in its working directory before the covers above were
 * mounted, so it still stands on the directory beneath any cover over it (or over
 * one of its parents), where relative names would reach what the cover hides.  Its
 * caller refuses such a directory before anything runs; should one become covered
 * in between (renamed beneath a covered path), entering it again by its path, now
 * through every cover, finds another directory or none, and the call fails.  A
 * caller without the right to walk to its own directory by name (an unprivileged
 * caller started inside a mode-700 tree) cannot enter it again; it keeps the one it
 * stands on when no cover is at or above it.  The path is read before the covers go
 * up (after, getcwd could name it through them).
 */
static void read_workdir(char *path, size_t size)
{
	if (getcwd(path, size) == NULL)
		fatal("cannot read the working directory: %s", strerror(errno));
	if (path[0] != '/')
		fatal("the working directory is out of the command's reach");
}

static void reenter_workdir(const char *path, const struct options *opt)
{
	struct stat before, after;

	if (stat(".", &before) != 0)
		fatal("cannot read the working directory %s: %s", path, strerror(errno));
	if (chdir(path) != 0) {
		if (errno == EACCES && clear_of_covers(path, opt))
			return;	/* still on `before`: no cover is over it */
		fatal("the working directory %s is hidden from the command: run it elsewhere",
		      path);
	}
	if (stat(".", &after) != 0 || before.st_dev != after.st_dev ||
	    before.st_ino != after.st_ino)
		fatal("the working directory %s is hidden from the command: run it elsewhere",
		      path);
}

/* ---- All of them ---- */

/* Whether the options ask for any cover (then the working directory is entered again). */
TESTABLE int has_covers(const struct options *opt)
{
	return opt->nhidden > 0 || opt->nunreadable > 0 || opt->nmounts > 0 ||
		opt->read_only_host || opt->fresh.ndirs > 0 || opt->fresh.nsockets > 0;
}

/*
 * The protected paths alone, in the mount namespace this process was started in
 * (--filters-only: bwrap's own, made for this call), and the working directory
 * entered again through them.  There, and not in a namespace of the command's own,
 * every process of the runner sees them too: /proc/PID/root of bwrap's init leads
 * to the same protected tree, whether or not a Landlock domain seals it.
 */
void mount_protections(const struct options *opt)
{
	char workdir[4096];

	if (opt->nmounts == 0)
		return;
	read_workdir(workdir, sizeof(workdir));
	bind_protected(opt->mounts, opt->nmounts);
	reenter_workdir(workdir, opt);
}

void mount_covers(const struct options *opt)
{
	char workdir[4096];

	if (!has_covers(opt))
		return;
	read_workdir(workdir, sizeof(workdir));
	if (opt->read_only_host)
		read_only_host(opt->paths, opt->writable, opt->npaths);
	if (opt->nhidden > 0)
		hide_sockets(opt->empty, opt->hidden, opt->nhidden);
	if (opt->nunreadable > 0)
		hide_unreadable(opt->unreadable, opt->nunreadable);
	if (opt->nmounts > 0)
		bind_protected(opt->mounts, opt->nmounts);
	/* Last: the fresh views go over everything above, and keep what the call needs. */
	if (opt->fresh.ndirs > 0 || opt->fresh.nsockets > 0)
		fresh_views(&opt->fresh);
	reenter_workdir(workdir, opt);
}

#include "handover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>
#include <linux/openat2.h>

#include "log.h"
#include "util.h"

/* /sbin/init is usually an absolute symlink (-> /bin/busybox): resolving it from here would look
 * in the initramfs, so the lookup must treat the new root as "/". */
int handover_check_init(const char *root, const char *init)
{
	struct open_how how = {O_PATH | O_CLOEXEC, 0, RESOLVE_IN_ROOT};
	struct stat st;
	int rfd, fd, e;
	pid_t pid;

	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return fail(errno, "open the new root %s", root);
	fd = (int)syscall(SYS_openat2, rfd, init, &how, sizeof(how));
	e = errno;
	if (close(rfd) != 0)
		return fail(errno, "close %s", root);
	if (fd >= 0) {
		if (fstat(fd, &st) != 0) {
			e = errno;
			if (close(fd) != 0)
				msg("close %s: %s", init, strerror(errno));
			return fail(e, "stat %s in %s", init, root);
		}
		if (close(fd) != 0)
			return fail(errno, "close %s", init);
		if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
			return fail(EACCES, "check %s in %s: not an executable file", init, root);
		return 0;
	}
	if (e != ENOSYS)
		return fail(e, "find %s in the new root %s", init, root);
	/* No openat2 (before 5.6): a child that chroots sees the links the way the new init will. */
	pid = fork();
	if (pid < 0)
		return fail(errno, "fork to check %s", init);
	if (pid == 0)
		_exit(chroot(root) == 0 && chdir("/") == 0 && stat(init, &st) == 0 && S_ISREG(st.st_mode) &&
				      (st.st_mode & 0111) ?
			      0 :
			      1);
	while (waitpid(pid, &e, 0) < 0)
		if (errno != EINTR)
			return fail(errno, "wait for the check of %s", init);
	if (!WIFEXITED(e) || WEXITSTATUS(e) != 0)
		return fail(ENOENT, "find an executable %s in the new root %s", init, root);
	return 0;
}

/* Free the initramfs' RAM. Never cross into another filesystem: the new root and the moved
 * mounts hang below / too, and deleting them would wipe the live system. */
static int delete_contents(int dfd, dev_t rootdev, int *errors)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;

	if (!d) {
		(*errors)++;
		return close(dfd);
	}
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			(*errors)++;
			continue;
		}
		if (st.st_dev != rootdev)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0 || delete_contents(sub, rootdev, errors) != 0)
				(*errors)++;
			/* a mount point left below keeps its directory busy; that is expected */
			if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0 && errno != EBUSY)
				(*errors)++;
		} else if (unlinkat(dirfd(d), e->d_name, 0) != 0) {
			(*errors)++;
		}
	}
	return closedir(d);
}

static int move_into(const char *what, const char *newroot)
{
	char dst[PATH_LEN + 16];

	if (snprintf(dst, sizeof(dst), "%s%s", newroot, what) >= (int)sizeof(dst))
		return fail(ENAMETOOLONG, "path %s%s", newroot, what);
	if (mkdir(dst, 0755) != 0 && errno != EEXIST)
		return fail(errno, "mkdir %s", dst);
	return do_mount(what, dst, NULL, MS_MOVE, NULL);
}

/* Past the point of no return: report, then exit (PID 1: the kernel panics and shows why). */
static _Noreturn void no_return(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void no_return(int err, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	if (vsnprintf(what, sizeof(what), fmt, ap) < 0)
		what[0] = '\0';
	va_end(ap);
	msg("%s: %s", what, strerror(err));
	msg("the initramfs is already deleted, so there is no rescue shell: PID 1 exits and the kernel panics");
	exit(1);
}

/* Undo the first n moves (a later one failed): the rescue shell needs /dev, /proc and /sys where they were. */
static void move_back(const char *const moves[], size_t n, const char *newroot)
{
	char src[PATH_LEN + 16];

	while (n-- > 0)
		if (snprintf(src, sizeof(src), "%s%s", newroot, moves[n]) >= (int)sizeof(src) ||
		    mount(src, moves[n], NULL, MS_MOVE, NULL) != 0)
			msg("move %s back to %s: %s", src, moves[n], strerror(errno));
}

int handover(const struct plan *p, char *const argv[])
{
	static const char *const moves[] = {"/run", "/dev", "/proc", "/sys"};
	static char *const envp[] = {"HOME=/", "TERM=linux", "PATH=/sbin:/bin:/usr/sbin:/usr/bin", NULL};
	struct statfs sfs;
	struct stat root_st, new_st;
	size_t i;
	int errors = 0, dfd, e;

	/* The checks switch_root makes in busybox and klibc, before anything is torn down. */
	if (stat("/", &root_st) != 0)
		return fail(errno, "stat /");
	if (stat(p->newroot, &new_st) != 0)
		return fail(errno, "stat %s", p->newroot);
	if (new_st.st_dev == root_st.st_dev)
		return fail(EINVAL, "switch to %s: it is not a mount point (same device as /)", p->newroot);
	if (statfs("/", &sfs) != 0)
		return fail(errno, "statfs /");
	if ((unsigned long)sfs.f_type != RAMFS_MAGIC && (unsigned long)sfs.f_type != TMPFS_MAGIC)
		return fail(EINVAL, "switch root: / is not the initramfs (ramfs/tmpfs), refusing to delete it");
	if (handover_check_init(p->newroot, p->init) != 0)
		return -1;
	for (i = 0; i < sizeof(moves) / sizeof(moves[0]); i++)
		if (move_into(moves[i], p->newroot) != 0) {
			move_back(moves, i, p->newroot);
			return -1;
		}
	if (chdir(p->newroot) != 0) {
		e = errno;
		move_back(moves, sizeof(moves) / sizeof(moves[0]), p->newroot);
		return fail(e, "chdir %s", p->newroot);
	}
	/* The point of no return: from here on the initramfs' programs (the rescue shell) are being deleted. */
	dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || delete_contents(dfd, root_st.st_dev, &errors) != 0)
		errors++;
	if (errors)
		msg("%d entries of the initramfs could not be deleted (RAM stays in use)", errors);
	if (mount(".", "/", NULL, MS_MOVE, NULL) != 0)
		no_return(errno, "move %s onto /", p->newroot);
	if (chroot(".") != 0)
		no_return(errno, "chroot %s", p->newroot);
	if (chdir("/") != 0)
		no_return(errno, "chdir / in the new root");
	msg("switching to %s", p->init);
	log_handover();
	execve(p->init, argv, envp);
	no_return(errno, "exec %s in the new root", p->init);
}

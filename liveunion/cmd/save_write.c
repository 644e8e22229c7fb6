/* save_write.c - `liveunion save`: the layer written: mksquashfs of the upper into a temporary name beside the
 * final one, fsync, a rename that replaces nothing, the directory synced; the temporary file removed on any
 * failure, Ctrl-C included. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "save.h"
#include "tool.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
	interrupted = sig;
}

static int run_mksquashfs(const char *upper, const char *tmp, const char *exclude)
{
	/* the option pairs kept together (clang-format would lay them out in columns) */
	/* clang-format off */
	const char *argv[] = {"mksquashfs", upper, tmp, "-noappend", "-comp", "zstd", "-xattrs", "-no-progress",
			      "-quiet", exclude[0] ? "-e" : NULL, exclude, NULL};
	/* clang-format on */
	int st;
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, PROG " save: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, PROG " save: cannot run mksquashfs: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, PROG " save: waitpid mksquashfs: %s\n", strerror(errno));
			return -1;
		}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !interrupted)
		return 0;
	if (WIFSIGNALED(st) || interrupted)
		fprintf(stderr, PROG " save: mksquashfs was stopped (%s)\n",
			strsignal(interrupted ? interrupted : WTERMSIG(st)));
	else if (WEXITSTATUS(st) != 127)
		fprintf(stderr, PROG " save: mksquashfs %s %s failed (exit %d)\n", upper, tmp, WEXITSTATUS(st));
	return -1;
}

static int fsync_path(const char *path, int flags, long long *size)
{
	struct stat st;
	int fd = open(path, flags | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	if (rc == 0 && size)
		rc = fstat(fd, &st) == 0 ? (*size = st.st_size, 0) : -1;
	if (close(fd) != 0)
		rc = -1;
	return rc;
}

/* rename that never replaces: a layer of that name that appeared meanwhile is user data. */
static int rename_noreplace(const char *from, const char *to)
{
	struct stat st;

	if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* file systems without RENAME_NOREPLACE (vfat on old kernels): check, then rename */
	if (lstat(to, &st) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(from, to);
}

/* 1 for a directory; else 0 with errno saying why. */

int save_write(const char *upper, const char *dest, const char *tmp, const char *final, const char *exclude,
	       long long *size)
{
	struct sigaction sa;
	int fd, ufd;

	/* The upper as the kernel has it, not pages still in flight (a store's upper is a real disk). */
	if ((ufd = open(upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || syncfs(ufd) != 0) {
		fprintf(stderr, PROG " save: sync %s: %s\n", upper, strerror(errno));
		if (ufd >= 0)
			close(ufd);
		return 1;
	}
	close(ufd);
	/* Reserve the temporary name (and learn now whether DIR is writable); from here on, every failure
	 * removes it, also Ctrl-C. */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) {
		fprintf(stderr, PROG " save: create %s: %s\n", tmp, strerror(errno));
		return 1;
	}
	close(fd);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	printf("saving %s as %s ...\n", upper, final);
	fflush(stdout);
	if (run_mksquashfs(upper, tmp, exclude) != 0)
		goto fail;
	if (fsync_path(tmp, O_RDONLY, size) != 0) {
		fprintf(stderr, PROG " save: fsync %s: %s\n", tmp, strerror(errno));
		goto fail;
	}
	if (rename_noreplace(tmp, final) != 0) {
		fprintf(stderr, PROG " save: rename %s to %s: %s\n", tmp, final, strerror(errno));
		goto fail;
	}
	if (fsync_path(dest, O_RDONLY | O_DIRECTORY, NULL) != 0) {
		/* the file is complete; only its name may not survive a power cut yet */
		fprintf(stderr, PROG " save: fsync the directory %s: %s (run sync before switching off)\n", dest,
			strerror(errno));
	}
	return 0;
fail:
	if (unlink(tmp) != 0 && errno != ENOENT)
		fprintf(stderr, PROG " save: could not remove %s: %s\n", tmp, strerror(errno));
	fprintf(stderr, PROG " save: nothing saved\n");
	return 1;
}

#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/fs.h>

#include "log.h"

int mkdir_p(const char *path, mode_t mode)
{
	char tmp[512];
	size_t n = strlen(path), i;

	if (n == 0 || n >= sizeof(tmp))
		return fail(ENAMETOOLONG, "mkdir %s", path);
	memcpy(tmp, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		tmp[i] = '\0';
		if (mkdir(tmp, mode) != 0 && errno != EEXIST)
			return fail(errno, "mkdir %s", tmp);
		tmp[i] = path[i];
	}
	return 0;
}

int do_mount(const char *src, const char *dir, const char *type, unsigned long flags, const char *data)
{
	if (mount(src, dir, type, flags, data) == 0)
		return 0;
	return fail(errno, "mount %s %s on %s%s%s", type ? type : "(move/bind)", src, dir, data ? " with " : "",
		    data ? data : "");
}

int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int run_wait(const char *const argv[])
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int open_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return fail(errno, "open %s for writing", path);
	return fd;
}

int read_text(const char *path, char *buf, size_t len)
{
	ssize_t n;
	size_t used = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return fail(errno, "open %s", path);
	while (used + 1 < len && (n = read(fd, buf + used, len - used - 1)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			if (close(fd) != 0) {
				/* the read error is the one to report */
			}
			return fail(e, "read %s", path);
		}
		used += (size_t)n;
	}
	buf[used] = '\0';
	if (close(fd) != 0)
		return fail(errno, "close %s", path);
	return (int)used;
}

int read_meminfo(const char *path, unsigned long long *total, unsigned long long *avail)
{
	char buf[4096];
	const char *p;
	unsigned long long kb;

	if (read_text(path, buf, sizeof(buf)) < 0)
		return -1;
	*total = *avail = 0;
	p = strstr(buf, "MemTotal:");
	if (!p || sscanf(p, "MemTotal: %llu kB", &kb) != 1)
		return fail(EINVAL, "parse MemTotal in %s", path);
	*total = kb * 1024;
	p = strstr(buf, "MemAvailable:");
	if (!p || sscanf(p, "MemAvailable: %llu kB", &kb) != 1)
		return fail(EINVAL, "parse MemAvailable in %s", path);
	*avail = kb * 1024;
	return 0;
}

int path_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		return fail(ENAMETOOLONG, "build the path %s", fmt);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int dir_names(const char *dir, char names[][DIR_NAME_LEN], const char *list[], int max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return fail(errno, "open the directory %s", dir);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= DIR_NAME_LEN)
			continue;
		if (n == max) {
			msg("too many files in %s; only the first %d considered", dir, n);
			break;
		}
		memcpy(names[n], e->d_name, strlen(e->d_name) + 1);
		list[n] = names[n];
		n++;
	}
	if (closedir(d) != 0)
		return fail(errno, "close %s", dir);
	qsort(list, (size_t)n, sizeof(list[0]), by_name);
	return n;
}

int block_run(unsigned long long bytes, unsigned long long step, unsigned bsz, block_map_fn map, void *ctx,
	      unsigned long long *first, char *why, size_t wlen)
{
	unsigned long long nblk, b, last, start, phys;

	if (bytes == 0 || bsz == 0)
		return text_err(why, wlen, bytes ? "no block size" : "empty");
	step = step >= bsz && step % bsz == 0 ? step / bsz : 1;
	nblk = bytes / bsz + (bytes % bsz != 0); /* (bytes + bsz - 1) / bsz would wrap near the top */
	if (map(ctx, 0, &start) != 0)
		return text_err(why, wlen, "no block map from its file system (FIBMAP: %s)", strerror(errno));
	if (start == 0)
		return text_err(why, wlen, "no block map from its file system (FIBMAP: no block for the start)");
	/* No sum here may wrap: a wrapped block number could look like the next block of the run. */
	for (b = 0;; b += step) {
		last = step - 1 < nblk - 1 - b ? b + step - 1 : nblk - 1;
		if (map(ctx, b, &phys) != 0 || phys < start || phys - start != b || map(ctx, last, &phys) != 0 ||
		    phys < start || phys - start != last)
			return text_err(why, wlen, "not one run of blocks (block %llu of the file)", b);
		if (nblk - 1 - b < step)
			break;
	}
	*first = start;
	return 0;
}

/* FIBMAP takes and gives an int: a block past INT_MAX cannot be asked about. */
static int fibmap(void *ctx, unsigned long long blk, unsigned long long *phys)
{
	int v = (int)blk;

	if (blk > INT_MAX) {
		errno = EFBIG;
		return -1;
	}
	if (ioctl(*(int *)ctx, FIBMAP, &v) != 0)
		return -1;
	*phys = v > 0 ? (unsigned long long)v : 0;
	return 0;
}

int file_block_run(int fd, unsigned long long bytes, unsigned long long step, int *bsz, unsigned long long *first,
		   char *why, size_t wlen)
{
	*bsz = 0;
	if (bytes == 0)
		return text_err(why, wlen, "empty");
	if (ioctl(fd, FIGETBSZ, bsz) != 0 || *bsz <= 0)
		return text_err(why, wlen, "no block size from its file system (%s)",
				*bsz > 0 ? "none" : strerror(errno));
	return block_run(bytes, step, (unsigned)*bsz, fibmap, &fd, first, why, wlen);
}

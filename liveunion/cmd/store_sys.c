/* store_sys.c - block devices as the kernel shows them, for `liveunion store`: sysfs attributes, partitions and
 * their disks, the mount table, whether a device is in use; and the small helpers every subcommand shares (a path
 * builder that refuses to cut, running a tool). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store.h"
#include "tool.h"

#define SYSBLK "/sys/class/block"

int pfmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int sys_read(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

unsigned long long sys_num(const char *name, const char *attr)
{
	char path[PATH_MAX], v[64];

	pfmt(path, sizeof path, SYSBLK "/%s/%s", name, attr);
	return sys_read(path, v, sizeof v) == 0 ? strtoull(v, NULL, 10) : 0;
}

unsigned long long blk_bytes(const char *name)
{
	return sys_num(name, "size") * 512;
}

int blk_name_of(const char *path, char *name, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];
	struct stat sb;
	ssize_t n;
	const char *base;

	if (stat(path, &sb) != 0)
		return -1;
	if (!S_ISBLK(sb.st_mode)) {
		errno = ENOTBLK;
		return -1;
	}
	pfmt(link, sizeof link, "/sys/dev/block/%u:%u", major(sb.st_rdev), minor(sb.st_rdev));
	if ((n = readlink(link, target, sizeof target - 1)) < 0)
		return -1;
	target[n] = '\0';
	base = strrchr(target, '/');
	pfmt(name, len, "%s", base ? base + 1 : target);
	return 0;
}

void sys_first(const char *name, const char *sub, char *out, size_t len)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;

	out[0] = '\0';
	pfmt(path, sizeof path, SYSBLK "/%s/%s", name, sub);
	if (!(d = opendir(path)))
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			pfmt(out, len, "%s", e->d_name);
			break;
		}
	closedir(d);
}

void disk_of(const char *name, char *disk, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX], *slash;
	ssize_t n;

	disk[0] = '\0';
	pfmt(path, sizeof path, SYSBLK "/%s/partition", name);
	if (access(path, F_OK) != 0)
		return;
	pfmt(path, sizeof path, SYSBLK "/%s", name);
	if ((n = readlink(path, target, sizeof target - 1)) < 0)
		return;
	target[n] = '\0';
	if (!(slash = strrchr(target, '/')))
		return;
	*slash = '\0';
	slash = strrchr(target, '/');
	pfmt(disk, len, "%s", slash ? slash + 1 : target);
}

/* mountinfo's octal escapes (\040 for a space) undone in place */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

int mounts_each(int (*fn)(const char *, const char *, const char *, const char *, void *), void *arg)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int r = 0;

	if (!f)
		return -1;
	while (!r && fgets(line, sizeof line, f)) {
		char *fld[6], *sep, *save = NULL, *fs;
		int i;

		if (!(sep = strstr(line, " - ")))
			continue;
		*sep = '\0';
		fs = strtok_r(sep + 3, " ", &save);
		save = NULL;
		for (i = 0; i < 6 && (fld[i] = strtok_r(i ? NULL : line, " ", &save)); i++)
			;
		if (i < 6 || !fs)
			continue;
		unescape(fld[4]);
		r = fn(fld[2], fld[4], fs, fld[5], arg);
	}
	fclose(f);
	return r;
}

struct busy_want {
	char majmin[32];
	const char *mp;
};

static int busy_match(const char *majmin, const char *mp, const char *fs, const char *opts, void *arg)
{
	struct busy_want *w = arg;

	(void)fs;
	(void)opts;
	if (strcmp(majmin, w->majmin) != 0)
		return 0;
	w->mp = strdup(mp);
	return 1;
}

/* busy for one device (not its partitions) */
static int blk_busy_one(const char *name, char *why, size_t len)
{
	char path[PATH_MAX], v[PATH_MAX], holder[STORE_NAME_LEN];
	struct busy_want w = {.mp = NULL};
	struct dirent *e;
	DIR *d;

	pfmt(path, sizeof path, SYSBLK "/%s/dev", name);
	if (sys_read(path, w.majmin, sizeof w.majmin) == 0 && mounts_each(busy_match, &w) > 0) {
		pfmt(why, len, "/dev/%s is mounted on %s", name, w.mp ? w.mp : "?");
		free((void *)w.mp);
		return 1;
	}
	sys_first(name, "holders", holder, sizeof holder);
	if (holder[0]) {
		pfmt(why, len, "/dev/%s is in use by /dev/%s", name, holder);
		return 1;
	}
	if (!(d = opendir(SYSBLK)))
		return 0;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "loop", 4) != 0)
			continue;
		pfmt(path, sizeof path, SYSBLK "/%s/loop/backing_file", e->d_name);
		if (sys_read(path, v, sizeof v) == 0 && !strncmp(v, "/dev/", 5) && !strcmp(v + 5, name)) {
			pfmt(why, len, "/dev/%s backs the loop device /dev/%s", name, e->d_name);
			closedir(d);
			return 1;
		}
	}
	closedir(d);
	return 0;
}

int blk_busy(const char *name, char *why, size_t len)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int r = 0;

	if (blk_busy_one(name, why, len))
		return 1;
	pfmt(path, sizeof path, SYSBLK "/%s", name);
	if (!(d = opendir(path)))
		return 0;
	while (!r && (e = readdir(d)))
		if (!strncmp(e->d_name, name, strlen(name)) && e->d_name[strlen(name)])
			r = blk_busy_one(e->d_name, why, len);
	closedir(d);
	return r;
}

int store_run(const char *const *argv, int in_fd)
{
	static const char *const dirs[] = {"/sbin", "/usr/sbin", "/bin", "/usr/bin"};
	char path[PATH_MAX] = "";
	int status;
	pid_t pid;

	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !path[0]; i++) {
		pfmt(path, sizeof path, "%s/%s", dirs[i], argv[0]);
		if (access(path, X_OK) != 0)
			path[0] = '\0';
	}
	if (!path[0]) {
		fprintf(stderr, PROG " store: %s not found in /sbin, /usr/sbin, /bin or /usr/bin\n", argv[0]);
		return -1;
	}
	fflush(NULL);
	if ((pid = fork()) < 0) {
		fprintf(stderr, PROG " store: fork for %s: %s\n", argv[0], strerror(errno));
		return -1;
	}
	if (pid == 0) {
		if (in_fd >= 0 && dup2(in_fd, 0) < 0)
			_exit(126);
		execv(path, (char *const *)argv);
		fprintf(stderr, PROG " store: %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, PROG " store: waiting for %s: %s\n", argv[0], strerror(errno));
			return -1;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) < 126)
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		fprintf(stderr, PROG " store: %s ended by signal %d\n", argv[0], WTERMSIG(status));
	return WIFEXITED(status) && WEXITSTATUS(status) < 126 ? WEXITSTATUS(status) : -1;
}

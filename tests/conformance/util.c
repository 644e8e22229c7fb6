/* Small helpers shared by the check areas of unionconf. */
#include "unionconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define SQUASHFS_MAGIC 0x73717368

/* Several paths are often alive in one expression: rotate through a few buffers. */
static const char *path_in(const char *base, const char *rel)
{
	static char bufs[8][4096];
	static unsigned n;
	char *b = bufs[n++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", base, rel);
	return b;
}

const char *fx(const char *rel)
{
	return path_in(uc.fix, rel);
}

const char *in_layer(const char *layer, const char *rel)
{
	return layer ? path_in(layer, rel) : NULL;
}

/* The content of fixture NAME: its name repeated, so a mixed-up copy-up shows in the first bytes. */
void fix_content(const char *name, char *buf, size_t len)
{
	char unit[256];
	size_t n = (size_t)snprintf(unit, sizeof(unit), "lower:%s\n", name), i;

	for (i = 0; i < len; i++)
		buf[i] = unit[i % n];
}

static int write_full(int fd, const char *buf, size_t len)
{
	ssize_t w;

	while (len) {
		w = write(fd, buf, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* A fixture file with the content, mode, owner, xattrs and mtime every copy-up check starts from. */
int make_file(const char *path, const char *name, int with_xattrs)
{
	char buf[FIX_SIZE], v[300];
	struct timespec ts[2];
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600), rc = 0;

	if (fd < 0)
		return -1;
	fix_content(name, buf, sizeof(buf));
	if (write_full(fd, buf, sizeof(buf)) != 0 || fchown(fd, FIX_UID, FIX_GID) != 0 || fchmod(fd, FIX_MODE) != 0)
		rc = -1;
	if (rc == 0 && with_xattrs) {
		snprintf(v, sizeof(v), "u-%s", name);
		if (fsetxattr(fd, "user.lu", v, strlen(v), 0) != 0)
			rc = -1;
		snprintf(v, sizeof(v), "t-%s", name);
		if (rc == 0 && fsetxattr(fd, "trusted.lu", v, strlen(v), 0) != 0)
			rc = -1;
	}
	ts[0].tv_sec = ts[1].tv_sec = (time_t)uc.epoch;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	if (rc == 0 && futimens(fd, ts) != 0)
		rc = -1;
	if (close(fd) != 0)
		rc = -1;
	return rc;
}

int read_all(const char *path, char *buf, size_t cap, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;
	ssize_t r;

	*len = 0;
	if (fd < 0)
		return -1;
	while (*len < cap) {
		r = read(fd, buf + *len, cap - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (r == 0)
			break;
		*len += (size_t)r;
	}
	return close(fd);
}

int same_content(const char *path, const char *want, size_t len, const char **why)
{
	static char got[FIX_SIZE + 4096], msg[128];
	size_t n, i;

	if (read_all(path, got, sizeof(got), &n) != 0) {
		snprintf(msg, sizeof(msg), "read: %s", strerror(errno));
		*why = msg;
		return 0;
	}
	if (n != len) {
		snprintf(msg, sizeof(msg), "size %zu, want %zu", n, len);
		*why = msg;
		return 0;
	}
	for (i = 0; i < n && got[i] == want[i]; i++)
		;
	if (i < n) {
		snprintf(msg, sizeof(msg), "content differs at byte %zu", i);
		*why = msg;
		return 0;
	}
	return 1;
}

int get_xattr(const char *path, const char *name, char *buf, size_t cap)
{
	ssize_t n = lgetxattr(path, name, buf, cap - 1);

	if (n < 0)
		return -1;
	buf[n] = '\0';
	return (int)n;
}

int area_fresh(const char *area)
{
	char rel[64];
	int fd;

	snprintf(rel, sizeof(rel), ".used-%s", area);
	fd = open(fx(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd >= 0)
		return close(fd) == 0;
	if (errno == EEXIST)
		fail(area, "fixtures already used by an earlier run (%s exists): boot again for a fresh upper", fx(rel));
	else
		fail(area, "create %s: %s", fx(rel), strerror(errno));
	return 0;
}

/* The options the union root was mounted with, as the kernel shows them (the last mount on that path wins). */
const char *mount_opts(void)
{
	static char opts[4096];
	static int done;
	char line[8192], real[4096], dev[256], dir[4096], type[64], o[4096];
	FILE *f;

	if (done)
		return opts;
	done = 1;
	if (!realpath(uc.root, real) || !(f = fopen("/proc/self/mounts", "re")))
		return opts;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s %4095s %63s %4095s", dev, dir, type, o) == 4 && strcmp(dir, real) == 0 &&
		    strcmp(type, "overlay") == 0)
			snprintf(opts, sizeof(opts), "%s", o);
	fclose(f);
	return opts;
}

int has_opt(const char *opt)
{
	const char *o = mount_opts(), *p = o;
	size_t n = strlen(opt);

	while ((p = strstr(p, opt))) {
		if ((p == o || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return 1;
		p += n;
	}
	return 0;
}

/* FS_IOC_GETFSUUID (Linux 6.8): a filesystem's s_uuid; ENOTTY when it has none (squashfs without
 * kernel/patches/0003). Spelled out here: the static musl build has no kernel headers. */
struct uc_fsuuid2 {
	unsigned char len;
	unsigned char uuid[16];
};
#define UC_FS_IOC_GETFSUUID _IOR(0x15, 0, struct uc_fsuuid2)

/* The layer's UUID in u (0), or -1 when it has none. */
static int layer_uuid(const char *dir, struct uc_fsuuid2 *u)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	memset(u, 0, sizeof(*u));
	r = ioctl(fd, UC_FS_IOC_GETFSUUID, u);
	close(fd);
	return r == 0 && u->len > 0 ? 0 : -1;
}

/* Overlayfs follows copy-up origins only if each lower filesystem has a UUID of its own; squashfs has a null
 * s_uuid unless the kernel derives one (kernel/patches/0003). Two lower squashfs without one, or with the same
 * one, make overlayfs disable origin decoding. */
int lower_uuid_ambiguous(void)
{
	char opts[4096], *tok, *save = NULL, *d, *c;
	struct {
		dev_t dev;
		int has;
		struct uc_fsuuid2 u;
	} seen[64];
	int n = 0, i, dup, ambiguous = 0, has;
	struct uc_fsuuid2 u;
	struct statfs sf;
	struct stat st;

	snprintf(opts, sizeof(opts), "%s", mount_opts());
	for (tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (strncmp(tok, "lowerdir=", 9) == 0)
			d = tok + 9;
		else if (strncmp(tok, "lowerdir+=", 10) == 0)
			d = tok + 10;
		else
			continue;
		for (; d && *d; d = c) { /* lowerdir=a:b:c (no escaped colons in our layer paths) */
			c = strchr(d, ':');
			if (c)
				*c++ = '\0';
			if (statfs(d, &sf) != 0 || sf.f_type != SQUASHFS_MAGIC || stat(d, &st) != 0)
				continue;
			has = layer_uuid(d, &u) == 0;
			for (i = 0, dup = 0; i < n; i++) {
				if (seen[i].dev == st.st_dev) {
					dup = 1;
					break;
				}
				if (!has || !seen[i].has || memcmp(seen[i].u.uuid, u.uuid, sizeof(u.uuid)) == 0)
					ambiguous = 1;
			}
			if (!dup && n < 64) {
				seen[n].dev = st.st_dev;
				seen[n].has = has;
				seen[n].u = u;
				n++;
			}
		}
	}
	return ambiguous;
}

/* store_find.c - which store `liveunion store` works on: the ext4 mounted on a directory, and the devices under
 * it (a partition, a LUKS2 container, a loop device on a file or in place on a FAT/exFAT partition), read from
 * /proc/self/mountinfo and /sys as the kernel set them up (store_sys.c reads them). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "store.h"
#include "tool.h"

#define SYSBLK "/sys/class/block"
#define MSDOS_MAGIC 0x4d44
#define EXFAT_MAGIC 0x2011BAB0ul

struct mount_want {
	const char *dir;
	char majmin[32], fs[32];
	int ro, found;
};

static int mount_match(const char *majmin, const char *mp, const char *fs, const char *opts, void *arg)
{
	struct mount_want *w = arg;

	if (strcmp(mp, w->dir) == 0) { /* the last one wins: it is the one on top */
		pfmt(w->majmin, sizeof w->majmin, "%s", majmin);
		pfmt(w->fs, sizeof w->fs, "%s", fs);
		w->ro = strncmp(opts, "ro", 2) == 0 && (opts[2] == ',' || opts[2] == '\0');
		w->found = 1;
	}
	return 0;
}

/* The ext4 mounted on dir: its real path into real, its mount into *w. 0, or -1 said (prefixed by what). */
static int mounted_ext4(const char *what, const char *dir, char real[PATH_MAX], struct mount_want *w)
{
	if (!realpath(dir, real)) {
		if (errno == ENOENT && !strcmp(dir, LIVE_RUN "/" LIVE_STORE))
			fprintf(stderr,
				"%s: no store: %s does not exist (not a live system, or it booted without one)\n", what,
				dir);
		else
			fprintf(stderr, "%s: %s: %s\n", what, dir, strerror(errno));
		return -1;
	}
	memset(w, 0, sizeof *w);
	w->dir = real;
	if (mounts_each(mount_match, w) < 0) {
		fprintf(stderr, "%s: reading /proc/self/mountinfo: %s\n", what, strerror(errno));
		return -1;
	}
	if (!w->found) {
		fprintf(stderr, "%s: no store mounted on %s (this system booted without one: see 'liveunion status')\n",
			what, real);
		return -1;
	}
	if (strcmp(w->fs, "ext4") != 0) {
		fprintf(stderr, "%s: %s is %s, not a store (an ext4 file system)\n", what, real, w->fs);
		return -1;
	}
	return 0;
}

/* st->dev a device-mapper device: it must be LUKS; its name and the device under it. 0, or -1 said. */
static int luks_under(const char *what, struct store_info *st)
{
	char path[PATH_MAX], v[128];

	pfmt(path, sizeof path, SYSBLK "/%s/dm/uuid", st->dev);
	if (sys_read(path, v, sizeof v) != 0)
		return 0;
	if (strncmp(v, "CRYPT-LUKS", 10) != 0) {
		fprintf(stderr, "%s: %s is device-mapper %s, not a LUKS store\n", what, st->dev, v);
		return -1;
	}
	st->luks = 1;
	pfmt(path, sizeof path, SYSBLK "/%s/dm/name", st->dev);
	if (sys_read(path, st->mapper, sizeof st->mapper) != 0)
		pfmt(st->mapper, sizeof st->mapper, "%s", st->dev);
	sys_first(st->dev, "slaves", st->under, sizeof st->under);
	if (!st->under[0]) {
		fprintf(stderr, "%s: %s (LUKS) lists no device under it in /sys\n", what, st->dev);
		return -1;
	}
	return 0;
}

/* st->under a loop device: its backing file and offset, the partition and the FAT/exFAT the file is on. */
static void loop_backing(struct store_info *st)
{
	char path[PATH_MAX];
	struct statfs fs;
	char *slash;

	pfmt(path, sizeof path, SYSBLK "/%s/loop/backing_file", st->under);
	if (sys_read(path, st->backing, sizeof st->backing) != 0)
		return;
	st->loop = 1;
	st->offset = sys_num(st->under, "loop/offset");
	st->part[0] = '\0';
	if (strncmp(st->backing, "/dev/", 5) == 0) {
		/* in place: the image's extent on the FAT/exFAT partition, which is not mounted */
		unsigned char boot[512];
		int fd;

		if (blk_name_of(st->backing, st->part, sizeof st->part) != 0)
			pfmt(st->part, sizeof st->part, "%s", st->backing + 5);
		if ((fd = open(st->backing, O_RDONLY | O_CLOEXEC)) >= 0) {
			if (read(fd, boot, sizeof boot) == (ssize_t)sizeof boot)
				pfmt(st->fat, sizeof st->fat, "%s",
				     !memcmp(boot + 3, "EXFAT   ", 8)                                  ? "exfat" :
				     !memcmp(boot + 82, "FAT32   ", 8) || !memcmp(boot + 54, "FAT", 3) ? "vfat" :
													 "");
			close(fd);
		}
	} else {
		pfmt(path, sizeof path, "%s", st->backing);
		if ((slash = strrchr(path, '/')) && slash != path)
			*slash = '\0';
		if (statfs(path, &fs) == 0)
			pfmt(st->fat, sizeof st->fat, "%s",
			     fs.f_type == MSDOS_MAGIC                ? "vfat" :
			     (unsigned long)fs.f_type == EXFAT_MAGIC ? "exfat" :
								       "");
	}
}

int store_find(const char *what, const char *dir, struct store_info *st)
{
	struct mount_want w;
	char real[PATH_MAX], path[PATH_MAX], target[PATH_MAX];
	ssize_t n;
	const char *base;

	memset(st, 0, sizeof *st);
	if (mounted_ext4(what, dir, real, &w) != 0)
		return -1;
	pfmt(st->dir, sizeof st->dir, "%s", real);
	st->ro = w.ro;
	pfmt(path, sizeof path, "/sys/dev/block/%s", w.majmin);
	if ((n = readlink(path, target, sizeof target - 1)) < 0) {
		fprintf(stderr, "%s: %s (the device of %s): %s\n", what, path, real, strerror(errno));
		return -1;
	}
	target[n] = '\0';
	base = strrchr(target, '/');
	pfmt(st->dev, sizeof st->dev, "%s", base ? base + 1 : target);
	pfmt(st->under, sizeof st->under, "%s", st->dev);
	if (luks_under(what, st) != 0)
		return -1;
	pfmt(st->part, sizeof st->part, "%s", st->under);
	loop_backing(st);
	if (st->part[0])
		disk_of(st->part, st->disk, sizeof st->disk);
	return 0;
}

void store_format_text(const struct store_info *st, char *buf, size_t len)
{
	char inner[PATH_MAX + 200];
	const char *file = strrchr(st->backing, '/');

	if (!st->loop)
		pfmt(inner, sizeof inner, "partition /dev/%s", st->under);
	else if (!strncmp(st->backing, "/dev/", 5))
		pfmt(inner, sizeof inner, "file " STORE_IMAGE " on %s partition %s, used in place through /dev/%s",
		     st->fat[0] ? st->fat : "a", st->backing, st->under);
	else
		pfmt(inner, sizeof inner, "file %s (on %s), through /dev/%s", file ? file + 1 : st->backing,
		     st->fat[0] ? st->fat : "a mounted file system", st->under);
	if (st->luks)
		pfmt(buf, len, "ext4 in LUKS2 (/dev/mapper/%s), %s", st->mapper, inner);
	else
		pfmt(buf, len, "ext4 %s", inner);
}

/* Finding the persistence store for persist.c: a partition by label, UUID or PARTUUID, or an ext4
 * image file on a FAT/exFAT partition of the boot disk. Reads only; attaches loop devices. */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "util.h"

#define SYSBLOCK "/sys/class/block"
#define MAX_PARTS 32

static unsigned le16(const unsigned char *b) { return (unsigned)b[0] | (unsigned)b[1] << 8; }
static unsigned long le32(const unsigned char *b) { return le16(b) | (unsigned long)le16(b + 2) << 16; }

int store_read_sb(const char *dev, struct sb *s)
{
	unsigned char b[1024];
	ssize_t n;
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	memset(s, 0, sizeof(*s));
	if (fd < 0)
		return -1;
	n = pread(fd, b, sizeof(b), 1024);
	if (close(fd) != 0 || n != (ssize_t)sizeof(b))
		return -1;
	if (le16(b + 0x38) != 0xEF53)
		return 0;
	s->ext = 1;
	s->recover = (le32(b + 0x60) & 0x4) != 0;
	s->errors = (le16(b + 0x3a) & 0x2) != 0;
	memcpy(s->label, b + 0x78, 16);
	s->label[16] = '\0';
	text_fmt(s->uuid, sizeof(s->uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0x68],
		 b[0x69], b[0x6a], b[0x6b], b[0x6c], b[0x6d], b[0x6e], b[0x6f], b[0x70], b[0x71], b[0x72], b[0x73], b[0x74],
		 b[0x75], b[0x76], b[0x77]);
	return 0;
}

static bool is_partition(const char *name)
{
	char path[PATH_LEN];

	return snprintf(path, sizeof(path), SYSBLOCK "/%s/partition", name) < (int)sizeof(path) && access(path, F_OK) == 0;
}

/* The whole disk a block device belongs to: sda for sda1 and for sda. */
static int disk_of(const char *dev, char *disk, size_t len)
{
	const char *name = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
	char path[PATH_LEN], *real, *slash;

	text_fmt(disk, len, "%s", name);
	if (!is_partition(name))
		return 0;
	if (snprintf(path, sizeof(path), SYSBLOCK "/%s", name) >= (int)sizeof(path) || !(real = realpath(path, NULL)))
		return -1;
	slash = strrchr(real, '/');
	if (slash) {
		*slash = '\0';
		slash = strrchr(real, '/');
	}
	if (slash)
		text_fmt(disk, len, "%s", slash + 1);
	free(real);
	return slash ? 0 : -1;
}

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

/* Partitions of disk (sorted), or of every block device when disk is NULL. */
static int list_devs(const char *disk, char names[][32], int max)
{
	char dir[PATH_LEN];
	DIR *d;
	struct dirent *e;
	int n = 0;

	text_fmt(dir, sizeof(dir), disk ? SYSBLOCK "/%s" : SYSBLOCK, disk);
	if (!(d = opendir(dir)))
		return 0;
	while ((e = readdir(d)) != NULL && n < max) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= 32)
			continue;
		if (disk && (strncmp(e->d_name, disk, strlen(disk)) != 0 || !is_partition(e->d_name)))
			continue;
		memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
	}
	if (closedir(d) != 0)
		msg("close %s: %s", dir, strerror(errno));
	qsort(names, (size_t)n, sizeof(names[0]), by_name);
	return n;
}

/* Where the image file lies on the FAT/exFAT partition, if in one piece: *offset in bytes. The kernel's
 * own block map is asked at both ends of every cluster, where a FAT file may jump. 0 contiguous, -1 not. */
static int file_extent(const char *part, int fd, unsigned long long fsize, unsigned long long *offset)
{
	unsigned char boot[512];
	unsigned long long cluster = 0, first;
	char why[160];
	int bsz, pfd;

	if ((pfd = open(part, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (pread(pfd, boot, sizeof(boot), 0) == (ssize_t)sizeof(boot)) {
		if (memcmp(boot + 3, "EXFAT   ", 8) == 0 && boot[0x6c] < 13 && boot[0x6d] < 26)
			cluster = 1ULL << (boot[0x6c] + boot[0x6d]);
		else
			cluster = (unsigned long long)le16(boot + 0x0b) * boot[0x0d];
	}
	if (close(pfd) != 0)
		return -1;
	if (file_block_run(fd, fsize, cluster, &bsz, &first, why, sizeof(why)) != 0) {
		dbg("image file on %s: %s", part, why);
		return -1;
	}
	*offset = first * (unsigned long long)bsz;
	return 0;
}

/* Look for path on a FAT/exFAT partition. A contiguous image file is attached straight from the
 * partition (loop with offset and size): the FAT itself is never mounted read-write, so it is never left
 * "dirty" by a power-off. A fragmented one goes through a read-write mount of the FAT, which then
 * stays mounted on s->host. Returns the loop fd (close it once the store is mounted) or -1. */
static int image_on(const char *part, const char *path, struct store *s)
{
	static const char *const types[] = {"vfat", "exfat"};
	char file[PATH_LEN * 2];
	unsigned long long offset = 0, fsize = 0;
	struct stat st;
	size_t i;
	int fd, ffd, nr, direct = -1;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (mount(part, s->host, types[i], MS_RDONLY | MS_SILENT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) == 0)
			break;
	if (i == sizeof(types) / sizeof(types[0]))
		return -1;
	text_fmt(file, sizeof(file), "%s/%s", s->host, path[0] == '/' ? path + 1 : path);
	if ((ffd = open(file, O_RDONLY | O_CLOEXEC)) >= 0) {
		if (fstat(ffd, &st) == 0 && S_ISREG(st.st_mode)) {
			fsize = (unsigned long long)st.st_size;
			direct = file_extent(part, ffd, fsize, &offset);
		}
		if (close(ffd) != 0)
			msg("close %s: %s", file, strerror(errno));
	}
	if (ffd < 0 || fsize == 0) {
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	if (direct == 0) {
		if (umount(s->host) != 0) {
			msg("umount %s: %s", s->host, strerror(errno));
			return -1;
		}
		if ((fd = loop_attach(part, s->ro, offset, fsize, &nr)) < 0) {
			msg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
			return -1;
		}
		text_fmt(s->dev, sizeof(s->dev), "/dev/loop%d", nr);
		text_fmt(s->what, sizeof(s->what), "%s on /dev/%s (%s, in one piece at byte %llu) via %s", path, part + 5,
			 types[i], offset, s->dev);
		return fd;
	}
	msg("persistence: %s on /dev/%s is fragmented: used through the %s filesystem, which stays mounted until "
	    "power-off (other systems may then call it not cleanly unmounted)", path, part + 5, types[i]);
	if (!s->ro && mount(NULL, s->host, NULL, MS_REMOUNT | MS_NODEV | MS_NOSUID | MS_NOEXEC, NULL) != 0) {
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	if ((fd = loop_attach(file, s->ro, 0, 0, &nr)) < 0) {
		msg("persistence: %s: %s", fail_what(), strerror(fail_errno()));
		if (umount(s->host) != 0)
			msg("umount %s: %s", s->host, strerror(errno));
		return -1;
	}
	text_fmt(s->dev, sizeof(s->dev), "/dev/loop%d", nr);
	text_fmt(s->what, sizeof(s->what), "%s on /dev/%s (%s) via %s", path, part + 5, types[i], s->dev);
	return fd;
}

static unsigned long long le64(const unsigned char *b) { return le32(b) | (unsigned long long)le32(b + 4) << 32; }

/* PARTUUID of a partition the way the kernel numbers it: the GPT entry's unique GUID when the disk
 * has a GPT that the MBR protects (0xEE, also in hybrid ISO images), else the MBR signature-NN. */
static int part_uuid(const char *name, char *out, size_t len)
{
	char disk[32], path[PATH_LEN], num[16], lbs_text[16];
	unsigned char mbr[512], gpt[512], e[128];
	unsigned long partn, lbs = 512;
	bool pmbr = false;
	int fd, i, ok = -1;

	if (disk_of(name, disk, sizeof(disk)) != 0 || strcmp(disk, name) == 0)
		return -1;
	text_fmt(path, sizeof(path), SYSBLOCK "/%s/partition", name);
	if (read_text(path, num, sizeof(num)) < 0 || (partn = strtoul(num, NULL, 10)) == 0)
		return -1;
	text_fmt(path, sizeof(path), SYSBLOCK "/%s/queue/logical_block_size", disk);
	if (read_text(path, lbs_text, sizeof(lbs_text)) >= 0 && strtoul(lbs_text, NULL, 10) >= 512)
		lbs = strtoul(lbs_text, NULL, 10);
	text_fmt(path, sizeof(path), "/dev/%s", disk);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (pread(fd, mbr, sizeof(mbr), 0) != (ssize_t)sizeof(mbr) || mbr[510] != 0x55 || mbr[511] != 0xAA)
		goto out;
	for (i = 0; i < 4; i++)
		pmbr |= mbr[446 + 16 * i + 4] == 0xEE;
	if (pmbr && pread(fd, gpt, sizeof(gpt), (off_t)lbs) == (ssize_t)sizeof(gpt) && memcmp(gpt, "EFI PART", 8) == 0) {
		unsigned long long at = le64(gpt + 72) * lbs + (partn - 1) * le32(gpt + 84);

		if (partn > le32(gpt + 80) || le32(gpt + 84) < 128 || pread(fd, e, sizeof(e), (off_t)at) != (ssize_t)sizeof(e))
			goto out;
		text_fmt(out, len, "%08lx-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", le32(e + 16), le16(e + 20),
			 le16(e + 22), e[24], e[25], e[26], e[27], e[28], e[29], e[30], e[31]);
	} else {
		text_fmt(out, len, "%08lx-%02lx", le32(mbr + 440), partn);
	}
	ok = 0;
out:
	if (close(fd) != 0)
		msg("close %s: %s", path, strerror(errno));
	return ok;
}

int store_find(const struct plan *p, const char *spec, struct store *s, int *loopfd, char *why, size_t wlen)
{
	static char names[MAX_PARTS * 2][32];
	char disk[32], dev[64];
	struct sb sb;
	int n, i;

	enum persist_kind kind = persist_kind(spec);

	*loopfd = -1;
	if (kind == PK_LABEL || kind == PK_UUID || kind == PK_PARTUUID) {
		const char *want = strchr(spec, '=') + 1;
		char pu[40];
		unsigned waited = 0; /* quarter seconds: a named stick may be enumerated after the medium */

		for (;;) {
			n = list_devs(NULL, names, MAX_PARTS * 2);
			for (i = 0; i < n; i++) {
				text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
				if (kind == PK_PARTUUID && (part_uuid(names[i], pu, sizeof(pu)) != 0 || strcasecmp(pu, want) != 0))
					continue;
				if (store_read_sb(dev, &sb) != 0 || !sb.ext)
					continue;
				if (kind == PK_PARTUUID ||
				    (kind == PK_LABEL ? strcmp(sb.label, want) == 0 : strcasecmp(sb.uuid, want) == 0)) {
					text_fmt(s->dev, sizeof(s->dev), "%s", dev);
					text_fmt(s->what, sizeof(s->what), "%s (%s)", dev, spec);
					return 1;
				}
			}
			if (waited >= p->timeout * 4)
				break;
			if (waited == 0)
				msg("persistence: waiting up to %u s for %s to appear", p->timeout, spec);
			struct timespec ts = {0, 250000000L};
			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				;
			waited++;
		}
		text_fmt(why, wlen, "no ext2/3/4 filesystem with %s (waited %u s)", spec, p->timeout);
		return 0;
	}
	if (disk_of(p->device, disk, sizeof(disk)) != 0) {
		text_fmt(why, wlen, "cannot tell which disk %s is on", p->device);
		return 0;
	}
	/* auto and file: look only at the disk we booted from: a stranger's stick with the right
	 * label must never be mounted (any other disk only when named by LABEL=/UUID=). */
	n = list_devs(disk, names, MAX_PARTS);
	if (kind != PK_FILE) {
		for (i = 0; i < n; i++) {
			text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
			if (store_read_sb(dev, &sb) == 0 && sb.ext && strcmp(sb.label, STORE_LABEL) == 0) {
				text_fmt(s->dev, sizeof(s->dev), "%s", dev);
				text_fmt(s->what, sizeof(s->what), "%s (LABEL=" STORE_LABEL ")", dev);
				return 1;
			}
		}
	}
	for (i = 0; i < n; i++) {
		text_fmt(dev, sizeof(dev), "/dev/%s", names[i]);
		if ((*loopfd = image_on(dev, kind == PK_FILE ? spec + 5 : STORE_FILE, s)) >= 0)
			return 1;
	}
	if (kind == PK_FILE)
		text_fmt(why, wlen, "no %s on the FAT/exFAT partitions of /dev/%s", spec + 5, disk);
	else
		text_fmt(why, wlen, "no partition labelled " STORE_LABEL " and no " STORE_FILE " on /dev/%s", disk);
	return 0;
}

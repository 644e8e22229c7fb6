#include "disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

unsigned le16(const unsigned char *b)
{
	return (unsigned)b[0] | (unsigned)b[1] << 8;
}
unsigned long le32(const unsigned char *b)
{
	return le16(b) | (unsigned long)le16(b + 2) << 16;
}
unsigned long long le64(const unsigned char *b)
{
	return le32(b) | (unsigned long long)le32(b + 4) << 32;
}

const char *disk_fs_type(const unsigned char *b, size_t len)
{
	if (len >= 1024 + 0x3a && le16(b + 1024 + 0x38) == 0xEF53)
		return "ext4";
	if (len < 512 || b[510] != 0x55 || b[511] != 0xAA)
		return NULL;
	if (memcmp(b + 3, "EXFAT   ", 8) == 0)
		return "exfat";
	if (memcmp(b + 3, "NTFS    ", 8) == 0)
		return "ntfs3";
	/* FAT32 names itself at 82, FAT12/16 at 54; a sector size of 512-4096 rules out an MBR that happens to match */
	if ((memcmp(b + 82, "FAT32   ", 8) == 0 || memcmp(b + 54, "FAT1", 4) == 0 ||
	     memcmp(b + 54, "FAT     ", 8) == 0) &&
	    le16(b + 11) >= 512 && le16(b + 11) <= 4096 && (le16(b + 11) & (le16(b + 11) - 1)) == 0)
		return "vfat";
	return NULL;
}

bool disk_is_partition(const char *sysblock, const char *name)
{
	char path[512];

	return snprintf(path, sizeof(path), "%s/%s/partition", sysblock, name) < (int)sizeof(path) &&
	       access(path, F_OK) == 0;
}

int disk_of(const char *sysblock, const char *dev, char *disk, size_t len)
{
	const char *name = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
	char path[512], *real, *slash;

	text_fmt(disk, len, "%s", name);
	if (!disk_is_partition(sysblock, name))
		return 0;
	/* sysfs puts a partition's directory inside its disk's */
	if (snprintf(path, sizeof(path), "%s/%s", sysblock, name) >= (int)sizeof(path) ||
	    !(real = realpath(path, NULL)))
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

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

int disk_list(const char *sysblock, const char *disk, bool (*skip)(const char *sysblock, const char *name),
	      char names[][DISK_NAME_LEN], int max)
{
	char dir[512];
	DIR *d;
	struct dirent *e;
	static bool said_full;
	int n = 0, left = 0;

	if (disk ? path_fmt(dir, sizeof(dir), "%s/%s", sysblock, disk) : path_fmt(dir, sizeof(dir), "%s", sysblock))
		return -1;
	if (!(d = opendir(dir)))
		return fail(errno, "open %s", dir);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= DISK_NAME_LEN)
			continue;
		if (disk && (strncmp(e->d_name, disk, strlen(disk)) != 0 || !disk_is_partition(sysblock, e->d_name)))
			continue;
		if (skip && skip(sysblock, e->d_name))
			continue;
		if (n == max) {
			left++;
			continue;
		}
		memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
	}
	if (left && !said_full) { /* said once: the callers poll */
		said_full = true;
		msg("more than %d block devices in %s: %d left out of this search", max, dir, left);
	}
	if (closedir(d) != 0)
		return fail(errno, "close %s", dir);
	qsort(names, (size_t)n, sizeof(names[0]), by_name);
	return n;
}

ssize_t disk_read_at(const char *path, void *buf, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, buf, len, off);
	e = errno;
	if (close(fd) != 0)
		return -1;
	errno = e;
	return n;
}

int disk_read_mbr(int fd, unsigned char mbr[512])
{
	if (pread(fd, mbr, 512, 0) != 512 || mbr[510] != 0x55 || mbr[511] != 0xAA)
		return -1;
	return 0;
}

bool mbr_has_entries(const unsigned char *mbr)
{
	int i;

	for (i = 0; i < 4; i++)
		if (mbr[446 + 16 * i + 4] != 0 || mbr[446 + 16 * i + 12] != 0)
			return true;
	return false;
}

/* Whether an MBR has the 0xEE entry that protects a GPT (also in hybrid ISO images). */
static bool mbr_protects_gpt(const unsigned char *mbr)
{
	int i;

	for (i = 0; i < 4; i++)
		if (mbr[446 + 16 * i + 4] == 0xEE)
			return true;
	return false;
}

int gpt_entry_offset(const unsigned char *gpt, unsigned long lbs, unsigned long partn, unsigned long long *at)
{
	/* Every field comes from the disk: a table placed or sized to wrap the sum must not point elsewhere. */
	const unsigned long long lba = le64(gpt + 72), esize = le32(gpt + 84), max = (unsigned long long)INT64_MAX;
	unsigned long long base, rel;

	if (partn == 0 || partn > le32(gpt + 80) || esize < 128 || lbs == 0)
		return -1;
	if (lba > max / lbs || partn - 1 > max / esize)
		return -1;
	base = lba * lbs;
	rel = (partn - 1) * esize;
	if (rel > max - base)
		return -1;
	*at = base + rel;
	return 0;
}

int part_uuid_from(const unsigned char mbr[512], const unsigned char *gpt, unsigned long lbs, unsigned long partn,
		   int (*read_entry)(void *ctx, unsigned long long at, unsigned char e[128]), void *ctx, char *out,
		   size_t len)
{
	unsigned char e[128];
	unsigned long long at;

	if (!gpt || !mbr_protects_gpt(mbr) || memcmp(gpt, "EFI PART", 8) != 0) {
		text_fmt(out, len, "%08lx-%02lx", le32(mbr + 440), partn);
		return 0;
	}
	if (gpt_entry_offset(gpt, lbs, partn, &at) != 0 || read_entry(ctx, at, e) != 0)
		return -1;
	text_fmt(out, len, "%08lx-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", le32(e + 16), le16(e + 20),
		 le16(e + 22), e[24], e[25], e[26], e[27], e[28], e[29], e[30], e[31]);
	return 0;
}

static int pread_entry(void *ctx, unsigned long long at, unsigned char e[128])
{
	return pread(*(int *)ctx, e, 128, (off_t)at) == 128 ? 0 : -1;
}

int disk_part_uuid(const char *sysblock, const char *devdir, const char *name, char *out, size_t len)
{
	char disk[DISK_NAME_LEN], path[512], num[16], lbs_text[16];
	unsigned char mbr[512], gpt[512];
	unsigned long partn, lbs = 512;
	bool has_gpt;
	int fd, ok = -1;

	if (disk_of(sysblock, name, disk, sizeof(disk)) != 0 || strcmp(disk, name) == 0)
		return -1;
	if (path_fmt(path, sizeof(path), "%s/%s/partition", sysblock, name) != 0 ||
	    read_text(path, num, sizeof(num)) < 0 || (partn = strtoul(num, NULL, 10)) == 0)
		return -1;
	if (path_fmt(path, sizeof(path), "%s/%s/queue/logical_block_size", sysblock, disk) != 0)
		return -1;
	if (read_text(path, lbs_text, sizeof(lbs_text)) >= 0 && strtoul(lbs_text, NULL, 10) >= 512)
		lbs = strtoul(lbs_text, NULL, 10);
	if (path_fmt(path, sizeof(path), "%s/%s", devdir, disk) != 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if (disk_read_mbr(fd, mbr) == 0) {
		has_gpt = lbs <= (unsigned long)INT64_MAX &&
			  pread(fd, gpt, sizeof(gpt), (off_t)lbs) == (ssize_t)sizeof(gpt);
		ok = part_uuid_from(mbr, has_gpt ? gpt : NULL, lbs, partn, pread_entry, &fd, out, len);
	}
	if (close(fd) != 0)
		msg("close %s: %s", path, strerror(errno));
	return ok;
}

/* store_grow_part.c - `liveunion store grow` of a partition store: its MBR entry extended to the end of the disk
 * (it must be the last partition), the kernel told the new size (BLKPG_RESIZE_PARTITION, which works on a partition
 * in use). store_grow.c does the rest (LUKS2, the ext4). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/blkpg.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "tool.h"

#define MBR_SECTORS_MAX 0xFFFFFFFFull

static const char *what = PROG " store grow";

/* sda -> sda3, but loop0 -> loop0p3, nvme0n1 -> nvme0n1p3: a "p" when the disk's name ends in a digit */
static int isdigit_last(const char *s)
{
	size_t n = strlen(s);

	return n && s[n - 1] >= '0' && s[n - 1] <= '9';
}

/* The store the last partition of its disk: nothing after it to move or overwrite. 0, or -1 said. */
static int last_partition(const struct store_info *st, unsigned long long start)
{
	for (unsigned i = 1; i <= 128; i++) {
		char other[STORE_NAME_LEN + 8];

		pfmt(other, sizeof other, "%s%s%u", st->disk, isdigit_last(st->disk) ? "p" : "", i);
		if (strcmp(other, st->part) != 0 && sys_num(other, "start") > start) {
			fprintf(stderr,
				"%s: /dev/%s comes after the store's /dev/%s on /dev/%s: refusing to grow into it\n",
				what, other, st->part, st->disk);
			return -1;
		}
	}
	return 0;
}

/* The MBR of the disk open on fd (named disk) into mbr, and the index of primary entry pno from sector start of
 * size sectors in it; -1 said (not 512-byte sectors, a GPT, no such entry). */
static int mbr_entry(int fd, const char *disk, unsigned char mbr[512], unsigned pno, unsigned long long start,
		     unsigned long long size, const char *part)
{
	int ssz = 0, entry = -1;

	if (ioctl(fd, BLKSSZGET, &ssz) != 0 || ssz != 512 || pread(fd, mbr, 512, 0) != 512) {
		fprintf(stderr, "%s: %s: %s\n", what, disk,
			ssz && ssz != 512 ? "sectors are not 512 bytes: refusing" : strerror(errno));
		return -1;
	}
	for (int i = 0; i < 4 && mbr[510] == 0x55 && mbr[511] == 0xAA; i++) {
		const unsigned char *e = mbr + 446 + 16 * i;

		if (e[4] == 0xEE) {
			fprintf(stderr,
				"%s: %s has a GPT: only the MBR that ./build.sh usb writes is grown; refusing\n", what,
				disk);
			return -1;
		}
		if (le32(e + 8) == start && (unsigned)i + 1 == pno && le32(e + 12) == size)
			entry = i;
	}
	if (entry < 0)
		fprintf(stderr,
			"%s: the MBR of %s has no primary entry %u from sector %llu of %llu sectors (what the "
			"kernel says of /dev/%s): refusing\n",
			what, disk, pno, start, size, part);
	return entry;
}

/* MBR entry entry given nsize sectors, written, and the kernel told (BLKPG_RESIZE_PARTITION). 0, or -1 said. */
static int mbr_resize(int fd, const char *disk, unsigned char mbr[512], int entry, unsigned pno,
		      unsigned long long start, unsigned long long nsize, const char *part)
{
	struct blkpg_partition bp;
	struct blkpg_ioctl_arg arg;

	for (int k = 0; k < 4; k++)
		mbr[446 + 16 * entry + 12 + k] = (unsigned char)(nsize >> (8 * k));
	if (pwrite(fd, mbr, 512, 0) != 512 || fsync(fd) != 0) {
		fprintf(stderr,
			"%s: write the MBR of %s: %s (the partition table may be unchanged or changed; check "
			"with fdisk -l)\n",
			what, disk, strerror(errno ? errno : EIO));
		return -1;
	}
	memset(&bp, 0, sizeof bp);
	bp.start = (long long)(start * 512);
	bp.length = (long long)(nsize * 512);
	bp.pno = (int)pno;
	memset(&arg, 0, sizeof arg);
	arg.op = BLKPG_RESIZE_PARTITION;
	arg.datalen = sizeof bp;
	arg.data = &bp;
	if (ioctl(fd, BLKPG, &arg) != 0) {
		fprintf(stderr,
			"%s: the MBR now gives /dev/%s %llu sectors, but the kernel was not told (BLKPG: %s): "
			"reboot and run '" PROG " store grow' again\n",
			what, part, nsize, strerror(errno));
		return -1;
	}
	return 0;
}

/* The partition st->part grown to the end of its disk: 0 grown, 1 nothing to grow (said), -1 refused (said). */
int grow_partition(const struct store_info *st)
{
	char disk[STORE_NAME_LEN + 8], path[PATH_MAX], a[32], b[32];
	unsigned long long start = sys_num(st->part, "start"), size = sys_num(st->part, "size");
	unsigned long long dsize = sys_num(st->disk, "size"), end, nsize;
	unsigned pno = (unsigned)sys_num(st->part, "partition");
	unsigned char mbr[512];
	int fd, entry;

	if (!st->disk[0] || !pno || !dsize) {
		fprintf(stderr, "%s: /dev/%s is not a partition of a disk this system sees: nothing to grow into\n",
			what, st->part);
		return -1;
	}
	if (last_partition(st, start) != 0)
		return -1;
	end = dsize < MBR_SECTORS_MAX ? dsize : MBR_SECTORS_MAX;
	end -= end % 2048; /* 1 MiB aligned, as ./build.sh usb starts it */
	nsize = end > start ? end - start : 0;
	if (nsize <= size + 2048) {
		human(size * 512, a, sizeof a);
		human(dsize * 512, b, sizeof b);
		printf("grow: /dev/%s (%s) already reaches the end of /dev/%s (%s): nothing to grow into\n", st->part,
		       a, st->disk, b);
		return 1;
	}
	pfmt(disk, sizeof disk, "/dev/%s", st->disk);
	if ((fd = open(disk, O_RDWR | O_CLOEXEC)) < 0) {
		fprintf(stderr, "%s: open %s: %s\n", what, disk, strerror(errno));
		return -1;
	}
	if ((entry = mbr_entry(fd, disk, mbr, pno, start, size, st->part)) < 0 ||
	    mbr_resize(fd, disk, mbr, entry, pno, start, nsize, st->part) != 0) {
		close(fd);
		return -1;
	}
	close(fd);
	pfmt(path, sizeof path, "%s", st->part);
	human(size * 512, a, sizeof a);
	human(nsize * 512, b, sizeof b);
	printf("grow: partition /dev/%s %s -> %s (MBR entry %u, to the end of /dev/%s)\n", path, a, b, pno, st->disk);
	return 0;
}

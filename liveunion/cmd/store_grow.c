/* store_grow.c - `liveunion store grow`: the store takes the rest of its stick, while it is in use.
 * A partition store: its MBR entry is extended to the end of the disk (it must be the last partition), the kernel
 * is told the new size (BLKPG_RESIZE_PARTITION, which works on a partition in use), a LUKS2 mapping follows
 * (cryptsetup resize), then the mounted ext4 grows online (EXT4_IOC_RESIZE_FS, what resize2fs does for a mounted
 * file system). A file store reached through a mounted FAT/exFAT: the file is extended into the free space of
 * that file system and the loop device told (LOOP_SET_CAPACITY). A file store used in place (its FAT not
 * mounted, so that it is never left dirty) grows through a moment's mount of its partition, for the next boot.
 * The partition's MBR entry and the kernel's view of it: store_grow_part.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "store.h"
#include "tool.h"

/* fs/ext4/ext4.h: not in the kernel's exported headers */
#ifndef EXT4_IOC_RESIZE_FS
#define EXT4_IOC_RESIZE_FS _IOW('f', 16, uint64_t)
#endif
#define MIB (1ull << 20)
#define FAT32_FILE_MAX 0xFFFFFFFFull

static const char *what = PROG " store grow";

/* The file at path (named shown in messages) extended into the free space of the file system holding it (fat:
 * "vfat", "exfat" or ""). 0 grown (*from, *to its sizes), 1 no room (said), -1 failed (said). */
static int extend_file(const char *path, const char *shown, const char *fat, unsigned long long *from,
		       unsigned long long *to)
{
	char dir[PATH_MAX], a[32], b[32], *slash;
	struct statvfs vfs;
	struct stat sb;
	unsigned long long cur, room, nsize;
	int fd;

	pfmt(dir, sizeof dir, "%s", path);
	if ((slash = strrchr(dir, '/')))
		*(slash == dir ? slash + 1 : slash) = '\0';
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0 || fstat(fd, &sb) != 0 || statvfs(dir, &vfs) != 0) {
		fprintf(stderr, "%s: %s: %s\n", what, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	cur = (unsigned long long)sb.st_size;
	room = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	/* what the file holds now (a sparse one, on a host, holds less than its size) plus the free room, less a
	 * little for the file system's own needs */
	nsize = (unsigned long long)sb.st_blocks * 512 + (room > MIB ? room - MIB : 0);
	if (nsize < cur)
		nsize = cur;
	if (!strcmp(fat, "vfat") && nsize > FAT32_FILE_MAX)
		nsize = FAT32_FILE_MAX;
	nsize -= nsize % MIB;
	if (nsize <= cur + MIB) {
		human(cur, a, sizeof a);
		human(room, b, sizeof b);
		printf("grow: no room: %s is %s and its %s has %s free%s\n", shown, a, fat[0] ? fat : "file system", b,
		       !strcmp(fat, "vfat") && cur + MIB >= FAT32_FILE_MAX ? " (FAT32 files stop at 4 GiB)" : "");
		close(fd);
		return 1;
	}
	/* fallocate reserves the clusters at once (a full FAT fails here, not later); ftruncate where unsupported */
	if (fallocate(fd, 0, 0, (off_t)nsize) != 0 && (errno != EOPNOTSUPP || ftruncate(fd, (off_t)nsize) != 0)) {
		fprintf(stderr,
			"%s: extend %s to %llu bytes: %s (its size is unchanged or partly grown; the store "
			"is not)\n",
			what, path, nsize, strerror(errno));
		close(fd);
		return -1;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		fprintf(stderr, "%s: %s: %s\n", what, path, strerror(errno));
		return -1;
	}
	*from = cur;
	*to = nsize;
	human(cur, a, sizeof a);
	human(nsize, b, sizeof b);
	printf("grow: file %s %s -> %s\n", shown, a, b);
	return 0;
}

/* The store's file, reached through a mounted file system, extended and the loop device told. */
static int grow_file(const struct store_info *st)
{
	char loop[STORE_NAME_LEN + 8];
	unsigned long long from, to;
	int lfd, r = extend_file(st->backing, st->backing, st->fat, &from, &to);

	if (r != 0)
		return r;
	pfmt(loop, sizeof loop, "/dev/%s", st->under);
	if ((lfd = open(loop, O_RDONLY | O_CLOEXEC)) < 0 || ioctl(lfd, LOOP_SET_CAPACITY, 0) != 0) {
		fprintf(stderr,
			"%s: %s (LOOP_SET_CAPACITY): %s: the file is grown, the store will be at the next "
			"'" PROG " store grow' after a reboot\n",
			what, loop, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return -1;
	}
	close(lfd);
	return 0;
}

/* The first block of path on its partition and whether its first bytes are one run of blocks, in bytes:
 * *start, *run (FIGETBSZ, FIBMAP: the block map the init reads too). 0, or -1 (errno). */
static int file_run(const char *path, unsigned long long bytes, unsigned long long *start, unsigned long long *run)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), bsz = 0, v;
	unsigned long long b, nblk, first;

	*run = 0;
	if (fd < 0)
		return -1;
	v = 0;
	if (ioctl(fd, FIGETBSZ, &bsz) != 0 || bsz <= 0 || ioctl(fd, FIBMAP, &v) != 0 || v <= 0) {
		close(fd);
		return -1;
	}
	first = (unsigned long long)v;
	*start = first * (unsigned)bsz;
	nblk = bytes / (unsigned)bsz;
	/* every MiB and the last block: what the init's check looks at */
	for (b = 0; b < nblk;
	     b = b + MIB / (unsigned)bsz < nblk || b == nblk - 1 ? b + MIB / (unsigned)bsz : nblk - 1) {
		v = (int)b;
		if (b > INT_MAX || ioctl(fd, FIBMAP, &v) != 0 || v <= 0 || (unsigned long long)v != first + b)
			break;
		*run = (b + 1) * (unsigned)bsz;
	}
	close(fd);
	return 0;
}

/* A file store used in place (a loop device with an offset on its FAT/exFAT partition, which is not mounted): the
 * partition is mounted for a moment in a mount namespace of this process only, the file extended, the partition
 * unmounted (clean again). The loop device keeps its size while the store is mounted on it: the next boot takes
 * the grown file, and 'store grow' then grows the ext4. */
static int grow_in_place(const struct store_info *st)
{
	char mnt[] = "/run/liveunion-grow.XXXXXX", path[PATH_MAX], shown[PATH_MAX];
	unsigned long long start = 0, run = 0, from = 0, to = 0;
	int r;

	if (!st->fat[0]) {
		fprintf(stderr, "%s: %s holding the store is neither FAT nor exFAT: not grown\n", what, st->backing);
		return -1;
	}
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		fprintf(stderr, "%s: a private mount namespace: %s\n", what, strerror(errno));
		return -1;
	}
	if (!mkdtemp(mnt) || mount(st->backing, mnt, st->fat, 0, NULL) != 0) {
		fprintf(stderr, "%s: mount %s (%s) to grow the file on it: %s\n", what, st->backing, st->fat,
			strerror(errno));
		rmdir(mnt);
		return -1;
	}
	pfmt(path, sizeof path, "%s/" STORE_IMAGE, mnt);
	if (file_run(path, 1, &start, &run) != 0 || start != st->offset) {
		fprintf(stderr,
			"%s: the store is not /" STORE_IMAGE " of %s (%s; it starts at byte %llu, the store at "
			"%llu): live.persist=file:PATH or an ISO file's store is not grown\n",
			what, st->backing, errno ? strerror(errno) : "another file", start, st->offset);
		r = -1;
	} else {
		pfmt(shown, sizeof shown, "/" STORE_IMAGE " on %s", st->backing);
		r = extend_file(path, shown, st->fat, &from, &to);
		if (r == 0 && file_run(path, to, &start, &run) == 0 && run < to)
			printf("grow: the grown file is not in one piece on %s (its FAT had no free run after it): the next "
			       "boot uses it through the mounted %s, and says so\n",
			       st->backing, st->fat);
	}
	if (umount(mnt) != 0)
		fprintf(stderr, "%s: umount %s: %s (it goes with this process)\n", what, mnt, strerror(errno));
	rmdir(mnt);
	if (r == 0)
		printf("grow: the store uses the grown file from the next boot on: reboot, then run '" PROG
		       " store grow' again to grow its ext4\n");
	return r == 0 ? 2 : r;
}

/* The mounted ext4 grown to its whole device (online). */
static int grow_ext4(const struct store_info *st)
{
	char dev[STORE_NAME_LEN + 8], a[32], b[32];
	unsigned char sb[2048];
	unsigned long long blocks, nblocks, bsize;
	uint64_t n;
	int fd;

	pfmt(dev, sizeof dev, "/dev/%s", st->dev);
	if ((fd = open(dev, O_RDONLY | O_CLOEXEC)) < 0 || pread(fd, sb, sizeof sb, 0) != (ssize_t)sizeof sb) {
		fprintf(stderr, "%s: read the superblock of %s: %s\n", what, dev, strerror(errno ? errno : EIO));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	bsize = 1024ull << le32(sb + 1024 + 24);
	blocks = le32(sb + 1024 + 4) | (unsigned long long)le32(sb + 1024 + 0x150) << 32;
	if (!(le32(sb + 1024 + 0x60) & 0x80)) /* no 64bit feature: the high half is not a count */
		blocks = le32(sb + 1024 + 4);
	nblocks = blk_bytes(st->dev) / bsize;
	if (nblocks <= blocks) {
		human(blocks * bsize, a, sizeof a);
		printf("grow: the ext4 on %s (%s) already fills its device\n", dev, a);
		return 1;
	}
	n = nblocks;
	if ((fd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || ioctl(fd, EXT4_IOC_RESIZE_FS, &n) != 0) {
		fprintf(stderr,
			"%s: grow the ext4 on %s to %llu blocks (EXT4_IOC_RESIZE_FS): %s: the %s grew, the ext4 "
			"did not%s\n",
			what, dev, nblocks, strerror(errno), st->loop ? "file" : "partition",
			errno == EPERM ? " (it needs root with CAP_SYS_RESOURCE)" : "");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	human(blocks * bsize, a, sizeof a);
	human(nblocks * bsize, b, sizeof b);
	printf("grow: ext4 on %s %s -> %s, online\n", dev, a, b);
	return 0;
}

int store_grow(int argc, char **argv)
{
	struct store_info st;
	const char *dir, *pos[1];
	int r = store_args("grow", argc, argv, NULL, NULL, &dir, pos, 0), g, e;

	if (r) {
		printf("usage: " PROG " store grow [--store DIR]\n"
		       "Grow the store into the rest of its stick: a partition store to the end of the disk, a file\n"
		       "store into the free space of its FAT/exFAT; then its ext4, online.\n");
		return r == 3 ? 0 : 2;
	}
	if (store_find(what, dir, &st) != 0)
		return 1;
	if (st.ro) {
		fprintf(stderr, "%s: the store on %s is mounted read-only: it is not grown\n", what, st.dir);
		return 1;
	}
	g = !st.loop ? grow_partition(&st) : strncmp(st.backing, "/dev/", 5) ? grow_file(&st) : grow_in_place(&st);
	if (g < 0)
		return 1;
	if (g == 2) /* the file grew; the loop device under the store follows at the next boot */
		return 0;
	if (st.luks && g == 0) {
		const char *cmd[] = {"cryptsetup", "resize", st.mapper, NULL};

		printf("grow: cryptsetup resize %s (it may ask for the passphrase)\n", st.mapper);
		if (store_run(cmd, -1) != 0) {
			fprintf(stderr,
				"%s: cryptsetup resize %s failed: the %s grew, the store did not yet; run "
				"'" PROG " store grow' again\n",
				what, st.mapper, st.loop ? "file" : "partition");
			return 1;
		}
	}
	e = grow_ext4(&st);
	if (e < 0)
		return 1;
	if (g == 1 && e == 1)
		return 1;
	return 0;
}

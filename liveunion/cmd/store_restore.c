/* store_restore.c - `liveunion store restore SRC --to DEVICE`: a backup (store_copy.c) written back onto a store
 * partition that is not in use. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "store.h"
#include "tool.h"

/* What a backup holds: "ext4" (its label in label), "LUKS2", or NULL. */
static const char *backup_kind(int fd, char *label, size_t len)
{
	unsigned char sb[2048];

	label[0] = '\0';
	if (pread(fd, sb, sizeof sb, 0) != (ssize_t)sizeof sb)
		return NULL;
	if (!memcmp(sb, "LUKS\xba\xbe", 6))
		return "LUKS2";
	if (sb[1024 + 56] == 0x53 && sb[1024 + 57] == 0xEF) {
		pfmt(label, len, "%.16s", (const char *)sb + 1024 + 120);
		return "ext4";
	}
	return NULL;
}

/* The backup src opened: its size and kind (ext4 or LUKS2, with its label). The descriptor, or -1 said. */
static int restore_source(const char *what, const char *src, unsigned long long *size, const char **kind, char *label,
			  size_t llen)
{
	char name[STORE_NAME_LEN];
	struct stat sb;
	int in;

	if ((in = open(src, O_RDONLY | O_CLOEXEC)) < 0 || fstat(in, &sb) != 0) {
		fprintf(stderr, "%s: %s: %s\n", what, src, strerror(errno));
		return -1;
	}
	if (S_ISBLK(sb.st_mode)) {
		if (blk_name_of(src, name, sizeof name) != 0) {
			fprintf(stderr, "%s: %s: %s\n", what, src, strerror(errno));
			close(in);
			return -1;
		}
		*size = blk_bytes(name);
	} else {
		*size = (unsigned long long)sb.st_size;
	}
	if (!(*kind = backup_kind(in, label, llen))) {
		fprintf(stderr,
			"%s: %s is not a store backup: neither an ext4 file system (no magic at byte 1080) nor "
			"a LUKS2 container (no header at byte 0)\n",
			what, src);
		close(in);
		return -1;
	}
	return in;
}

/* The device dev to restore onto: a partition (not a whole disk with partitions), not in use, with room for size.
 * Its name under /sys/class/block into name; 0, or -1 said. */
static int restore_target(const char *what, const char *dev, char *name, size_t nlen, unsigned long long size)
{
	char path[PATH_MAX];
	struct stat sb;

	if (stat(dev, &sb) != 0 || !S_ISBLK(sb.st_mode) || blk_name_of(dev, name, nlen) != 0) {
		fprintf(stderr, "%s: --to %s: %s (name a store partition, e.g. /dev/sdb3)\n", what, dev,
			errno ? strerror(errno) : "not a block device");
		return -1;
	}
	pfmt(path, sizeof path, "/sys/class/block/%s/%s1", name, name);
	if (access(path, F_OK) == 0 ||
	    (pfmt(path, sizeof path, "/sys/class/block/%s/%sp1", name, name), access(path, F_OK) == 0)) {
		fprintf(stderr, "%s: --to %s is a whole disk with partitions: name the store's partition\n", what, dev);
		return -1;
	}
	return device_ok(what, dev, name, NULL, size) != 0 ? -1 : 0;
}

int store_restore(int argc, char **argv)
{
	static const char *what = PROG " store restore";
	static const char *const opts[] = {"--to=", NULL};
	const char *vals[1] = {NULL}, *dir, *pos[1], *kind;
	char name[STORE_NAME_LEN], label[20], a[32], b[32];
	unsigned long long size, have, written;
	int r = store_args("restore", argc, argv, opts, vals, &dir, pos, 1), in, out;

	if (r == 3) {
		printf("usage: " PROG " store restore SRC --to DEVICE\n"
		       "Write the backup SRC (a file or device made by '" PROG " store backup') onto DEVICE, a store\n"
		       "partition that is not in use (another stick's, or this stick's when booted from elsewhere).\n");
		return 0;
	}
	if (r)
		return 2;
	if (!pos[0] || !vals[0]) {
		fprintf(stderr,
			"%s: %s (usage: " PROG " store restore SRC --to DEVICE). The store in use cannot be "
			"written over while this system runs from it.\n",
			what, !pos[0] ? "name the backup to restore" : "name the device to write with --to DEVICE");
		return 2;
	}
	if ((in = restore_source(what, pos[0], &size, &kind, label, sizeof label)) < 0)
		return 1;
	if (restore_target(what, vals[0], name, sizeof name, size) != 0) {
		close(in);
		return 1;
	}
	if ((out = open(vals[0], O_WRONLY | O_EXCL | O_CLOEXEC)) < 0) {
		fprintf(stderr, "%s: open %s: %s\n", what, vals[0], strerror(errno));
		close(in);
		return 1;
	}
	r = copy_bytes(what, in, pos[0], out, vals[0], size, 0, &written);
	close(in);
	if (r != 0 || fsync(out) != 0 || close(out) != 0) {
		if (r == 0)
			fprintf(stderr, "%s: write %s: %s\n", what, vals[0], strerror(errno));
		fprintf(stderr, "%s: %s now holds a partial copy: do not boot with it; restore again\n", what, vals[0]);
		return 1;
	}
	have = blk_bytes(name);
	human(size, a, sizeof a);
	human(have, b, sizeof b);
	printf("restore: %s (%s%s%s%s, %s) -> %s (%s): done\n", pos[0], kind, label[0] ? ", label " : "", label, "", a,
	       vals[0], b);
	if (have > size + (1u << 20))
		printf("restore: the store fills %s of %s: after booting with it, '" PROG
		       " store grow' uses the rest\n",
		       a, b);
	if (label[0] && strcmp(label, STORE_LABEL) != 0)
		printf("restore: its label is '%s', not '" STORE_LABEL "': boot with live.persist=LABEL=%s\n", label,
		       label);
	return 0;
}

/* store_copy.c - `liveunion store backup` and `restore`: the store's bytes, copied whole.
 * A backup is consistent while the system runs because the store's ext4 is frozen (FIFREEZE, what fsfreeze(8)
 * does) for the copy: the kernel writes out everything pending and commits the journal, then every writer waits
 * until it is thawed. So the copy is the store as it was at one instant, clean, with nothing to replay. The bytes
 * copied are the ones under the ext4 (the LUKS2 container itself when encrypted: the backup stays encrypted), so a
 * backup file is itself a store (a liveunion-rw.img) and can be written back onto a stick's store partition. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "store.h"
#include "tool.h"

#define CHUNK (1u << 20)
#define HOLE (64u << 10)
#define OVERLAY_MAGIC 0x794c7630

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* size bytes from in to out; into a regular file, blocks of zeros are left as holes. The bytes written in
 * *written. 0, or -1 with the failing side named. */
static int copy_bytes(const char *what, int in, const char *from, int out, const char *to, unsigned long long size,
		      int sparse, unsigned long long *written)
{
	unsigned char *buf = aligned_alloc(4096, CHUNK);
	unsigned long long off = 0;

	*written = 0;
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", what);
		return -1;
	}
	while (off < size) {
		size_t want = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		ssize_t got = pread(in, buf, want, (off_t)off);

		if (got <= 0) {
			fprintf(stderr, "%s: read %s at byte %llu: %s\n", what, from, off,
				got < 0 ? strerror(errno) : "end of device before its size");
			free(buf);
			return -1;
		}
		for (size_t p = 0; p < (size_t)got; p += HOLE) {
			size_t n = (size_t)got - p < HOLE ? (size_t)got - p : HOLE;

			if (sparse && all_zero(buf + p, n))
				continue;
			if (pwrite(out, buf + p, n, (off_t)(off + p)) != (ssize_t)n) {
				fprintf(stderr, "%s: write %s at byte %llu: %s\n", what, to, off + p,
					strerror(errno ? errno : ENOSPC));
				free(buf);
				return -1;
			}
			*written += n;
		}
		off += (unsigned long long)got;
	}
	free(buf);
	if (sparse && ftruncate(out, (off_t)size) != 0) {
		fprintf(stderr, "%s: set the size of %s: %s\n", what, to, strerror(errno));
		return -1;
	}
	return 0;
}

/* The destination device NAME may be written: not in use, not the store's own, large enough. */
static int device_ok(const char *what, const char *path, const char *name, const struct store_info *st,
		     unsigned long long need)
{
	char why[PATH_MAX + 100], a[32], b[32];
	unsigned long long have = blk_bytes(name);

	if (st && (!strcmp(name, st->under) || !strcmp(name, st->part) || !strcmp(name, st->disk) ||
		   !strcmp(name, st->dev))) {
		fprintf(stderr, "%s: %s is the store itself (or its disk): refusing\n", what, path);
		return -1;
	}
	if (blk_busy(name, why, sizeof why)) {
		fprintf(stderr, "%s: %s is in use (%s): refusing to write it\n", what, path, why);
		return -1;
	}
	if (have < need) {
		human(have, a, sizeof a);
		human(need, b, sizeof b);
		fprintf(stderr, "%s: %s holds %s (%llu bytes), the store needs %s (%llu bytes): nothing written\n",
			what, path, a, have, b, need);
		return -1;
	}
	return 0;
}

/* The backup's destination opened: a device not in use (written in place), or a new file on neither the live root
 * nor the store (written as DEST.partial, in tmp). The descriptor with *is_dev, or -1 said. */
static int backup_dest(const char *what, const char *dest, const struct store_info *st, unsigned long long size,
		       char *tmp, size_t tlen, int *is_dev)
{
	struct stat sb, db;
	struct statfs fs;
	char parent[PATH_MAX], name[STORE_NAME_LEN], *slash;
	int out, exists = stat(dest, &sb) == 0 || lstat(dest, &sb) == 0;

	*is_dev = exists && S_ISBLK(sb.st_mode);
	if (*is_dev) {
		if (blk_name_of(dest, name, sizeof name) != 0 || device_ok(what, dest, name, st, size) != 0)
			return -1;
		if ((out = open(dest, O_WRONLY | O_EXCL | O_CLOEXEC)) < 0) {
			fprintf(stderr, "%s: open %s: %s\n", what, dest, strerror(errno));
			return -1;
		}
		pfmt(tmp, tlen, "%s", dest);
		return out;
	}
	if (exists) {
		fprintf(stderr, "%s: %s exists: not overwritten (name a new file, or a device)\n", what, dest);
		return -1;
	}
	pfmt(parent, sizeof parent, "%s", dest);
	slash = strrchr(parent, '/');
	if (!slash)
		pfmt(parent, sizeof parent, ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	if (stat(parent, &db) != 0 || statfs(parent, &fs) != 0) {
		fprintf(stderr, "%s: %s (the directory of %s): %s\n", what, parent, dest, strerror(errno));
		return -1;
	}
	if (fs.f_type == OVERLAY_MAGIC || stat(st->dir, &sb) != 0 || sb.st_dev == db.st_dev) {
		fprintf(stderr,
			"%s: %s is on %s, whose writes go to the store: the store is frozen while it is "
			"copied, so the copy could never be written there. Name a file on another disk, or "
			"in /run (RAM)\n",
			what, dest, fs.f_type == OVERLAY_MAGIC ? "the live root" : "the store");
		return -1;
	}
	pfmt(tmp, tlen, "%s.partial", dest);
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
		fprintf(stderr, "%s: create %s: %s\n", what, tmp, strerror(errno));
		return -1;
	}
	return out;
}

/* The store's device src copied to out (named tmp) while the store is frozen (FIFREEZE: one instant, clean), no
 * signal ending this program in between. 0 with *written and *held (seconds frozen), or -1 said. */
static int frozen_copy(const char *what, const struct store_info *st, const char *src, int out, const char *tmp,
		       unsigned long long size, int is_dev, unsigned long long *written, double *held)
{
	sigset_t block, old;
	int in, frozen, ok;
	double t0;

	if ((in = open(src, O_RDONLY | O_DIRECT | O_CLOEXEC)) < 0) {
		fprintf(stderr, "%s: open %s: %s\n", what, src, strerror(errno));
		return -1;
	}
	if ((frozen = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "%s: open %s: %s\n", what, st->dir, strerror(errno));
		close(in);
		return -1;
	}
	/* No signal may end this program between freeze and thaw: a store left frozen stops the whole system. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigaddset(&block, SIGTSTP);
	sigprocmask(SIG_BLOCK, &block, &old);
	t0 = seconds();
	if (ioctl(frozen, FIFREEZE, 0) != 0) {
		fprintf(stderr, "%s: freeze %s (FIFREEZE): %s: no consistent copy can be made, nothing copied\n", what,
			st->dir, strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(frozen);
		close(in);
		return -1;
	}
	ok = copy_bytes(what, in, src, out, tmp, size, !is_dev, written) == 0;
	if (ioctl(frozen, FITHAW, 0) != 0) {
		fprintf(stderr, "%s: thaw %s (FITHAW): %s: run 'fsfreeze -u %s'\n", what, st->dir, strerror(errno),
			st->dir);
		ok = 0;
	}
	*held = seconds() - t0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(frozen);
	close(in);
	return ok ? 0 : -1;
}

int store_backup(int argc, char **argv)
{
	static const char *what = PROG " store backup";
	struct store_info st;
	const char *dir, *pos[1];
	char src[STORE_NAME_LEN + 8], tmp[PATH_MAX], a[32], b[32];
	unsigned long long size, written = 0;
	int r = store_args("backup", argc, argv, NULL, NULL, &dir, pos, 1), out, is_dev = 0;
	double held = 0;

	if (r == 3) {
		printf("usage: " PROG " store backup DEST [--store DIR]\n"
		       "Copy the store (frozen for the copy: consistent while the system runs) to DEST, a new file\n"
		       "(not on the live root nor on the store) or a device that is not in use.\n");
		return 0;
	}
	if (r)
		return 2;
	if (!pos[0]) {
		fprintf(stderr, "%s: name the destination: a new file (not on the live root) or a device\n", what);
		return 2;
	}
	if (store_find(what, dir, &st) != 0)
		return 1;
	pfmt(src, sizeof src, "/dev/%s", st.under);
	size = blk_bytes(st.under);
	if ((out = backup_dest(what, pos[0], &st, size, tmp, sizeof tmp, &is_dev)) < 0)
		return 1;
	if (frozen_copy(what, &st, src, out, tmp, size, is_dev, &written, &held) != 0)
		goto fail_out;
	if (fsync(out) != 0 || close(out) != 0) {
		fprintf(stderr, "%s: write %s: %s\n", what, tmp, strerror(errno));
		if (!is_dev)
			unlink(tmp);
		return 1;
	}
	if (!is_dev && rename(tmp, pos[0]) != 0) {
		fprintf(stderr, "%s: rename %s to %s: %s\n", what, tmp, pos[0], strerror(errno));
		unlink(tmp);
		return 1;
	}
	human(size, a, sizeof a);
	human(written, b, sizeof b);
	printf("backup: %s (%s, %s) -> %s: %s written; the store was frozen for %.1f s (FIFREEZE: writers waited, "
	       "so this is the store at one instant, clean)\n",
	       src, st.luks ? "LUKS2, still encrypted" : "ext4", a, pos[0], b, held);
	return 0;
fail_out:
	close(out);
	if (!is_dev)
		unlink(tmp);
	fprintf(stderr, "%s: no backup made%s\n", what, is_dev ? " (the device holds a partial copy)" : "");
	return 1;
}

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

int store_restore(int argc, char **argv)
{
	static const char *what = PROG " store restore";
	static const char *const opts[] = {"--to=", NULL};
	const char *vals[1] = {NULL}, *dir, *pos[1], *kind;
	char name[STORE_NAME_LEN], label[20], a[32], b[32], path[PATH_MAX];
	unsigned long long size, have, written;
	struct stat sb;
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
	if ((in = open(pos[0], O_RDONLY | O_CLOEXEC)) < 0 || fstat(in, &sb) != 0) {
		fprintf(stderr, "%s: %s: %s\n", what, pos[0], strerror(errno));
		return 1;
	}
	if (S_ISBLK(sb.st_mode)) {
		if (blk_name_of(pos[0], name, sizeof name) != 0) {
			fprintf(stderr, "%s: %s: %s\n", what, pos[0], strerror(errno));
			close(in);
			return 1;
		}
		size = blk_bytes(name);
	} else {
		size = (unsigned long long)sb.st_size;
	}
	if (!(kind = backup_kind(in, label, sizeof label))) {
		fprintf(stderr,
			"%s: %s is not a store backup: neither an ext4 file system (no magic at byte 1080) nor "
			"a LUKS2 container (no header at byte 0)\n",
			what, pos[0]);
		close(in);
		return 1;
	}
	if (stat(vals[0], &sb) != 0 || !S_ISBLK(sb.st_mode) || blk_name_of(vals[0], name, sizeof name) != 0) {
		fprintf(stderr, "%s: --to %s: %s (name a store partition, e.g. /dev/sdb3)\n", what, vals[0],
			errno ? strerror(errno) : "not a block device");
		close(in);
		return 1;
	}
	pfmt(path, sizeof path, "/sys/class/block/%s/%s1", name, name);
	if (access(path, F_OK) == 0 ||
	    (pfmt(path, sizeof path, "/sys/class/block/%s/%sp1", name, name), access(path, F_OK) == 0)) {
		fprintf(stderr, "%s: --to %s is a whole disk with partitions: name the store's partition\n", what,
			vals[0]);
		close(in);
		return 1;
	}
	if (device_ok(what, vals[0], name, NULL, size) != 0) {
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

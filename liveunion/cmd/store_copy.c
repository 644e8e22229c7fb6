/* store_copy.c - `liveunion store backup` (`restore`: store_restore.c): the store's bytes, copied whole.
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
int copy_bytes(const char *what, int in, const char *from, int out, const char *to, unsigned long long size, int sparse,
	       unsigned long long *written)
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
int device_ok(const char *what, const char *path, const char *name, const struct store_info *st,
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

/*
 * readdir on merged directories: big/ holds BIG_LOWER names in the lower layer; the suite adds BIG_UPPER names
 * in the upper and removes BIG_REMOVED lower ones, so one listing mixes both layers and whiteouts.
 */
#include "unionconf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NBIG (BIG_LOWER + BIG_UPPER + 200)

/* Index of a big/ name: l00000.. -> 0.., u00000.. -> BIG_LOWER.., n00000.. (added while reading) after them. */
static int big_index(const char *name)
{
	char *end;
	long v;

	if (strlen(name) != 6 || (name[0] != 'l' && name[0] != 'u' && name[0] != 'n'))
		return -1;
	v = strtol(name + 1, &end, 10);
	if (*end || v < 0 || v >= (name[0] == 'n' ? 200 : BIG_LOWER))
		return -1;
	return (int)v + (name[0] == 'l' ? 0 : name[0] == 'u' ? BIG_LOWER : BIG_LOWER + BIG_UPPER);
}

static int removed(int i) { return i < BIG_LOWER && i % (BIG_LOWER / BIG_REMOVED) == 0; }

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int big_setup(void)
{
	char rel[32];
	double t0 = now();
	int i, fd;

	for (i = 0; i < BIG_UPPER; i++) {
		snprintf(rel, sizeof(rel), "big/u%05d", i);
		fd = open(fx(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd) != 0) {
			fail("readdir.big-setup", "create %s: %s", rel, strerror(errno));
			return -1;
		}
	}
	for (i = 0; i < BIG_LOWER; i++)
		if (removed(i)) {
			snprintf(rel, sizeof(rel), "big/l%05d", i);
			if (unlink(fx(rel)) != 0) {
				fail("readdir.big-setup", "unlink %s: %s", rel, strerror(errno));
				return -1;
			}
		}
	note("big/: %d upper names created, %d lower names removed in %.2fs", BIG_UPPER, BIG_REMOVED, now() - t0);
	ok("readdir.big-setup");
	return 0;
}

/* One pass over big/: every name exactly once, nothing removed, d_type and d_ino as lstat says. */
static void big_once(void)
{
	static unsigned char seen[NBIG];
	int dots = 0, i, missing = 0, dfd;
	const char *why = NULL;
	char bad[300] = "";
	struct dirent *d;
	struct stat st;
	double t0 = now();
	DIR *dp = opendir(fx("big"));

	if (!dp) {
		fail("readdir.big-once", "opendir: %s", strerror(errno));
		return;
	}
	dfd = dirfd(dp);
	memset(seen, 0, sizeof(seen));
	while ((d = readdir(dp)) && !why) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) {
			dots++;
			continue;
		}
		i = big_index(d->d_name);
		snprintf(bad, sizeof(bad), "%s", d->d_name);
		if (i < 0 || i >= BIG_LOWER + BIG_UPPER)
			why = "unexpected name";
		else if (removed(i))
			why = "a removed lower name is listed";
		else if (seen[i]++)
			why = "listed twice";
		else if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			why = "listed but lstat fails";
		else if (d->d_type != DT_REG || !S_ISREG(st.st_mode))
			why = "d_type is not DT_REG";
		else if (d->d_ino != st.st_ino)
			why = "d_ino differs from st_ino";
	}
	closedir(dp);
	for (i = 0; i < BIG_LOWER + BIG_UPPER && !why; i++)
		missing += !removed(i) && !seen[i];
	note("big/: one pass with fstatat of every entry in %.2fs", now() - t0);
	if (why)
		fail("readdir.big-once", "%s: %s", bad, why);
	else if (missing || dots != 2)
		fail("readdir.big-once", "%d names missing, %d dot entries", missing, dots);
	else
		ok("readdir.big-once");
}

/* telldir/seekdir/rewinddir within one stream return to the same entry, in either layer's part of the list. */
static void big_seek(void)
{
	long pos[4];
	char names[4][NAME_MAX + 1], first[NAME_MAX + 1] = "";
	int at[4] = { 3, 7000, 12000, 19500 }, k = 0, n = 0;
	struct dirent *d;
	DIR *dp = opendir(fx("big"));

	if (!dp) {
		fail("readdir.seekdir", "opendir: %s", strerror(errno));
		return;
	}
	for (;;) {
		long p = telldir(dp);

		if (!(d = readdir(dp)))
			break;
		if (n == 0)
			snprintf(first, sizeof(first), "%s", d->d_name);
		if (k < 4 && n == at[k]) {
			pos[k] = p;
			snprintf(names[k++], sizeof(names[0]), "%s", d->d_name);
		}
		n++;
	}
	if (k != 4) {
		closedir(dp);
		fail("readdir.seekdir", "only %d entries in big/", n);
		return;
	}
	for (k = 3; k >= 0; k--) {
		seekdir(dp, pos[k]);
		if (!(d = readdir(dp)) || strcmp(d->d_name, names[k]) != 0) {
			fail("readdir.seekdir", "seekdir to the position of entry %d (%s) gives %s", at[k], names[k],
			     d ? d->d_name : "end of directory");
			closedir(dp);
			return;
		}
	}
	rewinddir(dp);
	d = readdir(dp);
	if (!d || strcmp(d->d_name, first) != 0)
		fail("readdir.seekdir", "rewinddir: first entry %s, was %s", d ? d->d_name : "(none)", first);
	else
		ok("readdir.seekdir");
	closedir(dp);
}

/* Entries created or removed while a stream is open: each may be seen or not, but never twice. */
static void big_concurrent(void)
{
	static unsigned char seen[NBIG], changed[NBIG];
	char rel[32], bad[300] = "";
	const char *why = NULL;
	int n = 0, i, fd, left = 0;
	struct dirent *d;
	DIR *dp = opendir(fx("big"));

	if (!dp) {
		fail("readdir.concurrent", "opendir: %s", strerror(errno));
		return;
	}
	memset(seen, 0, sizeof(seen));
	memset(changed, 0, sizeof(changed));
	while ((d = readdir(dp)) && !why) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		i = big_index(d->d_name);
		snprintf(bad, sizeof(bad), "%s", d->d_name);
		if (i < 0)
			why = "unexpected name";
		else if (seen[i]++)
			why = "seen twice";
		if (++n == 8000) {
			/* remove 50 names already read and 50 not yet read, from both layers, and add 200 */
			int gone_seen = 0, gone_unseen = 0;

			for (i = 1; i < BIG_LOWER + BIG_UPPER && (gone_seen < 50 || gone_unseen < 50); i += 37) {
				if (removed(i) || (seen[i] ? gone_seen : gone_unseen) >= 50)
					continue;
				snprintf(rel, sizeof(rel), "big/%c%05d", i < BIG_LOWER ? 'l' : 'u', i % BIG_LOWER);
				if (unlink(fx(rel)) != 0) {
					why = "unlink while reading failed";
					break;
				}
				changed[i] = 1;
				if (seen[i])
					gone_seen++;
				else
					gone_unseen++;
			}
			for (i = 0; i < 200 && !why; i++) {
				snprintf(rel, sizeof(rel), "big/n%05d", i);
				fd = open(fx(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
				if (fd < 0 || close(fd) != 0)
					why = "create while reading failed";
				changed[BIG_LOWER + BIG_UPPER + i] = 1;
			}
		}
	}
	closedir(dp);
	for (i = 0; i < BIG_LOWER + BIG_UPPER && !why; i++)
		left += !removed(i) && !changed[i] && !seen[i];
	if (why)
		fail("readdir.concurrent", "%s: %s", bad, why);
	else if (left)
		fail("readdir.concurrent", "%d names that existed throughout were never returned", left);
	else
		ok("readdir.concurrent");
}

/* d_type and d_ino of every kind of entry, in a merged directory (., .. included), a lower-only and an upper-only one. */
static void types_dir(const char *name, const char *rel)
{
	struct dirent *d;
	struct stat st;
	int dfd, n = 0;
	DIR *dp = opendir(fx(rel));

	if (!want(name))
		return;
	if (!dp) {
		fail(name, "opendir %s: %s", rel, strerror(errno));
		return;
	}
	dfd = dirfd(dp);
	while ((d = readdir(dp))) {
		unsigned char t;

		n++;
		if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			fail(name, "%s/%s: listed but lstat fails", rel, d->d_name);
			break;
		}
		t = S_ISREG(st.st_mode) ? DT_REG : S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK :
		    S_ISFIFO(st.st_mode) ? DT_FIFO : S_ISCHR(st.st_mode) ? DT_CHR : DT_UNKNOWN;
		if (d->d_type != t) {
			fail(name, "%s/%s: d_type %u, lstat says %u", rel, d->d_name, d->d_type, t);
			break;
		}
		if (d->d_ino != st.st_ino) {
			fail(name, "%s/%s: d_ino %llu, st_ino %llu", rel, d->d_name, (unsigned long long)d->d_ino,
			     (unsigned long long)st.st_ino);
			break;
		}
	}
	closedir(dp);
	if (!d)
		ok(name);
	note("%s: %d entries", rel, n);
}

static int make_types(const char *dir)
{
	char p[4096];
	int fd;

	snprintf(p, sizeof(p), "%s/ufile", dir);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0 || close(fd) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/udir", dir);
	if (mkdir(p, 0755) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/ulink", dir);
	if (symlink("ufile", p) != 0)
		return -1;
	snprintf(p, sizeof(p), "%s/ufifo", dir);
	return mkfifo(p, 0644);
}

void check_readdir(void)
{
	if (!want_area("readdir") || !area_fresh("readdir"))
		return;
	types_dir("readdir.types-lower", "types");
	if (mkdir(fx("rd-u"), 0755) != 0 || make_types(fx("rd-u")) != 0 || make_types(fx("types")) != 0) {
		fail("readdir.types", "creating upper entries: %s", strerror(errno));
		return;
	}
	types_dir("readdir.types-merged", "types");
	types_dir("readdir.types-upper", "rd-u");
	types_dir("readdir.types-lower-subdir", "dirs/tree/sub");
	if (big_setup() != 0)
		return;
	if (want("readdir.big-once"))
		big_once();
	if (want("readdir.seekdir"))
		big_seek();
	if (want("readdir.concurrent"))
		big_concurrent();
}

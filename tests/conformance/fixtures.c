/*
 * The lower-layer fixtures, written on the build host into a plain directory that mklayer.sh packs into
 * 90-conformance.squashfs. Kept next to the checks so that a check and the state it expects cannot drift.
 * Needs root: owners, a device node and trusted.* xattrs are part of what copy-up must preserve.
 */
#include "unionconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *base;

static const char *at(const char *rel)
{
	static char bufs[4][4096];
	static unsigned n;
	char *b = bufs[n++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", base, rel);
	return b;
}

static int bad(const char *what, const char *rel)
{
	fprintf(stderr, "unionconf: make-fixtures: %s %s: %s\n", what, at(rel), strerror(errno));
	return -1;
}

static int dirs(const char *const *list)
{
	for (; *list; list++)
		if (mkdir(at(*list), 0755) != 0)
			return bad("mkdir", *list);
	return 0;
}

static int files(const char *const *list)
{
	for (; *list; list++) {
		const char *slash = strrchr(*list, '/');

		if (make_file(at(*list), slash ? slash + 1 : *list, 1) != 0)
			return bad("create", *list);
	}
	return 0;
}

static int symlinks(const char *const *list) /* pairs: target, link */
{
	for (; *list; list += 2)
		if (symlink(list[0], at(list[1])) != 0)
			return bad("symlink", list[1]);
	return 0;
}

static int pattern_file(const char *rel, char c, size_t len)
{
	char buf[8192];
	int fd = open(at(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		return bad("create", rel);
	memset(buf, c, sizeof(buf));
	if (len > sizeof(buf) || write(fd, buf, len) != (ssize_t)len || close(fd) != 0)
		return bad("write", rel);
	return 0;
}

static int big_lower(void)
{
	char rel[64];
	int i, fd;

	for (i = 0; i < BIG_LOWER; i++) {
		snprintf(rel, sizeof(rel), "big/l%05d", i);
		fd = open(at(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd) != 0)
			return bad("create", rel);
	}
	return 0;
}

int make_fixtures(const char *dir, long long epoch)
{
	static const char *const d[] = {
		"f", "hl", "sl", "sp", "wo", "wo/dir-empty", "wo/dir-full", "wo/dir-full/sub", "wo/opaque",
		"dirs", "dirs/tree", "dirs/tree/sub", "dirs/tree/sub/deep", "dirs/mvtree", "dirs/mvtree/sub",
		"dirs/into", "dirs/out",
		"dirs/xtree", "dirs/xtree/sub", "dirs/xtree/sub/deep", "dirs/mtree", "dirs/mtree/sub", "dirs/mtree/sub/deep",
		"dirs/mxtree", "dirs/mxtree/sub", "dirs/mxtree/sub/deep", "dirs/dest", "big", "types", "types/dir", "mm", "stdev", "stdev/dir", NULL,
	};
	static const char *const fl[] = {
		"hl/a", "sl/target", "sl/write-target", "sp/replace-me", "wo/file1", "wo/file2", "wo/recreate",
		"wo/replace", "wo/dir-full/a", "wo/dir-full/b", "wo/dir-full/sub/c", "wo/opaque/x", "wo/opaque/y",
		"dirs/tree/a", "dirs/tree/sub/b", "dirs/tree/sub/deep/c", "dirs/mvtree/a", "dirs/mvtree/sub/b",
		"dirs/into/keep", "dirs/out/file",
		"dirs/xtree/a", "dirs/xtree/sub/b", "dirs/xtree/sub/deep/c", "dirs/mtree/a", "dirs/mtree/sub/b",
		"dirs/mtree/sub/deep/c", "dirs/mxtree/a", "dirs/mxtree/sub/b", "dirs/mxtree/sub/deep/c", "dirs/dest/keep", "types/file", "stdev/file", "stdev/chmod", NULL,
	};
	static const char *const sl[] = {
		"target", "sl/link", "target", "sl/chown-link", "write-target", "sl/write-link", "target",
		"sl/rename-link", "missing", "sl/dangling", "a", "dirs/tree/link", "a", "dirs/xtree/link", "a", "dirs/mtree/link", "a", "dirs/mxtree/link", "file", "types/symlink", NULL,
	};
	char rel[128], e[32];
	int i, fd;

	base = dir;
	uc.epoch = epoch;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return bad("mkdir", "");
	if (dirs(d) != 0 || files(fl) != 0 || symlinks(sl) != 0)
		return -1;
	for (i = 0; copyup_ops[i]; i++) {
		snprintf(rel, sizeof(rel), "f/%s", copyup_ops[i]);
		if (make_file(at(rel), copyup_ops[i], 1) != 0)
			return bad("create", rel);
	}
	if (link(at("hl/a"), at("hl/b")) != 0)
		return bad("link", "hl/b");
	if (mkfifo(at("sp/fifo"), 0644) != 0 || mkfifo(at("sp/chmod-fifo"), 0644) != 0 ||
	    mkfifo(at("types/fifo"), 0644) != 0)
		return bad("mkfifo", "sp/ or types/");
	if (mknod(at("sp/null"), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
	    mknod(at("types/chr"), S_IFCHR | 0666, makedev(1, 3)) != 0)
		return bad("mknod", "sp/null or types/chr");
	if (pattern_file("mm/shared", 'L', 8192) != 0 || pattern_file("mm/rw", 'L', 8192) != 0)
		return -1;
	if (big_lower() != 0)
		return -1;
	snprintf(e, sizeof(e), "%lld\n", epoch);
	fd = open(at("epoch"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, e, strlen(e)) != (ssize_t)strlen(e) || close(fd) != 0)
		return bad("write", "epoch");
	return 0;
}

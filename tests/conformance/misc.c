/* mmap across copy-up, directory rename (redirect_dir or EXDEV), statfs, NAME_MAX, st_dev/st_ino. */
#include "unionconf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#define OVERLAYFS_MAGIC 0x794c7630

extern char **environ;

static void mmap_checks(void)
{
	char b[4];
	char *m;
	int fd1, fd2, fd;

	/* A MAP_SHARED map of the lower file, then a write through another fd copies the file up. */
	if (want("mmap.shared-lower-then-write") || want("mmap.read-fd-after-copyup")) {
		if ((fd1 = open(fx("mm/shared"), O_RDONLY | O_CLOEXEC)) < 0 ||
		    (m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd1, 0)) == MAP_FAILED) {
			fail("mmap.shared-lower-then-write", "open+mmap mm/shared: %s", strerror(errno));
			return;
		}
		if (m[0] != 'L' || (fd2 = open(fx("mm/shared"), O_RDWR | O_CLOEXEC)) < 0 || pwrite(fd2, "NEW", 3, 0) != 3 ||
		    close(fd2) != 0)
			fail("mmap.shared-lower-then-write", "write through a second fd: %s", strerror(errno));
		else if (memcmp(m, "NEW", 3) == 0)
			ok("mmap.shared-lower-then-write");
		else
			known_limit("mmap.shared-lower-then-write", "a MAP_SHARED map made before copy-up still shows the "
				    "lower data after a write through another fd (overlayfs maps the lower file's pages)");
		if (want("mmap.read-fd-after-copyup"))
			pread(fd1, b, 3, 0) == 3 && memcmp(b, "NEW", 3) == 0
				? ok("mmap.read-fd-after-copyup")
				: fail("mmap.read-fd-after-copyup", "read(2) on the fd opened before copy-up returns old data");
		munmap(m, 8192);
		close(fd1);
	}
	if (want("mmap.shared-rw-coherent")) {
		if ((fd = open(fx("mm/rw"), O_RDWR | O_CLOEXEC)) < 0 ||
		    (m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
			fail("mmap.shared-rw-coherent", "open O_RDWR+mmap mm/rw: %s", strerror(errno));
			return;
		}
		m[100] = 'M';
		fd2 = open(fx("mm/rw"), O_RDWR | O_CLOEXEC);
		if (msync(m, 8192, MS_SYNC) != 0 || fd2 < 0 || pread(fd2, b, 1, 100) != 1 || b[0] != 'M')
			fail("mmap.shared-rw-coherent", "a store through the map is not read back through another fd");
		else if (pwrite(fd2, "P", 1, 200) != 1 || m[200] != 'P')
			fail("mmap.shared-rw-coherent", "a write through another fd does not show in the map");
		else
			ok("mmap.shared-rw-coherent");
		if (fd2 >= 0)
			close(fd2);
		munmap(m, 8192);
		close(fd);
	}
}

static int tree_intact(const char *d)
{
	char p[4096], t[16];
	ssize_t n;
	struct stat st;

	snprintf(p, sizeof(p), "%s/sub/deep/c", d);
	if (stat(p, &st) != 0 || st.st_size != FIX_SIZE)
		return 0;
	snprintf(p, sizeof(p), "%s/sub/b", d);
	if (stat(p, &st) != 0 || st.st_uid != FIX_UID)
		return 0;
	snprintf(p, sizeof(p), "%s/link", d);
	n = readlink(p, t, sizeof(t) - 1);
	return n == 1 && t[0] == 'a';
}

static int run_mv(const char *from, const char *to)
{
	char *argv[] = { "mv", (char *)from, (char *)to, NULL };
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, "mv", NULL, NULL, argv, environ) != 0)
		return -1;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int dir_empty(const char *d)
{
	struct dirent *e;
	DIR *dp = opendir(d);
	int n = 0;

	if (!dp)
		return 0;
	while ((e = readdir(dp)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(dp);
	return n == 0;
}

static int drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	sync();
	if (fd < 0)
		return -1;
	if (write(fd, "2", 1) != 1) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* rename(2) of a directory with lower content (NAME) from FROM to TO (another parent or the same); MERGED: a file
 * is created in it first, so it is a merged directory. The tree must move whole, stay whole once the dentries
 * left the cache (the redirect is read back from the upper), and a new directory at the old name must be empty. */
static void dir_rename_one(const char *name, const char *from, const char *to, int merged)
{
	char f[4096], t[4096], p[4096 + 8];
	struct stat st;

	snprintf(f, sizeof(f), "%s", fx(from));
	snprintf(t, sizeof(t), "%s", fx(to));
	if (merged) {
		snprintf(p, sizeof(p), "%s/new", f);
		if (make_file(p, "new", 0) != 0) {
			fail(name, "create %s: %s", p, strerror(errno));
			return;
		}
	}
	if (rename(f, t) != 0) {
		if (errno == EXDEV && !has_opt("redirect_dir=on"))
			known_limit("rename.dir-lower", "%s: rename(2) of a directory with lower content returns EXDEV "
				    "(redirect_dir off); mv and other careful programs copy instead (rename.dir-mv)", name);
		else
			fail(name, "rename(2) %s -> %s: %s", from, to, strerror(errno));
		return;
	}
	snprintf(p, sizeof(p), "%s/new", t);
	if (!tree_intact(t) || (merged && (stat(p, &st) != 0 || st.st_size != FIX_SIZE)))
		fail(name, "the moved tree %s is incomplete", to);
	else if (lstat(f, &st) == 0 || errno != ENOENT)
		fail(name, "the old name %s still resolves", from);
	else if (mkdir(f, 0755) != 0 || !dir_empty(f))
		fail(name, "a new directory at the old name %s is not empty: lower entries leak into it", from);
	else if (drop_caches() != 0 || !tree_intact(t))
		fail(name, "the moved tree %s is incomplete once its dentries left the cache", to);
	else
		ok(name);
}

static void dir_rename(void)
{
	struct stat st;

	if (want("rename.dir-lower")) {
		if (rename(fx("dirs/tree"), fx("dirs/tree-moved")) == 0) {
			if (tree_intact(fx("dirs/tree-moved")) && lstat(fx("dirs/tree"), &st) != 0 && errno == ENOENT)
				ok("rename.dir-lower");
			else
				fail("rename.dir-lower", "rename(2) succeeded but the moved tree is incomplete or the old name left");
			printf("# rename(2) of a lower directory: works (redirect_dir)\n");
		} else if (errno == EXDEV && !has_opt("redirect_dir=on")) {
			known_limit("rename.dir-lower", "rename(2) of a directory with lower content returns EXDEV "
				    "(redirect_dir off); mv and other careful programs copy instead (rename.dir-mv)");
		} else {
			fail("rename.dir-lower", "rename(2) of a lower directory: %s", strerror(errno));
		}
	}
	if (want("rename.dir-lower-across"))
		dir_rename_one("rename.dir-lower-across", "dirs/xtree", "dirs/dest/xtree", 0);
	if (want("rename.dir-merged"))
		dir_rename_one("rename.dir-merged", "dirs/mtree", "dirs/mtree-moved", 1);
	if (want("rename.dir-merged-across")) {
		if (mkdir(fx("rn-x"), 0755) != 0)
			fail("rename.dir-merged-across", "mkdir rn-x: %s", strerror(errno));
		else
			dir_rename_one("rename.dir-merged-across", "dirs/mxtree", "rn-x/mxtree", 1);
	}
	if (want("rename.dir-mv"))
		run_mv(fx("dirs/mvtree"), fx("dirs/mvtree-moved")) == 0 && lstat(fx("dirs/mvtree"), &st) != 0 &&
				stat(fx("dirs/mvtree-moved/sub/b"), &st) == 0 && st.st_size == FIX_SIZE
			? ok("rename.dir-mv")
			: fail("rename.dir-mv", "mv of a lower directory tree failed or left it incomplete");
	if (want("rename.dir-upper"))
		mkdir(fx("rn-u"), 0755) == 0 && mkdir(fx("rn-u/sub"), 0755) == 0 &&
				rename(fx("rn-u"), fx("rn-u-moved")) == 0 && stat(fx("rn-u-moved/sub"), &st) == 0
			? ok("rename.dir-upper")
			: fail("rename.dir-upper", "rename(2) of an upper-only directory: %s", strerror(errno));
	/* Directories made since boot move into and out of merged directories with rename(2), whatever the options. */
	if (want("rename.dir-into-merged"))
		mkdir(fx("rn-in"), 0755) == 0 && mkdir(fx("rn-in/d"), 0755) == 0 && make_file(fx("rn-in/d/f"), "f", 0) == 0 &&
				rename(fx("rn-in/d"), fx("dirs/into/d")) == 0 && stat(fx("dirs/into/d/f"), &st) == 0 &&
				st.st_size == FIX_SIZE && stat(fx("dirs/into/keep"), &st) == 0 && lstat(fx("rn-in/d"), &st) != 0
			? ok("rename.dir-into-merged")
			: fail("rename.dir-into-merged", "a new directory renamed into a merged one: %s", strerror(errno));
	if (want("rename.dir-out-of-merged"))
		mkdir(fx("rn-out"), 0755) == 0 && mkdir(fx("dirs/out/d"), 0755) == 0 &&
				make_file(fx("dirs/out/d/f"), "f", 0) == 0 && rename(fx("dirs/out/d"), fx("rn-out/d")) == 0 &&
				stat(fx("rn-out/d/f"), &st) == 0 &&
				st.st_size == FIX_SIZE && lstat(fx("dirs/out/d"), &st) != 0 && errno == ENOENT
			? ok("rename.dir-out-of-merged")
			: fail("rename.dir-out-of-merged", "a new directory in a merged one renamed out: %s", strerror(errno));
}

static void statfs_checks(void)
{
	struct statfs a, b;
	struct statvfs v;
	char buf[65536];
	int fd, i;

	if (!want("statfs.values"))
		return;
	if (statfs(uc.root, &a) != 0 || statvfs(uc.root, &v) != 0) {
		fail("statfs.values", "statfs %s: %s", uc.root, strerror(errno));
		return;
	}
	if ((unsigned long)a.f_type != OVERLAYFS_MAGIC || a.f_bsize <= 0 || a.f_blocks == 0 || a.f_bfree > a.f_blocks ||
	    a.f_bavail > a.f_bfree || (v.f_flag & ST_RDONLY)) {
		fail("statfs.values", "type %#lx bsize %ld blocks %llu bfree %llu bavail %llu flags %#lx",
		     (unsigned long)a.f_type, (long)a.f_bsize, (unsigned long long)a.f_blocks,
		     (unsigned long long)a.f_bfree, (unsigned long long)a.f_bavail, (unsigned long)v.f_flag);
		return;
	}
	/* free space is the upper's: writing 4 MiB must show */
	memset(buf, 'x', sizeof(buf));
	if ((fd = open(fx("statfs-fill"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		fail("statfs.values", "create statfs-fill: %s", strerror(errno));
		return;
	}
	for (i = 0; i < 64; i++)
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			break;
	if (i < 64 || fsync(fd) != 0 || close(fd) != 0 || statfs(uc.root, &b) != 0) {
		fail("statfs.values", "writing 4 MiB: %s", strerror(errno));
		return;
	}
	if ((long long)(a.f_bfree - b.f_bfree) * a.f_bsize < 2 * 1024 * 1024)
		fail("statfs.values", "f_bfree went from %llu to %llu after writing 4 MiB", (unsigned long long)a.f_bfree,
		     (unsigned long long)b.f_bfree);
	else
		ok("statfs.values");
	unlink(fx("statfs-fill"));
}

static int listed(const char *dir, const char *name)
{
	struct dirent *d;
	DIR *dp = opendir(dir);
	int found = 0;

	if (!dp)
		return 0;
	while (!found && (d = readdir(dp)))
		found = strcmp(d->d_name, name) == 0;
	closedir(dp);
	return found;
}

/* NAME_MAX: what statfs/pathconf report must be what can be created. Unpatched kernels report 256 here. */
static void namemax_checks(void)
{
	char name[300], rel[320];
	struct statfs s;
	int fd;

	if (want("namemax.reported")) {
		if (statfs(uc.root, &s) != 0)
			fail("namemax.reported", "statfs: %s", strerror(errno));
		else if (s.f_namelen != 255)
			fail("namemax.reported", "statfs f_namelen %ld (what getconf NAME_MAX reports), but the longest "
			     "name that can be created is 255", (long)s.f_namelen);
		else
			ok("namemax.reported");
	}
	memset(name, 'n', sizeof(name));
	name[255] = '\0';
	snprintf(rel, sizeof(rel), "%s", name);
	if (want("namemax.create-255")) {
		fd = open(fx(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 && close(fd) == 0 && unlink(fx(rel)) == 0)
			ok("namemax.create-255");
		else
			fail("namemax.create-255", "creating a 255-byte name: %s", strerror(errno));
	}
	name[255] = 'n';
	name[256] = '\0';
	snprintf(rel, sizeof(rel), "%s", name);
	if (want("namemax.create-256-fails")) {
		fd = open(fx(rel), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			close(fd);
			unlink(fx(rel));
			fail("namemax.create-256-fails", "a 256-byte name was created");
		} else if (errno != ENAMETOOLONG)
			fail("namemax.create-256-fails", "want ENAMETOOLONG, got %s", strerror(errno));
		else
			ok("namemax.create-256-fails");
	}
	/* The patch keeps the lookup limit at the maximum over the layers: a 256-byte lower name stays readable. */
	if (want("namemax.lower-256-lookup")) {
		char b[16];
		size_t n;
		struct stat st;

		memset(rel, 'L', 256);
		rel[256] = '\0';
		if (lstat(fx(rel), &st) != 0)
			fail("namemax.lower-256-lookup", "lstat of the lower file with a 256-byte name (mklayer.sh): %s",
			     strerror(errno));
		else if (read_all(fx(rel), b, sizeof(b), &n) != 0 || n != 5 || memcmp(b, "long\n", 5) != 0)
			fail("namemax.lower-256-lookup", "the lower file with a 256-byte name does not read back");
		else if (!listed(uc.fix, rel))
			fail("namemax.lower-256-lookup", "the lower file with a 256-byte name is not listed by readdir");
		else
			ok("namemax.lower-256-lookup");
	}
}

/* One call on a name one byte longer than the upper takes, which no layer holds: ENAMETOOLONG as on tmpfs or ext4,
 * not ENOENT (an unpatched overlayfs checks names against the longest limit of any layer: squashfs takes 256). */
static void missing_long(const char *call, int rc, const char *p)
{
	char name[64];
	struct stat st;
	int e = errno;

	snprintf(name, sizeof(name), "namemax.missing-256.%s", call);
	if (rc == 0)
		fail(name, "%s of a 256-byte name that exists nowhere succeeded", call);
	else if (e != ENAMETOOLONG)
		fail(name, "%s: want ENAMETOOLONG, got %s", call, strerror(e));
	else if (lstat(p, &st) == 0)
		fail(name, "%s failed ENAMETOOLONG but left the name behind", call);
	else
		ok(name);
}

static void namemax_missing(void)
{
	char rel[300];
	const char *p, *to;

	memset(rel, 'M', 256);
	rel[256] = '\0';
	p = fx(rel);
	to = fx("namemax-target");
	if (want("namemax.missing-256.chmod"))
		missing_long("chmod", chmod(p, 0600), p);
	if (want("namemax.missing-256.chown"))
		missing_long("chown", chown(p, 1, 1), p);
	if (want("namemax.missing-256.lchown"))
		missing_long("lchown", lchown(p, 1, 1), p);
	if (want("namemax.missing-256.truncate"))
		missing_long("truncate", truncate(p, 0), p);
	if (want("namemax.missing-256.unlink"))
		missing_long("unlink", unlink(p), p);
	if (want("namemax.missing-256.rmdir"))
		missing_long("rmdir", rmdir(p), p);
	if (want("namemax.missing-256.link"))
		missing_long("link", link(p, to), p);
	if (want("namemax.missing-256.rename"))
		missing_long("rename", rename(p, to), p);
	if (want("namemax.missing-256.mknod"))
		missing_long("mknod", mknod(p, S_IFREG | 0644, 0), p);
	/* the 0/0 character device is how overlayfs marks a whiteout: refused EPERM, but only for a valid name */
	if (want("namemax.missing-256.mknod-whiteout"))
		missing_long("mknod-whiteout", mknod(p, S_IFCHR | 0644, makedev(0, 0)), p);
	if (want("namemax.missing-256.stat")) {
		struct stat st;

		missing_long("stat", lstat(p, &st), p);
	}
}

/* The second lower file with a 256-byte name (mklayer.sh): removing or renaming it away needs its name in the upper
 * (a whiteout, or the copy-up), which a 255-byte upper cannot hold. */
static void lower_long_remove(void)
{
	const char *n = "namemax.lower-256-remove";
	char rel[300], b[16];
	size_t len;
	int ru, rr, eu, er;

	if (!want(n))
		return;
	memset(rel, 'R', 256);
	rel[256] = '\0';
	rr = rename(fx(rel), fx("namemax-renamed"));
	er = errno;
	if (rr == 0) {
		rr = read_all(fx("namemax-renamed"), b, sizeof(b), &len) == 0 && len == 5 && memcmp(b, "long\n", 5) == 0 &&
		     access(fx(rel), F_OK) != 0 ? 0 : -2;
		rr == 0 ? ok(n) : fail(n, "rename of the lower 256-byte name succeeded but the result is wrong");
		return;
	}
	ru = unlink(fx(rel));
	eu = errno;
	if (ru == 0) {
		fail(n, "unlink of the lower 256-byte name worked but rename gave %s", strerror(er));
		return;
	}
	if (er == ENAMETOOLONG && eu == ENAMETOOLONG && read_all(fx(rel), b, sizeof(b), &len) == 0 && len == 5)
		known_limit(n, "rename(2) and unlink(2) of a lower 256-byte name fail ENAMETOOLONG: its whiteout or copy-up "
			    "would need the name in the upper, which takes 255; the file stays intact and readable");
	else
		fail(n, "rename: %s, unlink: %s (want success or ENAMETOOLONG with the file intact)", strerror(er),
		     strerror(eu));
}

/* st_ino is persistent only if overlayfs follows the origin the copy-up recorded, once the inode is evicted. */
static void ino_after_eviction(ino_t before)
{
	const char *n = "stdev.copyup-ino-after-eviction";
	struct stat st;
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	if (fd < 0) {
		note("%s not run: /proc/sys/vm/drop_caches: %s", n, strerror(errno));
		return;
	}
	sync();
	if (write(fd, "2", 1) != 1 || close(fd) != 0 || lstat(fx("stdev/chmod"), &st) != 0)
		fail(n, "drop_caches, then lstat: %s", strerror(errno));
	else if (st.st_ino == before)
		ok(n);
	else if (lower_uuid_ambiguous())
		known_limit(n, "st_ino %llu before copy-up, %llu once the inode left the cache: %s",
			    (unsigned long long)before, (unsigned long long)st.st_ino, AMBIGUOUS_UUID);
	else
		fail(n, "st_ino %llu before copy-up, %llu once the inode left the cache (options %s)",
		     (unsigned long long)before, (unsigned long long)st.st_ino, mount_opts());
}

/* With the init's options (xino=on) the union is one filesystem: one st_dev, and copy-up keeps st_ino. */
static void stdev_checks(void)
{
	struct stat r, lo, before, after, d0, d1, up;
	int fd;

	if (!want_area("stdev") || !area_fresh("stdev"))
		return;
	if (lstat(uc.root, &r) != 0 || lstat(fx("stdev/file"), &lo) != 0 || lstat(fx("stdev/chmod"), &before) != 0 ||
	    lstat(fx("stdev/dir"), &d0) != 0) {
		fail("stdev", "lstat of the stdev fixtures: %s", strerror(errno));
		return;
	}
	if (chmod(fx("stdev/chmod"), 0604) != 0 || lstat(fx("stdev/chmod"), &after) != 0 ||
	    (fd = open(fx("stdev/dir/new"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0 || close(fd) != 0 ||
	    lstat(fx("stdev/dir"), &d1) != 0 || lstat(fx("stdev/dir/new"), &up) != 0) {
		fail("stdev", "chmod/create: %s", strerror(errno));
		return;
	}
	if (want("stdev.one-st_dev")) {
		if (r.st_dev == lo.st_dev && lo.st_dev == after.st_dev && after.st_dev == d1.st_dev && d1.st_dev == up.st_dev)
			ok("stdev.one-st_dev");
		else
			fail("stdev.one-st_dev", "st_dev: root %#llx, lower file %#llx, copied-up file %#llx, merged dir %#llx, "
			     "upper file %#llx (is xino on? options %s)", (unsigned long long)r.st_dev,
			     (unsigned long long)lo.st_dev, (unsigned long long)after.st_dev, (unsigned long long)d1.st_dev,
			     (unsigned long long)up.st_dev, mount_opts());
	}
	if (want("stdev.copyup-keeps-ino"))
		before.st_ino == after.st_ino
			? ok("stdev.copyup-keeps-ino")
			: fail("stdev.copyup-keeps-ino", "st_ino %llu before chmod, %llu after copy-up (the upper did not "
			       "record the lower origin: on a squashfs lower this needs index=on; options %s)",
			       (unsigned long long)before.st_ino, (unsigned long long)after.st_ino, mount_opts());
	if (want("stdev.copyup-ino-after-eviction"))
		ino_after_eviction(before.st_ino);
	if (want("stdev.dir-copyup-keeps-ino"))
		d0.st_ino == d1.st_ino
			? ok("stdev.dir-copyup-keeps-ino")
			: fail("stdev.dir-copyup-keeps-ino", "directory st_ino %llu before, %llu after copy-up",
			       (unsigned long long)d0.st_ino, (unsigned long long)d1.st_ino);
}

void check_misc(void)
{
	if (want_area("mmap") && area_fresh("mmap"))
		mmap_checks();
	if (want_area("rename") && area_fresh("rename"))
		dir_rename();
	if (want_area("statfs"))
		statfs_checks();
	if (want_area("namemax")) {
		namemax_checks();
		namemax_missing();
		lower_long_remove();
	}
	stdev_checks();
}

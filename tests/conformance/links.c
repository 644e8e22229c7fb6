/* Hard links, symlinks, special files and file renames across lower, merged and upper-only directories. */
#include "unionconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static int readlink_is(const char *p, const char *want)
{
	char b[256];
	ssize_t n = readlink(p, b, sizeof(b) - 1);

	if (n < 0)
		return 0;
	b[n] = '\0';
	return strcmp(b, want) == 0;
}

/* Hard links of a lower file: does copying up one name keep both names one inode? Only index=on can. */
static void hardlinks(void)
{
	const char *n = "links.hardlink-copyup";
	struct stat a, b;
	char buf[FIX_SIZE];
	const char *why;

	if (!want(n))
		return;
	if (lstat(fx("hl/a"), &a) != 0 || a.st_nlink != 2) {
		fail(n, "lower hl/a should have st_nlink 2 before the change");
		return;
	}
	if (chmod(fx("hl/a"), 0604) != 0 || lstat(fx("hl/a"), &a) != 0 || lstat(fx("hl/b"), &b) != 0) {
		fail(n, "chmod/lstat: %s", strerror(errno));
		return;
	}
	fix_content("a", buf, sizeof(buf));
	if (!same_content(fx("hl/b"), buf, sizeof(buf), &why)) {
		fail(n, "hl/b after copying up hl/a: %s", why);
		return;
	}
	if (a.st_ino == b.st_ino && a.st_nlink == 2 && b.st_nlink == 2 && (b.st_mode & 07777) == 0604) {
		ok(n);
		note("hard links stay one inode after copy-up (index feature on)");
	} else if (!has_opt("index=on")) {
		known_limit(n, "after chmod of hl/a, hl/b is a different file (ino %llu/%llu, nlink %lu/%lu, hl/b mode "
			    "%04o): overlay index is off (%s)", (unsigned long long)a.st_ino, (unsigned long long)b.st_ino,
			    (unsigned long)a.st_nlink, (unsigned long)b.st_nlink, b.st_mode & 07777, mount_opts());
	} else {
		fail(n, "index=on but hl/a and hl/b split: ino %llu/%llu nlink %lu/%lu, hl/b mode %04o",
		     (unsigned long long)a.st_ino, (unsigned long long)b.st_ino, (unsigned long)a.st_nlink,
		     (unsigned long)b.st_nlink, b.st_mode & 07777);
	}
}

static void symlinks(void)
{
	struct stat st, t;
	int fd;

	if (want("links.symlink-lower"))
		lstat(fx("sl/link"), &st) == 0 && S_ISLNK(st.st_mode) && readlink_is(fx("sl/link"), "target") &&
				stat(fx("sl/link"), &t) == 0 && S_ISREG(t.st_mode)
			? ok("links.symlink-lower")
			: fail("links.symlink-lower", "sl/link is not a symlink to target");
	if (want("links.symlink-lchown")) {
		if (lchown(fx("sl/chown-link"), 4321, 8765) != 0)
			fail("links.symlink-lchown", "lchown: %s", strerror(errno));
		else if (lstat(fx("sl/chown-link"), &st) != 0 || st.st_uid != 4321 || !S_ISLNK(st.st_mode) ||
			 !readlink_is(fx("sl/chown-link"), "target"))
			fail("links.symlink-lchown", "copied-up symlink lost its owner change or its target");
		else if (lstat(fx("sl/target"), &t) != 0 || t.st_uid != FIX_UID)
			fail("links.symlink-lchown", "lchown followed the link and changed the target");
		else
			ok("links.symlink-lchown");
	}
	if (want("links.symlink-write-through")) {
		fd = open(fx("sl/write-link"), O_WRONLY | O_CLOEXEC);
		if (fd < 0 || pwrite(fd, "S", 1, 0) != 1 || close(fd) != 0)
			fail("links.symlink-write-through", "write through sl/write-link: %s", strerror(errno));
		else if (!readlink_is(fx("sl/write-link"), "write-target"))
			fail("links.symlink-write-through", "the symlink changed when its target was copied up");
		else {
			char b[8];
			size_t n;

			if (read_all(fx("sl/write-target"), b, 6, &n) != 0 || n != 6 || memcmp(b, "Sower:", 6) != 0)
				fail("links.symlink-write-through", "the write did not reach sl/write-target");
			else
				ok("links.symlink-write-through");
		}
	}
	if (want("links.symlink-rename"))
		rename(fx("sl/rename-link"), fx("sl/renamed-link")) == 0 && readlink_is(fx("sl/renamed-link"), "target") &&
				lstat(fx("sl/rename-link"), &st) != 0 && errno == ENOENT
			? ok("links.symlink-rename")
			: fail("links.symlink-rename", "rename of a lower symlink: target lost or old name left");
	if (want("links.symlink-dangling-create")) {
		/* O_CREAT through a dangling symlink creates its target, as on any Linux filesystem */
		fd = open(fx("sl/dangling"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd) != 0)
			fail("links.symlink-dangling-create", "open O_CREAT through sl/dangling: %s", strerror(errno));
		else
			lstat(fx("sl/missing"), &st) == 0 && S_ISREG(st.st_mode) && readlink_is(fx("sl/dangling"), "missing")
				? ok("links.symlink-dangling-create")
				: fail("links.symlink-dangling-create", "sl/missing was not created as a regular file");
	}
	if (want("links.symlink-new-merged"))
		symlink("target", fx("sl/new")) == 0 && readlink_is(fx("sl/new"), "target")
			? ok("links.symlink-new-merged")
			: fail("links.symlink-new-merged", "symlink in a lower directory: %s", strerror(errno));
}

static int fifo_io(const char *p)
{
	char c = 0;
	int fd = open(p, O_RDWR | O_NONBLOCK | O_CLOEXEC), r;

	if (fd < 0)
		return 0;
	r = write(fd, "x", 1) == 1 && read(fd, &c, 1) == 1 && c == 'x';
	return close(fd) == 0 && r;
}

static void special(void)
{
	struct stat st;

	if (want("links.fifo-lower-io"))
		lstat(fx("sp/fifo"), &st) == 0 && S_ISFIFO(st.st_mode) && fifo_io(fx("sp/fifo"))
			? ok("links.fifo-lower-io")
			: fail("links.fifo-lower-io", "lower fifo sp/fifo does not work as a pipe");
	if (want("links.fifo-chmod-copyup"))
		chmod(fx("sp/chmod-fifo"), 0600) == 0 && lstat(fx("sp/chmod-fifo"), &st) == 0 && S_ISFIFO(st.st_mode) &&
				(st.st_mode & 07777) == 0600 && fifo_io(fx("sp/chmod-fifo"))
			? ok("links.fifo-chmod-copyup")
			: fail("links.fifo-chmod-copyup", "chmod of a lower fifo: %s", strerror(errno));
	if (want("links.chr-lower"))
		lstat(fx("sp/null"), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)
			? ok("links.chr-lower")
			: fail("links.chr-lower", "sp/null is not the character device 1:3");
	if (want("links.mkfifo-merged"))
		mkfifo(fx("sp/newfifo"), 0640) == 0 && lstat(fx("sp/newfifo"), &st) == 0 && S_ISFIFO(st.st_mode) &&
				fifo_io(fx("sp/newfifo"))
			? ok("links.mkfifo-merged")
			: fail("links.mkfifo-merged", "mkfifo next to lower files: %s", strerror(errno));
	if (want("links.mknod-merged")) {
		int fd;

		if (mknod(fx("sp/newnull"), S_IFCHR | 0666, makedev(1, 3)) != 0 || lstat(fx("sp/newnull"), &st) != 0 ||
		    !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
			fail("links.mknod-merged", "mknod c 1 3 next to lower files: %s", strerror(errno));
		else if ((fd = open(fx("sp/newnull"), O_WRONLY | O_CLOEXEC)) < 0 || write(fd, "x", 1) != 1 || close(fd) != 0)
			fail("links.mknod-merged", "the new device node does not work: %s", strerror(errno));
		else
			ok("links.mknod-merged");
	}
	if (want("links.mkfifo-over-removed-lower"))
		unlink(fx("sp/replace-me")) == 0 && mkfifo(fx("sp/replace-me"), 0644) == 0 &&
				lstat(fx("sp/replace-me"), &st) == 0 && S_ISFIFO(st.st_mode)
			? ok("links.mkfifo-over-removed-lower")
			: fail("links.mkfifo-over-removed-lower", "unlink + mkfifo of a lower name: %s", strerror(errno));
}

/* Files moving into and out of merged directories, and a rename that replaces a lower file. */
static void renames(void)
{
	char buf[FIX_SIZE];
	const char *why;
	struct stat st;

	if (mkdir(fx("u2"), 0755) != 0) {
		fail("links.rename", "mkdir %s: %s", fx("u2"), strerror(errno));
		return;
	}
	if (want("links.rename-out-of-merged")) {
		fix_content("file", buf, sizeof(buf));
		if (rename(fx("dirs/out/file"), fx("u2/file")) != 0)
			fail("links.rename-out-of-merged", "rename dirs/out/file -> u2/file: %s", strerror(errno));
		else if (!same_content(fx("u2/file"), buf, sizeof(buf), &why))
			fail("links.rename-out-of-merged", "u2/file: %s", why);
		else if (lstat(fx("dirs/out/file"), &st) == 0 || errno != ENOENT)
			fail("links.rename-out-of-merged", "the lower name dirs/out/file still resolves");
		else
			ok("links.rename-out-of-merged");
	}
	if (want("links.rename-into-merged")) {
		fix_content("new", buf, sizeof(buf));
		if (make_file(fx("u2/new"), "new", 1) != 0 || rename(fx("u2/new"), fx("dirs/into/new")) != 0)
			fail("links.rename-into-merged", "create u2/new, rename into dirs/into: %s", strerror(errno));
		else if (!same_content(fx("dirs/into/new"), buf, sizeof(buf), &why) || access(fx("dirs/into/keep"), F_OK))
			fail("links.rename-into-merged", "dirs/into after the rename: new or keep is wrong");
		else
			ok("links.rename-into-merged");
	}
	if (want("links.rename-over-lower")) {
		fix_content("over", buf, sizeof(buf));
		if (make_file(fx("u2/over"), "over", 1) != 0 || rename(fx("u2/over"), fx("wo/replace")) != 0)
			fail("links.rename-over-lower", "rename u2/over over lower wo/replace: %s", strerror(errno));
		else if (!same_content(fx("wo/replace"), buf, sizeof(buf), &why))
			fail("links.rename-over-lower", "wo/replace after being replaced: %s", why);
		else
			ok("links.rename-over-lower");
	}
}

void check_links(void)
{
	if (!want_area("links") || !area_fresh("links"))
		return;
	hardlinks();
	symlinks();
	special();
	renames();
}

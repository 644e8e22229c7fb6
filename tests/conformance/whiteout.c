/* Whiteouts and opaque directories: removed lower entries stay hidden, and no whiteout is ever visible. */
#include "unionconf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

/* Names in DIR (without . and ..), sorted and joined by spaces, so a whole listing is compared at once. */
static const char *listing(const char *dir)
{
	static char out[4096];
	char names[64][256];
	int n = 0, i, j;
	struct dirent *d;
	DIR *dp = opendir(dir);

	out[0] = '\0';
	if (!dp)
		return "(opendir failed)";
	while ((d = readdir(dp)) && n < 64)
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
			snprintf(names[n++], sizeof(names[0]), "%s", d->d_name);
	closedir(dp);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char t[256];

			memcpy(t, names[j], sizeof(t));
			memcpy(names[j], names[j - 1], sizeof(t));
			memcpy(names[j - 1], t, sizeof(t));
		}
	for (i = 0; i < n; i++) {
		strncat(out, i ? " " : "", sizeof(out) - strlen(out) - 1);
		strncat(out, names[i], sizeof(out) - strlen(out) - 1);
	}
	return out;
}

static int gone(const char *p)
{
	struct stat st;
	int fd;

	if (lstat(p, &st) == 0 || errno != ENOENT)
		return 0;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno == ENOENT;
}

/* Both sides: hidden in the union, and the upper really holds an overlay whiteout (char 0:0) for it. */
static const char *upper_has_whiteout(const char *rel)
{
	struct stat st;
	const char *up = in_layer(uc.upper, rel);

	if (!up)
		return NULL;
	if (lstat(up, &st) != 0)
		return "the upper layer has no entry for the removed name";
	if (!(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)))
		return "the upper layer's entry for the removed name is not a whiteout (char 0:0)";
	return NULL;
}

void check_whiteout(void)
{
	const char *why, *l;
	char b[8];
	size_t n;
	int fd;

	if (!want_area("whiteout") || !area_fresh("whiteout"))
		return;
	if (want("whiteout.unlink-lower")) {
		if (unlink(fx("wo/file1")) != 0)
			fail("whiteout.unlink-lower", "unlink: %s", strerror(errno));
		else if (!gone(fx("wo/file1")))
			fail("whiteout.unlink-lower", "wo/file1 still resolves after unlink");
		else if ((why = upper_has_whiteout("wo/file1")))
			fail("whiteout.unlink-lower", "%s", why);
		else
			ok("whiteout.unlink-lower");
	}
	if (want("whiteout.rmdir-lower-empty"))
		rmdir(fx("wo/dir-empty")) == 0 && gone(fx("wo/dir-empty"))
			? ok("whiteout.rmdir-lower-empty")
			: fail("whiteout.rmdir-lower-empty", "rmdir of an empty lower directory: %s", strerror(errno));
	if (want("whiteout.rmdir-lower-nonempty"))
		rmdir(fx("wo/dir-full")) != 0 && errno == ENOTEMPTY
			? ok("whiteout.rmdir-lower-nonempty")
			: fail("whiteout.rmdir-lower-nonempty", "rmdir of a lower directory with lower entries must fail "
							       "ENOTEMPTY: %s", strerror(errno));
	if (want("whiteout.rmdir-after-emptying"))
		unlink(fx("wo/dir-full/a")) == 0 && unlink(fx("wo/dir-full/b")) == 0 &&
				unlink(fx("wo/dir-full/sub/c")) == 0 && rmdir(fx("wo/dir-full/sub")) == 0 &&
				rmdir(fx("wo/dir-full")) == 0 && gone(fx("wo/dir-full"))
			? ok("whiteout.rmdir-after-emptying")
			: fail("whiteout.rmdir-after-emptying", "emptying then removing wo/dir-full: %s", strerror(errno));
	if (want("whiteout.recreate-dir-is-opaque")) {
		if (mkdir(fx("wo/dir-full"), 0755) != 0)
			fail("whiteout.recreate-dir-is-opaque", "mkdir: %s", strerror(errno));
		else if (*(l = listing(fx("wo/dir-full"))))
			fail("whiteout.recreate-dir-is-opaque", "recreated directory is not empty: %s", l);
		else if (!gone(fx("wo/dir-full/a")) || !gone(fx("wo/dir-full/sub")))
			fail("whiteout.recreate-dir-is-opaque", "old lower entries resolve in the recreated directory");
		else if ((fd = open(fx("wo/dir-full/a"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0 ||
			 close(fd) != 0 || strcmp(listing(fx("wo/dir-full")), "a") != 0)
			fail("whiteout.recreate-dir-is-opaque", "creating a in the recreated directory: %s", strerror(errno));
		else
			ok("whiteout.recreate-dir-is-opaque");
	}
	if (want("whiteout.recreate-file")) {
		if (unlink(fx("wo/recreate")) != 0 ||
		    (fd = open(fx("wo/recreate"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0)
			fail("whiteout.recreate-file", "unlink + create: %s", strerror(errno));
		else if (write(fd, "new", 3) != 3 || close(fd) != 0 || read_all(fx("wo/recreate"), b, sizeof(b), &n) != 0 ||
			 n != 3 || memcmp(b, "new", 3) != 0)
			fail("whiteout.recreate-file", "recreated wo/recreate does not read back as written (lower data leaks?)");
		else
			ok("whiteout.recreate-file");
	}
	if (want("whiteout.merged-listing")) {
		l = listing(fx("wo"));
		strcmp(l, "dir-full file2 opaque recreate replace") == 0
			? ok("whiteout.merged-listing")
			: fail("whiteout.merged-listing", "wo/ lists \"%s\", want \"dir-full file2 opaque recreate replace\"", l);
	}
}

/* Walks the whole fixture tree at the end of the run, when every kind of whiteout exists somewhere below it. */
static int walk(const char *dir, const char **why, char *where, size_t wsz, int *count)
{
	char p[4096], xl[4096];
	struct dirent *d;
	struct stat st;
	ssize_t xn, i;
	DIR *dp = opendir(dir);

	if (!dp) {
		*why = "opendir failed";
		snprintf(where, wsz, "%s", dir);
		return -1;
	}
	while ((d = readdir(dp))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		(*count)++;
		snprintf(p, sizeof(p), "%s/%s", dir, d->d_name);
		snprintf(where, wsz, "%s", p);
		if (strncmp(d->d_name, ".wh.", 4) == 0)
			*why = "an aufs-style .wh. name is listed";
		else if (lstat(p, &st) != 0)
			*why = "listed but lstat fails (a whiteout leaked into readdir?)";
		else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0))
			*why = "a whiteout (char 0:0) is visible";
		else if ((xn = llistxattr(p, xl, sizeof(xl))) < 0 && errno != ENOTSUP)
			*why = "llistxattr failed";
		else
			for (i = 0, *why = NULL; i < xn && !*why; i += (ssize_t)strlen(xl + i) + 1)
				if (strncmp(xl + i, "trusted.overlay.", 16) == 0 || strncmp(xl + i, "user.overlay.", 13) == 0)
					*why = "an overlay private xattr is visible";
		if (!*why && S_ISDIR(st.st_mode) && walk(p, why, where, wsz, count) != 0) {
			closedir(dp);
			return -1;
		}
		if (*why) {
			closedir(dp);
			return -1;
		}
	}
	closedir(dp);
	return 0;
}

void check_no_whiteout_visible(void)
{
	const char *why = NULL;
	char where[4096] = "";
	int count = 0;

	if (!want("whiteout.never-visible"))
		return;
	if (walk(uc.fix, &why, where, sizeof(where), &count) != 0)
		fail("whiteout.never-visible", "%s: %s", where, why);
	else {
		note("walked %d entries", count);
		ok("whiteout.never-visible");
	}
}

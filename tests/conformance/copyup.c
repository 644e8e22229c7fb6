/*
 * Copy-up by every call that modifies a file: each op runs on a lower fixture (copy-up happens), on a file the
 * suite creates in a lower directory (merged) and on one in a directory only the upper has (upper).
 * The result must be what an ordinary filesystem gives: the change, and everything else preserved.
 */
#include "unionconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

struct exp {
	const char *name;
	char buf[FIX_SIZE + 16];
	size_t len;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	int ulu;          /* user.lu still there */
	const char *unew; /* user.new expected value */
	long long mtime;  /* -1: changed by the op, not compared */
	char after[4096]; /* path after the op (rename moves it) */
	int fd;           /* O_RDONLY fd opened before an f*() op, to check through it as well */
	const char *limit; /* a documented overlayfs limit the op ran into (reported as known-limit if all else is right) */
};

static const char *err(const char *what)
{
	static char msg[256];

	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(errno));
	return msg;
}

static const char *wr_at(const char *p, int flags, off_t off, char c, struct exp *e)
{
	int fd = open(p, flags | O_CLOEXEC);

	if (fd < 0)
		return err("open");
	if (pwrite(fd, &c, 1, off) != 1) {
		close(fd);
		return err("pwrite");
	}
	if (close(fd) != 0)
		return err("close");
	e->buf[off] = c;
	e->mtime = -1;
	return NULL;
}

static const char *op_open_wronly(const char *p, struct exp *e) { return wr_at(p, O_WRONLY, 0, 'W', e); }

static const char *op_open_rdwr(const char *p, struct exp *e)
{
	char got[16];
	int fd = open(p, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return err("open O_RDWR");
	if (read(fd, got, sizeof(got)) != (ssize_t)sizeof(got) || memcmp(got, e->buf, sizeof(got)) != 0) {
		close(fd);
		return "read through the O_RDWR fd does not return the file's first bytes";
	}
	if (pwrite(fd, "R", 1, 4096) != 1) {
		close(fd);
		return err("pwrite");
	}
	if (close(fd) != 0)
		return err("close");
	e->buf[4096] = 'R';
	e->mtime = -1;
	return NULL;
}

static const char *op_open_trunc(const char *p, struct exp *e)
{
	int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0 || close(fd) != 0)
		return err("open O_TRUNC");
	e->len = 0;
	e->mtime = -1;
	return NULL;
}

static const char *op_open_append(const char *p, struct exp *e)
{
	int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd < 0)
		return err("open O_APPEND");
	if (write(fd, "A", 1) != 1) {
		close(fd);
		return err("write");
	}
	if (close(fd) != 0)
		return err("close");
	e->buf[e->len++] = 'A';
	e->mtime = -1;
	return NULL;
}

static const char *op_truncate(const char *p, struct exp *e)
{
	if (truncate(p, 100) != 0)
		return err("truncate");
	e->len = 100;
	e->mtime = -1;
	return NULL;
}

static const char *op_ftruncate(const char *p, struct exp *e)
{
	int fd = open(p, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return err("open");
	if (ftruncate(fd, 5000) != 0) {
		close(fd);
		return err("ftruncate");
	}
	if (close(fd) != 0)
		return err("close");
	e->len = 5000;
	e->mtime = -1;
	return NULL;
}

static const char *op_chmod(const char *p, struct exp *e)
{
	if (chmod(p, 0604) != 0)
		return err("chmod");
	e->mode = 0604;
	return NULL;
}

static const char *op_chown(const char *p, struct exp *e)
{
	if (chown(p, 4321, 8765) != 0)
		return err("chown");
	e->uid = 4321;
	e->gid = 8765;
	return NULL;
}

static const struct timespec new_times[2] = { { 1000000000, 0 }, { 1000000000, 0 } };

static const char *op_utimensat(const char *p, struct exp *e)
{
	if (utimensat(AT_FDCWD, p, new_times, 0) != 0)
		return err("utimensat");
	e->mtime = 1000000000;
	return NULL;
}

static const char *op_setxattr(const char *p, struct exp *e)
{
	if (setxattr(p, "user.new", "v", 1, 0) != 0)
		return err("setxattr user.new");
	e->unew = "v";
	return NULL;
}

static const char *op_removexattr(const char *p, struct exp *e)
{
	if (removexattr(p, "user.lu") != 0)
		return err("removexattr user.lu");
	e->ulu = 0;
	return NULL;
}

/* The four calls the VFS union mount series could not do: the fd was opened O_RDONLY before the change. */
static const char *rdonly_fd(const char *p, struct exp *e)
{
	e->fd = open(p, O_RDONLY | O_CLOEXEC);
	return e->fd < 0 ? err("open O_RDONLY") : NULL;
}

static const char *op_fchmod(const char *p, struct exp *e)
{
	const char *w = rdonly_fd(p, e);

	if (w)
		return w;
	if (fchmod(e->fd, 0604) != 0)
		return err("fchmod on the O_RDONLY fd");
	e->mode = 0604;
	return NULL;
}

static const char *op_fchown(const char *p, struct exp *e)
{
	const char *w = rdonly_fd(p, e);

	if (w)
		return w;
	if (fchown(e->fd, 4321, 8765) != 0)
		return err("fchown on the O_RDONLY fd");
	e->uid = 4321;
	e->gid = 8765;
	return NULL;
}

static const char *op_fsetxattr(const char *p, struct exp *e)
{
	const char *w = rdonly_fd(p, e);

	if (w)
		return w;
	if (fsetxattr(e->fd, "user.new", "v", 1, 0) != 0)
		return err("fsetxattr on the O_RDONLY fd");
	e->unew = "v";
	return NULL;
}

static const char *op_futimens(const char *p, struct exp *e)
{
	const char *w = rdonly_fd(p, e);

	if (w)
		return w;
	if (futimens(e->fd, new_times) != 0)
		return err("futimens on the O_RDONLY fd");
	e->mtime = 1000000000;
	return NULL;
}

static const char *op_rename(const char *p, struct exp *e)
{
	char old[4000];

	snprintf(old, sizeof(old), "%s", p); /* p is e->after, which is about to change */
	snprintf(e->after, sizeof(e->after), "%s.renamed", old);
	if (rename(old, e->after) != 0)
		return err("rename");
	if (access(old, F_OK) == 0 || errno != ENOENT)
		return "the old name still resolves after rename";
	return NULL;
}

static const char *op_link(const char *p, struct exp *e)
{
	char l[4096];
	struct stat a, b;

	snprintf(l, sizeof(l), "%s.link", p);
	if (link(p, l) != 0)
		return err("link");
	if (stat(p, &a) != 0 || stat(l, &b) != 0)
		return err("stat after link");
	if (a.st_nlink != 2 || b.st_nlink != 2)
		return "the two names do not both have st_nlink 2";
	if (a.st_ino != b.st_ino) {
		static char msg[300];

		snprintf(msg, sizeof(msg), "st_ino %llu (old name) and %llu (new name)", (unsigned long long)a.st_ino,
			 (unsigned long long)b.st_ino);
		if (!lower_uuid_ambiguous())
			return msg;
		/* one upper inode: the old name's dentry still carries the lower origin, the new one cannot decode it */
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), ": %s", AMBIGUOUS_UUID);
		e->limit = msg;
	}
	/* a change through the new name must show through the old one */
	if (chmod(l, 0604) != 0)
		return err("chmod through the new link");
	e->mode = 0604;
	return NULL;
}

static const struct op {
	const char *name;
	const char *(*run)(const char *path, struct exp *e);
} ops[] = {
	{ "open-wronly", op_open_wronly }, { "open-rdwr", op_open_rdwr }, { "open-trunc", op_open_trunc },
	{ "open-append", op_open_append }, { "truncate", op_truncate }, { "ftruncate", op_ftruncate },
	{ "chmod", op_chmod }, { "chown", op_chown }, { "utimensat", op_utimensat }, { "setxattr", op_setxattr },
	{ "removexattr", op_removexattr }, { "fchmod-rdonly", op_fchmod }, { "fchown-rdonly", op_fchown },
	{ "fsetxattr-rdonly", op_fsetxattr }, { "futimens-rdonly", op_futimens }, { "rename", op_rename },
	{ "link", op_link },
};

const char *const copyup_ops[] = {
	"open-wronly", "open-rdwr", "open-trunc", "open-append", "truncate", "ftruncate", "chmod", "chown",
	"utimensat", "setxattr", "removexattr", "fchmod-rdonly", "fchown-rdonly", "fsetxattr-rdonly",
	"futimens-rdonly", "rename", "link", NULL,
};

static const char *compare_meta(const struct stat *st, const struct exp *e, const char *via)
{
	static char msg[256];

	if ((st->st_mode & 07777) != e->mode)
		snprintf(msg, sizeof(msg), "%s: mode %04o, want %04o", via, st->st_mode & 07777, e->mode);
	else if (st->st_uid != e->uid || st->st_gid != e->gid)
		snprintf(msg, sizeof(msg), "%s: owner %u:%u, want %u:%u", via, st->st_uid, st->st_gid, e->uid, e->gid);
	else if ((off_t)e->len != st->st_size)
		snprintf(msg, sizeof(msg), "%s: size %lld, want %zu", via, (long long)st->st_size, e->len);
	else if (e->mtime >= 0 && st->st_mtim.tv_sec != e->mtime)
		snprintf(msg, sizeof(msg), "%s: mtime %lld, want %lld (not preserved)", via, (long long)st->st_mtim.tv_sec,
			 e->mtime);
	else
		return NULL;
	return msg;
}

static const char *verify(const struct exp *e)
{
	static char msg[512];
	char want[300], got[300];
	const char *why;
	struct stat st;

	if (lstat(e->after, &st) != 0)
		return err("lstat after the op");
	if ((why = compare_meta(&st, e, "stat")))
		return why;
	if (!same_content(e->after, e->buf, e->len, &why))
		return why;
	snprintf(want, sizeof(want), "t-%s", e->name);
	if (get_xattr(e->after, "trusted.lu", got, sizeof(got)) < 0 || strcmp(got, want) != 0)
		return "trusted.lu lost or changed";
	snprintf(want, sizeof(want), "u-%s", e->name);
	if (e->ulu && (get_xattr(e->after, "user.lu", got, sizeof(got)) < 0 || strcmp(got, want) != 0))
		return "user.lu lost or changed";
	if (!e->ulu && (get_xattr(e->after, "user.lu", got, sizeof(got)) >= 0 || errno != ENODATA))
		return "user.lu still readable after removexattr";
	if (e->unew && (get_xattr(e->after, "user.new", got, sizeof(got)) < 0 || strcmp(got, e->unew) != 0))
		return "user.new not readable after setting it";
	if (e->fd >= 0) {
		char b[64];

		if (fstat(e->fd, &st) != 0)
			return err("fstat of the O_RDONLY fd");
		if ((why = compare_meta(&st, e, "fstat of the fd opened before the change")))
			return why;
		if (pread(e->fd, b, sizeof(b), 0) != (ssize_t)sizeof(b) || memcmp(b, e->buf, sizeof(b)) != 0)
			return "reading the O_RDONLY fd after the change does not give the file's content";
	}
	(void)msg;
	return NULL;
}

/* For a lower fixture, the medium's copy must be untouched and the upper must now hold the file. */
static const char *verify_layers(const char *rel, const struct exp *e, const char *rel_after)
{
	static char msg[512];
	char orig[FIX_SIZE];
	const char *why, *lp = in_layer(uc.lower, rel), *up = in_layer(uc.upper, rel_after);
	struct stat st;

	fix_content(e->name, orig, sizeof(orig));
	if (lp && (!same_content(lp, orig, sizeof(orig), &why) || lstat(lp, &st) != 0 ||
		   (st.st_mode & 07777) != FIX_MODE)) {
		snprintf(msg, sizeof(msg), "the lower layer's copy changed (%s)", lp);
		return msg;
	}
	if (up && lstat(up, &st) != 0) {
		snprintf(msg, sizeof(msg), "no copy-up: %s: %s", up, strerror(errno));
		return msg;
	}
	return NULL;
}

static void run_one(const struct op *op, const char *variant)
{
	char name[128], rel[256], rel_after[300];
	const char *why;
	struct exp e;
	int lower = strcmp(variant, "lower") == 0;

	snprintf(name, sizeof(name), "copyup.%s.%s", op->name, variant);
	if (!want(name))
		return;
	memset(&e, 0, sizeof(e));
	e.name = op->name;
	e.fd = -1;
	if (lower)
		snprintf(rel, sizeof(rel), "f/%s", op->name);
	else
		snprintf(rel, sizeof(rel), "%s/%s", strcmp(variant, "merged") == 0 ? "f" : "u", op->name);
	if (!lower) {
		strcat(rel, strcmp(variant, "merged") == 0 ? ".m" : "");
		if (make_file(fx(rel), op->name, 1) != 0) {
			fail(name, "creating %s: %s", fx(rel), strerror(errno));
			return;
		}
	}
	snprintf(e.after, sizeof(e.after), "%s", fx(rel));
	fix_content(op->name, e.buf, FIX_SIZE);
	e.len = FIX_SIZE;
	e.mode = FIX_MODE;
	e.uid = FIX_UID;
	e.gid = FIX_GID;
	e.ulu = 1;
	e.mtime = uc.epoch;
	why = op->run(e.after, &e);
	if (!why)
		why = verify(&e);
	if (!why && lower) {
		snprintf(rel_after, sizeof(rel_after), "%s%s", rel, strcmp(op->name, "rename") == 0 ? ".renamed" : "");
		why = verify_layers(rel, &e, rel_after);
	}
	if (e.fd >= 0)
		close(e.fd);
	if (why)
		fail(name, "%s", why);
	else if (e.limit)
		known_limit(name, "%s", e.limit);
	else
		ok(name);
}

void check_copyup(void)
{
	static const char *const variants[] = { "lower", "merged", "upper" };
	size_t i, v;

	if (!want_area("copyup") || !area_fresh("copyup"))
		return;
	if (mkdir(fx("u"), 0755) != 0) {
		fail("copyup", "mkdir %s: %s", fx("u"), strerror(errno));
		return;
	}
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		for (v = 0; v < 3; v++)
			run_one(&ops[i], variants[v]);
}

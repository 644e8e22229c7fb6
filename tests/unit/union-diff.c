/* union-diff.c - differential test: random layer stacks, merged by the kernel's
 * overlayfs and by the library (and by `liveunion flatten`), must list the same;
 * `liveunion changes` of the top layer over the rest must account for exactly
 * the paths where the two kernel merges (with and without the top) differ.
 * Run as root inside `unshare -m` (it mounts a tmpfs and overlays).
 * usage: union-diff [-s SEED] [-i FIRST] [-n COUNT] [-f LIVEUNION] [-F EVERY]
 *                   [-Q EVERY] [-C] [-x] [-M] [-v] WORKDIR
 *   -F EVERY  flatten to a directory (and `changes`) on every EVERY-th stack
 *   -Q EVERY  flatten to a squashfs (SOURCE_DATE_EPOCH set) on every EVERY-th stack
 *   -C        fail unless every feature was exercised (see `struct cov`)
 *   -x        stop at the first failing stack
 *   -M        mutant: drop symlinks from the library's listing, to show the shrinker works */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "union-list.h"

enum {
	OP_DIR,
	OP_FILE,
	OP_SYMLINK,
	OP_HARDLINK,
	OP_WHITEOUT,
	OP_XWHITEOUT,
	OP_OPAQUE,
	OP_REDIRECT,
	OP_FIFO,
	OP_CHR,
	OP_XATTR,
	OP_CHMOD,
	OP_MTIME,
	OP_CHOWN,
	OP_KINDS
};
static const char *const opname[] = {"mkdir",    "file", "symlink", "hardlink", "whiteout", "xwhiteout", "opaque",
				     "redirect", "fifo", "chr",     "xattr",    "chmod",    "mtime",     "chown"};

struct op {
	int layer, kind;
	unsigned mode, uid, gid;
	long long t;
	char path[800], arg[800];
};

struct stack {
	int nl, user; /* layers; 1 = user.overlay.* and userxattr */
	struct op *op;
	int nop;
	unsigned char *skip; /* ops left out while minimising */
};

static unsigned long long rng;
static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng >> 33) % n);
}

static char longname[256];
static int no_xwh; /* the host kernel ignores xattr whiteouts: do not make them */
static int mutant;

/* What the stacks exercised, counted where it had an effect on the merge. */
struct cov {
	long layers[6], chr_wh, xwh[2], xwh_plain, opaque, redirect, hardlink, symlink, emptydir, longname, oddname,
		xattr, txattr, owner, fifo, dev, file, dir;
};
static struct cov cov;
static const char *const pool[] = {"a",         "b",        "c",      "d",      "a",     "b",
				   "c",         "e",        longname, "sp ace", "-dash", "\xc3\xbcn\xc3\xaf",
				   "tab\tname", "nl\nname", "*?[x",   "...",    ".hid",  "back\\slash"};
#define NPOOL (sizeof pool / sizeof pool[0])

static void rand_path(char *p, size_t sz)
{
	int depth = 1 + (int)rnd(3), k = 0;

	p[0] = '\0';
	for (int i = 0; i < depth; i++) {
		const char *nm = rnd(4) ? pool[rnd(5)] : pool[rnd(NPOOL)];
		k += snprintf(p + k, sz - (size_t)k, "%s%s", i ? "/" : "", nm);
	}
}

static void gen(struct stack *s)
{
	s->nl = 3 + (int)rnd(3);
	s->user = rnd(4) == 0;
	s->nop = 0;
	s->op = calloc(400, sizeof *s->op);
	s->skip = calloc(400, 1);
	for (int l = s->nl - 1; l >= 0; l--) {
		int k = 4 + (int)rnd(18);
		int firstfile = -1;
		for (int i = 0; i < k && s->nop < 400; i++) {
			struct op *o = &s->op[s->nop];
			o->layer = l;
			o->kind = (int)rnd(OP_KINDS);
			if (o->kind == OP_REDIRECT && s->user)
				o->kind = OP_DIR; /* userxattr mounts refuse to follow redirects */
			if (o->kind == OP_XWHITEOUT && no_xwh)
				o->kind = OP_WHITEOUT;
			rand_path(o->path, sizeof o->path);
			o->mode = rnd(3) ? 0644 : rnd(2) ? 0755 : 04711;
			o->t = 1000000000LL + rnd(1000000);
			switch (o->kind) {
			case OP_FILE:
				snprintf(o->arg, sizeof o->arg, "content %u of %d", rnd(5), l);
				if (firstfile < 0)
					firstfile = s->nop;
				break;
			case OP_SYMLINK:
				snprintf(o->arg, sizeof o->arg, rnd(2) ? "../%s" : "/abs/%s", pool[rnd(NPOOL)]);
				break;
			case OP_HARDLINK:
				if (firstfile < 0)
					o->kind = OP_FIFO;
				else
					strcpy(o->arg, s->op[firstfile].path);
				break;
			case OP_REDIRECT:
				if (rnd(2))
					snprintf(o->arg, sizeof o->arg, "%s", pool[rnd(5)]);
				else
					rand_path(o->arg + 1, sizeof o->arg - 1), o->arg[0] = '/';
				break;
			case OP_XATTR: /* trusted.* that is not overlay's own is shown and kept */
				snprintf(o->arg, sizeof o->arg, "%s.t%u", rnd(3) ? "user" : "trusted", rnd(3));
				break;
			case OP_CHOWN:
				o->uid = rnd(3) ? 1000 + rnd(2) : 65534;
				o->gid = rnd(2) ? 100 : 65534;
				break;
			case OP_XWHITEOUT:
				if (!rnd(4))
					strcpy(o->arg, "unmarked"); /* parent not opaque=x */
				break;
			}
			s->nop++;
		}
	}
}

static void mkparents(const char *base, const char *path)
{
	char p[4096];

	snprintf(p, sizeof p, "%s/%s", base, path);
	for (char *q = p + strlen(base) + 1; (q = strchr(q, '/')); q++) {
		*q = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			*q = '/';
			return;
		}
		*q = '/';
	}
}

static void ovset(const struct stack *s, const char *p, const char *what, const char *val)
{
	char name[64];

	snprintf(name, sizeof name, "%s.overlay.%s", s->user ? "user" : "trusted", what);
	if (lsetxattr(p, name, val, strlen(val), 0) < 0) {
		/* best effort: an op that does not apply is simply a no-op */
	}
}

/* The result of an op's system call, dropped: see build. */
static void may_fail(long rc)
{
	(void)rc;
}

/* Apply every op not skipped; an op that cannot apply (a parent is a file,
 * the link source is gone) does nothing, which keeps minimising simple. */
static void build(const struct stack *s, const char *dir)
{
	char base[4096], p[4096], q[4096];

	for (int l = 0; l < s->nl; l++) {
		snprintf(base, sizeof base, "%s/l%d", dir, l);
		if (mkdir(base, 0755) < 0 && errno != EEXIST)
			perror(base);
	}
	for (int i = 0; i < s->nop; i++) {
		const struct op *o = &s->op[i];
		struct timespec ts[2];
		int fd;

		if (s->skip[i])
			continue;
		snprintf(base, sizeof base, "%s/l%d", dir, o->layer);
		snprintf(p, sizeof p, "%s/%s", base, o->path);
		mkparents(base, o->path);
		switch (o->kind) {
		case OP_DIR: may_fail(mkdir(p, 0755)); break;
		case OP_FILE:
			unlink(p);
			fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
			if (fd >= 0) {
				may_fail(write(fd, o->arg, strlen(o->arg)));
				close(fd);
				may_fail(chmod(p, o->mode));
			}
			break;
		case OP_SYMLINK: may_fail(symlink(o->arg, p)); break;
		case OP_HARDLINK:
			snprintf(q, sizeof q, "%s/%s", base, o->arg);
			may_fail(link(q, p));
			break;
		case OP_WHITEOUT: may_fail(mknod(p, S_IFCHR | 0, makedev(0, 0))); break;
		case OP_XWHITEOUT:
			fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd >= 0) {
				char par[4096], v[4];
				close(fd);
				ovset(s, p, "whiteout", "");
				if (o->arg[0])
					break;
				snprintf(par, sizeof par, "%s", p);
				*strrchr(par, '/') = '\0';
				snprintf(q, sizeof q, "%s.overlay.opaque", s->user ? "user" : "trusted");
				if (lgetxattr(par, q, v, sizeof v) != 1 || v[0] != 'y')
					ovset(s, par, "opaque", "x");
			}
			break;
		case OP_OPAQUE:
			may_fail(mkdir(p, 0755));
			ovset(s, p, "opaque", "y");
			break;
		case OP_REDIRECT:
			may_fail(mkdir(p, 0755));
			ovset(s, p, "redirect", o->arg);
			break;
		case OP_FIFO: may_fail(mkfifo(p, 0640)); break;
		case OP_CHR: may_fail(mknod(p, S_IFCHR | 0620, makedev(1, 7))); break;
		case OP_XATTR: may_fail(lsetxattr(p, o->arg, o->path, strlen(o->path) % 40, 0)); break;
		case OP_CHMOD: may_fail(chmod(p, o->mode & 0777)); break;
		case OP_CHOWN: may_fail(lchown(p, o->uid, o->gid)); break;
		case OP_MTIME:
			ts[0].tv_sec = ts[1].tv_sec = o->t;
			ts[0].tv_nsec = ts[1].tv_nsec = 0;
			may_fail(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW));
			break;
		}
	}
}

static void shq(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

static void print_stack(const struct stack *s, FILE *f)
{
	fprintf(f, "# stack: %d layers (l0 is the top), %s xattrs\n", s->nl, s->user ? "user" : "trusted");
	for (int i = 0; i < s->nop; i++) {
		const struct op *o = &s->op[i];
		if (s->skip[i])
			continue;
		fprintf(f, "l%d %-9s ", o->layer, opname[o->kind]);
		shq(f, o->path);
		if (o->arg[0]) {
			fputc(' ', f);
			shq(f, o->arg);
		}
		if (o->kind == OP_FILE || o->kind == OP_CHMOD)
			fprintf(f, " mode=%04o", o->kind == OP_CHMOD ? o->mode & 0777 : o->mode);
		if (o->kind == OP_MTIME)
			fprintf(f, " t=%lld", o->t);
		if (o->kind == OP_CHOWN)
			fprintf(f, " owner=%u:%u", o->uid, o->gid);
		fputc('\n', f);
	}
}

static const char *work, *liveunion;
static int verbose;

/* NAME under the directory DFD and everything below it, removed as rm -rf does (a missing NAME is no error), in
 * this process: two rm(1) children a stack cost more than the rest of a stack's host work on a loaded machine.
 * Relative to each directory's descriptor, so no path length limit applies. */
static int rm_at(int dfd, const char *name)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	int fd, rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -1;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && rm_at(dirfd(d), e->d_name) < 0)
			rc = -1;
	if (closedir(d) < 0)
		rc = -1;
	return unlinkat(dfd, name, AT_REMOVEDIR) < 0 || rc < 0 ? -1 : 0;
}
static int rm_rf(const char *p)
{
	return rm_at(AT_FDCWD, p);
}

static int run_flatten(const struct stack *s, const char *dir, const char *out)
{
	char *argv[16];
	char lp[8][4200];
	int a = 0, st;
	pid_t pid;

	argv[a++] = (char *)liveunion;
	argv[a++] = "flatten";
	argv[a++] = s->user ? "--userxattr" : "--trusted";
	for (int l = 0; l < s->nl; l++) {
		snprintf(lp[l], sizeof lp[l], "%s/l%d", dir, l);
		argv[a++] = lp[l];
	}
	argv[a++] = "-o";
	argv[a++] = (char *)out;
	argv[a] = NULL;
	if ((pid = fork()) == 0) {
		/* as under build.sh: mksquashfs would stamp it on every inode */
		if (strstr(out, ".squashfs") && setenv("SOURCE_DATE_EPOCH", "1700000000", 1) < 0)
			_exit(127);
		execv(liveunion, argv);
		_exit(127);
	}
	return pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) ? -1 : 0;
}

static int run_cmd(char *const argv[])
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) ? -1 : 0;
}

/* squashfs keeps whole seconds: " t=S.NNNNNNNNN" becomes " t=S" in a copy of L. */
static void listing_seconds(const struct listing *l, struct listing *out)
{
	out->n = 0;
	out->line = calloc(l->n + 1, sizeof *out->line);
	for (size_t i = 0; out->line && i < l->n; i++) {
		char *c = strdup(l->line[i]), *t = c ? strstr(c, " t=") : NULL, *dot;
		if (t && (dot = strchr(t + 3, '.')) && strspn(dot + 1, "0123456789") == 9)
			memmove(dot, dot + 10, strlen(dot + 10) + 1);
		out->line[out->n++] = c;
	}
}

static void drop_symlinks(struct listing *l)
{
	size_t k = 0;

	for (size_t i = 0; i < l->n; i++) {
		char *sp = strchr(l->line[i], ' ');
		if (sp && sp[1] == 'l')
			free(l->line[i]);
		else
			l->line[k++] = l->line[i];
	}
	l->n = k;
}

static int lexists(const char *dir, int l, const char *path, struct stat *st)
{
	char p[4200];

	snprintf(p, sizeof p, "%s/l%d/%s", dir, l, path);
	return lstat(p, st) == 0;
}

/* 1 if a layer below LAYER has PATH (a directory when WANT_DIR). */
static int below(const struct stack *s, const char *dir, int layer, const char *path, int want_dir)
{
	struct stat st;

	for (int l = layer + 1; l < s->nl; l++)
		if (lexists(dir, l, path, &st) && (!want_dir || S_ISDIR(st.st_mode)))
			return 1;
	return 0;
}

static int has_ovx(const struct stack *s, const char *dir, int l, const char *path, const char *what, char *val,
		   size_t sz)
{
	char p[4200], name[64];
	ssize_t r;

	snprintf(p, sizeof p, "%s/l%d/%s", dir, l, path);
	snprintf(name, sizeof name, "%s.overlay.%s", s->user ? "user" : "trusted", what);
	r = lgetxattr(p, name, val, sz);
	return r >= 0 ? (int)r + 1 : 0;
}

/* Count, once per stack, each feature that took effect: a whiteout or opaque
 * directory with something below it to hide, a redirect whose target exists
 * below, and the kinds of entry the kernel's merge shows (KL). */
static void tally(const struct stack *s, const char *dir, const struct listing *kl)
{
	struct cov c = {0};
	struct stat st;
	char v[900], tgt[1700];

	c.layers[s->nl] = 1;
	for (int i = 0; i < s->nop; i++) {
		const struct op *o = &s->op[i];
		if (s->skip[i] || !lexists(dir, o->layer, o->path, &st))
			continue;
		switch (o->kind) {
		case OP_WHITEOUT:
			if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0) && below(s, dir, o->layer, o->path, 0))
				c.chr_wh = 1;
			break;
		case OP_XWHITEOUT:
			if (S_ISREG(st.st_mode) && !st.st_size &&
			    has_ovx(s, dir, o->layer, o->path, "whiteout", v, sizeof v) &&
			    below(s, dir, o->layer, o->path, 0)) {
				if (o->arg[0])
					c.xwh_plain = 1;
				else
					c.xwh[s->user] = 1;
			}
			break;
		case OP_OPAQUE:
			if (S_ISDIR(st.st_mode) && has_ovx(s, dir, o->layer, o->path, "opaque", v, sizeof v) == 2 &&
			    v[0] == 'y' && below(s, dir, o->layer, o->path, 0))
				c.opaque = 1;
			break;
		case OP_REDIRECT:
			if (!S_ISDIR(st.st_mode) || !has_ovx(s, dir, o->layer, o->path, "redirect", v, sizeof v))
				break;
			if (o->arg[0] == '/') {
				snprintf(tgt, sizeof tgt, "%s", o->arg + 1);
			} else {
				const char *sl = strrchr(o->path, '/');
				snprintf(tgt, sizeof tgt, "%.*s%s%s", sl ? (int)(sl - o->path) : 0, o->path,
					 sl ? "/" : "", o->arg);
			}
			if (below(s, dir, o->layer, tgt, 1))
				c.redirect = 1;
			break;
		}
	}
	for (size_t i = 0; i < kl->n; i++) {
		const char *ln = kl->line[i], *sp = strchr(ln, ' ');
		size_t pl = sp ? (size_t)(sp - ln) : 0;
		if (!sp)
			continue;
		switch (sp[1]) {
		case 'f': c.file = 1; break;
		case 'l': c.symlink = 1; break;
		case 'p': c.fifo = 1; break;
		case 'c': c.dev = 1; break;
		case 'd':
			c.dir = 1;
			int kids = 0;
			for (size_t j = 0; j < kl->n && !kids; j++)
				kids = !strncmp(kl->line[j], ln, pl) && kl->line[j][pl] == '/';
			if (!kids)
				c.emptydir = 1;
			break;
		}
		if (strstr(sp, " ="))
			c.hardlink = 1;
		if (strstr(sp, " x:user."))
			c.xattr = 1;
		if (strstr(sp, " x:trusted."))
			c.txattr = 1;
		if (!strstr(sp, " 0:0"))
			c.owner = 1;
		if (memmem(ln, pl, "LLLLLLLLLLLLLLLL", 16))
			c.longname = 1;
		if (memchr(ln, '\\', pl) || memmem(ln, pl, "*?[", 3))
			c.oddname = 1;
	}
	for (int l = 0; l < 6; l++)
		cov.layers[l] += c.layers[l];
	cov.chr_wh += c.chr_wh;
	cov.xwh[0] += c.xwh[0];
	cov.xwh[1] += c.xwh[1];
	cov.xwh_plain += c.xwh_plain;
	cov.opaque += c.opaque;
	cov.redirect += c.redirect;
	cov.hardlink += c.hardlink;
	cov.symlink += c.symlink;
	cov.emptydir += c.emptydir;
	cov.longname += c.longname;
	cov.oddname += c.oddname;
	cov.xattr += c.xattr;
	cov.txattr += c.txattr;
	cov.owner += c.owner;
	cov.fifo += c.fifo;
	cov.dev += c.dev;
	cov.file += c.file;
	cov.dir += c.dir;
}

/* Prints what was exercised; returns the number of features below MIN stacks. */
static int cov_report(long min)
{
	struct {
		const char *name;
		long n;
		int need;
	} f[] = {
		{"3 layers", cov.layers[3], 1},
		{"4 layers", cov.layers[4], 1},
		{"5 layers", cov.layers[5], 1},
		{"files", cov.file, 1},
		{"dirs", cov.dir, 1},
		{"empty dirs", cov.emptydir, 1},
		{"symlinks", cov.symlink, 1},
		{"hard links", cov.hardlink, 1},
		{"fifos", cov.fifo, 1},
		{"devices", cov.dev, 1},
		{"user xattrs", cov.xattr, 1},
		{"trusted xattrs", cov.txattr, 1},
		{"other owners than root", cov.owner, 1},
		{"whiteouts 0/0 hiding", cov.chr_wh, 1},
		{"xattr whiteouts hiding (trusted)", cov.xwh[0], !no_xwh},
		{"xattr whiteouts hiding (user)", cov.xwh[1], !no_xwh},
		{"xattr whiteouts hiding (dir not opaque=x)", cov.xwh_plain, !no_xwh},
		{"opaque dirs hiding", cov.opaque, 1},
		{"redirects followed", cov.redirect, 1},
		{"255-byte names", cov.longname, 1},
		{"odd names", cov.oddname, 1},
	};
	int low = 0;

	printf("coverage (stacks where it took effect):");
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
		printf("%s %s %ld", i ? "," : "", f[i].name, f[i].n);
		if (f[i].need && f[i].n < min)
			low++;
	}
	printf("\n");
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (f[i].need && f[i].n < min)
			printf("FAIL coverage: %s in %ld stacks, want >= %ld\n", f[i].name, f[i].n, min);
	return low;
}

/* 1 if the kernel hides a lower file under an xattr whiteout (6.7 and later). */
static int probe_xwh(int user)
{
	char b[4200], p[4200], opts[9000], name[64];
	struct stat st;
	int fd, ok = 0;

	snprintf(b, sizeof b, "%s/probe", work);
	rm_rf(b);
	const char *dirs[] = {"", "/u", "/u/d", "/l", "/l/d", "/m"};
	for (size_t i = 0; i < 6; i++) {
		snprintf(p, sizeof p, "%s%s", b, dirs[i]);
		if (mkdir(p, 0755) < 0)
			return 0;
	}
	snprintf(p, sizeof p, "%s/l/d/a", b);
	if ((fd = open(p, O_WRONLY | O_CREAT, 0644)) < 0 || write(fd, "a", 1) != 1 || close(fd) < 0)
		return 0;
	snprintf(p, sizeof p, "%s/u/d/a", b);
	if ((fd = open(p, O_WRONLY | O_CREAT, 0644)) < 0 || close(fd) < 0)
		return 0;
	snprintf(name, sizeof name, "%s.overlay.whiteout", user ? "user" : "trusted");
	if (lsetxattr(p, name, "", 0, 0) < 0)
		return 0;
	snprintf(p, sizeof p, "%s/u/d", b);
	snprintf(name, sizeof name, "%s.overlay.opaque", user ? "user" : "trusted");
	if (lsetxattr(p, name, "x", 1, 0) < 0)
		return 0;
	snprintf(opts, sizeof opts, "lowerdir=%s/u:%s/l%s", b, b, user ? ",userxattr" : "");
	snprintf(p, sizeof p, "%s/m", b);
	if (mount("overlay", p, "overlay", MS_RDONLY, opts) == 0) {
		snprintf(p, sizeof p, "%s/m/d/a", b);
		ok = lstat(p, &st) < 0 && errno == ENOENT;
		snprintf(p, sizeof p, "%s/m", b);
		umount(p);
	}
	rm_rf(b);
	return ok;
}

/* Undo the \ooo escapes of listings and of `changes --machine` paths. */
static void unesc(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

struct pl {
	char *path, *rest;
};

/* path and the describing part without directory mtimes and hard-link groups,
 * which `changes` does not report */
static struct pl *split(const struct listing *l)
{
	struct pl *v = calloc(l->n + 1, sizeof *v);

	for (size_t i = 0; v && i < l->n; i++) {
		char *sp = strchr(l->line[i], ' '), *t, *eq;
		v[i].path = strndup(l->line[i], (size_t)(sp - l->line[i]));
		unesc(v[i].path);
		v[i].rest = strdup(sp + 1);
		if ((eq = strstr(v[i].rest, " =/")))
			*eq = '\0';
		if (v[i].rest[0] == 'd' && (t = strstr(v[i].rest, " t="))) {
			char *end = strchr(t + 1, ' ');
			memmove(t, end ? end : t + strlen(t), strlen(end ? end : t + strlen(t)) + 1);
		}
	}
	return v;
}

static const char *find_rest(struct pl *v, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].path, path))
			return v[i].rest;
	return NULL;
}

/* Every path `changes` reports must differ between the two kernel merges, and
 * every path that differs must be reported, or lie below a reported deleted,
 * added or replaced directory. Returns the number of violations. */
static int check_changes(const struct listing *full, const struct listing *base, FILE *rep, int loud)
{
	struct pl *f = split(full), *b = split(base);
	char *rp[4096], line[8192];
	int nr = 0, bad = 0;

	while (nr < 4096 && fgets(line, sizeof line, rep)) {
		char *k = strtok(line, "\t"), *ty = strtok(NULL, "\t"), *pa = strtok(NULL, "\t\n");
		if (!k || !ty || !pa)
			continue;
		unesc(pa);
		rp[nr++] = strdup(pa);
		const char *x = find_rest(f, full->n, pa), *y = find_rest(b, base->n, pa);
		if ((x && y && !strcmp(x, y) && strcmp(k, "replaced")) || (!x && !y)) {
			if (loud)
				fprintf(stderr, "changes reports %s %s, the kernel merges do not differ there\n", k,
					pa);
			bad++;
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		struct pl *v = pass ? b : f, *w = pass ? f : b;
		size_t n = pass ? base->n : full->n, m = pass ? full->n : base->n;
		for (size_t i = 0; i < n; i++) {
			const char *o = find_rest(w, m, v[i].path);
			int covered = 0;
			if (o && !strcmp(o, v[i].rest))
				continue;
			for (int j = 0; j < nr && !covered; j++) {
				size_t l = strlen(rp[j]);
				covered = !strcmp(rp[j], v[i].path) ||
					  (!strncmp(rp[j], v[i].path, l) && v[i].path[l] == '/');
			}
			if (!covered) {
				if (loud)
					fprintf(stderr, "changes misses %s (%s -> %s)\n", v[i].path,
						pass ? v[i].rest :
						o    ? o :
						       "absent",
						pass ? "absent" : v[i].rest);
				bad++;
			}
		}
	}
	for (int j = 0; j < nr; j++)
		free(rp[j]);
	for (size_t i = 0; i < full->n; i++)
		free(f[i].path), free(f[i].rest);
	for (size_t i = 0; i < base->n; i++)
		free(b[i].path), free(b[i].rest);
	free(f);
	free(b);
	return bad;
}

static FILE *run_changes(const struct stack *s, const char *dir)
{
	char cmd[8192];
	int k = snprintf(cmd, sizeof cmd, "'%s' changes --machine --assume-upper %s '%s/l0' --lower", liveunion,
			 s->user ? "--userxattr" : "--trusted", dir);
	for (int l = 1; l < s->nl; l++)
		k += snprintf(cmd + k, sizeof cmd - (size_t)k, " '%s/l%d'", dir, l);
	return popen(cmd, "r");
}

/* 0 same, 1 mismatch, -1 could not run. Prints the difference when LOUD;
 * counts coverage when TALLY. */
static int check(const struct stack *s, int do_flatten, int do_squash, int loud, int tally_it)
{
	char dir[4096], mnt[4096], opts[4096], flat[4096], err[256], sq[4200], sqm[4200];
	struct listing kl = {0}, ul = {0}, fl = {0};
	char *layers[8];
	int k = 0, res = -1, r;
	struct lu_opts lo = {s->user ? LU_NS_USER : LU_NS_TRUSTED, s->user};
	struct lu_union *u = NULL;

	snprintf(dir, sizeof dir, "%s/stack", work);
	snprintf(mnt, sizeof mnt, "%s/mnt", work);
	snprintf(flat, sizeof flat, "%s/flat", work);
	snprintf(sq, sizeof sq, "%s/flat.squashfs", work);
	snprintf(sqm, sizeof sqm, "%s/sqmnt", work);
	rm_rf(dir);
	rm_rf(flat);
	unlink(sq);
	if (mkdir(dir, 0755) < 0 || (mkdir(mnt, 0755) < 0 && errno != EEXIST))
		return -1;
	build(s, dir);
	k = snprintf(opts, sizeof opts, "lowerdir=");
	for (int l = 0; l < s->nl; l++) {
		layers[l] = malloc(4200);
		snprintf(layers[l], 4200, "%s/l%d", dir, l);
		k += snprintf(opts + k, sizeof opts - (size_t)k, "%s%s", l ? ":" : "", layers[l]);
	}
	snprintf(opts + k, sizeof opts - (size_t)k, ",xino=on%s", s->user ? ",userxattr" : ",redirect_dir=follow");
	if (mount("overlay", mnt, "overlay", MS_RDONLY, opts) < 0) {
		if (loud)
			fprintf(stderr, "mount overlay (%s): %s\n", opts, strerror(errno));
		goto out;
	}
	r = list_real(mnt, lo.ns, 0, &kl);
	if (umount(mnt) < 0)
		perror("umount");
	if (r < 0) {
		if (loud)
			fprintf(stderr, "listing the kernel's mount: %s\n", strerror(-r));
		goto out;
	}
	if (tally_it)
		tally(s, dir, &kl);
	if (!(u = lu_open(layers, s->nl, &lo, err, sizeof err))) {
		fprintf(stderr, "lu_open: %s\n", err);
		goto out;
	}
	res = 0;
	if ((r = list_union(u, 0, &ul)) < 0) {
		if (loud)
			fprintf(stderr, "library listing failed: %s\n", strerror(-r));
		res = 1;
	} else if (mutant && (drop_symlinks(&ul), 0)) {
	} else if (listing_diff(&kl, &ul, 40, NULL)) {
		if (loud) {
			fprintf(stderr, "library differs from the kernel (- kernel, + library):\n");
			listing_diff(&kl, &ul, 40, stderr);
		}
		res = 1;
	}
	if (!res && do_flatten && liveunion) {
		if (run_flatten(s, dir, flat) < 0 || list_real(flat, lo.ns, 0, &fl) < 0) {
			if (loud)
				fprintf(stderr, "liveunion flatten failed\n");
			res = 1;
		} else if (listing_diff(&kl, &fl, 40, NULL)) {
			if (loud) {
				fprintf(stderr, "flatten output differs from the kernel (- kernel, + flatten):\n");
				listing_diff(&kl, &fl, 40, stderr);
			}
			res = 1;
		}
	}
	if (!res && do_squash && liveunion) {
		/* as a squashfs: whole-second mtimes, owners, xattrs, hard links, devices */
		struct listing a = {0}, b = {0}, ql = {0};
		char *mnt_argv[] = {"mount", "-o", "loop,ro", sq, sqm, NULL};
		if ((mkdir(sqm, 0755) < 0 && errno != EEXIST) || run_flatten(s, dir, sq) < 0 || run_cmd(mnt_argv) < 0) {
			if (loud)
				fprintf(stderr, "liveunion flatten -o FILE.squashfs failed (or its mount)\n");
			res = 1;
		} else {
			r = list_real(sqm, lo.ns, 0, &ql);
			if (umount(sqm) < 0)
				perror("umount squashfs");
			listing_seconds(&kl, &a);
			listing_seconds(&ql, &b);
			if (r < 0 || listing_diff(&a, &b, 40, NULL)) {
				if (loud) {
					fprintf(stderr,
						"flatten squashfs differs from the kernel (- kernel, + squashfs):\n");
					listing_diff(&a, &b, 40, stderr);
				}
				res = 1;
			}
		}
		listing_free(&a);
		listing_free(&b);
		listing_free(&ql);
	}
	if (!res && do_flatten && liveunion) {
		/* the same stack read as an upper (l0) over its base: `changes` */
		struct listing bl = {0};
		FILE *rep;
		k = snprintf(opts, sizeof opts, "lowerdir=");
		for (int l = 1; l < s->nl; l++)
			k += snprintf(opts + k, sizeof opts - (size_t)k, "%s%s", l > 1 ? ":" : "", layers[l]);
		snprintf(opts + k, sizeof opts - (size_t)k, ",xino=on%s",
			 s->user ? ",userxattr" : ",redirect_dir=follow");
		if (mount("overlay", mnt, "overlay", MS_RDONLY, opts) < 0 || list_real(mnt, lo.ns, 0, &bl) < 0) {
			res = -1;
		} else if ((rep = run_changes(s, dir))) {
			if (check_changes(&kl, &bl, rep, loud))
				res = 1;
			if (pclose(rep) != 0) {
				if (loud)
					fprintf(stderr, "liveunion changes failed\n");
				res = 1;
			}
		}
		if (umount(mnt) < 0 && errno != EINVAL)
			perror("umount base");
		listing_free(&bl);
	}
	if (verbose && loud)
		for (size_t i = 0; i < kl.n; i++)
			fprintf(stderr, "   %s\n", kl.line[i]);
out:
	lu_close(u);
	listing_free(&kl);
	listing_free(&ul);
	listing_free(&fl);
	for (int l = 0; l < s->nl; l++)
		free(layers[l]);
	return res;
}

/* Leave out one op at a time while the stack still fails, until no single op
 * can go (two passes catch most ops freed by a later removal). */
static void minimise(struct stack *s, int do_flatten, int do_squash)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = s->nop - 1; i >= 0; i--) {
			if (s->skip[i])
				continue;
			s->skip[i] = 1;
			if (check(s, do_flatten, do_squash, 0, 0) != 1)
				s->skip[i] = 0;
		}
}

int main(int argc, char **argv)
{
	unsigned long long seed = 1;
	int count = 500, first = 0, every = 1, sq_every = 0, need_cov = 0, stop = 0, c, pass = 0, fail = 0;
	char tmp[4096];

	while ((c = getopt(argc, argv, "s:i:n:f:F:Q:CxMv")) != -1)
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'i': first = atoi(optarg); break;
		case 'n': count = atoi(optarg); break;
		case 'f': liveunion = optarg; break;
		case 'F': every = atoi(optarg); break;
		case 'Q': sq_every = atoi(optarg); break;
		case 'C': need_cov = 1; break;
		case 'x': stop = 1; break;
		case 'M': mutant = 1; break;
		case 'v': verbose = 1; break;
		default:
			fprintf(stderr,
				"usage: %s [-s SEED] [-i FIRST] [-n COUNT] [-f LIVEUNION] [-F EVERY] "
				"[-Q EVERY] [-C] [-x] [-M] [-v] WORKDIR\n",
				argv[0]);
			return 2;
		}
	if (optind + 1 != argc) {
		fprintf(stderr, "need WORKDIR\n");
		return 2;
	}
	work = argv[optind];
	memset(longname, 'L', 251);
	memcpy(longname + 251, "long", 5);
	if (mount("tmpfs", work, "tmpfs", 0, "mode=0755") < 0) {
		perror("mount tmpfs (run as root inside unshare -m)");
		return 2;
	}
	no_xwh = !probe_xwh(0) || !probe_xwh(1);
	printf("xattr whiteouts (trusted.overlay.whiteout, user.overlay.whiteout): %s\n",
	       no_xwh ? "not honoured by this kernel, not generated" : "honoured by this kernel, generated");
	for (int i = first; i < first + count; i++) {
		struct stack s;
		int flat = liveunion && every > 0 && i % every == 0;
		int squash = liveunion && sq_every > 0 && i % sq_every == 0;
		rng = seed * 1000003ULL + (unsigned long long)i;
		rnd(2);
		gen(&s);
		int r = check(&s, flat, squash, 0, 1);
		if (r == 0) {
			pass++;
		} else {
			fail++;
			fprintf(stderr, "FAIL stack %d (seed %llu), minimised:\n", i, seed);
			if (r == 1)
				minimise(&s, flat, squash);
			print_stack(&s, stderr);
			check(&s, flat, squash, 1, 0);
			fprintf(stderr, "# again: union-diff -s %llu -i %d -n 1%s%s -v WORKDIR\n", seed, i,
				flat ? " -f LIVEUNION" : "", squash ? " -Q 1" : "");
		}
		free(s.op);
		free(s.skip);
		if (fail && stop)
			break;
	}
	snprintf(tmp, sizeof tmp, "%s", work);
	if (umount2(tmp, MNT_DETACH) < 0)
		perror("umount tmpfs");
	printf("union-diff: %d stacks from %d, seed %llu%s\n", pass + fail, first, seed,
	       mutant ? " (mutant: symlinks dropped from the library's listing)" : "");
	if (cov_report(need_cov ? (count + 99) / 100 : 0)) {
		fail++;
	}
	printf("%d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}

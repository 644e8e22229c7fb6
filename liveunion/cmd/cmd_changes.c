/* cmd_changes.c - `liveunion changes STORE-OR-UPPER --lower LAYER...`.
 *
 * Compares the merged view with the upper on top against the merged view of
 * the lower layers alone, but walks only what the upper touched; below an
 * opaque or redirected directory both views are walked in full. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tool.h"

struct ch {
	struct lu_union *full, *base;
	int machine, errors;
	unsigned long count;
};

static const char usage_text[] =
	"usage: " PROG " changes [--machine] [--trusted|--userxattr] [--assume-upper]\n"
	"                 STORE-OR-UPPER --lower LAYER...\n"
	"List what a persistence store changed relative to the base layers (given top first, as\n"
	"in overlayfs lowerdir=): one line each, 'added', 'modified' (content and/or metadata),\n"
	"'deleted', 'replaced' (type changed, or an opaque directory replaced the old one).\n"
	"--machine prints KIND<TAB>TYPE<TAB>PATH<TAB>DETAIL with octal escapes in PATH.\n"
	"STORE-OR-UPPER is an upper directory, a store holding upper/ and work/, or an ext4 or\n"
	"squashfs image of one (mounted read-only in a private namespace as root). Inputs are\n"
	"only read; a directory that does not look like an overlay upper is refused.\n";

static char type_ch(mode_t m)
{
	return S_ISDIR(m)  ? 'd' :
	       S_ISREG(m)  ? 'f' :
	       S_ISLNK(m)  ? 'l' :
	       S_ISCHR(m)  ? 'c' :
	       S_ISBLK(m)  ? 'b' :
	       S_ISFIFO(m) ? 'p' :
			     's';
}

static void report(struct ch *c, const char *kind, mode_t m, const char *path, const char *detail)
{
	if (c->machine) {
		printf("%s\t%c\t", kind, type_ch(m));
		put_path(stdout, path, 1);
		printf("\t%s\n", detail);
	} else {
		printf("%-9s ", kind);
		put_path(stdout, path, 0);
		printf("%s%s%s%s\n", S_ISDIR(m) ? "/" : "", *detail ? " (" : "", detail, *detail ? ")" : "");
	}
	c->count++;
}

static void what_differs(struct ch *c, const struct lu_node *a, const struct lu_node *b, char *out, size_t sz)
{
	char ra[PATH_MAX], rb[PATH_MAX], la[PATH_MAX], lb[PATH_MAX];
	const struct stat *x = &a->st, *y = &b->st;
	int content = 0, meta = 0;
	ssize_t na, nb;

	lu_real_path(c->full, a->layer, a->rel, ra, sizeof ra);
	lu_real_path(c->base, b->layer, b->rel, rb, sizeof rb);
	if (S_ISREG(x->st_mode))
		content = x->st_size != y->st_size || !files_equal(ra, rb);
	else if (S_ISLNK(x->st_mode)) {
		na = readlink(ra, la, sizeof la);
		nb = readlink(rb, lb, sizeof lb);
		content = na != nb || na < 0 || memcmp(la, lb, (size_t)na);
	} else if (S_ISCHR(x->st_mode) || S_ISBLK(x->st_mode))
		content = x->st_rdev != y->st_rdev;
	meta = (x->st_mode & 07777) != (y->st_mode & 07777) || x->st_uid != y->st_uid || x->st_gid != y->st_gid ||
	       !xattrs_equal(ra, rb, lu_ns(c->full)) ||
	       (!S_ISDIR(x->st_mode) && !S_ISLNK(x->st_mode) &&
		(x->st_mtim.tv_sec != y->st_mtim.tv_sec || x->st_mtim.tv_nsec != y->st_mtim.tv_nsec));
	snprintf(out, sz, "%s%s%s", content ? "content" : "", content && meta ? "," : "", meta ? "metadata" : "");
}

static void diff_dir(struct ch *c, const char *path, const struct lu_node *fa, const struct lu_node *fb, int full);

/* A redirected (renamed) directory takes its content from elsewhere below, even
 * when nothing is found there: compare the whole subtree then. */
static int has_redirect(struct ch *c, const char *rel)
{
	char real[PATH_MAX];

	if (lu_real_path(c->full, 0, rel, real, sizeof real) < 0)
		return 1;
	return ((lu_ns(c->full) & LU_NS_TRUSTED) && lgetxattr(real, "trusted.overlay.redirect", NULL, 0) >= 0) ||
	       ((lu_ns(c->full) & LU_NS_USER) && lgetxattr(real, "user.overlay.redirect", NULL, 0) >= 0);
}

/* NAME in the directory PATH: FA/FB the directory in the full and base view. */
static void diff_name(struct ch *c, const char *path, const struct lu_node *fa, const struct lu_node *fb,
		      const char *name, int full)
{
	struct lu_node a, b;
	char p[PATH_MAX], det[64];
	int ra, rb;

	snprintf(p, sizeof p, "%s/%s", path, name);
	ra = lu_lookup_child(c->full, fa, name, &a);
	rb = fb ? lu_lookup_child(c->base, fb, name, &b) : -ENOENT;
	if ((ra < 0 && ra != -ENOENT) || (rb < 0 && rb != -ENOENT)) {
		fprintf(stderr, PROG " changes: look up %s: %s\n", p, strerror(-(ra < 0 && ra != -ENOENT ? ra : rb)));
		c->errors++;
	} else if (ra < 0 && rb == 0) {
		report(c, "deleted", b.st.st_mode, p, "");
	} else if (ra == 0 && rb < 0) {
		report(c, "added", a.st.st_mode, p, "");
		if (S_ISDIR(a.st.st_mode))
			diff_dir(c, p, &a, NULL, 1);
	} else if (ra == 0) {
		int a_dir = S_ISDIR(a.st.st_mode), b_dir = S_ISDIR(b.st.st_mode);
		int moved = a_dir && a.layer == 0 && has_redirect(c, p + 1);
		if ((a.st.st_mode & S_IFMT) != (b.st.st_mode & S_IFMT)) {
			report(c, "replaced", a.st.st_mode, p,
			       a_dir ? "was not a directory" :
			       b_dir ? "was a directory" :
				       "type changed");
			if (a_dir)
				diff_dir(c, p, &a, NULL, 1);
		} else if (a_dir) {
			if (a.layer == 0 && a.opaque)
				report(c, "replaced", a.st.st_mode, p, "opaque directory");
			else if (a.layer == 0 || full) {
				/* full: below a renamed directory a lower one may stand where
				 * the base had another */
				what_differs(c, &a, &b, det, sizeof det);
				if (*det)
					report(c, "modified", a.st.st_mode, p, det);
			}
			if (a.layer == 0 || full)
				diff_dir(c, p, &a, &b, full || a.opaque || moved);
		} else if (a.layer == 0 || full) {
			what_differs(c, &a, &b, det, sizeof det);
			if (*det)
				report(c, "modified", a.st.st_mode, p, det);
		}
	}
	if (ra == 0)
		lu_node_free(&a);
	if (rb == 0)
		lu_node_free(&b);
}

/* A directory that could not be read, or that changed while it was: the answer
 * would mix two states, so it is an error, never silently passed over. */
static void dir_failed(struct ch *c, const char *path, int err)
{
	if (err == ESTALE)
		fprintf(stderr,
			PROG " changes: %s/: a layer changed while it was read; run again on a "
			     "store that is not in use\n",
			path);
	else
		fprintf(stderr, PROG " changes: read directory %s/: %s\n", path, strerror(err));
	c->errors++;
}

static void diff_dir(struct ch *c, const char *path, const struct lu_node *fa, const struct lu_node *fb, int full)
{
	const struct lu_dirent *e;
	struct lu_dir *d;
	struct lu_node t;

	if (!full) {
		/* only the names the upper itself holds (whiteouts included) */
		char real[PATH_MAX];
		struct dirent *de;
		struct stat s0, s1;
		DIR *dd = NULL;
		int fd;
		lu_real_path(c->full, 0, *path ? path + 1 : "", real, sizeof real);
		fd = lu_openat_noatime(AT_FDCWD, real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && !(dd = fdopendir(fd)))
			close(fd);
		if (!dd || fstat(dirfd(dd), &s0) < 0) {
			dir_failed(c, path, errno);
			if (dd)
				closedir(dd);
			return;
		}
		errno = 0;
		while ((de = readdir(dd))) {
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				diff_name(c, path, fa, fb, de->d_name, 0);
			errno = 0;
		}
		if (errno)
			dir_failed(c, path, errno);
		else if (fstat(dirfd(dd), &s1) < 0 || s1.st_mtim.tv_sec != s0.st_mtim.tv_sec ||
			 s1.st_mtim.tv_nsec != s0.st_mtim.tv_nsec || s1.st_ctim.tv_sec != s0.st_ctim.tv_sec ||
			 s1.st_ctim.tv_nsec != s0.st_ctim.tv_nsec)
			dir_failed(c, path, ESTALE);
		closedir(dd);
		return;
	}
	if (!(d = lu_opendir_node(c->full, fa))) {
		dir_failed(c, path, errno);
		return;
	}
	while ((e = lu_readdir(d)))
		diff_name(c, path, fa, fb, e->name, 1);
	if (errno)
		dir_failed(c, path, errno);
	lu_closedir(d);
	if (!fb)
		return;
	if (!(d = lu_opendir_node(c->base, fb))) {
		dir_failed(c, path, errno);
		return;
	}
	while ((e = lu_readdir(d)))
		if (lu_lookup_child(c->full, fa, e->name, &t) == 0)
			lu_node_free(&t);
		else
			diff_name(c, path, fa, fb, e->name, 1);
	if (errno)
		dir_failed(c, path, errno);
	lu_closedir(d);
}

int cmd_changes(int argc, char **argv)
{
	struct lu_opts o = {0, 0};
	char *layers[LU_MAX_LAYERS + 1], errbuf[512], why[256], d[PATH_MAX];
	int n = 0, store = 0, assume = 0, lower = 0, rc = 1, r;
	struct ch c = {0};
	struct lu_node ra, rb;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--machine")) {
			c.machine = 1;
		} else if (!strcmp(argv[i], "--assume-upper")) {
			assume = 1;
		} else if (!strcmp(argv[i], "--lower")) {
			if (!n) {
				fputs(usage_text, stderr);
				return 2;
			}
			lower = 1;
		} else if (parse_union_opt(argv[i], &o)) {
			continue;
		} else if (argv[i][0] == '-' || (n && !lower) || n > LU_MAX_LAYERS) {
			fputs(usage_text, stderr);
			return 2;
		} else {
			int s;
			if (layer_resolve(argv[i], d, sizeof d, &s) < 0 || !(layers[n] = strdup(d)))
				goto done;
			if (!n)
				store = s;
			if (n == 0 && !assume && !layer_looks_like_upper(layers[0], store, why, sizeof why)) {
				fprintf(stderr, PROG " changes: %s does not look like an overlay upper: %s\n", argv[i],
					why);
				n++;
				goto done;
			}
			n++;
		}
	}
	if (n < 2) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (!(c.full = lu_open(layers, n, &o, errbuf, sizeof errbuf)) ||
	    !(c.base = lu_open(layers + 1, n - 1, &o, errbuf, sizeof errbuf))) {
		fprintf(stderr, PROG " changes: %s\n", errbuf);
		goto done;
	}
	if ((r = lu_lookup(c.full, "/", &ra)) < 0 || (r = lu_lookup(c.base, "/", &rb)) < 0) {
		fprintf(stderr, PROG " changes: root: %s\n", strerror(-r));
		goto done;
	}
	diff_dir(&c, "", &ra, &rb, 0);
	lu_node_free(&ra);
	lu_node_free(&rb);
	if (fflush(stdout) != 0) {
		perror(PROG " changes: stdout");
		c.errors++;
	}
	rc = c.errors ? 1 : 0;
done:
	lu_close(c.full);
	lu_close(c.base);
	for (int i = 0; i < n; i++)
		free(layers[i]);
	layers_cleanup();
	return rc;
}

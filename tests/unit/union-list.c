/* union-list.c - see union-list.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "union-list.h"

struct rec {
	char *path;
	char *body;
	uint64_t id_dev, id_ino;
	int linkable;
};

struct recs {
	struct rec *r;
	size_t n, cap;
	unsigned ns;
	int flags;
};

static void esc(char *o, size_t sz, const char *s, size_t len)
{
	size_t k = 0, i;

	for (i = 0; i < len && k + 5 < sz; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 33 || c > 126 || c == '\\')
			k += (size_t)snprintf(o + k, sz - k, "\\%03o", c);
		else
			o[k++] = (char)c;
	}
	o[k] = '\0';
}

static int add_rec(struct recs *rs, const char *path, const char *body, const struct stat *st, uint64_t dev,
		   uint64_t ino)
{
	if (rs->n == rs->cap) {
		size_t nc = rs->cap ? rs->cap * 2 : 64;
		struct rec *nr = realloc(rs->r, nc * sizeof *nr);
		if (!nr)
			return -ENOMEM;
		rs->r = nr;
		rs->cap = nc;
	}
	rs->r[rs->n].path = strdup(path);
	rs->r[rs->n].body = strdup(body);
	rs->r[rs->n].id_dev = dev;
	rs->r[rs->n].id_ino = ino;
	rs->r[rs->n].linkable = !S_ISDIR(st->st_mode) && st->st_nlink > 1;
	if (!rs->r[rs->n].path || !rs->r[rs->n].body)
		return -ENOMEM;
	rs->n++;
	return 0;
}

/* The describing part of one line. REAL is the file to read content, target
 * and xattrs from (in a layer, or in the kernel's mount). */
static int describe(struct recs *rs, const char *real, const struct stat *st, char *b, size_t sz)
{
	char x[8192], v[1024], ev[4200], en[1200], tmp[PATH_MAX * 4];
	ssize_t xl, vl;
	size_t pos = 0, k;
	const char *nm;
	int fd;

	k = (size_t)snprintf(b, sz, "%c %04o %u:%u",
			     S_ISDIR(st->st_mode)  ? 'd' :
			     S_ISREG(st->st_mode)  ? 'f' :
			     S_ISLNK(st->st_mode)  ? 'l' :
			     S_ISCHR(st->st_mode)  ? 'c' :
			     S_ISBLK(st->st_mode)  ? 'b' :
			     S_ISFIFO(st->st_mode) ? 'p' :
						     's',
			     (unsigned)(st->st_mode & 07777), (unsigned)st->st_uid, (unsigned)st->st_gid);
	if (!(rs->flags & LIST_NO_MTIME) && !S_ISLNK(st->st_mode))
		k += (size_t)snprintf(b + k, sz - k, " t=%lld.%09ld", (long long)st->st_mtim.tv_sec,
				      st->st_mtim.tv_nsec);
	if (S_ISREG(st->st_mode)) {
		uint64_t h = 1469598103934665603ULL;
		ssize_t n;
		fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		while ((n = read(fd, tmp, sizeof tmp)) > 0)
			for (ssize_t i = 0; i < n; i++)
				h = (h ^ (unsigned char)tmp[i]) * 1099511628211ULL;
		close(fd);
		if (n < 0)
			return -EIO;
		k += (size_t)snprintf(b + k, sz - k, " size=%lld h=%016llx", (long long)st->st_size,
				      (unsigned long long)h);
	} else if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(real, v, sizeof v - 1);
		if (n < 0)
			return -errno;
		esc(ev, sizeof ev, v, (size_t)n);
		k += (size_t)snprintf(b + k, sz - k, " -> %s", ev);
	} else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		k += (size_t)snprintf(b + k, sz - k, " rdev=%u,%u", major(st->st_rdev), minor(st->st_rdev));
	}
	xl = llistxattr(real, x, sizeof x);
	if (xl < 0 && errno != ENOTSUP)
		return -errno;
	/* names sorted by a simple insertion into the line keeps order stable */
	char *names[64];
	int nn = 0;
	while (xl > 0 && (nm = lu_xattr_list_next(x, (size_t)xl, &pos)) && nn < 64)
		if (!lu_xattr_is_private(nm, strlen(nm), rs->ns))
			names[nn++] = (char *)nm;
	for (int i = 1; i < nn; i++)
		for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (int i = 0; i < nn; i++) {
		vl = lgetxattr(real, names[i], v, sizeof v);
		if (vl < 0)
			return -errno;
		esc(ev, sizeof ev, v, (size_t)vl);
		esc(en, sizeof en, names[i], strlen(names[i]));
		k += (size_t)snprintf(b + k, sz - k, " x:%s=%s", en, ev);
		if (k >= sz)
			return -ENAMETOOLONG;
	}
	return 0;
}

static int walk_real(struct recs *rs, const char *real, const char *rel)
{
	DIR *d = opendir(real);
	struct dirent *e;
	struct stat st;
	char rp[PATH_MAX], np[PATH_MAX], body[16384];
	int r = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(rp, sizeof rp, "%s/%s", real, e->d_name);
		snprintf(np, sizeof np, "%s/%s", rel, e->d_name);
		if (lstat(rp, &st) < 0) {
			/* overlayfs may list a whiteout it then refuses to look up */
			if (errno == ENOENT)
				continue;
			r = -errno;
			break;
		}
		if ((r = describe(rs, rp, &st, body, sizeof body)) < 0 ||
		    (r = add_rec(rs, np, body, &st, st.st_dev, st.st_ino)) < 0)
			break;
		if (S_ISDIR(st.st_mode) && (r = walk_real(rs, rp, np)) < 0)
			break;
	}
	closedir(d);
	return r;
}

static int walk_union(struct recs *rs, struct lu_union *u, const struct lu_node *dir, const char *rel)
{
	struct lu_dir *d = lu_opendir_node(u, dir);
	const struct lu_dirent *e;
	struct lu_node n;
	char rp[PATH_MAX], np[PATH_MAX], body[16384];
	int r = 0;

	if (!d)
		return -errno;
	while ((e = lu_readdir(d))) {
		snprintf(np, sizeof np, "%s/%s", rel, e->name);
		if ((r = lu_lookup_child(u, dir, e->name, &n)) == -ENOENT) {
			r = 0; /* listed but looked up as a whiteout, as the kernel does */
			continue;
		}
		if (r < 0)
			break;
		/* the same entry looked up by its whole path, as lu_stat callers do */
		struct stat ps;
		int same = lu_stat(u, np, &ps) == 0 && ps.st_ino == n.st.st_ino && ps.st_dev == n.st.st_dev &&
			   ps.st_mode == n.st.st_mode;
		if ((r = lu_real_path(u, n.layer, n.rel, rp, sizeof rp)) == 0 &&
		    (r = describe(rs, rp, &n.st, body, sizeof body)) == 0) {
			if (!same)
				strncat(body, " lu_stat-by-path-differs", sizeof body - strlen(body) - 1);
			if ((r = add_rec(rs, np, body, &n.st, n.st.st_dev, n.st.st_ino)) == 0 && S_ISDIR(n.st.st_mode))
				r = walk_union(rs, u, &n, np);
		}
		lu_node_free(&n);
		if (r < 0)
			break;
	}
	if (!e && errno)
		r = -errno;
	lu_closedir(d);
	return r;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct rec *)a)->path, ((const struct rec *)b)->path);
}

static int cmp_id(const void *a, const void *b)
{
	const struct rec *x = *(struct rec *const *)a, *y = *(struct rec *const *)b;

	if (x->id_dev != y->id_dev)
		return x->id_dev < y->id_dev ? -1 : 1;
	if (x->id_ino != y->id_ino)
		return x->id_ino < y->id_ino ? -1 : 1;
	return strcmp(x->path, y->path);
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Hard links show as "=FIRSTPATH" naming the smallest visible path of the group. */
static int finish(struct recs *rs, struct listing *out)
{
	struct rec **by = malloc((rs->n + 1) * sizeof *by);
	char **grp = calloc(rs->n + 1, sizeof *grp);
	char ep[PATH_MAX * 4], eg[PATH_MAX * 4];
	size_t i, j;

	if (!by || !grp)
		return -ENOMEM;
	if (rs->n) /* an empty tree (a minimised stack) has no array at all */
		qsort(rs->r, rs->n, sizeof *rs->r, cmp_path);
	for (i = 0; i < rs->n; i++)
		by[i] = &rs->r[i];
	qsort(by, rs->n, sizeof *by, cmp_id);
	for (i = 0; i < rs->n; i = j) {
		for (j = i + 1; j < rs->n && by[j]->id_dev == by[i]->id_dev && by[j]->id_ino == by[i]->id_ino; j++)
			;
		if (j - i > 1 && by[i]->linkable)
			for (size_t k = i; k < j; k++)
				grp[by[k] - rs->r] = by[i]->path;
	}
	out->n = out->cap = 0;
	out->line = calloc(rs->n + 1, sizeof *out->line);
	if (!out->line)
		return -ENOMEM;
	for (i = 0; i < rs->n; i++) {
		esc(ep, sizeof ep, rs->r[i].path, strlen(rs->r[i].path));
		eg[0] = '\0';
		if (grp[i])
			esc(eg, sizeof eg, grp[i], strlen(grp[i]));
		if (asprintf(&out->line[out->n], "%s %s%s%s", ep, rs->r[i].body, grp[i] ? " =" : "", eg) < 0)
			return -ENOMEM;
		out->n++;
	}
	qsort(out->line, out->n, sizeof *out->line, cmp_line);
	for (i = 0; i < rs->n; i++) {
		free(rs->r[i].path);
		free(rs->r[i].body);
	}
	free(rs->r);
	free(by);
	free(grp);
	return 0;
}

int list_real(const char *root, unsigned ns, int flags, struct listing *out)
{
	struct recs rs = {0};
	int r;

	rs.ns = ns;
	rs.flags = flags;
	if ((r = walk_real(&rs, root, "")) < 0)
		return r;
	return finish(&rs, out);
}

int list_union(struct lu_union *u, int flags, struct listing *out)
{
	struct recs rs = {0};
	struct lu_node root;
	int r;

	rs.ns = lu_ns(u);
	rs.flags = flags;
	if ((r = lu_lookup(u, "/", &root)) < 0)
		return r;
	r = walk_union(&rs, u, &root, "");
	lu_node_free(&root);
	if (r < 0)
		return r;
	return finish(&rs, out);
}

void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->line[i]);
	free(l->line);
	l->line = NULL;
	l->n = 0;
}

size_t listing_diff(const struct listing *a, const struct listing *b, size_t max, FILE *f)
{
	size_t i = 0, j = 0, n = 0;

	while (i < a->n || j < b->n) {
		int c = i >= a->n ? 1 : j >= b->n ? -1 : strcmp(a->line[i], b->line[j]);
		if (c == 0) {
			i++, j++;
			continue;
		}
		if (f && n < max)
			fprintf(f, "  %c %s\n", c < 0 ? '-' : '+', c < 0 ? a->line[i] : b->line[j]);
		n++;
		if (c < 0)
			i++;
		else
			j++;
	}
	return n;
}

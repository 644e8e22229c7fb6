/* union_lookup.c - name lookup with overlayfs' rules (the layer stack it looks in: union_stack.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "union.h"
#include "union_stack.h"

void lu_node_free(struct lu_node *n)
{
	int i;

	for (i = 0; i < n->ndirs; i++)
		free(n->dirs[i].rel);
	free(n->dirs);
	for (i = 0; i < n->nwatch; i++)
		free(n->watch[i].rel);
	free(n->watch);
	free(n->rel);
	memset(n, 0, sizeof *n);
}

enum hit_kind { HIT_NONE, HIT_WHITEOUT, HIT_NONDIR, HIT_DIR };

struct hit {
	enum hit_kind kind;
	struct stat st;
	int opaque;   /* LU_OPAQUE_* of a directory */
	int redirect; /* -1 none/invalid, 0 relative, 1 absolute */
	char target[PATH_MAX];
};

/* Look one layer entry up: what it is, and for a directory its overlay marks. */
static int probe(const struct lu_union *u, int layer, const char *rel, int parent_xwh, int want_redirect, struct hit *h)
{
	char v[PATH_MAX];
	ssize_t r;

	h->kind = HIT_NONE;
	h->opaque = LU_OPAQUE_NONE;
	h->redirect = -1;
	if (fstatat(u->fd[layer], *rel ? rel : ".", &h->st, AT_SYMLINK_NOFOLLOW) < 0)
		return (errno == ENOENT || errno == ENOTDIR) ? 0 : -errno;
	if (S_ISDIR(h->st.st_mode)) {
		h->kind = HIT_DIR;
		h->opaque = lu_dir_opaque(u, layer, rel);
		if (want_redirect && h->opaque != LU_OPAQUE_Y) {
			r = lu_ov_xattr(u, layer, rel, "redirect", v, sizeof v);
			if (r >= 0) {
				h->redirect = lu_parse_redirect(v, (size_t)r, h->target, sizeof h->target);
				if (h->redirect < 0)
					return -EINVAL; /* the kernel refuses the lookup too */
			}
		}
		return 0;
	}
	/* Lookups honour the xattr whiteout in any directory (overlayfs 6.x does);
	 * only readdir restricts the check to directories marked opaque=x. */
	(void)parent_xwh;
	r = -1;
	if (S_ISREG(h->st.st_mode) && h->st.st_size == 0)
		r = lu_ov_xattr(u, layer, rel, "whiteout", v, sizeof v);
	h->kind = lu_is_whiteout(&h->st, r >= 0, 1) ? HIT_WHITEOUT : HIT_NONDIR;
	return 0;
}

static int join(char *buf, size_t sz, const char *a, const char *b)
{
	int r = snprintf(buf, sz, "%s%s%s", a, *a ? "/" : "", b);

	return (r < 0 || (size_t)r >= sz) ? -ENAMETOOLONG : 0;
}

/* An absolute redirect is looked up from a layer's root, one component at a time;
 * the intermediate components must be directories. As in overlayfs, a redirect
 * on an intermediate directory rewrites the name that lower layers will look up
 * (ABS, in place) while this layer goes on with the remaining components.
 * *STOP is set when no lower layer may be consulted after this one. */
static int probe_abs(const struct lu_union *u, int layer, char *abs, size_t abssz, int want_redirect, struct hit *h,
		     char *rel, size_t relsz, int *stop)
{
	char part[NAME_MAX + 1], next[PATH_MAX], nabs[PATH_MAX];
	size_t len = strlen(abs), rem = len, start, plen;
	int xwh = u->root_xwh[layer], r;
	struct hit *mid = malloc(sizeof *mid);

	if (!mid)
		return -ENOMEM;
	rel[0] = '\0';
	/* counting from the end, because a redirect may change the prefix */
	for (;;) {
		len = strlen(abs);
		start = len - rem;
		while (start < len && abs[start] == '/')
			start++;
		plen = strcspn(abs + start, "/");
		if (plen > NAME_MAX) {
			r = -ENAMETOOLONG;
			break;
		}
		memcpy(part, abs + start, plen);
		part[plen] = '\0';
		if ((r = join(next, sizeof next, rel, part)) < 0)
			break;
		if (strlen(next) >= relsz) {
			r = -ENAMETOOLONG;
			break;
		}
		strcpy(rel, next);
		if (!abs[start + plen]) {
			r = probe(u, layer, rel, xwh, want_redirect, h);
			break;
		}
		if ((r = probe(u, layer, rel, xwh, want_redirect, mid)) < 0)
			break;
		if (mid->kind != HIT_DIR) {
			h->kind = HIT_NONE;
			if (mid->kind != HIT_NONE)
				*stop = 1;
			break;
		}
		if (mid->opaque == LU_OPAQUE_Y)
			*stop = 1;
		xwh = mid->opaque == LU_OPAQUE_X;
		rem = len - (start + plen); /* what follows this component, from its '/' */
		if (mid->redirect >= 0) {
			const char *post = abs + start + plen;
			int n = mid->redirect == 1 ?
					snprintf(nabs, sizeof nabs, "%s%s", mid->target, post) :
					snprintf(nabs, sizeof nabs, "%.*s%s%s", (int)start, abs, mid->target, post);
			if (n < 0 || (size_t)n >= sizeof nabs || (size_t)n >= abssz) {
				r = -ENAMETOOLONG;
				break;
			}
			strcpy(abs, nabs);
			if (mid->redirect == 1)
				*stop = 0; /* an absolute redirect below an opaque ancestor goes on */
		}
	}
	free(mid);
	return r;
}

static int add_contrib(struct lu_node *out, int layer, const char *rel, int xwh)
{
	struct lu_contrib *c = realloc(out->dirs, (size_t)(out->ndirs + 1) * sizeof *c);

	if (!c)
		return -ENOMEM;
	out->dirs = c;
	c[out->ndirs].layer = layer;
	c[out->ndirs].xwh = xwh;
	c[out->ndirs].rel = strdup(rel);
	if (!c[out->ndirs].rel)
		return -ENOMEM;
	out->ndirs++;
	return 0;
}

static int add_watch(struct lu_node *out, int layer, const char *rel)
{
	struct lu_watch *w = realloc(out->watch, (size_t)(out->nwatch + 1) * sizeof *w);

	if (!w)
		return -ENOMEM;
	out->watch = w;
	w[out->nwatch].layer = layer;
	if (!(w[out->nwatch].rel = strdup(rel)))
		return -ENOMEM;
	out->nwatch++;
	return 0;
}

static void drop_watches(struct lu_node *out)
{
	for (int i = 0; i < out->nwatch; i++)
		free(out->watch[i].rel);
	free(out->watch);
	out->watch = NULL;
	out->nwatch = 0;
}

/* Where the lookup of one name is: the name (cur) in the parent's next directory (ci), or, after an absolute
 * redirect, the path abs in the layers from next_layer down (stop: no layer below can hold it); rel, the path
 * last probed. */
struct walk {
	char cur[PATH_MAX], abs[PATH_MAX], rel[PATH_MAX];
	int ci, next_layer, absolute, stop;
};

/* Probe the next place the name may be: 0 with *layer and h filled, 1 when there is none left, or -errno. */
static int probe_next(struct lu_union *u, const struct lu_node *p, struct walk *w, struct hit *h, int *layer)
{
	int r, xwh;

	if (!w->absolute) {
		if (w->ci >= p->ndirs)
			return 1;
		*layer = p->dirs[w->ci].layer;
		xwh = p->dirs[w->ci].xwh;
		if ((r = join(w->rel, sizeof w->rel, p->dirs[w->ci].rel, w->cur)) < 0)
			return r;
		w->ci++;
		r = probe(u, *layer, w->rel, xwh, u->follow && *layer + 1 < u->n, h);
	} else {
		if (w->next_layer >= u->n)
			return 1;
		*layer = w->next_layer++;
		r = probe_abs(u, *layer, w->abs, sizeof w->abs, u->follow && *layer + 1 < u->n, h, w->rel,
			      sizeof w->rel, &w->stop);
	}
	return r < 0 ? r : 0;
}

/* A directory's redirect taken: an absolute one goes on below this layer at its target; a relative one renames
 * the last component (of abs when following an absolute one, else cur). 0 or -ENAMETOOLONG. */
static int follow_redirect(struct walk *w, const struct hit *h, int layer)
{
	if (h->redirect == 1) {
		w->stop = 0;
		w->absolute = 1;
		w->next_layer = layer + 1;
		strcpy(w->abs, h->target);
	} else if (h->redirect == 0) {
		if (w->absolute) {
			char *slash = strrchr(w->abs, '/');
			size_t keep = slash ? (size_t)(slash - w->abs) : 0;
			if (keep + 1 + strlen(h->target) >= sizeof w->abs)
				return -ENAMETOOLONG;
			w->abs[keep] = '/';
			strcpy(w->abs + keep + 1, h->target);
		} else {
			strcpy(w->cur, h->target);
		}
	}
	return 0;
}

/* NAME inside the merged directory P. */
int lu_lookup_child(struct lu_union *u, const struct lu_node *p, const char *name, struct lu_node *out)
{
	struct walk w;
	int found = 0, r, layer = 0;
	struct hit *h = malloc(sizeof *h);

	w.ci = w.next_layer = w.absolute = w.stop = 0;
	memset(out, 0, sizeof *out);
	if (!h)
		return -ENOMEM;
	if (!p->ndirs) {
		r = -ENOTDIR;
		goto done;
	}
	if (strlen(name) >= sizeof w.cur) {
		r = -ENAMETOOLONG;
		goto done;
	}
	strcpy(w.cur, name);
	for (;;) {
		if ((r = probe_next(u, p, &w, h, &layer)) < 0)
			goto done;
		if (r == 1)
			break;
		/* every layer looked at that does not merge in is a place to watch */
		if (h->kind != HIT_DIR && (r = add_watch(out, layer, w.rel)) < 0)
			goto done;
		if (h->kind == HIT_NONE) {
			if (w.stop)
				break;
			continue;
		}
		if (h->kind == HIT_WHITEOUT)
			break;
		/* the topmost hit names the entry */
		if (!found) {
			out->st = h->st;
			out->layer = layer;
			if (!(out->rel = strdup(w.rel))) {
				r = -ENOMEM;
				goto done;
			}
			found = 1;
		}
		if (h->kind == HIT_NONDIR)
			break; /* a non-directory ends the search, and hides any below */
		if ((r = add_contrib(out, layer, w.rel, h->opaque == LU_OPAQUE_X)) < 0)
			goto done;
		if (h->opaque == LU_OPAQUE_Y) {
			out->opaque = 1;
			break;
		}
		if ((r = follow_redirect(&w, h, layer)) < 0)
			goto done;
		if (w.stop)
			break;
	}
	r = found ? 0 : -ENOENT;
	if (found && !S_ISDIR(out->st.st_mode))
		drop_watches(out); /* only directory streams use them */
done:
	free(h);
	if (r < 0)
		lu_node_free(out);
	return r;
}

static int root_node(struct lu_union *u, struct lu_node *out)
{
	int i, r;

	memset(out, 0, sizeof *out);
	if (fstat(u->fd[0], &out->st) < 0)
		return -errno;
	if (!(out->rel = strdup("")))
		return -ENOMEM;
	/* The root merges every layer: overlayfs ignores opaque marks on layer roots. */
	for (i = 0; i < u->n; i++)
		if ((r = add_contrib(out, i, "", u->root_xwh[i])) < 0) {
			lu_node_free(out);
			return r;
		}
	return 0;
}

int lu_lookup(struct lu_union *u, const char *path, struct lu_node *out)
{
	struct lu_node cur, next;
	char name[NAME_MAX + 1];
	const char *s = path, *e;
	int r;

	if ((r = root_node(u, &cur)) < 0)
		return r;
	for (;;) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		e = strchrnul(s, '/');
		if ((size_t)(e - s) > NAME_MAX) {
			lu_node_free(&cur);
			return -ENAMETOOLONG;
		}
		memcpy(name, s, (size_t)(e - s));
		name[e - s] = '\0';
		s = e;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..") || !S_ISDIR(cur.st.st_mode)) {
			lu_node_free(&cur);
			return !strcmp(name, "..") ? -EINVAL : -ENOTDIR;
		}
		r = lu_lookup_child(u, &cur, name, &next);
		lu_node_free(&cur);
		if (r < 0)
			return r;
		cur = next;
	}
	*out = cur;
	return 0;
}

int lu_stat(struct lu_union *u, const char *path, struct stat *st)
{
	struct lu_node n;
	int r = lu_lookup(u, path, &n);

	if (r < 0)
		return r;
	*st = n.st;
	lu_node_free(&n);
	return 0;
}

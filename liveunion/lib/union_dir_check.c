/* union_dir_check.c - whether a merged directory listing is still true: the contributing directories and the
 * watch points (where a probed layer stopped the merge) compared with their state when the listing was read. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "union.h"
#include "union_dir.h"

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static int same_inode(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && same_time(&a->st_mtim, &b->st_mtim) &&
	       same_time(&a->st_ctim, &b->st_ctim);
}

int lu_dir_watch_init(struct lu_dir *d, struct wstate *w, int layer, const char *rel)
{
	char *sl;

	w->layer = layer;
	if (!(w->anc = strdup(rel)))
		return -ENOMEM;
	do {
		sl = strrchr(w->anc, '/');
		if (sl)
			*sl = '\0';
		else
			w->anc[0] = '\0';
		if (fstatat(lu_layer_fd(d->u, layer), *w->anc ? w->anc : ".", &w->st, AT_SYMLINK_NOFOLLOW) == 0)
			return 0;
		if (errno != ENOENT && errno != ENOTDIR)
			return -errno;
	} while (*w->anc);
	return -errno; /* the layer's root itself is gone */
}

int lu_dir_watches_changed(struct lu_dir *d)
{
	struct stat st;

	for (int i = 0; i < d->nw; i++) {
		struct wstate *w = &d->w[i];
		if (fstatat(lu_layer_fd(d->u, w->layer), *w->anc ? w->anc : ".", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !same_inode(&st, &w->st))
			return 1;
	}
	return 0;
}

int lu_dir_layers_changed(struct lu_dir *d, int deep)
{
	struct stat st;
	int i;

	if (lu_dir_watches_changed(d))
		return 1;
	for (i = 0; i < d->n; i++) {
		struct dstate *ds = &d->d[i];
		if (fstat(ds->fd, &st) < 0 || !same_time(&st.st_mtim, &ds->st.st_mtim) ||
		    !same_time(&st.st_ctim, &ds->st.st_ctim))
			return 1;
		/* a directory renamed away or replaced keeps its old fd valid */
		if (deep &&
		    (fstatat(lu_layer_fd(d->u, ds->layer), *ds->rel ? ds->rel : ".", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		     st.st_ino != ds->st.st_ino || st.st_dev != ds->st.st_dev))
			return 1;
	}
	return 0;
}

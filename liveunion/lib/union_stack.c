/* union_stack.c - the layer stack: opened once (a descriptor per layer, the namespaces of the overlay marks),
 * its layers' paths and descriptors, a node opened in its layer. */
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

int lu_nlayers(const struct lu_union *u)
{
	return u->n;
}
const char *lu_layer_path(const struct lu_union *u, int layer)
{
	return u->path[layer];
}
unsigned lu_ns(const struct lu_union *u)
{
	return u->ns;
}

int lu_real_path(const struct lu_union *u, int layer, const char *rel, char *buf, size_t sz)
{
	int r = snprintf(buf, sz, "%s%s%s", u->path[layer], *rel ? "/" : "", rel);

	if (r < 0 || (size_t)r >= sz)
		return -ENAMETOOLONG;
	return 0;
}

ssize_t lu_ov_xattr(const struct lu_union *u, int layer, const char *rel, const char *what, char *val, size_t sz)
{
	char p[PATH_MAX], name[64];
	ssize_t r = -1;

	if (lu_real_path(u, layer, rel, p, sizeof p) < 0)
		return -1;
	if (u->ns & LU_NS_TRUSTED) {
		snprintf(name, sizeof name, "trusted.overlay.%s", what);
		r = lgetxattr(p, name, val, sz);
	}
	if (r < 0 && (u->ns & LU_NS_USER)) {
		snprintf(name, sizeof name, "user.overlay.%s", what);
		r = lgetxattr(p, name, val, sz);
	}
	return r;
}

int lu_dir_opaque(const struct lu_union *u, int layer, const char *rel)
{
	char v[8];
	ssize_t r = lu_ov_xattr(u, layer, rel, "opaque", v, sizeof v);

	return r < 0 ? LU_OPAQUE_NONE : (int)lu_parse_opaque(v, (size_t)r);
}

struct lu_union *lu_open(char *const *layers, int n, const struct lu_opts *o, char *err, size_t errlen)
{
	struct lu_union *u;
	struct stat st;
	int i;

	if (n < 1 || n > LU_MAX_LAYERS) {
		snprintf(err, errlen, "need 1..%d layers, got %d", LU_MAX_LAYERS, n);
		return NULL;
	}
	u = calloc(1, sizeof *u);
	if (!u || !(u->path = calloc((size_t)n, sizeof *u->path)) || !(u->fd = calloc((size_t)n, sizeof *u->fd)) ||
	    !(u->root_xwh = calloc((size_t)n, sizeof *u->root_xwh))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	u->ns = (o && o->ns) ? o->ns : (LU_NS_TRUSTED | LU_NS_USER);
	u->follow = !(o && o->no_redirect);
	for (i = 0; i < n; i++)
		u->fd[i] = -1;
	u->n = n;
	for (i = 0; i < n; i++) {
		size_t l = strlen(layers[i]);

		while (l > 1 && layers[i][l - 1] == '/')
			l--;
		u->path[i] = strndup(layers[i], l);
		if (!u->path[i]) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		u->fd[i] = open(u->path[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (u->fd[i] < 0 || fstat(u->fd[i], &st) < 0) {
			snprintf(err, errlen, "layer %s: %s", layers[i], strerror(errno));
			goto fail;
		}
		u->root_xwh[i] = lu_dir_opaque(u, i, "") == LU_OPAQUE_X;
	}
	return u;
fail:
	lu_close(u);
	return NULL;
}

void lu_close(struct lu_union *u)
{
	int i;

	if (!u)
		return;
	for (i = 0; i < u->n; i++) {
		if (u->fd && u->fd[i] >= 0)
			close(u->fd[i]);
		if (u->path)
			free(u->path[i]);
	}
	free(u->path);
	free(u->fd);
	free(u->root_xwh);
	free(u);
}

int lu_openat_noatime(int dfd, const char *path, int flags)
{
	int fd = openat(dfd, path, flags | O_NOATIME);

	/* EPERM: neither the owner nor CAP_FOWNER; the kernel then ignores nothing */
	return fd < 0 && errno == EPERM ? openat(dfd, path, flags) : fd;
}

int lu_open_node(struct lu_union *u, const struct lu_node *n)
{
	int fd = lu_openat_noatime(u->fd[n->layer], *n->rel ? n->rel : ".",
				   O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	return fd < 0 ? -errno : fd;
}

int lu_layer_fd(const struct lu_union *u, int layer)
{
	return u->fd[layer];
}

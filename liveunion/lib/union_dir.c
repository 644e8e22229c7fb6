/* union_dir.c - merged directory streams.
 *
 * opendir takes one snapshot of the merged names (like the kernel's readdir
 * cache), so telldir cookies are plain indexes that stay valid for the life of
 * the stream. Memory is proportional to this one directory. The contributing
 * directories stay open and are re-checked, so a change in any layer while the
 * caller iterates is reported (ESTALE) rather than mixed into the listing. The
 * layers that were probed but did not merge in are watched too: the nearest
 * existing directory above the probed path changes when a directory appears
 * there or when the whiteout or non-directory that stopped the merge goes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "union.h"
#include "union_dir.h"

#define CHECK_EVERY 4096
#define READ_TRIES 3

struct kdirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static int grow_hash(struct lu_dir *d)
{
	size_t ncap = d->hcap ? d->hcap * 2 : 1024, i;
	uint32_t *nh = calloc(ncap, sizeof *nh);

	if (!nh)
		return -ENOMEM;
	for (i = 0; i < d->ne; i++) {
		const char *nm = d->names + d->e[i].off;
		size_t j = fnv(nm, strlen(nm)) & (ncap - 1);
		while (nh[j])
			j = (j + 1) & (ncap - 1);
		nh[j] = (uint32_t)(i + 1);
	}
	free(d->hash);
	d->hash = nh;
	d->hcap = ncap;
	return 0;
}

/* 1 if NAME was already seen in a higher layer, 0 if newly added, -errno. */
static int add_name(struct lu_dir *d, const char *name, size_t len, struct ent *proto)
{
	size_t j;

	if ((d->ne + 1) * 2 > d->hcap && grow_hash(d) < 0)
		return -ENOMEM;
	j = fnv(name, len) & (d->hcap - 1);
	while (d->hash[j]) {
		const char *o = d->names + d->e[d->hash[j] - 1].off;
		if (!strcmp(o, name))
			return 1;
		j = (j + 1) & (d->hcap - 1);
	}
	if (d->ne >= UINT32_MAX - 1)
		return -EOVERFLOW;
	if (d->nlen + len + 1 > d->ncap) {
		size_t nc = d->ncap ? d->ncap * 2 : 65536;
		char *nn;
		while (nc < d->nlen + len + 1)
			nc *= 2;
		if (!(nn = realloc(d->names, nc)))
			return -ENOMEM;
		d->names = nn;
		d->ncap = nc;
	}
	if (d->ne == d->ecap) {
		size_t nc = d->ecap ? d->ecap * 2 : 256;
		struct ent *ne = realloc(d->e, nc * sizeof *ne);
		if (!ne)
			return -ENOMEM;
		d->e = ne;
		d->ecap = nc;
	}
	memcpy(d->names + d->nlen, name, len + 1);
	proto->off = d->nlen;
	d->nlen += len + 1;
	d->e[d->ne] = *proto;
	d->hash[j] = (uint32_t)(++d->ne);
	if (!proto->hidden)
		d->nvisible++;
	return 0;
}

static int is_whiteout_at(struct lu_dir *d, struct dstate *ds, const char *name, unsigned char *type)
{
	struct stat st;
	char p[PATH_MAX], rel[PATH_MAX];
	int has = 0;

	if (*type != DT_UNKNOWN && *type != DT_CHR && !(*type == DT_REG && ds->xwh))
		return 0;
	if (fstatat(ds->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? -ESTALE : -errno;
	if (*type == DT_UNKNOWN)
		*type = (unsigned char)IFTODT(st.st_mode);
	if (ds->xwh && S_ISREG(st.st_mode) && st.st_size == 0) {
		snprintf(rel, sizeof rel, "%s%s%s", ds->rel, *ds->rel ? "/" : "", name);
		if (lu_real_path(d->u, ds->layer, rel, p, sizeof p) == 0) {
			if (lu_ns(d->u) & LU_NS_TRUSTED)
				has = lgetxattr(p, "trusted.overlay.whiteout", NULL, 0) >= 0;
			if (!has && (lu_ns(d->u) & LU_NS_USER))
				has = lgetxattr(p, "user.overlay.whiteout", NULL, 0) >= 0;
		}
	}
	return lu_is_whiteout(&st, has, ds->xwh);
}

static int read_layer(struct lu_dir *d, struct dstate *ds)
{
	static __thread char buf[65536];
	long n;
	int r;

	if (lseek(ds->fd, 0, SEEK_SET) < 0)
		return -errno;
	while ((n = syscall(SYS_getdents64, ds->fd, buf, sizeof buf)) > 0) {
		long off = 0;
		while (off < n) {
			struct kdirent64 *k = (struct kdirent64 *)(buf + off);
			const char *nm = k->d_name;
			struct ent proto = {0, k->d_ino, ds->layer, k->d_type, 0};
			off += k->d_reclen;
			if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
				continue;
			r = is_whiteout_at(d, ds, nm, &proto.type);
			if (r == -ESTALE) {
				d->changed = 1; /* vanished between getdents and stat */
				continue;
			}
			if (r < 0)
				return r;
			proto.hidden = (uint8_t)r;
			if ((r = add_name(d, nm, strlen(nm), &proto)) < 0)
				return r;
		}
	}
	return n < 0 ? -errno : 0;
}

static void reset_snapshot(struct lu_dir *d)
{
	d->nlen = d->ne = d->nvisible = 0;
	if (d->hash)
		memset(d->hash, 0, d->hcap * sizeof *d->hash);
}

static int snapshot(struct lu_dir *d)
{
	int t, i, r;

	for (t = 0; t < READ_TRIES; t++) {
		reset_snapshot(d);
		d->changed = 0;
		for (i = 0; i < d->n; i++)
			if (fstat(d->d[i].fd, &d->d[i].st) < 0)
				return -errno;
		for (i = 0; i < d->n; i++)
			if ((r = read_layer(d, &d->d[i])) < 0)
				return r;
		if (!d->changed && !lu_dir_layers_changed(d, 0))
			return 0;
		if (lu_dir_watches_changed(d))
			break; /* the lookup itself is out of date: reading again cannot help */
	}
	d->changed = 1; /* keep the last listing, but say it may be mixed */
	return 0;
}

struct lu_dir *lu_opendir_node(struct lu_union *u, const struct lu_node *n)
{
	struct lu_dir *d;
	int i, r;

	if (!S_ISDIR(n->st.st_mode) || n->ndirs < 1) {
		errno = ENOTDIR;
		return NULL;
	}
	if (!(d = calloc(1, sizeof *d)) || !(d->d = calloc((size_t)n->ndirs, sizeof *d->d))) {
		free(d);
		errno = ENOMEM;
		return NULL;
	}
	d->u = u;
	if (n->nwatch && !(d->w = calloc((size_t)n->nwatch, sizeof *d->w))) {
		r = -ENOMEM;
		goto fail;
	}
	/* watch points first: a change between them and the snapshot shows as one */
	for (i = 0; i < n->nwatch; i++) {
		d->nw = i + 1;
		if ((r = lu_dir_watch_init(d, &d->w[i], n->watch[i].layer, n->watch[i].rel)) < 0)
			goto fail;
	}
	for (i = 0; i < n->ndirs; i++) {
		struct dstate *ds = &d->d[i];
		ds->layer = n->dirs[i].layer;
		ds->xwh = n->dirs[i].xwh;
		ds->rel = strdup(n->dirs[i].rel);
		ds->fd = lu_openat_noatime(lu_layer_fd(u, ds->layer), *ds->rel ? ds->rel : ".",
					   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (!ds->rel || ds->fd < 0) {
			r = ds->rel ? -errno : -ENOMEM;
			d->n = i + 1;
			goto fail;
		}
		d->n = i + 1;
	}
	if ((r = snapshot(d)) < 0)
		goto fail;
	return d;
fail:
	lu_closedir(d);
	errno = -r;
	return NULL;
}

struct lu_dir *lu_opendir(struct lu_union *u, const char *path)
{
	struct lu_node n;
	struct lu_dir *d;
	int r = lu_lookup(u, path, &n);

	if (r < 0) {
		errno = -r;
		return NULL;
	}
	d = lu_opendir_node(u, &n);
	r = errno;
	lu_node_free(&n);
	errno = r;
	return d;
}

const struct lu_dirent *lu_readdir(struct lu_dir *d)
{
	struct ent *e;

	if (++d->since_check >= CHECK_EVERY) {
		d->since_check = 0;
		if (!d->changed && lu_dir_layers_changed(d, 0)) {
			d->changed = 1;
			errno = ESTALE;
			return NULL;
		}
	}
	while (d->pos < d->ne && d->e[d->pos].hidden)
		d->pos++;
	if (d->pos >= d->ne) {
		if (!d->changed && lu_dir_layers_changed(d, 1))
			d->changed = 1;
		errno = d->changed ? ESTALE : 0;
		return NULL;
	}
	e = &d->e[d->pos++];
	d->cur.name = d->names + e->off;
	d->cur.type = e->type;
	d->cur.layer = e->layer;
	d->cur.ino = e->ino;
	return &d->cur;
}

long lu_telldir(struct lu_dir *d)
{
	return (long)d->pos;
}

void lu_seekdir(struct lu_dir *d, long cookie)
{
	d->pos = (cookie < 0 || (size_t)cookie > d->ne) ? d->ne : (size_t)cookie;
}

void lu_rewinddir(struct lu_dir *d)
{
	d->pos = 0;
	if (!d->changed && lu_dir_layers_changed(d, 1))
		d->changed = 1;
}

int lu_dir_changed(struct lu_dir *d)
{
	return d->changed;
}
size_t lu_dir_count(const struct lu_dir *d)
{
	return d->nvisible;
}

int lu_closedir(struct lu_dir *d)
{
	int i, r = 0;

	if (!d)
		return 0;
	for (i = 0; i < d->n; i++) {
		if (d->d[i].fd >= 0 && close(d->d[i].fd) < 0)
			r = -1;
		free(d->d[i].rel);
	}
	free(d->d);
	for (i = 0; i < d->nw; i++)
		free(d->w[i].anc);
	free(d->w);
	free(d->names);
	free(d->e);
	free(d->hash);
	free(d);
	return r;
}

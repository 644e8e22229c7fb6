/* union.h - read an overlayfs layer stack without the kernel.
 *
 * Layers are given top first, as in overlayfs' lowerdir=. The view follows the
 * kernel's rules: topmost name wins, whiteouts hide, opaque dirs stop the merge,
 * redirects are followed, a non-directory above a directory hides it.
 * Runs on the build host (offline tools) and in the live system alike. */
#ifndef LIVEUNION_UNION_H
#define LIVEUNION_UNION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define LU_MAX_LAYERS 500

/* Which xattr namespace carries overlay's own attributes: the kernel uses one
 * per mount (trusted.overlay.* unless mounted with userxattr). */
enum { LU_NS_TRUSTED = 1, LU_NS_USER = 2 };

struct lu_opts {
	unsigned ns;     /* LU_NS_* mask; 0 means both */
	int no_redirect; /* do not follow overlay.redirect (redirect_dir=nofollow) */
};

/* ---- xattr / whiteout parsing (pure; fuzzed in tests/fuzz) ---- */
enum lu_opaque { LU_OPAQUE_NONE = 0, LU_OPAQUE_Y, LU_OPAQUE_X };
/* 1 if NAME is overlay's own xattr for the namespaces in NS (never copied, never shown). */
int lu_xattr_is_private(const char *name, size_t len, unsigned ns);
/* Parse an overlay.opaque value. */
enum lu_opaque lu_parse_opaque(const char *val, size_t len);
/* Validate an overlay.redirect value; copies it NUL-terminated into OUT (size OUTSZ).
 * Returns 1 absolute, 0 relative, -1 invalid (kernel refuses those too). */
int lu_parse_redirect(const char *val, size_t len, char *out, size_t outsz);
/* Walk a listxattr(2) buffer: returns the next name and advances *POS, NULL at end
 * or on a malformed (unterminated) tail. */
const char *lu_xattr_list_next(const char *buf, size_t len, size_t *pos);
/* Whiteout decision from lstat data plus (for regular files) whether a
 * overlay.whiteout xattr exists and whether the parent is marked opaque=x. */
int lu_is_whiteout(const struct stat *st, int has_wh_xattr, int parent_xwh);

/* ---- the stack ---- */
struct lu_union;

struct lu_contrib { /* one layer's directory that takes part in a merged dir */
	int layer;
	int xwh;   /* this dir is marked opaque=x: look for xattr whiteouts */
	char *rel; /* path inside the layer, "" for its root */
};

struct lu_watch { /* a layer probed for a directory that did not merge into it */
	int layer;
	/* the path looked up there: if it appears, or the whiteout or non-directory found there goes, the
	 * merge changes */
	char *rel;
};

struct lu_node {        /* result of a lookup */
	struct stat st; /* from the topmost layer that has the name */
	int layer;      /* that layer */
	char *rel;      /* path inside that layer */
	int ndirs;      /* directories: layers that merge into it, top first */
	struct lu_contrib *dirs;
	int opaque; /* directory hides everything below its last contrib */
	int nwatch; /* directories: the other layers probed (see lu_watch) */
	struct lu_watch *watch;
};

struct lu_union *lu_open(char *const *layers, int n, const struct lu_opts *o, char *err, size_t errlen);
void lu_close(struct lu_union *u);
int lu_nlayers(const struct lu_union *u);
const char *lu_layer_path(const struct lu_union *u, int layer);
unsigned lu_ns(const struct lu_union *u);

/* Look PATH up ("/" or "" is the root; components split on '/').
 * Returns 0 and fills *OUT, or -errno (-ENOENT, -ENOTDIR, -ELOOP, ...). */
int lu_lookup(struct lu_union *u, const char *path, struct lu_node *out);
void lu_node_free(struct lu_node *n);
int lu_stat(struct lu_union *u, const char *path, struct stat *st);
/* NAME inside the looked-up directory P: a walk without re-resolving from the root. */
int lu_lookup_child(struct lu_union *u, const struct lu_node *p, const char *name, struct lu_node *out);
int lu_layer_fd(const struct lu_union *u, int layer);
/* "layerdir/rel" into BUF, for readlink/getxattr/open on the real file. */
int lu_real_path(const struct lu_union *u, int layer, const char *rel, char *buf, size_t sz);
/* openat(2) read-only with O_NOATIME where allowed (root or the owner), so that
 * reading a layer (a store on a stick) never writes its access times. */
int lu_openat_noatime(int dfd, const char *path, int flags);
/* Open the file content of a looked-up node read-only. */
int lu_open_node(struct lu_union *u, const struct lu_node *n);

/* ---- directory streams ---- */
struct lu_dir;
struct lu_dirent {
	const char *name;
	unsigned char type; /* DT_* of the topmost entry */
	int layer;          /* layer the entry comes from */
	uint64_t ino;       /* inode number in that layer */
};

struct lu_dir *lu_opendir(struct lu_union *u, const char *path); /* NULL + errno */
struct lu_dir *lu_opendir_node(struct lu_union *u, const struct lu_node *n);
/* Next entry ("." and ".." are not returned). NULL with errno 0 at the end,
 * errno ESTALE if the merge may have changed since the lookup of the directory:
 * a contributing directory changed (entries, xattrs, mode) or was replaced, or
 * the place where another layer was probed changed (a directory appeared there,
 * or the whiteout or non-directory that stopped the merge went). */
const struct lu_dirent *lu_readdir(struct lu_dir *d);
long lu_telldir(struct lu_dir *d);
void lu_seekdir(struct lu_dir *d, long cookie);
/* Back to the start of the same snapshot: cookies stay valid for the life of the
 * stream, so the listing is never re-read; a change is reported instead. */
void lu_rewinddir(struct lu_dir *d);
int lu_dir_changed(struct lu_dir *d);
size_t lu_dir_count(const struct lu_dir *d);
int lu_closedir(struct lu_dir *d);

#endif

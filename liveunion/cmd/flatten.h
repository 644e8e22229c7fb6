/* flatten.h - `liveunion flatten`'s own: the state of one run, shared by cmd_flatten.c (the walk that writes the
 * merged tree) and flatten_squashfs.c (a FILE.squashfs output: its staging directory, pseudo definitions,
 * mksquashfs). */
#ifndef LIVEUNION_FLATTEN_H
#define LIVEUNION_FLATTEN_H
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "tool.h"

struct link {
	dev_t dev;
	ino_t ino;
	char *out;
};

struct fl {
	struct lu_union *u;
	struct link *links;
	size_t nlinks, caplinks;
	int root, lost_owner, lost_xattr, lost_dev, errors;
	FILE *pseudo; /* non-root squashfs: owners and devices go here */
	const char *top;
	char stage[PATH_MAX];           /* DIR, or the staging directory of FILE.squashfs */
	char pseudo_path[PATH_MAX + 8]; /* the pseudo definitions' file beside it */
};

/* What failed on which path, with errno; counted in f->errors. */
void fl_err(struct fl *f, const char *what, const char *path);
/* n seen before (a hard link): out linked to its first path, 1; else n remembered at out, 0. */
int seen_link(struct fl *f, const struct lu_node *n, const char *out);
/* Without root: entry n (the layers' file real, at rel in the tree) as pseudo definitions. */
void pseudo_one(struct fl *f, const struct lu_node *n, const char *real, const char *rel);
/* FILE.squashfs out: the staging directory beside it and, without root, the pseudo file opened. 0, or -1 (said). */
int squash_stage(struct fl *f, const char *out);
/* The squashfs made from the stage (unless errors came before; said when it fails), the stage removed. */
void squash_finish(struct fl *f, const char *out, const struct stat *root);
#endif

/* union_dir.h - a merged directory stream's insides, shared by the library's own files: union_dir.c reads the
 * names, union_dir_check.c tells whether the directories they were read from changed since. */
#ifndef LU_UNION_DIR_H
#define LU_UNION_DIR_H
#include <stdint.h>
#include <sys/stat.h>

#include "union.h"

struct ent {
	size_t off; /* name offset in the arena */
	uint64_t ino;
	int32_t layer;
	uint8_t type;
	uint8_t hidden; /* whiteout: hides lower names, never returned */
};

struct dstate {
	int fd;
	int layer;
	int xwh;
	char *rel;
	struct stat st; /* at snapshot time */
};

struct wstate {
	int layer;
	char *anc; /* nearest existing ancestor of the probed path */
	struct stat st;
};

struct lu_dir {
	struct lu_union *u;
	int n, nw;
	struct dstate *d;
	struct wstate *w;
	char *names;
	size_t nlen, ncap;
	struct ent *e;
	size_t ne, ecap, nvisible;
	uint32_t *hash; /* entry index + 1, 0 = empty */
	size_t hcap;
	size_t pos;
	size_t since_check;
	int changed;
	struct lu_dirent cur;
};

/* Find and stat the watch point of the probed path REL in LAYER: its parent
 * directory, or the nearest ancestor that exists. 0 or -errno. */
int lu_dir_watch_init(struct lu_dir *d, struct wstate *w, int layer, const char *rel);
/* 1 when a watch point changed: the lookup that found the directories is out of date. */
int lu_dir_watches_changed(struct lu_dir *d);
/* 1 when a watch point or a contributing directory changed; deep also catches a directory renamed away or
 * replaced (its old descriptor stays valid), at one more stat each. */
int lu_dir_layers_changed(struct lu_dir *d, int deep);
#endif

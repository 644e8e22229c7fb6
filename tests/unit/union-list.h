/* union-list.h - recursive listings of a real tree and of a library union, in one
 * comparable text form (names, types, modes, owners, sizes, content hashes,
 * symlink targets, device numbers, xattrs, hard-link groups, mtimes).
 * Shared by the differential test and the unit tests. */
#ifndef UNION_LIST_H
#define UNION_LIST_H
#include <stddef.h>

#include "union.h"

struct listing {
	char **line;
	size_t n, cap;
};

#define LIST_NO_MTIME 1 /* leave mtimes out (kernel vs library both keep them) */

/* Both return 0 or -errno; xattrs named overlay-private for NS are left out. */
int list_real(const char *root, unsigned ns, int flags, struct listing *out);
int list_union(struct lu_union *u, int flags, struct listing *out);
void listing_free(struct listing *l);
/* Print lines only in A ("-") or only in B ("+"), at most MAX of them; returns count. */
size_t listing_diff(const struct listing *a, const struct listing *b, size_t max, FILE *f);
#endif

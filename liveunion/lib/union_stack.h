/* union_stack.h - the layer stack's insides, shared by the library's own files (union_stack.c opens it,
 * union_lookup.c looks names up in it); callers see only union.h. */
#ifndef LU_UNION_STACK_H
#define LU_UNION_STACK_H
#include <sys/types.h>

#include "union.h"

struct lu_union {
	int n;
	unsigned ns;
	int follow;
	char **path;
	int *fd;
	int *root_xwh;
};

/* Read overlay.<what> in the namespaces in use; trusted first, as the kernel
 * never looks at both. Returns the value length or -1. */
ssize_t lu_ov_xattr(const struct lu_union *u, int layer, const char *rel, const char *what, char *val, size_t sz);
/* The LU_OPAQUE_* mark of a directory of a layer. */
int lu_dir_opaque(const struct lu_union *u, int layer, const char *rel);
#endif

/* union_xattr.c - the pure parsing of overlay's xattrs and whiteouts.
 * Kept free of I/O so that the fuzzer can drive it with arbitrary bytes. */
#include <string.h>
#include <sys/sysmacros.h>

#include "union.h"

static const char pfx_trusted[] = "trusted.overlay.";
static const char pfx_user[] = "user.overlay.";

static int has_prefix(const char *s, size_t len, const char *p, size_t plen)
{
	return len >= plen && memcmp(s, p, plen) == 0;
}

int lu_xattr_is_private(const char *name, size_t len, unsigned ns)
{
	if (ns == 0)
		ns = LU_NS_TRUSTED | LU_NS_USER;
	if ((ns & LU_NS_TRUSTED) && has_prefix(name, len, pfx_trusted, sizeof pfx_trusted - 1))
		return 1;
	if ((ns & LU_NS_USER) && has_prefix(name, len, pfx_user, sizeof pfx_user - 1))
		return 1;
	return 0;
}

enum lu_opaque lu_parse_opaque(const char *val, size_t len)
{
	/* The kernel compares exactly one byte: "y" opaque, "x" holds xattr whiteouts. */
	if (len != 1)
		return LU_OPAQUE_NONE;
	if (val[0] == 'y')
		return LU_OPAQUE_Y;
	if (val[0] == 'x')
		return LU_OPAQUE_X;
	return LU_OPAQUE_NONE;
}

int lu_parse_redirect(const char *val, size_t len, char *out, size_t outsz)
{
	size_t n = strnlen(val, len); /* the kernel stops at a NUL too */
	size_t i;

	if (n == 0 || n + 1 > outsz)
		return -1;
	memcpy(out, val, n);
	out[n] = '\0';
	if (out[0] != '/')
		return strchr(out, '/') ? -1 : 0; /* relative: a single name */
	/* absolute: no empty component, so no "//" and no trailing '/' */
	for (i = 0; i < n; i++)
		if (out[i] == '/' && (i + 1 == n || out[i + 1] == '/'))
			return -1;
	return 1;
}

const char *lu_xattr_list_next(const char *buf, size_t len, size_t *pos)
{
	const char *s, *e;

	while (*pos < len) {
		s = buf + *pos;
		e = memchr(s, '\0', len - *pos);
		if (!e)
			return NULL;
		*pos += (size_t)(e - s) + 1;
		if (e > s)
			return s;
	}
	return NULL;
}

int lu_is_whiteout(const struct stat *st, int has_wh_xattr, int parent_xwh)
{
	if (S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0))
		return 1;
	/* The xattr form counts only on an empty regular file whose directory says
	 * it may hold such whiteouts (overlay.opaque="x"): that keeps lookups cheap. */
	return S_ISREG(st->st_mode) && st->st_size == 0 && has_wh_xattr && parent_xwh;
}

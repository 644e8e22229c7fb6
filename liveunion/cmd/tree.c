/* tree.c - helpers shared by changes and flatten. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tool.h"

void put_path(FILE *f, const char *p, int machine)
{
	/* machine form: one record per line, so every byte that could break a
	 * line or a field is written as an octal escape */
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '\\' || c < 32 || c == 127 || (machine && c == ' '))
			fprintf(f, "\\%03o", c);
		else
			fputc(c, f);
	}
}

int parse_union_opt(const char *arg, struct lu_opts *o)
{
	if (!strcmp(arg, "--trusted"))
		o->ns = LU_NS_TRUSTED;
	else if (!strcmp(arg, "--userxattr"))
		o->ns = LU_NS_USER, o->no_redirect = 1;
	else if (!strcmp(arg, "--no-redirect"))
		o->no_redirect = 1;
	else
		return 0;
	return 1;
}

static ssize_t list_x(const char *p, char **buf)
{
	ssize_t n = llistxattr(p, NULL, 0);

	*buf = NULL;
	if (n < 0)
		return (errno == ENOTSUP || errno == ENODATA) ? 0 : -1;
	if (!(*buf = malloc((size_t)n + 1)))
		return -1;
	n = llistxattr(p, *buf, (size_t)n);
	return n;
}

static ssize_t get_x(const char *p, const char *name, char **val)
{
	ssize_t n = lgetxattr(p, name, NULL, 0);

	*val = NULL;
	if (n < 0 || !(*val = malloc((size_t)n + 1)))
		return -1;
	return lgetxattr(p, name, *val, (size_t)n);
}

int copy_xattrs(const char *from, const char *to, unsigned ns, int *lost)
{
	char *list, *val;
	const char *nm;
	size_t pos = 0;
	ssize_t n = list_x(from, &list), v;
	int r = 0;

	if (n < 0)
		return -errno;
	while (n > 0 && (nm = lu_xattr_list_next(list, (size_t)n, &pos))) {
		if (lu_xattr_is_private(nm, strlen(nm), ns))
			continue;
		if ((v = get_x(from, nm, &val)) < 0) {
			r = -errno;
			break;
		}
		if (lsetxattr(to, nm, val, (size_t)v, 0) < 0) {
			if (errno == EPERM || errno == ENOTSUP)
				(*lost)++; /* trusted.* or security.* without privilege */
			else
				r = -errno;
		}
		free(val);
		if (r)
			break;
	}
	free(list);
	return r;
}

/* 1 equal, 0 different (missing counts as different), for non-private xattrs. */
static int subset(const char *a, const char *b, unsigned ns)
{
	char *list, *va, *vb;
	const char *nm;
	size_t pos = 0;
	ssize_t n = list_x(a, &list), la, lb;
	int eq = n >= 0;

	while (eq && n > 0 && (nm = lu_xattr_list_next(list, (size_t)n, &pos))) {
		if (lu_xattr_is_private(nm, strlen(nm), ns))
			continue;
		la = get_x(a, nm, &va);
		lb = get_x(b, nm, &vb);
		eq = la >= 0 && la == lb && !memcmp(va, vb, (size_t)la);
		free(va);
		free(vb);
	}
	free(list);
	return eq;
}

int xattrs_equal(const char *a, const char *b, unsigned ns)
{
	return subset(a, b, ns) && subset(b, a, ns);
}

int files_equal(const char *a, const char *b)
{
	char x[65536], y[65536];
	int fa = lu_openat_noatime(AT_FDCWD, a, O_RDONLY | O_NOFOLLOW | O_CLOEXEC),
	    fb = lu_openat_noatime(AT_FDCWD, b, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int eq = fa >= 0 && fb >= 0;
	ssize_t na, nb;

	while (eq) {
		na = read(fa, x, sizeof x);
		nb = read(fb, y, sizeof y);
		if (na != nb || na < 0 || memcmp(x, y, (size_t)na))
			eq = 0;
		if (na <= 0)
			break;
	}
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return eq;
}

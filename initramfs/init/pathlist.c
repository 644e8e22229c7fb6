/* The list of persistent paths (live.persist.paths, a store's paths.conf) parsed: pure, for plan.c and paths.c. */
#include "pathlist.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The API file systems are the live system's own: persisting them would hide it. */
static bool path_allowed(const char *p)
{
	static const char *const no[] = {"/proc", "/sys", "/dev", "/run"};
	size_t i, n;

	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		n = strlen(no[i]);
		if (strncmp(p, no[i], n) == 0 && (p[n] == '\0' || p[n] == '/'))
			return false;
	}
	return true;
}

int paths_parse(const char *list, char out[][PATH_LEN], int max, char *err, size_t elen)
{
	char one[PATH_LEN], key[PATH_LEN];
	size_t len, used;
	const char *s = list, *c;
	int n = 0, i;
	bool bad, dup;

	if (elen)
		err[0] = '\0';
	while (*s) {
		len = strcspn(s, ",\n");
		bad = len == 0 || len >= sizeof(one) || s[0] != '/';
		used = 0;
		/* normalise: no repeated or trailing slashes; "." and ".." components are refused */
		for (c = s; !bad && c < s + len;) {
			size_t cl;

			while (c < s + len && *c == '/')
				c++;
			cl = strcspn(c, "/,\n");
			if (cl == 0)
				break;
			if ((cl == 1 && c[0] == '.') || (cl == 2 && c[0] == '.' && c[1] == '.'))
				bad = true;
			one[used++] = '/';
			memcpy(one + used, c, cl);
			used += cl;
			c += cl;
		}
		one[used] = '\0';
		/* a path without a name in the store (paths_key: each '/' takes 3 bytes there) could not persist */
		if (!bad && (used == 0 || !path_allowed(one) || paths_key(one, key, sizeof(key)) != 0))
			bad = true;
		for (dup = false, i = 0; !bad && i < n; i++)
			dup |= strcmp(out[i], one) == 0;
		if (bad) {
			size_t el = elen ? strlen(err) : 0;

			if (elen > el)
				snprintf(err + el, elen - el, "%s'%.*s'", el ? ", " : "", (int)(len < 64 ? len : 64),
					 s);
		} else if (!dup && n < max) {
			memcpy(out[n++], one, used + 1);
		} else if (!dup && elen && elen > strlen(err)) { /* no err to read when elen is 0 */
			size_t el = strlen(err);

			snprintf(err + el, elen - el, "%s'%s' (more than %d paths)", el ? ", " : "", one, max);
		}
		s += len;
		s += *s != '\0';
	}
	return n;
}

int paths_key(const char *path, char *out, size_t len)
{
	size_t o = 0;
	const char *s = path[0] == '/' ? path + 1 : path;

	for (; *s; s++) {
		const char *rep = *s == '/' ? "%2F" : *s == '%' ? "%25" : NULL;
		size_t n = rep ? 3 : 1;

		if (o + n >= len)
			return -1;
		memcpy(out + o, rep ? rep : s, n);
		o += n;
	}
	if (o == 0 || o >= len)
		return -1;
	out[o] = '\0';
	return 0;
}

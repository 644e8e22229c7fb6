/* live.persist.paths: only some directories persist, each an overlay of its own with its upper in the store's
 * liveunion-v1/paths/, over the volatile root. */
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "log.h"
#include "util.h"

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

/* live.persist.paths (parsed by plan_make), else the store's own paths file (parsed here, once): into b->paths,
 * which the mount uses. */
int paths_select(const struct plan *p, struct boot *b, const char *vdir)
{
	char file[PATH_LEN * 2], text[VALUE_MAX], bad[300];
	const char *from = "live.persist.paths", *err = p->persist_paths_bad;

	if (p->persist_paths_given) {
		b->npaths = p->npersist_paths;
		memcpy(b->paths, p->persist_paths, sizeof(b->paths));
	} else {
		text_fmt(file, sizeof(file), "%s/" STORE_PATHS_CONF, vdir);
		if (read_text(file, text, sizeof(text)) < 0) {
			fail_clear();
			return 0;
		}
		from = STORE_VDIR "/" STORE_PATHS_CONF;
		b->npaths = paths_parse(text, b->paths, MAX_PATHS, bad, sizeof(bad));
		err = bad;
	}
	if (err[0])
		msg("persistence: %s: ignored (not an absolute path of the live root, under /proc, /sys, /dev, /run, or too long): %s",
		    from, err);
	if (b->npaths == 0)
		msg("persistence: %s names no usable path: everything persists", from);
	return b->npaths;
}

/* After the overlay: each persistent path gets its own overlay, the same layers below (their copy of
 * that directory) and an upper in the store, over the volatile root. */
int paths_mount(const struct plan *p, struct boot *b)
{
	static char opts[4096];
	char key[PATH_LEN], base[PATH_LEN * 2], up[PATH_LEN * 3], wk[PATH_LEN * 3], target[PATH_LEN * 2],
		lower[PATH_LEN * 2], empty[PATH_LEN + 16];
	struct stat st;
	int n, i, j, bad = 0;
	bool fresh;
	size_t used;

	for (n = b->npaths, i = 0; i < n; i++) {
		const char *path = b->paths[i];

		if (paths_key(path, key, sizeof(key)) != 0 ||
		    path_fmt(base, sizeof(base), "%s/" LIVE_STORE "/" STORE_VDIR "/" STORE_PATHS "/%s", p->run_live,
			     key) != 0 ||
		    path_fmt(up, sizeof(up), "%s/" STORE_UPPER, base) != 0 ||
		    path_fmt(wk, sizeof(wk), "%s/" STORE_WORK, base) != 0 ||
		    path_fmt(target, sizeof(target), "%s%s", p->newroot, path) != 0)
			goto bad;
		fresh = lstat(up, &st) != 0;
		if (mkdir_p(up, 0755) != 0 || mkdir_p(wk, 0755) != 0)
			goto bad;
		if (lstat(target, &st) == 0 && !S_ISDIR(st.st_mode)) {
			fail(ENOTDIR, "persist %s: it is not a directory in the live root", path);
			goto bad;
		}
		if (mkdir_p(target, 0755) != 0 || stat(target, &st) != 0)
			goto bad;
		/* The overlay's root takes owner and mode from its upper: a new upper gets those of the directory
		 * it covers (a user's home stays the user's); an upper of an earlier boot keeps what was set on it. */
		if (fresh && (chown(up, st.st_uid, st.st_gid) != 0 || chmod(up, st.st_mode & 07777) != 0)) {
			fail(errno, "persist %s: cannot give %s the owner and mode of %s", path, up, target);
			goto bad;
		}
		used = (size_t)snprintf(opts, sizeof(opts), "lowerdir=");
		for (j = b->nlayers - 1; j >= 0; j--) {
			if (path_fmt(lower, sizeof(lower), "%s%s", b->layer[j].dir, path) != 0)
				goto bad;
			if (stat(lower, &st) != 0 || !S_ISDIR(st.st_mode))
				continue;
			used += (size_t)snprintf(opts + used, sizeof(opts) - used, "%s%s", used > 9 ? ":" : "", lower);
		}
		if (used == 9) { /* in no layer: an empty directory stands in for the missing lower */
			if (path_fmt(empty, sizeof(empty), "%s/empty", p->run_live) != 0 || mkdir_p(empty, 0755) != 0)
				goto bad;
			used += (size_t)snprintf(opts + used, sizeof(opts) - used, "%s", empty);
		}
		if (used >= sizeof(opts) ||
		    path_fmt(opts + used, sizeof(opts) - used, ",upperdir=%s,workdir=%s,xino=on", up, wk) != 0 ||
		    do_mount("overlay", target, "overlay", 0, opts) != 0)
			goto bad;
		msg("persistence: %s persists (store %s)", path, base + strlen(p->run_live) + 1);
		continue;
bad:
		/* loud, never silent; the rest of the system still boots */
		msg("persistence: %s is NOT persistent: %s: %s", path, fail_what(), strerror(fail_errno()));
		fail_clear();
		bad++;
	}
	if (bad)
		text_fmt(b->persist_result + strlen(b->persist_result),
			 sizeof(b->persist_result) - strlen(b->persist_result),
			 "; %d of %d paths NOT persistent (see the console)", bad, n);
	return 0;
}

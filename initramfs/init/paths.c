/* live.persist.paths: only some directories persist, each an overlay of its own with its upper in the store's
 * liveunion-v1/paths/, over the volatile root. */
#include "paths.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "log.h"
#include "util.h"

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
		if (path_fmt(file, sizeof(file), "%s/" STORE_PATHS_CONF, vdir) != 0 ||
		    read_text(file, text, sizeof(text)) < 0) {
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

/* inside_store DIR STORE: DIR, symbolic links resolved, lies in STORE. Whoever writes the stick could make a path's
 * upper a link to any directory of the initramfs or the root's tmpfs upper, which the overlay would follow. */
static int inside_store(const char *dir, const char *store)
{
	char d[PATH_MAX], s[PATH_MAX];
	size_t n;

	if (!realpath(store, s))
		return fail(errno, "cannot resolve %s", store);
	if (!realpath(dir, d))
		return fail(errno, "cannot resolve %s", dir);
	n = strlen(s);
	if (strncmp(d, s, n) != 0 || (d[n] != '/' && d[n] != '\0'))
		return fail(EPERM, "%s leads to %s, outside the store (a symbolic link in the store): not used", dir,
			    d);
	return 0;
}

/* After the overlay: each persistent path gets its own overlay, the same layers below (their copy of
 * that directory) and an upper in the store, over the volatile root. */
int paths_mount(const struct plan *p, struct boot *b)
{
	static char opts[4096];
	char key[PATH_LEN], base[PATH_LEN * 2], up[PATH_LEN * 3], wk[PATH_LEN * 3], target[PATH_LEN * 2],
		lower[PATH_LEN * 2], empty[PATH_LEN + 16], store[PATH_LEN + 16];
	struct stat st;
	int n, i, j, bad = 0;
	bool fresh;
	size_t used;

	if (path_fmt(store, sizeof(store), "%s/" LIVE_STORE, p->run_live) != 0)
		return -1;
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
		if (mkdir_p(up, 0755) != 0 || mkdir_p(wk, 0755) != 0 || inside_store(up, store) != 0 ||
		    inside_store(wk, store) != 0)
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

/* live.persist=: the persistence store as the overlay's upper layer. Nothing here ever formats,
 * repairs by guesswork or deletes: a store that is not clean is left alone and the boot goes on
 * with tmpfs, saying why. */
#include "persist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "saved.h"
#include "stack.h"
#include "store.h"
#include "util.h"

#define E2FSCK "/sbin/e2fsck"

static int run(const char *const argv[])
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* -n first: it never writes, so a store with errors stays byte for byte as it was. Only a
 * journal that needs replaying (the normal state after a power cut) gets e2fsck -p. */
static int check_store(const struct store *s)
{
	const char *const ncheck[] = {E2FSCK, "-n", s->dev, NULL}, *const pcheck[] = {E2FSCK, "-p", s->dev, NULL};
	struct sb sb;
	int rc;

	if (access(E2FSCK, X_OK) != 0) {
		msg("persistence: %s: no " E2FSCK " in the initramfs, so the store cannot be checked", s->what);
		return -1;
	}
	if (store_read_sb(s->dev, &sb) != 0)
		return -1;
	rc = run(sb.recover && !s->ro ? pcheck : ncheck);
	if (rc == 0 || (sb.recover && !s->ro && rc < 4))
		return 0;
	msg("persistence: %s: e2fsck %s exit %d: errors that need a human (run e2fsck %s by hand); the store is "
	    "left untouched and not mounted, changes go to tmpfs", s->what, sb.recover && !s->ro ? "-p" : "-n", rc,
	    s->dev);
	return -1;
}

static void now_text(char *buf, size_t len, const char *fmt)
{
	struct tm tm;
	time_t t = time(NULL);

	if (!gmtime_r(&t, &tm) || strftime(buf, len, fmt, &tm) == 0)
		text_fmt(buf, len, "unknown");
}

/* meta: key=value, written to a temporary file and renamed, so a power cut leaves old or new. */
static int update_meta(const struct plan *p, const char *vdir)
{
	char path[PATH_LEN * 2], tmp[PATH_LEN * 2 + 8], old[1024], created[40], prev[80] = "", now[40], body[1200];
	const char *k;
	int fd, n;

	now_text(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ");
	text_fmt(path, sizeof(path), "%s/meta", vdir);
	text_fmt(created, sizeof(created), "%s", now);
	if (read_text(path, old, sizeof(old)) >= 0) {
		if ((k = strstr(old, "created=")) != NULL)
			text_fmt(created, sizeof(created), "%.*s", (int)strcspn(k + 8, "\n"), k + 8);
		if ((k = strstr(old, "image=")) != NULL && (k == old || k[-1] == '\n'))
			text_fmt(prev, sizeof(prev), "%.*s", (int)strcspn(k + 6, "\n"), k + 6);
	}
	if (prev[0] && strcmp(prev, p->id.uuid) != 0)
		msg("persistence: the store was made for image %s, this is %s: used anyway (overlay index and metacopy, "
		    "unsafe with a changed lower layer, are not used); recorded in the meta file", prev, p->id.uuid);
	n = snprintf(body, sizeof(body), "format=1\nimage=%s\ncreated=%s\nlast_used=%s\n%s%s%s%s", p->id.uuid, created, now,
		     prev[0] && strcmp(prev, p->id.uuid) ? "previous_image=" : "", prev[0] && strcmp(prev, p->id.uuid) ? prev : "",
		     prev[0] && strcmp(prev, p->id.uuid) ? "\nimage_changed=" : "", prev[0] && strcmp(prev, p->id.uuid) ? now : "");
	if (n < 0 || (size_t)n >= sizeof(body) - 1)
		return fail(E2BIG, "meta text");
	if (prev[0] && strcmp(prev, p->id.uuid))
		body[n++] = '\n';
	text_fmt(tmp, sizeof(tmp), "%s.new", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return fail(errno, "create %s", tmp);
	if (write(fd, body, (size_t)n) != n || fsync(fd) != 0) {
		int e = errno;

		if (close(fd) != 0)
			msg("close %s: %s", tmp, strerror(errno));
		return fail(e ? e : EIO, "write %s", tmp);
	}
	if (close(fd) != 0)
		return fail(errno, "close %s", tmp);
	if (rename(tmp, path) != 0)
		return fail(errno, "rename %s to %s", tmp, path);
	return 0;
}

static int mkdir_one(const char *dir, const char *sub)
{
	char path[PATH_LEN * 2];

	if (path_fmt(path, sizeof(path), "%s/%s", dir, sub) != 0)
		return -1;
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return fail(errno, "mkdir %s", path);
	return 0;
}

/* live.persist.paths, else the store's own paths file: the clean list goes back into the plan. */
static int select_paths(struct plan *p, const char *vdir)
{
	static char paths[MAX_PATHS][PATH_LEN];
	char file[PATH_LEN * 2], text[VALUE_MAX], err[300];
	const char *from = "live.persist.paths";
	int n, i;

	text_fmt(text, sizeof(text), "%s", p->persist_paths);
	if (!text[0]) {
		text_fmt(file, sizeof(file), "%s/paths.conf", vdir);
		if (read_text(file, text, sizeof(text)) < 0)
			return 0;
		from = STORE_DIR "/paths.conf";
	}
	n = persist_paths_parse(text, paths, MAX_PATHS, err, sizeof(err));
	if (err[0])
		msg("persistence: %s: ignored (not an absolute path of the live root, or under /proc, /sys, /dev, /run): %s",
		    from, err);
	p->persist_paths[0] = '\0';
	for (i = 0; i < n; i++)
		if (strlen(p->persist_paths) + strlen(paths[i]) + 2 < sizeof(p->persist_paths))
			strcat(strcat(p->persist_paths, i ? "," : ""), paths[i]);
	if (n == 0)
		msg("persistence: %s names no usable path: everything persists", from);
	return n;
}

/* After the overlay: each persistent path gets its own overlay, the same layers below (their copy of
 * that directory) and an upper in the store, over the volatile root. */
int persist_paths_mount(struct plan *p)
{
	static char paths[MAX_PATHS][PATH_LEN], opts[4096];
	char err[300], key[PATH_LEN], base[PATH_LEN * 2], up[PATH_LEN * 3], wk[PATH_LEN * 3], target[PATH_LEN * 2],
		lower[PATH_LEN * 2], empty[PATH_LEN + 16];
	struct stat st;
	int n, i, j, bad = 0;
	bool fresh;
	size_t used;

	if (!p->persist_paths_active)
		return 0;
	n = persist_paths_parse(p->persist_paths, paths, MAX_PATHS, err, sizeof(err));
	for (i = 0; i < n; i++) {
		if (persist_path_key(paths[i], key, sizeof(key)) != 0 ||
		    path_fmt(base, sizeof(base), "%s/store/" STORE_DIR "/paths/%s", p->run_live, key) != 0 ||
		    path_fmt(up, sizeof(up), "%s/upper", base) != 0 || path_fmt(wk, sizeof(wk), "%s/work", base) != 0 ||
		    path_fmt(target, sizeof(target), "%s%s", p->newroot, paths[i]) != 0)
			goto bad;
		fresh = lstat(up, &st) != 0;
		if (mkdir_p(up, 0755) != 0 || mkdir_p(wk, 0755) != 0)
			goto bad;
		if (lstat(target, &st) == 0 && !S_ISDIR(st.st_mode)) {
			fail(ENOTDIR, "persist %s: it is not a directory in the live root", paths[i]);
			goto bad;
		}
		if (mkdir_p(target, 0755) != 0 || stat(target, &st) != 0)
			goto bad;
		/* The overlay's root takes owner and mode from its upper: a new upper gets those of the directory
		 * it covers (a user's home stays the user's); an upper of an earlier boot keeps what was set on it. */
		if (fresh && (chown(up, st.st_uid, st.st_gid) != 0 || chmod(up, st.st_mode & 07777) != 0)) {
			fail(errno, "persist %s: cannot give %s the owner and mode of %s", paths[i], up, target);
			goto bad;
		}
		used = (size_t)snprintf(opts, sizeof(opts), "lowerdir=");
		for (j = p->nlayers - 1; j >= 0; j--) {
			if (path_fmt(lower, sizeof(lower), "%s%s", p->layer[j].dir, paths[i]) != 0)
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
		msg("persistence: %s persists (store %s)", paths[i], base + strlen(p->run_live) + 1);
		continue;
bad:
		/* loud, never silent; the rest of the system still boots */
		msg("persistence: %s is NOT persistent: %s: %s", paths[i], fail_what(), strerror(fail_errno()));
		fail_clear();
		bad++;
	}
	if (bad)
		text_fmt(p->persist_result + strlen(p->persist_result), sizeof(p->persist_result) - strlen(p->persist_result),
			 "; %d of %d paths NOT persistent (see the console)", bad, n);
	return 0;
}

/* Mounted store -> versioned directory ready, reset done, bound on run_live/upper (or, read-only,
 * its upper added as the top lower layer). */
static int use_store(struct plan *p, struct store *s, bool reset)
{
	char vdir[PATH_LEN * 2], upper[PATH_LEN * 2], aside[PATH_LEN * 2 + 40], stamp[40], target[PATH_LEN + 16];
	struct statvfs vfs;
	struct layer *l;

	if (path_fmt(vdir, sizeof(vdir), "%s/" STORE_DIR, s->dir) != 0 ||
	    path_fmt(upper, sizeof(upper), "%s/upper", vdir) != 0)
		return -1;
	if (s->ro) {
		if (access(upper, F_OK) != 0) {
			msg("persistence: %s has no " STORE_DIR "/upper yet: nothing to add read-only", s->what);
			return 0;
		}
		if (p->nlayers == MAX_LAYERS)
			return fail(E2BIG, "add the store as a layer: already %d layers", MAX_LAYERS);
		l = &p->layer[p->nlayers];
		memset(l, 0, sizeof(*l));
		text_fmt(l->name, sizeof(l->name), "persist");
		text_fmt(l->file, sizeof(l->file), "%s", s->dev);
		text_fmt(l->dir, sizeof(l->dir), "%s", upper);
		l->loop = -1;
		p->nlayers++;
		return 0;
	}
	if (mkdir_one(s->dir, STORE_DIR) != 0 || mkdir_one(vdir, "work") != 0)
		return -1;
	if (reset) {
		static const char *const parts[] = {"upper", "paths"};
		char from[PATH_LEN * 2];
		size_t i;

		now_text(stamp, sizeof(stamp), "%Y%m%d-%H%M%S");
		for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			if (path_fmt(from, sizeof(from), "%s/%s", vdir, parts[i]) != 0)
				return -1;
			if (access(from, F_OK) != 0)
				continue;
			text_fmt(aside, sizeof(aside), "%s.reset-%s", from, stamp);
			if (rename(from, aside) != 0)
				return fail(errno, "move %s aside to %s", from, aside);
			msg("persistence: live.persist.reset: previous changes kept in %s", aside + strlen(s->dir) + 1);
		}
	}
	if (mkdir_one(vdir, "upper") != 0 || update_meta(p, vdir) != 0)
		return -1;
	if (select_paths(p, vdir) > 0) {
		p->persist_paths_active = true;
		return 0;
	}
	if (path_fmt(target, sizeof(target), "%s/upper", p->run_live) != 0 || mkdir_p(target, 0755) != 0)
		return -1;
	if (do_mount(vdir, target, NULL, MS_BIND, NULL) != 0)
		return -1;
	text_fmt(p->upper_kind, sizeof(p->upper_kind), "store");
	if (statvfs(vdir, &vfs) == 0)
		p->upper_bytes = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	return 0;
}

/* live.layers= may name a saved layer; once the store has been looked at, a name found nowhere stops the
 * boot as a typo would have at step layers. */
static int check_filter(const struct plan *p)
{
	char err[VALUE_MAX + 200];

	if (plan_check_filter(p, err, sizeof(err)) != 0)
		return fail(ENOENT, "choose layers: %s", err);
	return 0;
}

/* Undo store_find and the mount: the loop device of an image file, the FAT it is on. */
static void release_store(struct store *s, int loopfd, bool mounted)
{
	if (mounted && umount(s->dir) != 0)
		msg("umount %s: %s", s->dir, strerror(errno));
	if (loopfd >= 0 && close(loopfd) != 0)
		msg("close %s: %s", s->dev, strerror(errno));
	if (loopfd >= 0 && umount(s->host) != 0 && errno != EINVAL)
		msg("umount %s: %s", s->host, strerror(errno));
}

/* The mounted store's saved layers planned; -1 (nothing left mounted) when live.layers= names a layer
 * found nowhere. */
static int pick_saved(struct plan *p, struct store *s, int loopfd)
{
	if (saved_pick(p, s->dir) < 0) {
		msg("saved layers: %s: %s; none used", fail_what(), strerror(fail_errno()));
		fail_clear();
	}
	if (check_filter(p) == 0)
		return 0;
	plan_drop_saved(p);
	release_store(s, loopfd, true);
	return -1;
}

/* live.persist=off: the store is still where saved layers come from ("reboot without persistence" keeps
 * what was saved). Looked for as auto does (the boot disk only: a stranger's stick never supplies layers),
 * mounted read-only without a journal replay, never written; the upper is a tmpfs. */
static int saved_only(struct plan *p)
{
	struct store s;
	struct sb sb;
	char why[300];
	int loopfd, n;

	memset(&s, 0, sizeof(s));
	s.ro = true;
	text_fmt(p->persist_result, sizeof(p->persist_result), "none: live.persist=off");
	if (path_fmt(s.dir, sizeof(s.dir), "%s/store", p->run_live) != 0 ||
	    path_fmt(s.host, sizeof(s.host), "%s/store-host", p->run_live) != 0 || mkdir_p(s.dir, 0755) != 0 ||
	    mkdir_p(s.host, 0755) != 0)
		return -1;
	if (!store_find(p, "auto", &s, &loopfd, why, sizeof(why))) {
		msg("persistence: none: live.persist=off; no saved layers (%s)", why);
		return check_filter(p) == 0 ? stack_upper(p) : -1;
	}
	/* no e2fsck here (nothing may be written), so a store the kernel marked damaged is not read at all */
	if (store_read_sb(s.dev, &sb) == 0 && sb.ext && sb.errors) {
		msg("persistence: none: live.persist=off; the store %s is marked as having errors (run e2fsck %s by hand): "
		    "no saved layers", s.what, s.dev);
		release_store(&s, loopfd, false);
		return check_filter(p) == 0 ? stack_upper(p) : -1;
	}
	if (store_read_sb(s.dev, &sb) != 0 || !sb.ext ||
	    do_mount(s.dev, s.dir, "ext4", MS_RDONLY | MS_NODEV | MS_NOSUID | MS_NOEXEC, "noload") != 0) {
		msg("persistence: none: live.persist=off; the store %s cannot be read (%s: %s): no saved layers", s.what,
		    sb.ext ? fail_what() : "not ext2/3/4", strerror(sb.ext ? fail_errno() : EINVAL));
		fail_clear();
		release_store(&s, loopfd, false);
		return check_filter(p) == 0 ? stack_upper(p) : -1;
	}
	if (sb.recover)
		msg("persistence: live.persist=off: the store %s has a journal to replay (a power cut?); it is read "
		    "without replaying it, so the newest saved layer may be missing or damaged: boot once with "
		    "persistence to replay it", s.what);
	if (pick_saved(p, &s, loopfd) != 0)
		return -1;
	n = saved_mount(p, s.what);
	if (n == 0) {
		msg("persistence: none: live.persist=off; no saved layers stacked from %s", s.what);
		release_store(&s, loopfd, true);
		return stack_upper(p);
	}
	if (loopfd >= 0 && close(loopfd) != 0)
		msg("close %s: %s", s.dev, strerror(errno));
	text_fmt(p->persist_result, sizeof(p->persist_result),
		 "none: live.persist=off; %d saved layer(s) from %s, mounted read-only without journal replay", n, s.what);
	msg("persistence: %s; changes go to tmpfs", p->persist_result);
	stack_print(p);
	return stack_upper(p);
}

int persist_upper(struct plan *p)
{
	struct store s;
	struct statvfs vfs;
	char why[300];
	int loopfd, found;
	bool ro = strstr(p->persist_flags, "ro") != NULL, reset = strstr(p->persist_flags, "reset") != NULL;

	memset(&s, 0, sizeof(s));
	s.ro = ro;
	if (persist_kind(p->persist) == PK_OFF)
		return saved_only(p);
	if (persist_kind(p->persist) == PK_BAD) {
		text_fmt(p->persist_result, sizeof(p->persist_result),
			 "none: live.persist=%s is not auto, off, LABEL=x, UUID=x, PARTUUID=x or file:PATH", p->persist);
		msg("persistence: %s", p->persist_result);
		return check_filter(p) == 0 ? stack_upper(p) : -1;
	}
	if (path_fmt(s.dir, sizeof(s.dir), "%s/store", p->run_live) != 0 ||
	    path_fmt(s.host, sizeof(s.host), "%s/store-host", p->run_live) != 0 || mkdir_p(s.dir, 0755) != 0 ||
	    mkdir_p(s.host, 0755) != 0)
		return -1;
	found = store_find(p, p->persist, &s, &loopfd, why, sizeof(why));
	if (!found) {
		text_fmt(p->persist_result, sizeof(p->persist_result), "none: %s", why);
		msg("persistence: %s", p->persist_result);
		return check_filter(p) == 0 ? stack_upper(p) : -1;
	}
	if (check_store(&s) == 0 && do_mount(s.dev, s.dir, "ext4", s.ro ? MS_RDONLY : 0, NULL) == 0) {
		if (pick_saved(p, &s, loopfd) != 0)
			return -1;
		if (p->nsaved && saved_mount(p, s.what))
			stack_print(p);
		if (use_store(p, &s, reset) == 0) {
			unsigned long long mib = statvfs(s.dir, &vfs) == 0 ? (unsigned long long)vfs.f_bavail * vfs.f_frsize >> 20 : 0;

			text_fmt(p->persist_result, sizeof(p->persist_result), "%s %s, ext4, %llu MiB free%s%s%s",
				 s.ro ? "read-only" : "store", s.what, mib, s.ro ? ", changes go to tmpfs" : "",
				 p->persist_paths_active ? ", only " : "", p->persist_paths_active ? p->persist_paths : "");
			msg("persistence: %s, " STORE_DIR " on %s/%s", p->persist_result, p->run_live,
			    s.ro ? "layers" : p->persist_paths_active ? "store" : "upper");
			if (loopfd >= 0 && close(loopfd) != 0)
				msg("close %s: %s", s.dev, strerror(errno));
			return s.ro || p->persist_paths_active ? stack_upper(p) : 0;
		}
		msg("persistence: %s: %s; changes go to tmpfs", fail_what(), strerror(fail_errno()));
		fail_clear();
		if (p->nsaved) {
			msg("saved layers: left out with their store");
			saved_unmount(p);
		}
		if (umount(s.dir) != 0)
			msg("umount %s: %s", s.dir, strerror(errno));
	} else if (fail_what()[0]) {
		msg("persistence: %s: %s; changes go to tmpfs", fail_what(), strerror(fail_errno()));
		fail_clear();
	}
	text_fmt(p->persist_result, sizeof(p->persist_result), "none: %s not usable (see above)", s.what);
	release_store(&s, loopfd, false);
	return check_filter(p) == 0 ? stack_upper(p) : -1;
}

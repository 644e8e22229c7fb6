/* live.persist=: the persistence store as the overlay's upper layer. Nothing here ever formats,
 * repairs by guesswork or deletes: a store that is not clean is left alone and the boot goes on
 * with tmpfs, saying why. */
#include "persist.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "liveunion/contract.h"
#include "log.h"
#include "luks.h"
#include "meta.h"
#include "paths.h"
#include "saved.h"
#include "stack.h"
#include "store.h"
#include "util.h"

static void now_text(char *buf, size_t len, const char *fmt)
{
	struct tm tm;
	time_t t = time(NULL);

	if (!gmtime_r(&t, &tm) || strftime(buf, len, fmt, &tm) == 0)
		text_fmt(buf, len, "unknown");
}

/* meta: key=value, written to a temporary file and renamed, so a power cut leaves old or new. m is what the
 * store's meta said (NULL: it had none). */
static int update_meta(const struct boot *b, const char *vdir, const struct meta *m)
{
	char path[PATH_LEN * 2], tmp[PATH_LEN * 2 + 8], created[40], now[40], body[1200];
	const char *prev = m ? m->image : "";
	bool changed;
	int fd, n;

	now_text(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ");
	text_fmt(path, sizeof(path), "%s/" STORE_META, vdir);
	text_fmt(created, sizeof(created), "%s", m && m->created[0] ? m->created : now);
	changed = prev[0] && strcmp(prev, b->id.uuid) != 0;
	if (changed)
		msg("persistence: the store was made for image %s, this is %s: used anyway (overlay index and metacopy, "
		    "unsafe with a changed lower layer, are not used); recorded in the meta file",
		    prev, b->id.uuid);
	n = snprintf(body, sizeof(body), "format=%d\nimage=%s\ncreated=%s\nlast_used=%s\n", STORE_FORMAT, b->id.uuid,
		     created, now);
	if (n > 0 && changed && (size_t)n < sizeof(body))
		n += snprintf(body + n, sizeof(body) - (size_t)n, "previous_image=%s\nimage_changed=%s\n", prev, now);
	if (n < 0 || (size_t)n >= sizeof(body) - 1)
		return fail(E2BIG, "meta text");
	text_fmt(tmp, sizeof(tmp), "%s.new", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return fail(errno, "create %s", tmp);
	if (write(fd, body, (size_t)n) != n || fsync(fd) != 0) {
		int e = errno;

		if (close(fd) != 0)
			msg("close %s: %s", tmp, strerror(errno));
		if (unlink(tmp) != 0)
			msg("remove %s: %s", tmp, strerror(errno));
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

/* Mounted store -> versioned directory ready, reset done, bound on run_live/upper (or, read-only,
 * its upper added as the top lower layer). */
static int use_store(const struct plan *p, struct boot *b, struct store *s, bool reset, const struct meta *m)
{
	char vdir[PATH_LEN * 2], upper[PATH_LEN * 2], aside[PATH_LEN * 2 + 40], stamp[40], target[PATH_LEN + 16];
	char mark[PATH_LEN * 2 + 8];
	bool asked;
	struct statvfs vfs;
	struct layer *l;

	if (path_fmt(vdir, sizeof(vdir), "%s/" STORE_VDIR, s->dir) != 0 ||
	    path_fmt(upper, sizeof(upper), "%s/" STORE_UPPER, vdir) != 0)
		return -1;
	if (s->ro) {
		if (access(upper, F_OK) != 0) {
			msg("persistence: %s has no " STORE_VDIR "/" STORE_UPPER " yet: nothing to add read-only",
			    s->what);
			return 0;
		}
		if (b->nlayers == MAX_LAYERS)
			return fail(E2BIG, "add the store as a layer: already %d layers", MAX_LAYERS);
		l = &b->layer[b->nlayers];
		memset(l, 0, sizeof(*l));
		text_fmt(l->name, sizeof(l->name), "persist");
		text_fmt(l->file, sizeof(l->file), "%s", s->dev);
		text_fmt(l->dir, sizeof(l->dir), "%s", upper);
		l->loop = -1;
		b->nlayers++;
		return 0;
	}
	if (mkdir_one(s->dir, STORE_VDIR) != 0 || mkdir_one(vdir, STORE_WORK) != 0)
		return -1;
	/* `liveunion store reset` asks for live.persist.reset from the running system: the same reset, once */
	if (path_fmt(mark, sizeof(mark), "%s/" STORE_RESET, vdir) != 0)
		return -1;
	asked = access(mark, F_OK) == 0;
	if (asked)
		msg("persistence: a reset was asked for from the running system (" STORE_VDIR "/" STORE_RESET
		    "): done as live.persist.reset");
	if (reset || asked) {
		static const char *const parts[] = {STORE_UPPER, STORE_PATHS};
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
		/* after the moves: a power cut before this only resets once more, into an empty upper */
		if (asked && unlink(mark) != 0)
			msg("persistence: remove %s: %s: the next boot resets again", mark, strerror(errno));
	}
	if (mkdir_one(vdir, STORE_UPPER) != 0)
		return -1;
	/* a full store still holds the user's changes: it is used without a new meta */
	if (update_meta(b, vdir, m) != 0) {
		msg("persistence: %s: %s: the meta file was not updated; the store is used as it is", fail_what(),
		    strerror(fail_errno()));
		fail_clear();
	}
	if (paths_select(p, b, vdir) > 0)
		return 0;
	if (path_fmt(target, sizeof(target), "%s/" LIVE_UPPER, p->run_live) != 0 || mkdir_p(target, 0755) != 0)
		return -1;
	if (do_mount(vdir, target, NULL, MS_BIND, NULL) != 0)
		return -1;
	text_fmt(b->upper_kind, sizeof(b->upper_kind), "store");
	if (statvfs(vdir, &vfs) == 0)
		b->upper_bytes = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
	return 0;
}

/* The store's format, read from its meta while it is mounted read-only: 0 when this init may use it (*m
 * filled, *have whether there was a meta file), else -1 with the reason said: nothing has been written. */
static int store_format(const struct store *s, struct meta *m, bool *have)
{
	char path[PATH_LEN * 2], text[1024], why[200];
	enum meta_verdict v;

	*have = false;
	memset(m, 0, sizeof(*m));
	if (path_fmt(path, sizeof(path), "%s/" STORE_VDIR "/" STORE_META, s->dir) != 0)
		return -1;
	if (access(path, F_OK) == 0) {
		if (read_text(path, text, sizeof(text)) < 0)
			return -1;
		*have = true;
		(void)meta_parse(text, m); /* a bad format= line is judged below */
	}
	v = meta_judge(*have ? m : NULL);
	meta_explain(m, v, why, sizeof(why));
	if (v == META_NEWER || v == META_BAD) {
		msg("persistence: %s: store %s: not used, nothing written to it; changes go to tmpfs", s->what, why);
		return -1;
	}
	if (v == META_UPGRADE)
		msg("persistence: %s: store %s", s->what, why);
	dbg("persistence: %s: store %s", s->what, why);
	return 0;
}

/* An I/O error on the store (a failing or pulled stick) makes it read-only at once, as Debian mounts its root:
 * nothing more is written to a device that misbehaves; the live system's devwatch says so. */
#define STORE_MOUNT_OPTS "errors=remount-ro"

/* The checked store mounted on s->dir, read-only first: one of a format this init does not know is unmounted
 * again as it was found. 0 mounted (read-write unless s->ro), else -1. */
static int mount_store(const struct store *s, struct meta *m, bool *have)
{
	if (do_mount(s->dev, s->dir, "ext4", MS_RDONLY, STORE_MOUNT_OPTS) != 0)
		return -1;
	if (store_format(s, m, have) == 0 &&
	    (s->ro || do_mount(s->dev, s->dir, "ext4", MS_REMOUNT, STORE_MOUNT_OPTS) == 0))
		return 0;
	if (umount(s->dir) != 0)
		msg("umount %s: %s", s->dir, strerror(errno));
	return -1;
}

int persist_upper(const struct plan *p, struct boot *b)
{
	struct store s;
	struct statvfs vfs;
	char why[300], only[MAX_PATHS * PATH_LEN] = "";
	struct meta m;
	bool have_meta = false;
	int loopfd, found, i;
	size_t used;

	memset(&s, 0, sizeof(s));
	s.ro = p->persist_ro;
	if (p->persist_kind == PK_OFF && p->net != NET_NONE) {
		text_fmt(b->persist_result, sizeof(b->persist_result),
			 "none: network boot (live.persist= naming a store on a local disk keeps changes)");
		msg("persistence: %s", b->persist_result);
		return stack_upper(p);
	}
	if (p->persist_kind == PK_OFF)
		return saved_only_boot(p, b);
	if (p->persist_kind == PK_BAD) {
		text_fmt(b->persist_result, sizeof(b->persist_result),
			 "none: live.persist=%s is not auto, off, LABEL=x, UUID=x, PARTUUID=x or file:PATH",
			 p->persist);
		msg("persistence: %s", b->persist_result);
		return saved_check_filter(p, b) == 0 ? stack_upper(p) : -1;
	}
	if (store_dirs(p, &s) != 0)
		return -1;
	found = store_find(p, b, p->persist_kind, &s, &loopfd, why, sizeof(why));
	if (!found) {
		text_fmt(b->persist_result, sizeof(b->persist_result), "none: %s", why);
		msg("persistence: %s", b->persist_result);
		return saved_check_filter(p, b) == 0 ? stack_upper(p) : -1;
	}
	/* the store found as today, and only it, is asked for: another encrypted disk never is */
	if (s.luks) {
		char mapped[64];

		if (luks_unlock(p, b, s.dev, s.what, s.ro, mapped, sizeof(mapped), why, sizeof(why)) != 0) {
			text_fmt(b->persist_result, sizeof(b->persist_result), "none: %s (not unlocked)", why);
			msg("persistence: %s: not unlocked, nothing written to it; changes go to tmpfs", why);
			store_release(&s, loopfd, false);
			return saved_check_filter(p, b) == 0 ? stack_upper(p) : -1;
		}
		used = strlen(s.what);
		text_fmt(s.what + used, sizeof(s.what) - used, " unlocked as %s", mapped);
		text_fmt(s.dev, sizeof(s.dev), "%s", mapped);
	}
	if (store_check(&s) == 0 && mount_store(&s, &m, &have_meta) == 0) {
		if (saved_plan(p, b, &s, loopfd) != 0)
			return -1;
		if (b->nsaved && saved_mount(p, b, s.what))
			stack_print(p, b);
		if (use_store(p, b, &s, p->persist_reset, have_meta ? &m : NULL) == 0) {
			unsigned long long mib = statvfs(s.dir, &vfs) == 0 ?
							 (unsigned long long)vfs.f_bavail * vfs.f_frsize >> 20 :
							 0;

			for (i = 0; i < b->npaths; i++)
				text_list_add(only, sizeof(only), b->paths[i], strlen(b->paths[i]));
			text_fmt(b->persist_result, sizeof(b->persist_result), "%s %s, ext4, %llu MiB free%s%s%s",
				 s.ro ? "read-only" : "store", s.what, mib, s.ro ? ", changes go to tmpfs" : "",
				 b->npaths ? ", only " : "", only);
			msg("persistence: %s, " STORE_VDIR " on %s/%s", b->persist_result, p->run_live,
			    s.ro      ? LIVE_LAYERS :
			    b->npaths ? LIVE_STORE :
					LIVE_UPPER);
			if (loopfd >= 0 && close(loopfd) != 0)
				msg("close %s: %s", s.dev, strerror(errno));
			return s.ro || b->npaths ? stack_upper(p) : 0;
		}
		msg("persistence: %s: %s; changes go to tmpfs", fail_what(), strerror(fail_errno()));
		fail_clear();
		if (b->nsaved) {
			msg("saved layers: left out with their store");
			saved_unmount(b);
		}
		if (umount(s.dir) != 0)
			msg("umount %s: %s", s.dir, strerror(errno));
	} else if (fail_what()[0]) {
		msg("persistence: %s: %s; changes go to tmpfs", fail_what(), strerror(fail_errno()));
		fail_clear();
	}
	text_fmt(b->persist_result, sizeof(b->persist_result), "none: %s not usable (see above)", s.what);
	if (s.luks)
		luks_close(b);
	store_release(&s, loopfd, false);
	return saved_check_filter(p, b) == 0 ? stack_upper(p) : -1;
}

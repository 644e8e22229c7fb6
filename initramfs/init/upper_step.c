/* The upper step, a choice of three: the store's versioned directory (the store step mounted it read-write), the
 * store for some paths only (live.persist.paths or its paths.conf), or a tmpfs: with live.persist.ro, without a store,
 * and the one fallback when the store cannot be prepared (said). Nothing here ever formats, repairs by guesswork or
 * deletes: a reset moves the previous changes aside. */
#include "upper_step.h"

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
#include "paths.h"
#include "stack.h"
#include "store_step.h"
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
	if (path_fmt(path, sizeof(path), "%s/" STORE_META, vdir) != 0 ||
	    path_fmt(tmp, sizeof(tmp), "%s.new", path) != 0)
		return -1;
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

/* The store mounted read-write -> its versioned directory ready, reset done, meta written, then bound on
 * run_live/upper or only some paths selected (paths.c). */
static int use_store(const struct plan *p, struct boot *b, const struct store *s)
{
	char vdir[PATH_LEN * 2], aside[PATH_LEN * 2 + 40], stamp[40], target[PATH_LEN + 16];
	char mark[PATH_LEN * 2 + 8];
	bool asked;
	struct statvfs vfs;

	if (path_fmt(vdir, sizeof(vdir), "%s/" STORE_VDIR, s->dir) != 0)
		return -1;
	if (mkdir_one(s->dir, STORE_VDIR) != 0 || mkdir_one(vdir, STORE_WORK) != 0)
		return -1;
	/* `liveunion store reset` asks for live.persist.reset from the running system: the same reset, once */
	if (path_fmt(mark, sizeof(mark), "%s/" STORE_RESET, vdir) != 0)
		return -1;
	asked = access(mark, F_OK) == 0;
	if (asked)
		msg("persistence: a reset was asked for from the running system (" STORE_VDIR "/" STORE_RESET
		    "): done as live.persist.reset");
	if (p->persist_reset || asked) {
		static const char *const parts[] = {STORE_UPPER, STORE_PATHS};
		char from[PATH_LEN * 2];
		size_t i;

		now_text(stamp, sizeof(stamp), "%Y%m%d-%H%M%S");
		for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			if (path_fmt(from, sizeof(from), "%s/%s", vdir, parts[i]) != 0)
				return -1;
			if (access(from, F_OK) != 0)
				continue;
			if (path_fmt(aside, sizeof(aside), "%s.reset-%s", from, stamp) != 0)
				return -1;
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
	if (update_meta(b, vdir, s->have_meta ? &s->meta : NULL) != 0) {
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

/* "store|read-only WHAT, ext4, N MiB free..." into persist_result, said with where the store's directory went. */
static void say_store(const struct plan *p, struct boot *b, const struct store *s)
{
	char only[MAX_PATHS * PATH_LEN] = "";
	struct statvfs vfs;
	unsigned long long mib = statvfs(s->dir, &vfs) == 0 ? (unsigned long long)vfs.f_bavail * vfs.f_frsize >> 20 : 0;
	int i;

	for (i = 0; i < b->npaths; i++)
		text_list_add(only, sizeof(only), b->paths[i], strlen(b->paths[i]));
	text_fmt(b->persist_result, sizeof(b->persist_result), "%s %s, ext4, %llu MiB free%s%s%s",
		 s->ro ? "read-only" : "store", s->what, mib, s->ro ? ", changes go to tmpfs" : "",
		 b->npaths ? ", only " : "", only);
	msg("persistence: %s, " STORE_VDIR " on %s/%s", b->persist_result, p->run_live,
	    s->ro     ? LIVE_LAYERS :
	    b->npaths ? LIVE_STORE :
			LIVE_UPPER);
}

int upper_step(const struct plan *p, struct boot *b)
{
	struct store *s = &b->store;

	if (s->mode == SM_RW || s->mode == SM_RO) {
		if (s->mode == SM_RO || use_store(p, b, s) == 0) {
			say_store(p, b, s);
			if (s->loopfd >= 0 && close(s->loopfd) != 0)
				msg("close %s: %s", s->dev, strerror(errno));
			s->loopfd = -1;
			if (s->mode == SM_RW && !b->npaths)
				return 0;
			return stack_upper(p);
		}
		msg("persistence: %s: %s; changes go to tmpfs", fail_what(), strerror(fail_errno()));
		fail_clear();
		store_drop(b, true);
	}
	return stack_upper(p);
}

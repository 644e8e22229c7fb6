/* The store step: the live.persist= store found, unlocked, checked and mounted once, in one mode (read-write,
 * read-only, or only for its saved layers with live.persist=off), or none with why; then its layers (the saved ones,
 * and its upper in live.persist.ro) put above the medium's, and live.layers= judged once over both. It runs after
 * the layers step because a LUKS store is opened with the cryptsetup of the verified layers (luks.c). Nothing here
 * ever formats, repairs by guesswork or deletes: a store that is not clean is left alone, said. */
#include "store_step.h"

#include <errno.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "layers.h"
#include "liveunion/contract.h"
#include "log.h"
#include "luks.h"
#include "saved.h"
#include "stack.h"
#include "store.h"
#include "util.h"

/* The store's format, read from its meta while it is mounted read-only: 0 when this init may use it (s->meta
 * filled, s->have_meta whether there was a meta file), else -1 with the reason said: nothing has been written. */
static int store_format(struct store *s)
{
	char path[PATH_LEN * 2], text[1024], why[200];
	enum meta_verdict v;

	s->have_meta = false;
	memset(&s->meta, 0, sizeof(s->meta));
	if (path_fmt(path, sizeof(path), "%s/" STORE_VDIR "/" STORE_META, s->dir) != 0)
		return -1;
	if (access(path, F_OK) == 0) {
		if (read_text(path, text, sizeof(text)) < 0)
			return -1;
		s->have_meta = true;
		(void)meta_parse(text, &s->meta); /* a bad format= line is judged below */
	}
	v = meta_judge(s->have_meta ? &s->meta : NULL);
	meta_explain(&s->meta, v, why, sizeof(why));
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
static int mount_store(struct store *s)
{
	if (do_mount(s->dev, s->dir, "ext4", MS_RDONLY, STORE_MOUNT_OPTS) != 0)
		return -1;
	if (store_format(s) == 0 && (s->ro || do_mount(s->dev, s->dir, "ext4", MS_REMOUNT, STORE_MOUNT_OPTS) == 0))
		return 0;
	if (umount(s->dir) != 0)
		msg("umount %s: %s", s->dir, strerror(errno));
	return -1;
}

/* None: why into persist_result, said as "persistence: WHY". */
static int none(struct boot *b, const char *why)
{
	text_fmt(b->persist_result, sizeof(b->persist_result), "none: %s", why);
	msg("persistence: %s", b->persist_result);
	return 0;
}

/* live.persist=off: the store is still where saved layers come from ("reboot without persistence" keeps what was
 * saved). Looked for as auto does (the boot disk only: a stranger's stick never supplies layers), mounted read-only
 * without a journal replay, never written. */
static int open_saved_only(const struct plan *p, struct boot *b, struct store *s)
{
	struct sb sb;
	char why[300];

	s->ro = true;
	text_fmt(b->persist_result, sizeof(b->persist_result), "none: live.persist=off");
	if (!store_find(p, b, PK_AUTO, s, &s->loopfd, why, sizeof(why))) {
		msg("persistence: none: live.persist=off; no saved layers (%s)", why);
		return 0;
	}
	if (s->luks) /* live.persist=off asks for nothing */
		msg("persistence: none: live.persist=off; the store %s is encrypted and not unlocked: no saved layers",
		    s->what);
	/* no e2fsck here (nothing may be written), so a store the kernel marked damaged is not read at all */
	else if (store_read_sb(s->dev, &sb) == 0 && sb.ext && sb.errors)
		msg("persistence: none: live.persist=off; the store %s is marked as having errors (run e2fsck %s by "
		    "hand): no saved layers",
		    s->what, s->dev);
	else if (store_read_sb(s->dev, &sb) != 0 || !sb.ext ||
		 do_mount(s->dev, s->dir, "ext4", MS_RDONLY | MS_NODEV | MS_NOSUID | MS_NOEXEC, "noload") != 0)
		msg("persistence: none: live.persist=off; the store %s cannot be read (%s: %s): no saved layers",
		    s->what, sb.ext ? fail_what() : "not ext2/3/4", strerror(sb.ext ? fail_errno() : EINVAL));
	else {
		if (sb.recover)
			msg("persistence: live.persist=off: the store %s has a journal to replay (a power cut?); it is read "
			    "without replaying it, so the newest saved layer may be missing or damaged: boot once with "
			    "persistence to replay it",
			    s->what);
		s->mode = SM_SAVED;
		return 0;
	}
	fail_clear();
	store_release(s, false);
	return 0;
}

/* live.persist= other than off: the store it names found, unlocked (only it is ever asked for: another encrypted
 * disk never is), checked and mounted read-write or read-only. */
static int open_store(const struct plan *p, struct boot *b, struct store *s)
{
	char why[300], mapped[64];
	size_t used;

	s->ro = p->persist_ro;
	if (!store_find(p, b, p->persist_kind, s, &s->loopfd, why, sizeof(why)))
		return none(b, why);
	if (s->luks) {
		if (luks_unlock(p, b, s->dev, s->what, s->ro, mapped, sizeof(mapped), why, sizeof(why)) != 0) {
			text_fmt(b->persist_result, sizeof(b->persist_result), "none: %s (not unlocked)", why);
			msg("persistence: %s: not unlocked, nothing written to it; changes go to tmpfs", why);
			store_release(s, false);
			return 0;
		}
		s->unlocked = true;
		used = strlen(s->what);
		text_fmt(s->what + used, sizeof(s->what) - used, " unlocked as %s", mapped);
		text_fmt(s->dev, sizeof(s->dev), "%s", mapped);
	}
	if (store_check(s) == 0 && mount_store(s) == 0) {
		s->mode = s->ro ? SM_RO : SM_RW;
		return 0;
	}
	if (fail_what()[0]) {
		msg("persistence: %s: %s; changes go to tmpfs", fail_what(), strerror(fail_errno()));
		fail_clear();
	}
	text_fmt(b->persist_result, sizeof(b->persist_result), "none: %s not usable (see above)", s->what);
	if (s->unlocked)
		luks_close(b);
	store_release(s, false);
	return 0;
}

/* live.persist.ro: the store's upper as the top lower layer (no mount: overlayfs reads the directory). */
static int add_store_upper(struct boot *b)
{
	struct store *s = &b->store;
	char upper[PATH_LEN * 2];
	struct layer *l;

	if (path_fmt(upper, sizeof(upper), "%s/" STORE_VDIR "/" STORE_UPPER, s->dir) != 0)
		return -1;
	if (access(upper, F_OK) != 0) {
		msg("persistence: %s has no " STORE_VDIR "/" STORE_UPPER " yet: nothing to add read-only", s->what);
		return 0;
	}
	if (b->nlayers == MAX_LAYERS)
		return fail(E2BIG, "add the store as a layer: already %d layers", MAX_LAYERS);
	l = &b->layer[b->nlayers];
	memset(l, 0, sizeof(*l));
	text_fmt(l->name, sizeof(l->name), "persist");
	text_fmt(l->file, sizeof(l->file), "%s", s->dev);
	if (path_fmt(l->dir, sizeof(l->dir), "%s", upper) != 0)
		return -1;
	l->loop = -1;
	b->nlayers++;
	b->store_layer = true;
	return 0;
}

/* live.persist=off's result: true with the saved layers stacked (said), or false with the store given back when none
 * could be. */
static bool saved_only_result(struct boot *b)
{
	struct store *s = &b->store;

	if (b->nsaved == 0) {
		msg("persistence: none: live.persist=off; no saved layers stacked from %s", s->what);
		store_release(s, true);
		s->mode = SM_NONE;
		return false;
	}
	if (s->loopfd >= 0 && close(s->loopfd) != 0)
		msg("close %s: %s", s->dev, strerror(errno));
	s->loopfd = -1;
	text_fmt(b->persist_result, sizeof(b->persist_result),
		 "none: live.persist=off; %d saved layer(s) from %s, mounted read-only without journal replay",
		 b->nsaved, s->what);
	msg("persistence: %s; changes go to tmpfs", b->persist_result);
	return true;
}

int store_step(const struct plan *p, struct boot *b)
{
	struct store *s = &b->store;
	char err[VALUE_MAX + 200];

	memset(s, 0, sizeof(*s));
	s->loopfd = -1;
	b->store_layer = false;
	if (p->persist_kind == PK_OFF && p->net != NET_NONE)
		none(b, "network boot (live.persist= naming a store on a local disk keeps changes)");
	else if (p->persist_kind == PK_BAD) {
		text_fmt(err, sizeof(err), "live.persist=%s is not auto, off, LABEL=x, UUID=x, PARTUUID=x or file:PATH",
			 p->persist);
		none(b, err);
	} else if (store_dirs(p, s) != 0)
		return -1;
	else if ((p->persist_kind == PK_OFF ? open_saved_only(p, b, s) : open_store(p, b, s)) != 0)
		return -1;
	if (s->mode != SM_NONE)
		saved_plan(p, b, s->dir);
	/* live.layers= judged once, over the medium's layers and the store's */
	if (layers_check_filter(p, b, err, sizeof(err)) != 0) {
		store_drop(b, false);
		return fail(ENOENT, "choose layers: %s", err);
	}
	if (b->nsaved && saved_mount(p, b, s->what) && s->mode != SM_SAVED)
		stack_print(p, b);
	if (s->mode == SM_SAVED) {
		if (saved_only_result(b))
			stack_print(p, b);
	} else if (s->mode == SM_RO && add_store_upper(b) != 0) {
		msg("persistence: %s: %s; changes go to tmpfs", fail_what(), strerror(fail_errno()));
		fail_clear();
		store_drop(b, true);
	}
	return 0;
}

void store_drop(struct boot *b, bool say)
{
	struct store *s = &b->store;

	if (b->store_layer)
		b->nlayers--;
	b->store_layer = false;
	if (b->nsaved) {
		if (say)
			msg("saved layers: left out with their store");
		saved_unmount(b);
	}
	if (s->mode == SM_NONE)
		return;
	if (say)
		text_fmt(b->persist_result, sizeof(b->persist_result), "none: %s not usable (see above)", s->what);
	if (umount(s->dir) != 0)
		msg("umount %s: %s", s->dir, strerror(errno));
	if (s->unlocked)
		luks_close(b);
	store_release(s, false);
	s->mode = SM_NONE;
}

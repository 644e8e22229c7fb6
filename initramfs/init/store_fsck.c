/* The store's check before it is mounted: e2fsck (Debian's static one in the initramfs), never a repair by
 * guesswork: -n, and -p only to replay a journal on a writable store. */
#include "store.h"

#include <unistd.h>

#include "log.h"
#include "util.h"

#define E2FSCK "/sbin/e2fsck"

static int check_failed(const struct store *s, const char *how, int rc, const char *left)
{
	msg("persistence: %s: e2fsck %s exit %d: errors that need a human (run e2fsck %s by hand); the store is "
	    "%s and not mounted, changes go to tmpfs",
	    s->what, how, rc, s->dev, left);
	return -1;
}

/* -n first: it never writes, so a store with errors stays byte for byte as it was. Only a
 * journal that needs replaying (the normal state after a power cut) gets e2fsck -p. */
int store_check(const struct store *s)
{
	const char *const ncheck[] = {E2FSCK, "-n", s->dev, NULL}, *const pcheck[] = {E2FSCK, "-p", s->dev, NULL};
	const char *const fcheck[] = {E2FSCK, "-fn", s->dev, NULL};
	struct sb sb;
	int rc;

	if (access(E2FSCK, X_OK) != 0) {
		msg("persistence: %s: no " E2FSCK " in the initramfs, so the store cannot be checked", s->what);
		return -1;
	}
	if (store_read_sb(s->dev, &sb) != 0)
		return -1;
	if (sb.recover && s->ro) {
		msg("persistence: %s: its journal needs replaying (the store was not cleanly unmounted), which %s; the "
		    "store is left untouched and not mounted, changes go to tmpfs (boot once with it writable to replay)",
		    s->what, s->dev_ro ? "a read-only device cannot have" : "live.persist.ro does not do");
		return -1;
	}
	if (sb.recover) {
		/* the journal replay marks the store clean without looking at the rest of it: after an unclean
		 * shutdown the whole store is checked too, read-only (-fn), before anything mounts it */
		if ((rc = run_wait(pcheck)) >= 4)
			return check_failed(s, "-p", rc, "left as e2fsck -p left it");
		if (rc != 0)
			msg("persistence: %s: e2fsck -p exit %d while replaying the journal (see above)", s->what, rc);
		return (rc = run_wait(fcheck)) == 0 ?
			       0 :
			       check_failed(s, "-fn (after the journal replay)", rc, "otherwise untouched");
	}
	return (rc = run_wait(ncheck)) == 0 ? 0 : check_failed(s, "-n", rc, "left untouched");
}
